"""The loop's callbacks: what each hook receives, their order, and the running epsilon."""

import math

import pytest
import torch
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from torch import nn

from skdpgraph.privacy import DPSGDPlan
from skdpgraph.training import (Callback, EpsilonTracker, Generators, History, OptimizerSettings,
                                TensorExamples, train_dpsgd)

DELTA = 1e-5


def _loss(module, batch):
    x, y = batch
    logits = module(x)
    return nn.functional.cross_entropy(logits, y, reduction="none"), logits.argmax(-1) == y


def _train(plan, callbacks, n=40):
    g = torch.Generator().manual_seed(0)
    data = TensorExamples(torch.randn(n, 4, generator=g), torch.randint(0, 3, (n,), generator=g))
    torch.manual_seed(0)
    return train_dpsgd(nn.Linear(4, 3), data, _loss, plan, optimizer=OptimizerSettings(lr=0.1),
                       generators=Generators(torch.Generator().manual_seed(1),
                                             torch.Generator().manual_seed(2)),
                       callbacks=callbacks)


class _Recorder(Callback):
    """Writes every hook it receives, with what it was given, into a shared log."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    def on_train_begin(self, module, *, epochs, **kwargs):
        self.log.append((self.name, "begin", epochs))

    def on_epoch_end(self, module, record, *, steps, **kwargs):
        assert module.training  # the loop hands the module in train mode
        self.log.append((self.name, "epoch", record["epoch"], steps, dict(record)))

    def on_train_end(self, module, history, **kwargs):
        assert not module.training
        self.log.append((self.name, "end", len(history)))


def test_a_custom_callback_receives_each_epochs_record():
    plan = DPSGDPlan("poisson", 40, 10, 12, noise_multiplier=1.0, max_grad_norm=1.0)
    log = []
    result = _train(plan, [_Recorder("a", log)])
    epochs = [entry for entry in log if entry[1] == "epoch"]
    assert log[0] == ("a", "begin", 3) and log[-1] == ("a", "end", 3)
    assert [entry[2] for entry in epochs] == [1, 2, 3]
    assert [entry[3] for entry in epochs] == [4, 8, 12]  # steps done at each epoch's end
    assert [entry[4] for entry in epochs] == result.history
    assert all(set(record) == {"stage", "epoch", "loss", "train_accuracy",
                               "validation_accuracy", "epsilon"} for record in result.history)


def test_callbacks_run_in_the_order_given_at_every_hook():
    plan = DPSGDPlan("poisson", 40, 20, 4, noise_multiplier=None, max_grad_norm=None)
    log = []
    _train(plan, [_Recorder("first", log), _Recorder("second", log)])
    assert [(entry[0], entry[1]) for entry in log] == [
        ("first", "begin"), ("second", "begin"),
        ("first", "epoch"), ("second", "epoch"), ("first", "epoch"), ("second", "epoch"),
        ("first", "end"), ("second", "end")]


def test_a_callback_may_fill_in_the_record_for_the_history():
    class Validation(Callback):
        def on_epoch_end(self, module, record, **kwargs):
            record["validation_accuracy"] = 0.5

    plan = DPSGDPlan("poisson", 40, 20, 4, noise_multiplier=None, max_grad_norm=None)
    assert [r["validation_accuracy"] for r in _train(plan, [Validation()]).history] == [0.5] * 2


def test_history_callback_keeps_every_record_in_order():
    plan = DPSGDPlan("poisson", 40, 10, 12, noise_multiplier=1.0, max_grad_norm=1.0)
    history = History()
    result = _train(plan, [history])
    assert history.records == result.history and [r["epoch"] for r in history.records] == [1, 2, 3]


def _dp_accounting_epsilon(plan, steps):
    """The running epsilon of ``plan`` after ``steps`` steps, from dp-accounting alone."""
    accountant = rdp.RdpAccountant()
    accountant.compose(dp_event.PoissonSampledDpEvent(
        plan.batch_size / plan.num_examples, dp_event.GaussianDpEvent(plan.noise_multiplier)),
        steps)
    return accountant.get_epsilon(DELTA)


@pytest.mark.parametrize("watched", [True, False])
def test_epsilon_tracker_records_the_plans_running_epsilon_at_each_epoch_end(watched):
    """Live (another callback reads the epsilon) each record is the plan's running epsilon
    after the epoch's steps, as dp-accounting computes it; after the loop, the last one is,
    and every earlier one is an upper bound on it."""
    plan = DPSGDPlan("poisson", 40, 10, 12, noise_multiplier=0.8, max_grad_norm=1.0)
    tracker = EpsilonTracker(lambda steps: plan.running_epsilon(DELTA, "classifier", steps))
    result = _train(plan, [tracker, _Recorder("reader", [])] if watched else [tracker])
    running = [plan.running_epsilon(DELTA, "classifier", steps) for steps in (4, 8, 12)]
    independent = [_dp_accounting_epsilon(plan, steps) for steps in (4, 8, 12)]
    epsilons = [record["epsilon"] for record in result.history]
    assert running == pytest.approx(independent, rel=1e-6)
    assert epsilons[-1] == running[-1]
    if watched:
        assert epsilons == running
    assert all(e >= x for e, x in zip(epsilons, independent)) and epsilons == sorted(epsilons)


def test_without_a_tracker_the_epsilon_is_not_tracked():
    plan = DPSGDPlan("poisson", 40, 10, 8, noise_multiplier=0.8, max_grad_norm=1.0)
    assert all(math.isnan(r["epsilon"]) for r in _train(plan, []).history)
