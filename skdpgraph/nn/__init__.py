"""Torch modules built from layers that Opacus supports."""

from skdpgraph.nn._dense import DenseSubgraphConv, DenseSubgraphGNN, normalize_dense_adjacency
from skdpgraph.nn._gap import GAPClassificationModule, GAPEncoder
from skdpgraph.nn._mlp import MLP, make_activation
from skdpgraph.nn._gnn import CONVS, GNN
from skdpgraph.nn._llp import llp_loss, train_llp_gnn
from skdpgraph.nn._star_inference import (encode_nodes, logits_from_sums, root_cross_entropy,
                                          root_logits)

__all__ = [
    "DenseSubgraphConv",
    "DenseSubgraphGNN",
    "MLP",
    "make_activation",
    "normalize_dense_adjacency",
]
__all__ += ["CONVS", "GNN", "llp_loss", "train_llp_gnn"]
__all__ += ["GAPClassificationModule", "GAPEncoder"]
__all__ += ["encode_nodes", "logits_from_sums", "root_cross_entropy", "root_logits"]
