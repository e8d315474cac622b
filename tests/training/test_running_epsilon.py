"""Every privacy plan's running epsilon, the one the training loop's records state."""

import inspect
import math

import pytest

from skdpgraph.privacy import (DPSGDPlan, FDPPlan, GAPPlan, LocalDPPlan, LocalRandomiser,
                               PrivacyPlan, UntilBudgetPlan, plan_dpsgd, plan_fdp, plan_gap,
                               plan_until_budget)

DELTA = 1e-5


def _dpsgd(epsilon=4.0):
    return plan_dpsgd(epsilon=epsilon, delta=DELTA, sampling="poisson", num_examples=200,
                      batch_size=20, steps=50, max_grad_norm=1.0)


def _fdp(epsilon=4.0):
    return plan_fdp(epsilon=epsilon, delta=DELTA, num_train=200, batch_size=50, steps=40,
                    max_degree=2, max_grad_norm=1.0)


def _gap(epsilon=4.0):
    return plan_gap(epsilon=epsilon, delta=DELTA, privacy_level="node", hops=2, directed=False,
                    num_examples=200, batch_size=50, epochs=2, encoder_epochs=2,
                    max_grad_norm=1.0, max_degree=4)


def _local(epsilon=2.0):
    return LocalDPPlan((LocalRandomiser("labels", "GRR over 3 classes", epsilon),))


def _until_budget():
    given = plan_dpsgd(epsilon=math.inf, delta=DELTA, sampling="poisson", num_examples=200,
                       batch_size=20, steps=400, max_grad_norm=1.0, noise_multiplier=2.0)
    return plan_until_budget(given, 2.0, DELTA, context="test")


def test_every_plan_offers_the_protocols_running_epsilon():
    expected = list(inspect.signature(PrivacyPlan.running_epsilon).parameters)
    for plan_type in (DPSGDPlan, FDPPlan, GAPPlan, LocalDPPlan, UntilBudgetPlan):
        assert list(inspect.signature(plan_type.running_epsilon).parameters) == expected
    assert _gap(math.inf).running_epsilon(DELTA, "classifier", 10) == math.inf


@pytest.mark.parametrize("steps", [0, 10, 50])
def test_dpsgd_running_epsilon_is_the_plans_epsilon_after_those_steps(steps):
    plan = _dpsgd()
    assert plan.running_epsilon(DELTA, "classifier", steps) == plan.epsilon(DELTA, steps)
    assert plan.running_epsilon(DELTA, "classifier", steps, integer_orders=True) == (
        plan.epsilon(DELTA, steps, integer_orders=True))


def test_until_budget_running_epsilon_stays_within_the_budget():
    plan = _until_budget()
    assert isinstance(plan, UntilBudgetPlan)
    assert plan.running_epsilon(DELTA, "classifier", plan.steps) == plan.epsilon(DELTA) <= 2.0


def test_fdp_running_epsilon_leaves_out_the_inference_release():
    plan = _fdp()
    with_release = FDPPlan(plan.training, plan.max_degree, private_inference=True)
    assert with_release.running_epsilon(DELTA, "classifier", 20) == (
        plan.epsilon(DELTA, 20, inference=False))
    assert with_release.running_epsilon(DELTA, "classifier", 40) < with_release.epsilon(DELTA)


def test_local_running_epsilon_is_spent_before_training():
    assert _local(2.0).running_epsilon(0.0, "classifier", 0) == 2.0
    assert _local(2.0).running_epsilon(0.0, "classifier", 100) == 2.0


@pytest.mark.parametrize("make", [_dpsgd, _fdp, _local])
def test_non_private_plans_run_at_infinite_epsilon(make):
    plan = make(math.inf)
    assert not plan.private
    assert plan.running_epsilon(DELTA, "classifier", 10) == math.inf
    assert isinstance(plan, PrivacyPlan)
