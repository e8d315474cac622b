"""Exact accounting of composed Gaussian mechanisms, against the analytic formula."""

import numpy as np
import pytest
from scipy.stats import norm

from skdpgraph.privacy import (
    PrivacyBudgetError, calibrate_gaussian_noise, gaussian_delta, gaussian_epsilon,
)


def analytic_delta(multiplier, epsilon):
    """Balle & Wang 2018, Theorem 8, written independently with scipy."""
    a = 1.0 / (2.0 * multiplier)
    shift = epsilon * multiplier
    return norm.cdf(a - shift) - np.exp(epsilon) * norm.cdf(-a - shift)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
@pytest.mark.parametrize("count", [1, 2, 5])
def test_delta_matches_the_analytic_gaussian(sigma, epsilon, count):
    expected = analytic_delta(sigma / np.sqrt(count), epsilon)
    assert gaussian_delta(sigma, epsilon, count=count) == pytest.approx(expected, rel=1e-9,
                                                                        abs=1e-15)


@pytest.mark.parametrize("epsilon, delta, count", [(1.0, 1e-6, 2), (4.0, 1e-6, 2),
                                                   (8.0, 1e-5, 3), (0.5, 1e-3, 1)])
def test_calibration_is_tight_and_safe(epsilon, delta, count):
    sigma = calibrate_gaussian_noise(epsilon, delta, count=count)
    assert analytic_delta(sigma / np.sqrt(count), epsilon) <= delta * (1 + 1e-9)
    assert analytic_delta(sigma * (1 - 1e-6) / np.sqrt(count), epsilon) > delta
    spent = gaussian_epsilon(sigma, delta, count=count)
    assert spent <= epsilon * (1 + 1e-8)
    assert spent == pytest.approx(epsilon, rel=1e-6)


def test_analytic_calibration_beats_the_classical_bound():
    # Dwork-Roth: sigma = sqrt(2 ln(1.25/delta)) / epsilon suffices for epsilon < 1.
    sigma = calibrate_gaussian_noise(0.5, 1e-5)
    assert sigma < np.sqrt(2 * np.log(1.25 / 1e-5)) / 0.5


def test_epsilon_inverts_delta():
    eps = gaussian_epsilon(2.0, 1e-5, count=4)
    assert analytic_delta(1.0, eps) <= 1e-5 < analytic_delta(1.0, eps * (1 - 1e-6))


def test_impossible_budgets_raise():
    with pytest.raises(PrivacyBudgetError, match="would exceed"):
        calibrate_gaussian_noise(1e-7, 1e-10, count=2)
    with pytest.raises(PrivacyBudgetError, match="need finite epsilon"):
        calibrate_gaussian_noise(np.inf, 1e-5)
    with pytest.raises(ValueError, match="delta must be in"):
        gaussian_epsilon(1.0, 0.0)


def log_space_delta(multiplier, epsilon):
    """The same formula with the second term in log space: finite for any epsilon."""
    from scipy.special import log_ndtr, ndtr

    a = 1.0 / (2.0 * multiplier)
    return ndtr(a - epsilon * multiplier) - np.exp(epsilon + log_ndtr(-a - epsilon * multiplier))


@pytest.mark.parametrize("epsilon", [1e3, 1e5, 1e6, 1e7, 1e12])
def test_very_large_epsilons_are_calibrated_on_the_exact_curve(epsilon):
    sigma = calibrate_gaussian_noise(epsilon, 1e-5, count=2)
    assert log_space_delta(sigma / np.sqrt(2), epsilon) <= 1e-5 * (1 + 1e-6)
    assert log_space_delta(sigma * (1 - 1e-5) / np.sqrt(2), epsilon) > 1e-5
    assert gaussian_epsilon(sigma, 1e-5, count=2) == pytest.approx(epsilon, rel=1e-6)


@pytest.mark.parametrize("epsilon", [1.0000001e12, 1e30])
def test_epsilons_beyond_the_supported_range_name_the_parameter(epsilon):
    from skdpgraph.privacy._gaussian_accounting import MAX_GAUSSIAN_EPSILON

    assert MAX_GAUSSIAN_EPSILON == 1e12
    with pytest.raises(PrivacyBudgetError, match=r"GAP: epsilon=1e\+(12|30) is beyond what the "
                       r"Gaussian calibration supports \(max 1e\+12\); use epsilon=np.inf"):
        calibrate_gaussian_noise(epsilon, 1e-5, count=2, context="GAP")
