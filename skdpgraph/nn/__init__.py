"""Torch modules built from layers that Opacus supports."""

from skdpgraph.nn._dense import DenseSubgraphConv, DenseSubgraphGNN, normalize_dense_adjacency
from skdpgraph.nn._mlp import MLP, make_activation

__all__ = [
    "DenseSubgraphConv",
    "DenseSubgraphGNN",
    "MLP",
    "make_activation",
    "normalize_dense_adjacency",
]
