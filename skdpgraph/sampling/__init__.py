"""Samplers: batch samplers that match the accountants, and graph samplers."""

from skdpgraph.sampling._batches import (
    FixedSizeWithoutReplacementSampler,
    PoissonSampler,
    make_batch_sampler,
)
from skdpgraph.sampling._degree import bound_in_degree, bound_out_degree, bound_star_membership
from skdpgraph.sampling._partition import metis_partition
from skdpgraph.sampling._random_walks import (
    Subgraphs,
    disjoint_random_walks,
    max_subgraph_size,
    rooted_random_walks,
)
from skdpgraph.sampling._subgraphs import (
    SubgraphExamples,
    gather_csr_rows,
    pad_subgraphs,
    subgraph_adjacency,
)
from skdpgraph.sampling._stars import StarExamples, star_members, star_rows, star_tensors

__all__ = ["FixedSizeWithoutReplacementSampler", "PoissonSampler", "make_batch_sampler"]
__all__ += ["StarExamples", "bound_in_degree", "bound_star_membership",
            "star_members", "star_rows", "star_tensors"]
__all__ += ["Subgraphs", "disjoint_random_walks", "max_subgraph_size", "rooted_random_walks",
            "SubgraphExamples", "gather_csr_rows", "pad_subgraphs", "subgraph_adjacency"]
__all__ += ["metis_partition"]
__all__ += ["bound_out_degree"]
