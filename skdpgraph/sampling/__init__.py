"""Samplers: batch samplers that match the accountants, and graph samplers."""

from skdpgraph.sampling._batches import (
    FixedSizeWithoutReplacementSampler,
    PoissonSampler,
    make_batch_sampler,
)

__all__ = ["FixedSizeWithoutReplacementSampler", "PoissonSampler", "make_batch_sampler"]
