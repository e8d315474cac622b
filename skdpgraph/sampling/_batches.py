"""Batch samplers, named after the distribution the accountant assumes."""

from __future__ import annotations

import torch

__all__ = ["PoissonSampler", "FixedSizeWithoutReplacementSampler", "make_batch_sampler"]

#: Above this many examples, small batches are drawn in O(batch) instead of O(examples): a
#: permutation or a coin per example at every step made an epoch quadratic in the examples
#: (at 500,000 examples ``randperm`` took 16 ms a step, 31 s an epoch of batches of 256).
_SPARSE_FROM = 65536


def uniform_subset(n: int, k: int, generator: torch.Generator) -> torch.Tensor:
    """A uniformly random ``k``-subset of ``range(n)`` (sorted int64), in O(k) for ``k << n``.

    Draws uniform indices and keeps the distinct ones until there are ``k``. The rule never
    looks at the indices' values, only at which draws coincide, so the result's law is
    invariant under relabelling ``range(n)``: every ``k``-subset is equally likely, exactly
    as for the first ``k`` of a random permutation.
    """
    chosen = torch.empty(0, dtype=torch.int64)
    while chosen.numel() < k:
        draws = torch.randint(n, (k - chosen.numel(),), generator=generator)
        chosen = torch.cat([chosen, draws]).unique()
    return chosen


class PoissonSampler:
    """Each example joins each batch independently with probability ``sample_rate``.

    This is the sampling of :func:`skdpgraph.privacy.poisson_dpsgd_event` (add/remove-one
    relation). Batch sizes vary and can be 0.

    Parameters
    ----------
    num_examples : int
        Number of examples.
    sample_rate : float
        Inclusion probability, in (0, 1].
    generator : torch.Generator
        Source of randomness.

    Examples
    --------
    >>> import torch
    >>> sampler = PoissonSampler(1000, 0.1, torch.Generator().manual_seed(0))
    >>> 50 < len(sampler.sample()) < 150
    True
    """

    def __init__(self, num_examples: int, sample_rate: float, generator: torch.Generator) -> None:
        if not 0 < sample_rate <= 1:
            raise ValueError(f"PoissonSampler: sample_rate must be in (0, 1]; got {sample_rate}.")
        self.num_examples = num_examples
        self.sample_rate = sample_rate
        self.generator = generator

    @property
    def expected_batch_size(self) -> float:
        return self.num_examples * self.sample_rate

    def sample(self) -> torch.Tensor:
        """Indices of one batch (int64, possibly empty)."""
        n, q = self.num_examples, self.sample_rate
        if n > _SPARSE_FROM and q < 0.25:  # the same law: a Binomial size, then a subset
            size = torch.binomial(torch.tensor(float(n), dtype=torch.float64),
                                  torch.tensor(q, dtype=torch.float64), generator=self.generator)
            return uniform_subset(n, int(size), self.generator)
        keep = torch.rand(n, generator=self.generator) < q
        return keep.nonzero().flatten()


class FixedSizeWithoutReplacementSampler:
    """Every batch is a uniformly random subset of exactly ``batch_size`` examples.

    Fresh for every step (independent across steps); this is the sampling of
    :func:`skdpgraph.privacy.without_replacement_dpsgd_event` (replace-one relation) and of
    FDP's hypergeometric bound.

    Parameters
    ----------
    num_examples : int
        The number of examples batches are drawn from.
    batch_size : int
        The size of every batch.
    generator : torch.Generator
        The randomness of the batches.

    Examples
    --------
    >>> import torch
    >>> batch = FixedSizeWithoutReplacementSampler(10, 4, torch.Generator().manual_seed(0)).sample()
    >>> len(batch), len(set(batch.tolist()))
    (4, 4)
    """

    def __init__(self, num_examples: int, batch_size: int, generator: torch.Generator) -> None:
        if not 0 < batch_size <= num_examples:
            raise ValueError(
                f"FixedSizeWithoutReplacementSampler: batch_size must be in [1, {num_examples}]; "
                f"got {batch_size}."
            )
        self.num_examples = num_examples
        self.batch_size = batch_size
        self.generator = generator

    @property
    def expected_batch_size(self) -> float:
        return float(self.batch_size)

    def sample(self) -> torch.Tensor:
        """Indices of one batch (int64, exactly ``batch_size`` distinct)."""
        if self.num_examples > _SPARSE_FROM and 4 * self.batch_size < self.num_examples:
            return uniform_subset(self.num_examples, self.batch_size, self.generator)
        return torch.randperm(self.num_examples, generator=self.generator)[: self.batch_size]


def make_batch_sampler(sampling: str, num_examples: int, batch_size: int,
                       generator: torch.Generator):
    """The sampler for ``sampling`` in {"poisson", "without_replacement"}.

    Parameters
    ----------
    sampling : {"poisson", "without_replacement"}
        The batch sampling.
    num_examples : int
        The number of examples batches are drawn from.
    batch_size : int
        The batch size; for Poisson sampling the expected size (rate ``batch_size / n``).
    generator : torch.Generator
        The randomness of the batches.

    Returns
    -------
    sampler : iterable of index tensors
        A sampler that yields one batch of example indices per step.
    """
    if sampling == "poisson":
        return PoissonSampler(num_examples, min(1.0, batch_size / num_examples), generator)
    if sampling == "without_replacement":
        return FixedSizeWithoutReplacementSampler(num_examples, batch_size, generator)
    raise ValueError(f"Unknown sampling {sampling!r}; use 'poisson' or 'without_replacement'.")
