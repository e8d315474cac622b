"""Torch modules built from layers that Opacus supports."""

from skdpgraph._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "_dropout": ["UniformDropout"],
    "_dense": ["DenseSubgraphConv", "DenseSubgraphGNN", "normalize_dense_adjacency"],
    "_gap": ["GAPClassificationModule", "GAPEncoder", "ProgressiveStage"],
    "_gnn": ["CONVS", "GNN", "InNeighbourMean", "ProbabilityAverage"],
    "_llp": ["forward_corrected_loss", "llp_loss", "train_llp_gnn"],
    "_mlp": ["MLP", "make_activation"],
    "_star_inference": ["encode_nodes", "logits_from_sums", "root_cross_entropy", "root_logits"],
})
