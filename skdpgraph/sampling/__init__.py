"""Samplers: batch samplers that match the accountants, and graph samplers."""

from skdpgraph._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "_batches": ["FixedSizeWithoutReplacementSampler", "PoissonSampler", "make_batch_sampler"],
    "_degree": ["bound_in_degree", "bound_out_degree", "bound_star_membership"],
    "_partition": ["metis_partition"],
    "_random_walks": ["Subgraphs", "disjoint_random_walks", "max_subgraph_size",
                      "rooted_random_walks"],
    "_stars": ["StarExamples", "star_members", "star_rows", "star_tensors"],
    "_subgraphs": ["SubgraphExamples", "gather_csr_rows", "pad_subgraphs", "subgraph_adjacency"],
})
