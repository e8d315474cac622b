"""Batches of large example sets are drawn in O(batch): the same laws as the dense draws."""

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

import skdpgraph.sampling._batches as batches
from skdpgraph.sampling import FixedSizeWithoutReplacementSampler, PoissonSampler


@pytest.fixture
def sparse_path(monkeypatch):
    monkeypatch.setattr(batches, "_SPARSE_FROM", 4)  # small sets take the large-set path


def _counts(sampler, outcomes, draws):
    counts = dict.fromkeys(outcomes, 0)
    for _ in range(draws):
        batch = sampler.sample()
        assert batch.dtype == torch.int64 and len(batch.unique()) == len(batch)
        counts[tuple(sorted(batch.tolist()))] += 1
    return np.array([counts[o] for o in outcomes])


def test_fixed_size_subsets_are_uniform(sparse_path):
    n, k, draws = 9, 2, 18_000
    sampler = FixedSizeWithoutReplacementSampler(n, k, torch.Generator().manual_seed(0))
    outcomes = list(itertools.combinations(range(n), k))  # 36 subsets, all equally likely
    counts = _counts(sampler, outcomes, draws)
    assert chisquare(counts).pvalue > 1e-3
    # The test can fail: a sampler that favoured low indices would be far off.
    biased = counts * np.array([1.2 if 0 in o else 1.0 for o in outcomes])
    assert chisquare(biased, biased.sum() / len(outcomes) * np.ones(len(outcomes))).pvalue < 1e-3


def test_poisson_batches_have_independent_inclusions(sparse_path):
    n, q, draws = 6, 0.2, 20_000
    sampler = PoissonSampler(n, q, torch.Generator().manual_seed(1))
    outcomes = [o for k in range(n + 1) for o in itertools.combinations(range(n), k)]
    expected = np.array([q ** len(o) * (1 - q) ** (n - len(o)) for o in outcomes]) * draws
    counts = _counts(sampler, outcomes, draws)
    assert chisquare(counts, expected).pvalue > 1e-3
    # A fixed batch size (right mean, wrong law) is rejected by the same test.
    fixed = np.array([draws / math.comb(n, 1) if len(o) == 1 else 0 for o in outcomes])
    assert chisquare(fixed + 1e-9, expected).pvalue < 1e-3


def test_large_sets_use_the_sparse_draw(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("an O(examples) draw for a small batch of a large set")

    monkeypatch.setattr(torch, "randperm", refuse)
    monkeypatch.setattr(torch, "rand", refuse)
    g = torch.Generator().manual_seed(0)
    assert len(FixedSizeWithoutReplacementSampler(10**7, 256, g).sample()) == 256
    assert 150 < len(PoissonSampler(10**7, 256 / 10**7, g).sample()) < 400
