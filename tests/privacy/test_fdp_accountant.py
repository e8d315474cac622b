"""Tests for FDP's accounting: the multi-term RDP bound, the plan and the inference release."""

import warnings

import numpy as np
import pytest
from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS, compute_epsilon
from scipy.stats import hypergeom

import scipy.sparse as sp
import torch

from skdpgraph._random import RandomStreams
from skdpgraph.privacy import (FDP_RELATION, FINE_ORDERS, DPSGDPlan, FDPPlan, PrivacyBudgetError,
                               PrivacyPlan, check_plan, inference_sensitivity, plan_fdp,
                               release_neighbour_sums)
from skdpgraph.privacy._fdp_plan import compute_rdp_fdp

DELTA = 1e-5
ORDERS = np.union1d(DEFAULT_RDP_ORDERS, np.arange(1.1, 10.0, 0.1))
ORDER_SETS = {
    "merged": ORDERS,
    "default": np.asarray(DEFAULT_RDP_ORDERS, dtype=float),
    "1.1-9.9": np.arange(1.1, 10.0, 0.1),
}


def _epsilon(noise_multiplier, num_train, batch_size, max_degree, steps, orders=ORDERS):
    rdp = compute_rdp_fdp(noise_multiplier, num_train, batch_size, max_degree, steps, orders)
    return compute_epsilon(orders, rdp, DELTA)[0]


# (sigma, N, B, K = max_degree, T, epsilon at delta=1e-5, printed decimals), METHODS.md.
# "K" in METHODS.md is the degree bound, i.e. K' = K + 1 terms per node.
METHODS_VECTORS = [
    (1.0, 140, 70, 2, 100, 45.48, 2),
    (2.0, 140, 70, 2, 100, 17.62, 2),
    (4.0, 140, 70, 2, 100, 7.456, 3),
    (4.0, 140, 70, 2, 1000, 31.06, 2),
    (4.0, 140, 70, 4, 100, 6.942, 3),
    (2.0, 10000, 1000, 5, 1000, 14.36, 2),
]


@pytest.mark.parametrize("order_set", list(ORDER_SETS))
@pytest.mark.parametrize("sigma, n, b, k, t, expected, decimals", METHODS_VECTORS)
def test_methods_vectors(sigma, n, b, k, t, expected, decimals, order_set):
    eps = _epsilon(sigma, n, b, k, t, ORDER_SETS[order_set])
    assert round(eps, decimals) == pytest.approx(expected, abs=1e-12)


def test_methods_vectors_use_degree_bound_not_term_count():
    # Reading "K=2" as K' = 2 (max_degree=1) gives 50.17, not 45.48.
    assert _epsilon(1.0, 140, 70, 1, 100) == pytest.approx(50.17, abs=0.01)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("num_train, batch_size", [(100, 1), (140, 70), (1000, 10), (50, 50)])
def test_single_term_reduces_to_sampled_gaussian(sigma, num_train, batch_size):
    orders = np.array([1.5, 2.0, 4.0, 16.0, 64.0])
    q = batch_size / num_train
    with np.errstate(divide="ignore"):  # log(1 - q) = -inf at q = 1
        log_moment = np.logaddexp(np.log1p(-q), np.log(q) + (orders - 1) * orders / (2 * sigma**2))
    expected = log_moment / (orders - 1)
    got = compute_rdp_fdp(sigma, num_train, batch_size, 0, 7, orders)
    np.testing.assert_allclose(got, 7 * expected, rtol=1e-9, atol=0)


@pytest.mark.parametrize("sigma", [0.8, 2.0, 5.0])
@pytest.mark.parametrize(
    "num_train, batch_size, max_degree", [(140, 70, 2), (500, 37, 6), (30, 29, 9)]
)
def test_matches_direct_summation(sigma, num_train, batch_size, max_degree):
    orders = np.array([1.25, 2.0, 3.5, 8.0, 20.0])
    k_prime = max_degree + 1
    i = np.arange(k_prime + 1)
    pmf = hypergeom.pmf(i, num_train, k_prime, batch_size)
    expected = [
        np.log(np.sum(pmf * np.exp((a - 1) * a / (2 * sigma**2) * (i / k_prime) ** 2))) / (a - 1)
        for a in orders
    ]
    got = compute_rdp_fdp(sigma, num_train, batch_size, max_degree, 3, orders)
    # Linear-space log(1 + small) loses ~1e-12 absolute precision.
    np.testing.assert_allclose(got, 3 * np.array(expected), rtol=1e-8, atol=1e-11)


def test_epsilon_increases_with_steps():
    eps = [_epsilon(2.0, 140, 70, 2, t) for t in (1, 10, 100, 1000)]
    assert np.all(np.diff(eps) > 0)


def test_epsilon_decreases_with_noise_multiplier():
    eps = [_epsilon(s, 140, 70, 2, 100) for s in (0.5, 1.0, 2.0, 4.0, 8.0)]
    assert np.all(np.diff(eps) < 0)


def test_epsilon_increases_with_degree_at_fixed_noise_std():
    # Fixed noise std / (2C) = 3: the multiplier sigma = 3 / K' shrinks as K grows.
    eps = [_epsilon(3.0 / (k + 1), 140, 70, k, 100) for k in range(6)]
    assert np.all(np.diff(eps) > 0)


def test_epsilon_decreases_with_degree_at_fixed_multiplier():
    # At fixed sigma = std / (2K'C) the fraction rho / K' concentrates as K' grows.
    eps = [_epsilon(2.0, 140, 70, k, 100) for k in range(6)]
    assert np.all(np.diff(eps) < 0)


def test_rdp_is_linear_in_steps():
    one = compute_rdp_fdp(1.3, 200, 20, 3, 1, ORDERS)
    np.testing.assert_allclose(compute_rdp_fdp(1.3, 200, 20, 3, 250, ORDERS), 250 * one, rtol=1e-12)


def test_full_batch_is_gaussian_mechanism():
    # B = N: rho = K' always, so each step is a Gaussian mechanism, alpha / (2 sigma^2).
    orders = np.array([1.5, 2.0, 10.0])
    got = compute_rdp_fdp(2.0, 40, 40, 3, 5, orders)
    np.testing.assert_allclose(got, 5 * orders / (2 * 2.0**2), rtol=1e-12)


def test_more_terms_than_examples():
    # K' = 6 > N = 2: both examples are always affected, rho = 2.
    orders = np.array([2.0, 5.0])
    got = compute_rdp_fdp(1.0, 2, 2, 5, 1, orders)
    np.testing.assert_allclose(got, orders / 2 * (2 / 6) ** 2, rtol=1e-12)


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        (dict(noise_multiplier=0.0), np.inf),
        (dict(batch_size=0), 0.0),
        (dict(steps=0), 0.0),
        (dict(noise_multiplier=np.inf), 0.0),
        (dict(noise_multiplier=0.0, batch_size=0), 0.0),
    ],
)
def test_edge_cases(kwargs, expected):
    args = dict(noise_multiplier=1.0, num_train=100, batch_size=10, max_degree=2, steps=10)
    args.update(kwargs)
    got = compute_rdp_fdp(orders=ORDERS, **args)
    assert got.shape == ORDERS.shape
    assert np.all(got == expected)


def test_large_order_small_sigma_does_not_overflow():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = compute_rdp_fdp(0.01, 140, 70, 2, 100, [1024.0])
        mixed = compute_rdp_fdp(1e-154, 140, 70, 2, 1, [1.5, 1024.0])
        huge = compute_rdp_fdp(1e-200, 140, 70, 2, 1, [2.0])
    assert np.isfinite(big[0]) and big[0] > 1e8
    assert np.isfinite(mixed[0]) and mixed[1] == np.inf
    assert huge[0] == np.inf


def test_orders_shape_is_kept():
    assert compute_rdp_fdp(1.0, 100, 10, 2, 1, 2.0).shape == ()
    assert compute_rdp_fdp(1.0, 100, 10, 2, 1, np.full((2, 3), 2.0)).shape == (2, 3)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(batch_size=101), ValueError, "batch_size must be <= num_train"),
        (dict(num_train=0, batch_size=0), ValueError, "num_train must be >= 1"),
        (dict(max_degree=-1), ValueError, "max_degree must be >= 0"),
        (dict(steps=1.5), TypeError, "steps must be an int"),
        (dict(noise_multiplier=-1.0), ValueError, "noise_multiplier must be >= 0"),
        (dict(noise_multiplier=np.nan), ValueError, "noise_multiplier must be >= 0"),
        (dict(orders=[1.0, 2.0]), ValueError, "orders must be"),
        (dict(orders=[]), ValueError, "orders must be"),
    ],
)
def test_invalid_arguments(kwargs, error, match):
    args = dict(noise_multiplier=1.0, num_train=100, batch_size=10, max_degree=2, steps=10,
                orders=ORDERS)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        compute_rdp_fdp(**args)


# ------------------------------------------------------------------------------ FDPPlan
def _direct_epsilon(sigma, n, b, k, t, delta, inference):
    """Independent: plain hypergeometric sum, plus alpha / (2 sigma^2) for the release."""
    kp, rdp = k + 1, []
    with np.errstate(over="ignore"):
        for a in FINE_ORDERS:
            moment = sum(hypergeom.pmf(i, n, kp, b) * np.exp((a - 1) * a / (2 * sigma**2)
                                                             * (i / kp) ** 2)
                         for i in range(min(kp, b) + 1))
            rdp.append(t * np.log(moment) / (a - 1) + (a / (2 * sigma**2) if inference else 0))
    return compute_epsilon(FINE_ORDERS, rdp, delta)[0]


@pytest.mark.parametrize("inference", [False, True])
def test_plan_epsilon_matches_an_independent_computation(inference):
    plan = plan_fdp(epsilon=np.inf, delta=1e-4, num_train=300, batch_size=64, steps=30,
                    max_degree=3, max_grad_norm=1.0, noise_multiplier=2.5,
                    private_inference=inference)
    assert isinstance(plan, PrivacyPlan) and plan.private and plan.dp_event() is None
    assert plan.training.sampling == "without_replacement" and plan.training.sensitivity == 8
    expected = _direct_epsilon(2.5, 300, 64, 3, 30, 1e-4, inference)
    assert plan.epsilon(1e-4) == pytest.approx(expected, rel=1e-9)
    assert plan.epsilon(1e-4, 10, inference=False) == pytest.approx(
        _direct_epsilon(2.5, 300, 64, 3, 10, 1e-4, False), rel=1e-9)
    assert len(plan.events) == 1 + inference


def test_plan_calibrates_within_budget_and_check_refuses_a_given_multiplier():
    common = dict(delta=1e-4, num_train=300, batch_size=64, steps=30, max_degree=3,
                  max_grad_norm=1.0, private_inference=True)
    plan = plan_fdp(epsilon=3.0, **common)
    assert 0.98 * 3.0 <= check_plan(plan, 3.0, 1e-4, context="t") <= 3.0
    low = plan_fdp(epsilon=3.0, noise_multiplier=0.5 * plan.noise_multiplier, **common)
    with pytest.raises(PrivacyBudgetError, match="budget epsilon=3"):
        check_plan(low, 3.0, 1e-4, context="t")
    free = plan_fdp(epsilon=np.inf, **common)
    assert not free.private and free.epsilon(1e-4) == np.inf and free.events == ()


def test_plan_refuses_a_mechanism_the_bound_does_not_model():
    with pytest.raises(ValueError, match="without replacement"):
        FDPPlan(DPSGDPlan("poisson", 100, 10, 5, 1.0, 1.0, sensitivity=6.0), max_degree=2)
    with pytest.raises(ValueError, match="sensitivity 2"):
        FDPPlan(DPSGDPlan("without_replacement", 100, 10, 5, 1.0, 1.0, sensitivity=2.0),
                max_degree=2)


def test_accountant_and_plan_state_one_relation():
    doc = " ".join(compute_rdp_fdp.__doc__.split())
    assert FDP_RELATION in doc
    assert "data-independent" not in doc and "add/remove" not in doc
    assert "data-dependent" in doc
    plan = plan_fdp(epsilon=1.0, delta=1e-4, num_train=100, batch_size=10, steps=5,
                    max_degree=2, max_grad_norm=1.0)
    assert plan.relation.startswith(FDP_RELATION) and "K+1 = 3" in plan.relation


# ---------------------------------------------------------------- the inference release
def _exact(encodings, rows):
    out = release_neighbour_sums(torch.as_tensor(encodings, dtype=torch.float32), rows,
                                 noise_multiplier=0.0, max_degree=3,
                                 generator=RandomStreams(0).torch("noise"))
    return np.hstack([out.sums, out.counts[:, None]])


def test_release_sensitivity_covers_replacing_a_node_by_an_isolated_node():
    # Worst case: every encoding at the clipping norm, node 0 in 3 other stars and with 3
    # in-neighbours of its own. Replacing it by an isolated node empties its row and removes
    # it from the others; the change must equal the declared sensitivity (own row charged).
    k, hidden = 3, 5
    encodings = np.ones((8, hidden))
    edges = [(1, 0), (2, 0), (3, 0), (0, 4), (0, 5), (0, 6), (7, 1)]  # (source, target)
    target, source = zip(*[(t, s) for s, t in edges])
    rows = sp.csr_matrix((np.ones(len(edges)), (target, source)), shape=(8, 8))
    isolated = rows.tolil()
    isolated[0, :] = 0
    isolated[:, 0] = 0
    before, after = _exact(encodings, rows), _exact(encodings, sp.csr_matrix(isolated))
    change = np.linalg.norm(before - after)
    assert change == pytest.approx(inference_sensitivity(k, hidden), rel=1e-6)
    assert change > np.sqrt(k * (hidden + 1))  # the old bound ignored the own row
    # Random encodings are clipped, so the change never exceeds the sensitivity.
    rng = np.random.default_rng(0)
    for _ in range(20):
        encodings = rng.normal(scale=3.0, size=(8, hidden))
        before, after = _exact(encodings, rows), _exact(encodings, sp.csr_matrix(isolated))
        assert np.linalg.norm(before - after) <= inference_sensitivity(k, hidden) * (1 + 1e-6)


def test_release_noise_has_the_declared_std_and_the_bound_is_checked():
    rows = sp.csr_matrix((np.ones(2000), (np.arange(2000), np.arange(1, 2001) % 2000)),
                         shape=(2000, 2000))
    encodings = torch.zeros(2000, 4)
    out = release_neighbour_sums(encodings, rows, noise_multiplier=0.1, max_degree=3,
                                 generator=RandomStreams(0).torch("noise"))
    assert out.sums.std() == pytest.approx(0.1 * inference_sensitivity(3, 4), rel=0.03)
    assert out.counts.min() >= 0 and out.counts.max() <= 3
    hub = sp.csr_matrix((np.ones(4), ([1, 2, 3, 4], [0, 0, 0, 0])), shape=(5, 5))
    with pytest.raises(ValueError, match="at most max_degree=3"):
        release_neighbour_sums(torch.zeros(5, 4), hub, noise_multiplier=1.0, max_degree=3,
                               generator=RandomStreams(0).torch("noise"))
