"""Torch modules built from layers that Opacus supports."""

from skdpgraph._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "_dropout": ["UniformDropout"],
    "_dense": ["DenseSubgraphConv", "DenseSubgraphGNN", "normalize_dense_adjacency"],
    "_gap": ["GAPClassificationModule", "GAPEncoder", "ProgressiveStage",
             "class_log_probabilities", "class_probabilities", "embed_nodes", "hop_inputs",
             "stack_hops", "with_known_labels"],
    "_gnn": ["CONVS", "GNN", "InNeighbourMean", "ProbabilityAverage"],
    "_graph_batches": ["GraphBatches", "GraphExamples", "padded_widths"],
    "_graph_gnn": ["GraphGNN", "PackedGINConv", "PackedGraphConv", "GRAPH_CONVS", "NORMS",
                   "READOUTS", "graph_cross_entropy", "graph_readout"],
    "_llp": ["forward_corrected_loss", "llp_loss"],
    "_mlp": ["MLP", "make_activation"],
    "_star_inference": ["encode_nodes", "logits_from_sums", "root_cross_entropy", "root_logits"],
})
