"""The order search gives the whole grid's epsilon, from a fraction of its orders.

The independent computation is dp-accounting's curve on all of ``DEFAULT_ORDERS``,
converted by ``epsilon_from_rdp``. The longer sweep (1260 plans) is an audit:
``python -m pytest -q -m audit tests/audits/test_order_search.py``.
"""

import functools
import itertools
import math

import numpy as np
import pytest

import skdpgraph.privacy._rdp_orders as orders_module
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
    progressive_stages,
    without_replacement_dpsgd_event,
)
from skdpgraph.privacy._gap_plan import _GAPSettings, _plan_maker, plan_gap
from skdpgraph.privacy._rdp_orders import LazyRdpCurve, OrderHint, search_epsilon

# (event, relation) of one step; chosen to include the hard shapes: orders below 2 that do
# not converge (q=0.05, sigma=0.4) and a conversion that wobbles between 2 and 3
# (q=0.5, sigma=4 over 10^4 steps).
_POISSON = [(q, sigma) for q, sigma in itertools.product((0.01, 0.05, 0.5, 1.0),
                                                         (0.4, 1.0, 4.0, 20.0))]
_WOR = [(1000, batch, sigma) for batch, sigma in itertools.product((10, 200), (0.7, 2.0, 10.0))]
STEPS = (1, 100, 10_000)
DELTAS = (1e-5, 1e-8)


@functools.lru_cache(maxsize=None)
def _curves():
    """(name, one step's event, relation, its whole-grid curve) for every plan."""
    out = []
    for q, sigma in _POISSON:
        event = poisson_dpsgd_event(sigma, q, 1)
        out.append((f"poisson q={q} sigma={sigma}", event, None, compute_rdp(event)))
    for n, batch, sigma in _WOR:
        event = without_replacement_dpsgd_event(sigma, n, batch, 1)
        out.append((f"wor {batch}/{n} sigma={sigma}", event, REPLACE_ONE,
                    compute_rdp(event, relation=REPLACE_ONE)))
    return out


def _mismatches():
    """Every (plan, steps, delta) where the search differs from the whole grid."""
    found = []
    for name, event, relation, full in _curves():
        for steps, delta in itertools.product(STEPS, DELTAS):
            expected = epsilon_from_rdp(steps * full, delta)
            got = search_epsilon(lambda i: steps * full[i], delta)
            assert got >= expected  # a minimum over fewer orders: never below the grid's
            if got != expected:
                found.append((name, steps, delta, got, expected))
    return found


def test_search_equals_the_whole_grid():
    assert _mismatches() == []


def test_a_ladder_without_the_small_integers_is_caught(monkeypatch):
    """Broken variant: the coarse scan on geometric orders alone misses the minimum."""
    def geometric(orders):
        targets = orders[0] * 1.5 ** np.arange(
            math.ceil(math.log(orders[-1] / orders[0]) / math.log(1.5)) + 1)
        return sorted(set(np.minimum(np.searchsorted(orders, targets),
                                     len(orders) - 1).tolist()))

    monkeypatch.setattr(orders_module, "_ladder", geometric)
    assert _mismatches()


def test_a_search_without_the_bisection_is_caught(monkeypatch):
    """Broken variant: the coarse minimum alone is above the grid's on most plans."""
    monkeypatch.setattr(orders_module, "_bisect_slope", lambda *args: None)
    assert len(_mismatches()) > 10


def test_a_bisection_that_treats_inf_as_large_is_caught(monkeypatch):
    """Broken variant: orders below 2 that do not converge (inf) send it the wrong way."""
    def inf_is_large(epsilon_at, low, high, center):
        while low < high:
            middle = (low + high) // 2
            here, right = epsilon_at(middle, middle + 1)
            low, high = (low, middle) if here <= right else (middle + 1, high)

    monkeypatch.setattr(orders_module, "_bisect_slope", inf_is_large)
    assert _mismatches()


# The running epsilon after each epoch of a fit: steps one epoch apart, or growing faster.
_SEQUENCES = (range(1, 40), [int(1.3 ** k) for k in range(1, 36)])
# One step's conversion is least at the grid's last order (1024), and the RDP of the
# orders above 256 is not monotone: a descent from the end would stay there.
_TOP_OF_THE_GRID = without_replacement_dpsgd_event(50.0, 1000, 10, 1)


def _hinted_mismatches(curves):
    """Every (plan, delta, steps) where a search hinted by the last one along a sequence
    differs from the whole grid."""
    found = []
    for name, full in curves:
        for delta, sequence in itertools.product(DELTAS, _SEQUENCES):
            hint = OrderHint()
            for steps in sequence:
                expected = epsilon_from_rdp(steps * full, delta)
                got = search_epsilon(lambda i: steps * full[i], delta, hint=hint)
                assert got >= expected  # a minimum over fewer orders: never below the grid's
                if got != expected:
                    found.append((name, delta, steps, got, expected))
    return found


def _top_of_the_grid():
    return [("top of the grid", compute_rdp(_TOP_OF_THE_GRID, relation=REPLACE_ONE))]


def test_hinted_search_equals_the_whole_grid_along_a_fit():
    curves = [(name, full) for name, _, _, full in _curves()] + _top_of_the_grid()
    assert _hinted_mismatches(curves) == []


def test_a_descent_that_ignores_the_integer_orders_is_caught(monkeypatch):
    """Broken variant: between two integers the fractional orders' bound can lie above
    both (q=0.5), so a walk to the next order alone stops at the wrong integer."""
    def next_orders_only(position, integers, size):
        return [p for p in (position - 1, position + 1) if 0 <= p < size]

    monkeypatch.setattr(orders_module, "_neighbours", next_orders_only)
    assert _hinted_mismatches([(name, full) for name, _, _, full in _curves()])


def test_a_descent_from_the_end_of_the_grid_is_caught(monkeypatch):
    """Broken variant: trusting a hint at the grid's last order keeps it there."""
    monkeypatch.setattr(orders_module, "_inside", lambda position, size: True)
    assert _hinted_mismatches(_top_of_the_grid())


def test_hinted_search_evaluates_a_few_orders():
    full = compute_rdp(poisson_dpsgd_event(1.0, 0.01, 1))
    asked = {"hinted": [], "whole": []}
    hint = OrderHint()
    for steps in range(100, 2000, 100):
        search_epsilon(lambda i: asked["hinted"].append(len(i)) or steps * full[i], 1e-5,
                       hint=hint)
        search_epsilon(lambda i: asked["whole"].append(len(i)) or steps * full[i], 1e-5)
    assert sum(asked["hinted"]) < sum(asked["whole"]) / 2
    assert hint.position is not None and DEFAULT_ORDERS[hint.position] > 1


def test_lazy_curve_computes_each_order_once_and_few_of_them(counted_orders):
    asked = counted_orders
    event = poisson_dpsgd_event(1.1, 0.02, 1)
    curve = LazyRdpCurve(event)
    for steps in (10, 100, 1000, 10_000):
        assert (search_epsilon(lambda i: steps * curve.at(i), 1e-5)
                == compute_epsilon(poisson_dpsgd_event(1.1, 0.02, steps), 1e-5))
    assert len(asked) == len(set(asked)) == curve.known
    assert curve.known < len(DEFAULT_ORDERS) // 2


def test_integer_orders_are_a_looser_bound():
    event = poisson_dpsgd_event(1.0, 0.05, 1)
    full = compute_rdp(event)
    integers = DEFAULT_ORDERS == np.round(DEFAULT_ORDERS)
    for steps in (10, 1000):
        expected = epsilon_from_rdp(steps * full[integers], 1e-5,
                                    orders=DEFAULT_ORDERS[integers])
        got = search_epsilon(lambda i: steps * full[i], 1e-5, integer_orders=True)
        assert got == expected >= epsilon_from_rdp(steps * full, 1e-5)


@pytest.mark.parametrize("sampling", ["poisson", "without_replacement"])
@pytest.mark.parametrize("epsilon", [0.5, 8.0])
def test_calibrated_plan_reports_the_whole_grid_epsilon(sampling, epsilon):
    plan = plan_dpsgd(epsilon=epsilon, delta=1e-5, sampling=sampling, num_examples=3001,
                      batch_size=301, steps=257, max_grad_norm=1.0)
    expected = compute_epsilon(plan.dp_event(), 1e-5, relation=plan.relation)
    assert plan.epsilon(1e-5) == expected
    assert 0.99 * epsilon <= expected <= epsilon


def test_gap_node_plan_reports_the_whole_grid_epsilon():
    plan = plan_gap(epsilon=3.0, delta=1e-6, privacy_level="node", hops=2, directed=False,
                    num_examples=2003, batch_size=257, epochs=7, encoder_epochs=9,
                    max_grad_norm=1.0, max_degree=20, stages=progressive_stages)
    expected = compute_epsilon(plan.dp_event(), 1e-6)
    assert plan.epsilon(1e-6) == expected
    assert 0.99 * 3.0 <= expected <= 3.0


def test_calibration_from_an_upper_bound_meets_the_target_and_fails_closed():
    def epsilon_for(sigma):
        return compute_epsilon(poisson_dpsgd_event(sigma, 0.03, 400), 1e-5)

    plain = calibrate_noise_multiplier(epsilon_for, 2.0)
    looser = calibrate_noise_multiplier(epsilon_for, 2.0,
                                        upper_bound_for=lambda s: 1.05 * epsilon_for(s))
    assert looser == pytest.approx(plain, rel=0.02)
    assert 0.99 * 2.0 <= epsilon_for(looser) <= 2.0
    # A wrong "upper bound" (below the truth) only costs evaluations: the result is
    # still checked on epsilon_for.
    wrong = calibrate_noise_multiplier(epsilon_for, 2.0,
                                       upper_bound_for=lambda s: 0.5 * epsilon_for(s))
    assert 0.99 * 2.0 <= epsilon_for(wrong) <= 2.0


def test_calibration_falls_back_when_only_the_bound_is_out_of_reach():
    # The bound needs a multiplier above 1e6; the true curve does not.
    sigma = calibrate_noise_multiplier(lambda s: 1.0 / s, 1e-6 * 1.5,
                                       upper_bound_for=lambda s: 3.0 / s)
    assert 1.0 / sigma <= 1.5e-6
    with pytest.raises(PrivacyBudgetError):
        calibrate_noise_multiplier(lambda s: 1.0 / s, 1e-7, upper_bound_for=lambda s: 3.0 / s)


def test_calibration_from_the_bound_lands_within_the_tolerance_in_two_grid_evaluations():
    """From the bound's answer, the first step follows the bound's slope to the goal, and a
    multiplier within the tolerance ends the search (node-level ProGAP on Cora's split:
    three grid evaluations before)."""
    settings = _GAPSettings("node", 1, False, 2031, 256, 10, 10, 1.0, 30, None,
                            progressive_stages(1))
    make = _plan_maker(settings, 8.0, 3.69e-5, "test")
    grid, bound = [], []
    sigma = calibrate_noise_multiplier(
        lambda s: grid.append(s) or make(s).epsilon(3.69e-5), 8.0,
        upper_bound_for=lambda s: bound.append(s) or make(s).epsilon(3.69e-5,
                                                                     integer_orders=True))
    assert len(grid) == 2 and grid[-1] == sigma and len(bound) >= 3
    assert 0.99 * 8.0 <= make(sigma).epsilon(3.69e-5) <= 8.0


@pytest.mark.parametrize("sampling", ["poisson", "without_replacement"])
def test_calibrated_plans_spend_99_to_100_percent_of_their_budget(sampling):
    for n, batch, steps, epsilon in itertools.product((1000, 20000), (64, 512), (50, 2000),
                                                      (0.5, 8.0)):
        plan = plan_dpsgd(epsilon=epsilon, delta=1e-5, sampling=sampling, num_examples=n,
                          batch_size=batch, steps=steps, max_grad_norm=1.0)
        spent = compute_epsilon(plan.dp_event(), 1e-5, relation=plan.relation)
        assert 0.99 * epsilon <= spent <= epsilon, (n, batch, steps, epsilon, spent)
