"""Datasets: the synthetic default graph, loaders for local benchmark files, and splits.

Nothing here downloads: loaders read files already on disk (see ``../shared/datasets``).
"""

from skdpgraph.datasets._loaders import (
    GraphDataset,
    load_dataset,
    load_edge_list_csv,
    load_musae,
    load_npz,
    load_npz_zip,
    load_planetoid,
)
from skdpgraph.datasets._split import train_val_test_split
from skdpgraph.datasets._synthetic import make_csbm

__all__ = [
    "GraphDataset",
    "load_dataset",
    "load_edge_list_csv",
    "load_musae",
    "load_npz",
    "load_npz_zip",
    "load_planetoid",
    "make_csbm",
    "train_val_test_split",
]
