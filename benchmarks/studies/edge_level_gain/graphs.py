"""The graphs of the edge-level study and their splits, through the benchmark harness.

Every graph comes from the benchmark harness's loader (``run.load``: the public split or
stratified train/val/test percentages, one split per seed).
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/

import run  # noqa: E402  (the benchmark harness: loader, splits, one fit)

DATASETS = tuple(run.DATASETS)


def load(dataset, split, data_root):
    """Return ``(dataset, split name, seed -> {"train", "val", "test"})`` as ``run.load``.

    Parameters
    ----------
    dataset : str
        One of :data:`DATASETS`.
    split : str or None
        ``"public"`` or train/val/test percentages such as ``"75/10/15"``; None: as
        ``run.py`` (public where the graph has one).
    data_root : Path
        The shared datasets folder.

    Returns
    -------
    tuple
        The ``GraphDataset``, the split's name and the split function of each seed.
    """
    return run.load(argparse.Namespace(dataset=dataset, split=split, data_root=data_root))


def degree_summary(graph):
    """Mean and median in-degree of ``graph``, and the share of nodes of degree 1 to 3.

    Parameters
    ----------
    graph : Graph
        An undirected graph (each edge counts in both end points' degrees).

    Returns
    -------
    dict
        ``mean_degree``, ``median_degree`` and ``share_degree_1_3``.
    """
    degree = np.asarray(graph.adjacency().sum(axis=1)).ravel()
    return {"mean_degree": float(degree.mean()), "median_degree": float(np.median(degree)),
            "share_degree_1_3": float(np.mean((degree >= 1) & (degree <= 3)))}
