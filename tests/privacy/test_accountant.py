"""The accounting layer against Opacus' independent RDP implementation and published values."""

import numpy as np
import pytest
from opacus.accountants.analysis import rdp as opacus_rdp

from skdpgraph.privacy import (
    DEFAULT_ORDERS,
    REPLACE_ONE,
    PrivacyBudgetError,
    calibrate_noise_multiplier,
    compute_epsilon,
    compute_rdp,
    epsilon_from_rdp,
    plan_dpsgd,
    poisson_dpsgd_event,
    without_replacement_dpsgd_event,
)

INTEGER_ORDERS = np.arange(2, 257, dtype=float)


@pytest.mark.parametrize("sigma, q, steps", [(1.5, 0.04, 2250), (0.8, 0.01, 1000),
                                             (4.0, 0.5, 50), (1.1, 1.0, 10)])
def test_poisson_epsilon_matches_opacus_rdp(sigma, q, steps):
    ours = compute_rdp(poisson_dpsgd_event(sigma, q, steps), orders=INTEGER_ORDERS)
    theirs = opacus_rdp.compute_rdp(q=q, noise_multiplier=sigma, steps=steps,
                                    orders=list(INTEGER_ORDERS))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    eps_ours = epsilon_from_rdp(ours, 1e-5, orders=INTEGER_ORDERS)
    eps_theirs, _ = opacus_rdp.get_privacy_spent(orders=list(INTEGER_ORDERS), rdp=theirs,
                                                 delta=1e-5)
    assert eps_ours == pytest.approx(eps_theirs, rel=1e-6)


def test_published_opacus_vector():
    # Opacus' accountant tests: sigma=1.5, q=0.04, 90 epochs, delta=1e-5 -> about 7.33.
    assert compute_epsilon(poisson_dpsgd_event(1.5, 0.04, 90 * 25), 1e-5) == pytest.approx(
        7.33, abs=0.01)


@pytest.mark.parametrize("lam, steps, expected", [(1, 100, 6.744), (1, 500, 16.87),
                                                  (2, 100, 2.593), (4, 500, 2.663)])
def test_without_replacement_vectors_from_methods(lam, steps, expected):
    event = without_replacement_dpsgd_event(lam, 1350, 70, steps)
    assert compute_epsilon(event, 1e-5, relation=REPLACE_ONE) == pytest.approx(expected, rel=1e-3)


@pytest.mark.parametrize("target", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("sampling", ["poisson", "without_replacement"])
def test_calibration_lands_within_one_percent_below_target(target, sampling):
    plan = plan_dpsgd(epsilon=target, delta=1e-5, sampling=sampling, num_examples=1000,
                      batch_size=100, steps=200, max_grad_norm=1.0)
    spent = plan.epsilon(1e-5)
    assert 0.99 * target <= spent <= target
    assert plan.noise_multiplier > 0 and plan.sensitivity == (1 if sampling == "poisson" else 2)


def test_epsilon_scales_from_one_step_curve():
    plan = plan_dpsgd(epsilon=3.0, delta=1e-5, sampling="poisson", num_examples=500,
                      batch_size=50, steps=300, max_grad_norm=1.0)
    direct = compute_epsilon(poisson_dpsgd_event(plan.noise_multiplier, 0.1, 120), 1e-5)
    assert plan.epsilon(1e-5, steps=120) == pytest.approx(direct, rel=1e-9)


def test_unreachable_budget_raises_with_numbers():
    with pytest.raises(PrivacyBudgetError, match="cannot reach epsilon=1e-06"):
        plan_dpsgd(epsilon=1e-6, delta=1e-12, sampling="poisson", num_examples=10,
                   batch_size=10, steps=100000, max_grad_norm=1.0, context="test run")


def test_calibration_fails_closed_on_accountant_errors():
    def broken(sigma):
        raise FloatingPointError("overflow")

    with pytest.raises(PrivacyBudgetError, match="accountant failed"):
        calibrate_noise_multiplier(broken, 1.0)
    with pytest.raises(PrivacyBudgetError, match="returned epsilon=nan"):
        calibrate_noise_multiplier(lambda s: float("nan"), 1.0)
    with pytest.raises(PrivacyBudgetError, match="finite and > 0"):
        calibrate_noise_multiplier(lambda s: 1.0 / s, float("inf"))


def test_non_private_plan_has_no_noise():
    plan = plan_dpsgd(epsilon=np.inf, delta=1e-5, sampling="poisson", num_examples=100,
                      batch_size=10, steps=5, max_grad_norm=1.0)
    assert not plan.private and plan.noise_std == 0.0 and plan.epsilon(1e-5) == np.inf


def test_private_plan_refuses_zero_noise():
    from skdpgraph.privacy import DPSGDPlan

    with pytest.raises(ValueError, match="noise_multiplier > 0"):
        DPSGDPlan("poisson", 100, 10, 5, noise_multiplier=0.0, max_grad_norm=1.0)


def test_default_orders_are_dp_accountings():
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

    np.testing.assert_array_equal(DEFAULT_ORDERS, DEFAULT_RDP_ORDERS)


@pytest.mark.parametrize("sampling", ["poisson", "without_replacement"])
def test_plan_at_an_absurd_noise_multiplier_names_it(sampling):
    """dp-accounting overflows near 1e160; the plan refuses it by name instead of crashing."""
    from skdpgraph.privacy import PrivacyBudgetError, plan_dpsgd

    plan = plan_dpsgd(epsilon=1.0, delta=1e-5, sampling=sampling, num_examples=100,
                      batch_size=64, steps=10, max_grad_norm=1.0, noise_multiplier=1e160)
    with pytest.raises(PrivacyBudgetError, match=r"noise_multiplier=1e\+160"):
        plan.epsilon(1e-5)
