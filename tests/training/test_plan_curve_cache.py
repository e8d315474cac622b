"""One step's RDP curve of a DP-SGD plan is computed once per setting and order, not per plan;
node-level GAP's multiplier is calibrated once per setting."""

import numpy as np

from skdpgraph.privacy import (DEFAULT_ORDERS, DPSGDPlan, plan_dpsgd, progressive_stages,
                               trained_head_stages, vote_head_stages)
from skdpgraph.privacy import _gap_plan
from skdpgraph.privacy._gap_plan import plan_gap
from skdpgraph.privacy._accountant import compute_rdp
from skdpgraph.privacy._plan_protocol import check_plan


def test_check_after_calibration_reuses_the_calibrated_curve(counted_orders):
    # Settings no other test uses, so the caches start cold.
    plan = plan_dpsgd(epsilon=3.21, delta=1e-5, sampling="poisson", num_examples=4321,
                      batch_size=123, steps=77, max_grad_norm=1.0)
    assert counted_orders, "calibration evaluates the accountant"
    evaluated = len(counted_orders)
    assert check_plan(plan, 3.21, 1e-5, context="test") <= 3.21
    assert len(counted_orders) == evaluated  # the check asks about the same orders again
    plan.epsilon(1e-5, steps=10)  # a running epsilon: a few orders more at most
    assert len(counted_orders) - evaluated < len(DEFAULT_ORDERS) // 4


def test_cached_curve_is_the_accountants_and_shared(counted_orders):
    args = dict(sampling="without_replacement", num_examples=999, batch_size=77, steps=5)
    first = DPSGDPlan(**args, noise_multiplier=1.234, max_grad_norm=0.5, sensitivity=2.0)
    other = DPSGDPlan(**{**args, "steps": 50}, noise_multiplier=1.234, max_grad_norm=3.0,
                      sensitivity=2.0)
    assert first.epsilon(1e-5) < other.epsilon(1e-5)
    assert first._step_curve is other._step_curve  # steps and C do not change one step's curve
    assert len(counted_orders) == len(set(counted_orders))  # no order computed twice
    expected = compute_rdp(first.dp_event(1), relation=first.relation)
    every = np.arange(len(DEFAULT_ORDERS))
    np.testing.assert_array_equal(first.step_rdp_at(every), expected)
    first.step_rdp_at(every)[0] = 0.0  # a copy: the shared curve cannot be changed
    assert first.step_rdp_at([0])[0] == expected[0]


# Settings no other test uses, so the caches start cold.
_NODE_GAP = dict(epsilon=2.34, delta=1e-6, privacy_level="node", hops=2, directed=False,
                 num_examples=3210, batch_size=321, epochs=3, encoder_epochs=4,
                 max_grad_norm=1.0, max_degree=7, stages=progressive_stages)
# Each changes the accounting, so each needs a multiplier of its own.
_CHANGES = (dict(hops=3), dict(num_examples=3000), dict(batch_size=300), dict(epochs=5),
            dict(encoder_epochs=6), dict(stages=trained_head_stages),
            dict(stages=vote_head_stages),
            dict(epsilon=3.0), dict(delta=1e-7))


def _off_target():
    """The changes of :data:`_CHANGES` whose plan does not spend 99-100% of its budget."""
    missed = []
    for change in _CHANGES:
        args = {**_NODE_GAP, **change}
        spent = plan_gap(**args).epsilon(args["delta"])
        if not 0.99 * args["epsilon"] <= spent <= args["epsilon"]:
            missed.append((change, spent))
    return missed


def test_node_level_gap_calibration_is_cached_per_setting(monkeypatch):
    calibrations = []
    calibrate = _gap_plan.calibrate_noise_multiplier
    monkeypatch.setattr(_gap_plan, "calibrate_noise_multiplier",
                        lambda *args, **kwargs: calibrations.append(1) or calibrate(*args,
                                                                                    **kwargs))
    first = plan_gap(**_NODE_GAP)
    again = plan_gap(**_NODE_GAP)
    assert len(calibrations) == 1 and again == first
    assert _off_target() == []
    assert len(calibrations) == 1 + len(_CHANGES)


def test_a_calibration_cache_keyed_on_the_budget_alone_is_caught(monkeypatch):
    """Broken variant: one multiplier per (epsilon, delta), whatever the plan."""
    calibrate = _gap_plan._calibrated_node_multiplier.__wrapped__
    by_budget = {}

    def keyed_on_the_budget(settings, epsilon, delta, context):
        if (epsilon, delta) not in by_budget:
            by_budget[epsilon, delta] = calibrate(settings, epsilon, delta, context)
        return by_budget[epsilon, delta]

    monkeypatch.setattr(_gap_plan, "_calibrated_node_multiplier", keyed_on_the_budget)
    plan_gap(**_NODE_GAP)
    assert len(_off_target()) >= 6
