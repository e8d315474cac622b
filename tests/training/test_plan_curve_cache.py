"""The one-step RDP curve of a DP-SGD plan is computed once per setting, not once per plan."""

import numpy as np
import pytest

import skdpgraph.privacy._plan as plan_module
from skdpgraph.privacy import DPSGDPlan, plan_dpsgd
from skdpgraph.privacy._accountant import compute_rdp
from skdpgraph.privacy._protocol import check_plan


@pytest.fixture
def counted_rdp(monkeypatch):
    calls = []

    def counting(event, **kwargs):
        calls.append(event)
        return compute_rdp(event, **kwargs)

    monkeypatch.setattr(plan_module, "compute_rdp", counting)
    return calls


def test_check_after_calibration_reuses_the_calibrated_curve(counted_rdp):
    # Settings no other test uses, so the caches start cold.
    plan = plan_dpsgd(epsilon=3.21, delta=1e-5, sampling="poisson", num_examples=4321,
                      batch_size=123, steps=77, max_grad_norm=1.0)
    assert counted_rdp, "calibration evaluates the accountant"
    evaluated = len(counted_rdp)
    assert check_plan(plan, 3.21, 1e-5, context="test") <= 3.21
    plan.epsilon(1e-5, steps=10)
    assert len(counted_rdp) == evaluated  # neither the check nor the running epsilon recompute


def test_cached_curve_is_the_accountants_and_read_only(counted_rdp):
    args = dict(sampling="without_replacement", num_examples=999, batch_size=77, steps=5)
    first = DPSGDPlan(**args, noise_multiplier=1.234, max_grad_norm=0.5, sensitivity=2.0)
    other = DPSGDPlan(**{**args, "steps": 50}, noise_multiplier=1.234, max_grad_norm=3.0,
                      sensitivity=2.0)
    assert first.epsilon(1e-5) < other.epsilon(1e-5)
    assert len(counted_rdp) == 1  # steps and C do not change one step's curve
    expected = compute_rdp(first.dp_event(1), relation=first.relation)
    np.testing.assert_array_equal(first._step_rdp, expected)
    with pytest.raises(ValueError):
        first._step_rdp[0] = 0.0  # shared between plans: nobody may change it
