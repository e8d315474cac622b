"""Shared helpers of the edge-level study's tests: loading a study module, small graphs."""

import importlib.util
from pathlib import Path

import numpy as np

STUDY = Path(__file__).resolve().parents[1] / "benchmarks" / "studies" / "edge_level_gain"


def load_study_module(name: str):
    """The study's module ``name`` (``benchmarks/studies/edge_level_gain/<name>.py``) alone."""
    spec = importlib.util.spec_from_file_location(name, STUDY / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def random_graph(rng, n, p):
    """A dense symmetric 0/1 adjacency of ``n`` nodes, each pair an edge with probability p."""
    upper = np.triu(rng.random((n, n)) < p, 1)
    return (upper | upper.T).astype(float)


def flipped(adjacency, i, j):
    """``adjacency`` with the undirected edge ``(i, j)`` added or removed."""
    out = adjacency.copy()
    out[i, j] = out[j, i] = 1.0 - out[i, j]
    return out
