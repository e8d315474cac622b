"""One step's RDP curve of a DP-SGD plan is computed once per setting and order, not per plan."""

import numpy as np

from skdpgraph.privacy import DEFAULT_ORDERS, DPSGDPlan, plan_dpsgd
from skdpgraph.privacy._accountant import compute_rdp
from skdpgraph.privacy._protocol import check_plan


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
