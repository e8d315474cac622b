"""Tests for GRR and GRR-FS (skdpgraph.privacy._grr)."""

import math

import numpy as np
import pytest
from scipy.stats import chisquare

from skdpgraph.privacy._grr import (
    _log_likelihood_grr_fs,
    grr_fs_epsilon,
    grr_fs_frequency_estimate,
    grr_fs_paper_epsilon,
    grr_fs_randomize,
    grr_fs_worst_case_log_ratio,
    grr_probabilities,
    grr_randomize,
    label_transition_matrix,
)

P_MIN = 1e-3  # chi-square p-value floor; seeds are fixed, so this is deterministic


def _one_hot(reports, domain_sizes):
    offsets = np.concatenate([[0], np.cumsum(domain_sizes)[:-1]])
    out = np.zeros(reports.shape[:-1] + (int(np.sum(domain_sizes)),))
    np.put_along_axis(out, reports + offsets, 1.0, axis=-1)
    return out


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("gamma", [1, 2, 7])
def test_grr_probabilities(epsilon, gamma):
    p, q = grr_probabilities(epsilon, gamma)
    assert p + (gamma - 1) * q == pytest.approx(1.0, abs=1e-15)
    assert p == pytest.approx(math.exp(epsilon) / (math.exp(epsilon) + gamma - 1), rel=1e-14)
    assert q == pytest.approx(1 / (math.exp(epsilon) + gamma - 1), rel=1e-14)


def test_grr_probabilities_extremes_and_arrays():
    assert grr_probabilities(np.inf, 5) == (1.0, 0.0)
    p, q = grr_probabilities(720.0, 3)  # exp(720) overflows; the stable form does not
    assert p == 1.0 and 0 < q < 1e-300
    p, q = grr_probabilities(1.0, np.array([2, 3]))
    np.testing.assert_allclose(p / q, np.e)


def test_label_transition_matrix():
    P = label_transition_matrix(2.0, 4)
    p, q = grr_probabilities(2.0, 4)
    np.testing.assert_allclose(np.diag(P), p)
    np.testing.assert_allclose(P[~np.eye(4, dtype=bool)], q)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    # Inverting the channel recovers true frequencies.
    pi = np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(np.linalg.solve(P.T, pi @ P), pi)


def test_grr_output_frequencies_match_p_and_q():
    rng = np.random.default_rng(0)
    gamma, epsilon, n = 5, 1.0, 200_000
    reports = grr_randomize(np.full(n, 2), gamma, epsilon, rng)
    p, q = grr_probabilities(epsilon, gamma)
    counts = np.bincount(reports, minlength=gamma)
    expected = n * np.array([q, q, p, q, q])
    assert chisquare(counts, expected).pvalue > P_MIN


def test_grr_per_column_domains_match_p_and_q():
    rng = np.random.default_rng(1)
    gammas, truth, epsilon, n = np.array([2, 3, 6]), np.array([1, 0, 4]), 0.7, 100_000
    reports = grr_randomize(np.tile(truth, (n, 1)), gammas, epsilon, rng)
    for j, (g, v) in enumerate(zip(gammas, truth)):
        p, q = grr_probabilities(epsilon, g)
        expected = np.full(g, n * q)
        expected[v] = n * p
        counts = np.bincount(reports[:, j], minlength=g)
        assert counts.size == g
        assert chisquare(counts, expected).pvalue > P_MIN


def test_grr_infinite_epsilon_and_unit_domain_keep_values():
    rng = np.random.default_rng(2)
    values = rng.integers(0, 4, size=(50, 3))
    np.testing.assert_array_equal(grr_randomize(values, 4, np.inf, rng), values)
    np.testing.assert_array_equal(grr_randomize(np.zeros(20, int), 1, 0.1, rng), 0)


def test_grr_fs_report_frequencies():
    # P(report v | true v) = (m/d) p + (1 - m/d)/gamma; other values (m/d) q + (1 - m/d)/gamma.
    rng = np.random.default_rng(3)
    gammas, truth, epsilon, m, n = np.array([3, 2, 4, 5]), np.array([2, 0, 1, 4]), 1.5, 2, 100_000
    reports = grr_fs_randomize(np.tile(truth, (n, 1)), gammas, epsilon, m, rng)
    d = gammas.size
    for j, (g, v) in enumerate(zip(gammas, truth)):
        p, q = grr_probabilities(epsilon, g)
        expected = np.full(g, n * (m / d * q + (1 - m / d) / g))
        expected[v] = n * (m / d * p + (1 - m / d) / g)
        assert chisquare(np.bincount(reports[:, j], minlength=g), expected).pvalue > P_MIN


def test_grr_fs_joint_distribution_matches_enumeration():
    # The randomiser and the exact likelihood used by the worst-case analysis agree.
    rng = np.random.default_rng(4)
    gammas, x, epsilon, m, n = np.array([3, 2, 4]), np.array([1, 1, 3]), 1.0, 2, 120_000
    reports = grr_fs_randomize(np.tile(x, (n, 1)), gammas, epsilon, m, rng)
    flat = np.ravel_multi_index(reports.T, gammas)
    probs = np.exp(_log_likelihood_grr_fs(gammas, epsilon, m))
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    expected = n * probs[np.ravel_multi_index(x, gammas)]
    assert chisquare(np.bincount(flat, minlength=probs.shape[1]), expected).pvalue > P_MIN


def test_grr_fs_samples_m_distinct_features_per_row():
    # With eps = inf every sampled feature is reported truthfully; a large domain makes
    # chance matches rare. Sampling with replacement would leave rows with < m matches.
    rng = np.random.default_rng(5)
    n, d, m, g = 5000, 6, 3, 10_000
    values = rng.integers(0, g, size=(n, d))
    reports = grr_fs_randomize(values, np.full(d, g), np.inf, m, rng)
    matches = (reports == values).sum(axis=1)
    assert matches.min() >= m
    assert matches.mean() == pytest.approx(m + (d - m) / g, abs=0.01)
    counts = (reports == values).sum(axis=0)  # each feature sampled with prob m/d
    assert chisquare(counts, np.full(d, counts.sum() / d)).pvalue > P_MIN


def test_frequency_estimate_inverts_expected_frequencies_exactly():
    gammas, epsilon, m = np.array([2, 3, 4]), 0.8, 2
    d = gammas.size
    pi = np.array([0.3, 0.7, 0.2, 0.5, 0.3, 0.1, 0.1, 0.4, 0.4])
    col_gamma = np.repeat(gammas, gammas)
    p, q = grr_probabilities(epsilon, col_gamma)
    lam = m / d * (pi * p + (1 - pi) * q) + (1 - m / d) / col_gamma
    np.testing.assert_allclose(grr_fs_frequency_estimate(lam, gammas, epsilon, m), pi, atol=1e-12)
    # Leading axes are kept.
    both = grr_fs_frequency_estimate(np.stack([lam, lam]), gammas, epsilon, m)
    np.testing.assert_allclose(both, np.stack([pi, pi]), atol=1e-12)
    # One feature's block alone, with the mechanism's d.
    block = grr_fs_frequency_estimate(lam[2:5], [3], epsilon, m, n_features=d)
    np.testing.assert_allclose(block, pi[2:5], atol=1e-12)
    kept = lam.copy()  # estimated in place, but on a copy of the caller's array
    grr_fs_frequency_estimate(lam, gammas, epsilon, m)
    np.testing.assert_array_equal(lam, kept)


def test_frequency_estimate_is_unbiased():
    rng = np.random.default_rng(6)
    gammas, epsilon, m, n, reps = np.array([2, 3, 4, 2]), 1.0, 2, 500, 400
    # Skewed truth (value 0 is common), so the naive frequencies are visibly biased.
    values = np.column_stack([rng.integers(0, g, size=n) * (rng.random(n) < 0.3) for g in gammas])
    truth = _one_hot(values, gammas).mean(axis=0)
    reports = grr_fs_randomize(np.tile(values, (reps, 1)), gammas, epsilon, m, rng)
    observed = _one_hot(reports, gammas).reshape(reps, n, -1).mean(axis=1)
    estimates = grr_fs_frequency_estimate(observed, gammas, epsilon, m)
    standard_error = estimates.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(estimates.mean(axis=0) - truth) < 4 * standard_error)
    # The naive observed frequencies are biased towards uniform: the test can fail.
    assert np.max(np.abs(observed.mean(axis=0) - truth)) > 10 * standard_error.max()


@pytest.mark.parametrize("d", [3, 4, 5])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_grr_fs_true_epsilon_is_m_eps_for_binary_domains(d, epsilon):
    for m in range(1, d):
        true_eps = grr_fs_worst_case_log_ratio([2] * d, epsilon, m)
        assert true_eps == pytest.approx(m * epsilon, abs=1e-9)
        assert true_eps == pytest.approx(grr_fs_epsilon(m, epsilon), abs=1e-9)
        assert true_eps > grr_fs_paper_epsilon(d, m, epsilon) + 1e-3


def test_grr_fs_paper_value_fails_for_single_feature_neighbours_non_binary():
    gammas = [3, 2, 4]
    one = grr_fs_worst_case_log_ratio(gammas, 1.0, 1, "one-feature")
    paper = grr_fs_paper_epsilon(3, 1, 1.0)
    assert round(one, 3) == 0.496
    assert round(paper, 3) == 0.453
    assert one > paper
    assert grr_fs_worst_case_log_ratio(gammas, 1.0, 1) == pytest.approx(1.0, abs=1e-9)


def test_paper_epsilon_formula():
    assert grr_fs_paper_epsilon(5, 1, 1.0) == pytest.approx(math.log(1 + (math.e - 1) / 5))
    assert grr_fs_paper_epsilon(4, 4, 0.5) == pytest.approx(2.0)


def test_worst_case_hand_computed_single_feature():
    # d = 1, m = 1 is plain GRR: log(p / q) = epsilon.
    assert grr_fs_worst_case_log_ratio([5], 0.3, 1) == pytest.approx(0.3, abs=1e-12)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda r: grr_randomize([0, 3], 3, 1.0, r), ValueError, "values must lie in"),
        (lambda r: grr_randomize([0, 1], 3, 0.0, r), ValueError, "epsilon must be in"),
        (lambda r: grr_randomize([0, 1], 3, 1.0, 0), TypeError, "numpy.random.Generator"),
        (lambda r: grr_randomize([0.5], 3, 1.0, r), TypeError, "integer category codes"),
        (lambda r: grr_randomize([[0, 1]], [2, 2, 2], 1.0, r), ValueError, "does not broadcast"),
        (lambda r: grr_fs_randomize([[0, 1]], [2, 2], 1.0, 3, r), ValueError,
         "n_sampled_features must be in"),
        (lambda r: grr_fs_randomize([0, 1], [2, 2], 1.0, 1, r), ValueError, "2-D"),
        (lambda r: grr_fs_frequency_estimate(np.ones(4), [2, 3], 1.0, 1), ValueError,
         "sum\\(domain_sizes\\) = 5"),
        (lambda r: grr_fs_frequency_estimate(np.ones(2), [2], 1.0, 1, n_features=0), ValueError,
         "n_features must be >= 1"),
        (lambda r: grr_fs_worst_case_log_ratio([2] * 11, 1.0, 1), ValueError, "<= 1024"),
        (lambda r: grr_fs_worst_case_log_ratio([2, 2], 1.0, 1, "edge"), ValueError,
         "neighbouring must be"),
        (lambda r: label_transition_matrix(1.0, 0), ValueError, "n_classes must be >= 1"),
        (lambda r: grr_probabilities(1.0, 0), ValueError, "domain sizes must be integers >= 1"),
    ],
)
def test_invalid_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call(np.random.default_rng(0))
