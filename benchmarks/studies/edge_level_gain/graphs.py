"""The graphs of the edge-level study and their splits, through the benchmark harness.

Cora, Coauthor CS and the other graphs ``run.py`` knows come from its loader
(``run.load``: the public split or stratified train/val/test percentages, one split per
seed). Coauthor Physics and Twitch-EN, which ``run.py`` does not list, are read here with
the library's public loaders where one fits (``load_npz_zip``) and split the same way.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/

import run  # noqa: E402  (the benchmark harness: loader, splits, one fit)

#: Graphs the study reads beyond ``run.DATASETS``.
EXTRA = ("coauthor_physics", "twitch_en")
DATASETS = tuple(run.DATASETS) + EXTRA


def load_twitch(folder):
    """Twitch-EN (MUSAE ENGB): ``edges.csv`` by ``new_id``, ``features.json`` (node ->
    active feature ids) as binary sparse rows, the ``mature`` column of ``target.csv``.

    Parameters
    ----------
    folder : Path
        The ``twitch_en`` folder of the shared datasets.

    Returns
    -------
    GraphDataset
        Without a standard split.
    """
    import pandas as pd
    import scipy.sparse as sp

    from skdpgraph import Graph
    from skdpgraph.datasets import GraphDataset

    edges = pd.read_csv(folder / "edges.csv")
    target = pd.read_csv(folder / "target.csv").sort_values("new_id")
    n = len(target)
    active = json.loads((folder / "features.json").read_text())
    rows = [(int(node), f) for node, ids in active.items() for f in ids]
    i, j = np.array(rows).T
    x = sp.csr_matrix((np.ones(len(i), np.float32), (i, j)), shape=(n, j.max() + 1))
    graph = Graph(edges[["from", "to"]].to_numpy().T, x, num_nodes=n)
    y = target["mature"].astype(int).to_numpy()
    return GraphDataset("twitch_en", graph, y, class_names=("False", "True"),
                        description="MUSAE Twitch ENGB; label: mature")


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
    from skdpgraph.datasets import load_npz_zip, train_val_test_split

    if dataset not in EXTRA:
        return run.load(argparse.Namespace(dataset=dataset, split=split, data_root=data_root))
    ds = (load_twitch(data_root / dataset) if dataset == "twitch_en" else
          load_npz_zip(data_root / dataset / "coauthor-physics.zip", dataset))
    split = split or "75/10/15"
    fractions = [float(part) / 100 for part in split.split("/")]
    return ds, split, lambda seed: train_val_test_split(ds.y, *fractions, random_state=seed)


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
