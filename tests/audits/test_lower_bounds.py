"""Tests of the audit statistics (``_lower_bounds``): coverage, validity, power, errors."""

import math

import numpy as np
import pytest
from scipy.stats import binom

from skdpgraph._random import RandomStreams
from skdpgraph.privacy import gaussian_epsilon
from tests.audits._lower_bounds import (
    DIRECTIONS,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_lower_bound,
    epsilon_lower_bound_from_counts,
)


# ---------------------------------------------------------------------------- intervals
@pytest.mark.parametrize("trials", [1, 7, 50, 400])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_clopper_pearson_coverage_is_exact(trials, alpha):
    """P[p outside the one-sided interval] <= alpha, summed exactly over the binomial."""
    successes = np.arange(trials + 1)
    upper = clopper_pearson_upper(successes, trials, alpha)
    lower = clopper_pearson_lower(successes, trials, alpha)
    assert np.all(np.diff(upper) > 0) and np.all(np.diff(lower) > 0)
    for p in np.concatenate([np.linspace(0.001, 0.999, 97), [1e-6, 1 - 1e-6]]):
        pmf = binom.pmf(successes, trials, p)
        assert pmf[upper < p].sum() <= alpha + 1e-12
        assert pmf[lower > p].sum() <= alpha + 1e-12
    # Not vacuous: the miss probability comes close to alpha just above an interval's end.
    p = float(upper[0]) * (1 + 1e-9)
    assert binom.pmf(0, trials, p) == pytest.approx(alpha, rel=1e-6)


def test_clopper_pearson_closed_forms():
    n, alpha = 30, 0.05
    assert clopper_pearson_upper(0, n, alpha) == pytest.approx(1 - alpha ** (1 / n))
    assert clopper_pearson_lower(n, n, alpha) == pytest.approx(alpha ** (1 / n))
    assert clopper_pearson_upper(n, n, alpha) == 1.0
    assert clopper_pearson_lower(0, n, alpha) == 0.0


# ---------------------------------------------------------------------------- validity
def _randomised_response(p_keep, trials, repetitions, rng):
    """Counts of "reports 1" on true bit 0 (D) and true bit 1 (D') for many repetitions."""
    return (rng.binomial(trials, 1 - p_keep, repetitions),
            rng.binomial(trials, p_keep, repetitions))


def test_bound_holds_with_probability_1_minus_alpha_in_a_tight_case():
    """Randomised response: the region "reports 1" attains epsilon = log(p / (1 - p)) exactly.

    Over 1000 repetitions the bound exceeds the true epsilon at most an alpha fraction of the
    time; the naive bound from point estimates does so about half the time (so this test
    can fail).
    """
    p_keep, trials, repetitions, alpha = 0.8, 2000, 1000, 0.05
    epsilon = math.log(p_keep / (1 - p_keep))
    in_d, in_dprime = _randomised_response(p_keep, trials, repetitions,
                                           RandomStreams(1).numpy("noise"))
    bounds = np.array([epsilon_lower_bound_from_counts(a, trials, b, trials, delta=0.0,
                                                       alpha=alpha, direction="S:D'>D")
                       for a, b in zip(in_d, in_dprime)])
    misses = np.sum(bounds > epsilon)
    assert misses <= binom.ppf(0.999, repetitions, alpha)
    assert np.median(bounds) > 0.9 * epsilon  # and close to it
    naive = np.log(in_dprime / in_d)
    assert np.mean(naive > epsilon) > 0.3


def test_score_bound_holds_with_probability_1_minus_alpha_in_a_tight_case():
    """The same tight case through the split (threshold selected, then counted)."""
    p_keep, trials, repetitions, alpha = 0.8, 1000, 400, 0.05
    epsilon = math.log(p_keep / (1 - p_keep))
    rng = RandomStreams(2).numpy("noise")
    bounds = []
    for _ in range(repetitions):
        outputs_d = (rng.random(trials) > p_keep).astype(float)
        outputs_dprime = (rng.random(trials) < p_keep).astype(float)
        bounds.append(epsilon_lower_bound(outputs_d, outputs_dprime, delta=0.0,
                                          alpha=alpha).epsilon)
    bounds = np.array(bounds)
    assert np.sum(bounds > epsilon) <= binom.ppf(0.999, repetitions, alpha)
    assert np.median(bounds) > 0.75 * epsilon


@pytest.mark.parametrize("sigma", [1.0, 2.0])
def test_gaussian_mechanism_bound_is_below_and_close_to_the_true_epsilon(sigma):
    """N(0, sigma^2) vs N(1, sigma^2): the analytic epsilon is an upper limit, 30% is reached."""
    delta, trials = 1e-5, 200_000
    rng = RandomStreams(3).numpy("noise")
    result = epsilon_lower_bound(rng.normal(0.0, sigma, trials), rng.normal(1.0, sigma, trials),
                                 delta=delta)
    true_epsilon = gaussian_epsilon(sigma, delta)
    assert 0.3 * true_epsilon < result.epsilon <= true_epsilon
    assert result.trials == 2 * trials
    assert result.counts[1] == result.counts[3] == trials - round(0.3 * trials)


def test_more_noise_gives_a_smaller_bound():
    rng = RandomStreams(4).numpy("noise")
    bounds = [epsilon_lower_bound(rng.normal(0, s, 100_000), rng.normal(1, s, 100_000),
                                  delta=1e-5).epsilon for s in (0.5, 1.0, 2.0)]
    assert bounds[0] > bounds[1] > bounds[2] > 0


def test_identical_distributions_give_almost_nothing():
    rng = RandomStreams(5).numpy("noise")
    result = epsilon_lower_bound(rng.normal(size=100_000), rng.normal(size=100_000), delta=1e-5)
    assert result.epsilon < 0.05


# ---------------------------------------------------------------------------- directions
def test_count_bound_is_symmetric_in_the_two_inputs():
    first = epsilon_lower_bound_from_counts(100, 10_000, 2_000, 10_000, delta=1e-5)
    second = epsilon_lower_bound_from_counts(2_000, 10_000, 100, 10_000, delta=1e-5)
    assert first == pytest.approx(second) and first > 2.5
    # The same counts seen through the complement of the region.
    third = epsilon_lower_bound_from_counts(9_900, 10_000, 8_000, 10_000, delta=1e-5)
    assert third == pytest.approx(first)


def test_each_direction_reads_its_own_inequality():
    k_d, k_dprime, n = 100, 2_000, 10_000
    values = {d: epsilon_lower_bound_from_counts(k_d, n, k_dprime, n, delta=0.0, direction=d)
              for d in DIRECTIONS}
    assert values["S:D'>D"] > 2.5  # P[M(D') in S] >> P[M(D) in S]
    assert values["S:D>D'"] == 0.0
    assert 0 < values["notS:D>D'"] < 0.3  # 0.99 vs 0.8 on the complement
    assert values["notS:D'>D"] == 0.0
    # A direction fixed in advance pays for two intervals, the best-of-four for four.
    assert epsilon_lower_bound_from_counts(k_d, n, k_dprime, n, delta=0.0) < values["S:D'>D"]


def test_score_bound_finds_the_region_in_either_orientation():
    rng = RandomStreams(6).numpy("noise")
    low, high = rng.normal(0, 1, 50_000), rng.normal(2, 1, 50_000)
    up = epsilon_lower_bound(low, high, delta=1e-5)
    down = epsilon_lower_bound(-low, -high, delta=1e-5)
    swapped = epsilon_lower_bound(high, low, delta=1e-5)
    assert min(up.epsilon, down.epsilon, swapped.epsilon) > 1.5
    assert up.direction != down.direction


def test_delta_is_subtracted_from_the_numerator():
    bound = epsilon_lower_bound_from_counts(10, 10_000, 1_000, 10_000, delta=0.0,
                                            direction="S:D'>D")
    smaller = epsilon_lower_bound_from_counts(10, 10_000, 1_000, 10_000, delta=0.05,
                                              direction="S:D'>D")
    assert 0 < smaller < bound
    assert epsilon_lower_bound_from_counts(10, 10_000, 1_000, 10_000, delta=0.2,
                                           direction="S:D'>D") == 0.0


def test_discrete_scores_try_every_value():
    result = epsilon_lower_bound(np.zeros(1000), np.ones(1000), delta=0.0)
    # Perfectly separated: only the sample size limits the bound (about log(700 / 3.7)).
    assert result.epsilon > 4.5
    assert result.counts[0] == 0 and result.counts[2] == result.counts[3]


# ---------------------------------------------------------------------------- errors
@pytest.mark.parametrize("kwargs, match", [
    (dict(alpha=0.0), "alpha must be in"),
    (dict(alpha=1.5), "alpha must be in"),
    (dict(delta=-0.1), "delta must be in"),
    (dict(delta=1.0), "delta must be in"),
    (dict(direction="both"), "direction must be one of"),
])
def test_count_bound_rejects_bad_parameters(kwargs, match):
    params = dict(delta=0.0)
    params.update(kwargs)
    with pytest.raises(ValueError, match=match):
        epsilon_lower_bound_from_counts(1, 10, 5, 10, **params)


@pytest.mark.parametrize("counts", [(-1, 10, 5, 10), (11, 10, 5, 10), (1, 0, 0, 10)])
def test_count_bound_rejects_impossible_counts(counts):
    with pytest.raises(ValueError, match="successes <= trials"):
        epsilon_lower_bound_from_counts(*counts, delta=0.0)


@pytest.mark.parametrize("scores, match", [
    (np.array([0.0, np.nan, 1.0]), "must be finite"),
    (np.zeros((2, 2)), "1-D array"),
    (np.zeros(1), "1-D array"),
])
def test_score_bound_rejects_bad_scores(scores, match):
    with pytest.raises(ValueError, match=match):
        epsilon_lower_bound(scores, np.zeros(10), delta=0.0)


def test_score_bound_rejects_bad_selection_fraction():
    with pytest.raises(ValueError, match="selection_fraction"):
        epsilon_lower_bound(np.zeros(10), np.zeros(10), delta=0.0, selection_fraction=1.0)
    with pytest.raises(ValueError, match="each split needs"):
        epsilon_lower_bound(np.zeros(2), np.zeros(2), delta=0.0, selection_fraction=0.1)
