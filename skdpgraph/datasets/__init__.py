"""Datasets: synthetic graphs, loaders for local benchmark files, and splits.

Nothing here downloads: loaders read files already on disk (see ``../shared/datasets``).
"""

from skdpgraph._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "_loaders": ["GraphDataset", "load_dataset", "load_edge_list_csv", "load_musae", "load_npz",
                 "load_npz_zip", "load_planetoid"],
    "_graph_loaders": ["load_reddit_threads", "load_tu_dataset"],
    "_split": ["train_val_test_split"],
    "_synthetic": ["make_csbm"],
    "_synthetic_graphs": ["make_graph_classification"],
})
