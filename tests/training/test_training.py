"""The shared DP-SGD loop: sampling, clipping and noise as the plan says."""

import numpy as np
import pytest
import torch
from torch import nn

from skdpgraph.privacy import DPSGDPlan
from skdpgraph.sampling import FixedSizeWithoutReplacementSampler, PoissonSampler
from skdpgraph.training import (Callback, EpsilonTracker, Generators, OptimizerSettings,
                                ProgressBar, TensorExamples, train_dpsgd)

SGD = OptimizerSettings(lr=1.0, name="sgd")


def _loss(module, batch):
    x, y = batch
    out = module(x).squeeze(-1)
    return (out - y) ** 2, None


def _data(n=50):
    g = torch.Generator().manual_seed(0)
    return TensorExamples(torch.randn(n, 3, generator=g), torch.randn(n, generator=g))


def test_private_step_equals_clipped_sum_plus_noise_over_batch():
    """One SGD step: param change = -lr * (sum of clipped grads + noise) / batch_size."""
    torch.manual_seed(0)
    module = nn.Linear(3, 1)
    before = [p.detach().clone() for p in module.parameters()]
    data = _data(8)
    plan = DPSGDPlan("without_replacement", 8, 8, 1, noise_multiplier=0.5, max_grad_norm=0.1,
                     sensitivity=2.0)
    train_dpsgd(module, data, _loss, plan, optimizer=SGD,
                generators=Generators(torch.Generator().manual_seed(1),
                                      torch.Generator().manual_seed(2)))
    # recompute by hand
    reference = nn.Linear(3, 1)
    with torch.no_grad():
        for p, b in zip(reference.parameters(), before):
            p.copy_(b)
    grads = []
    for i in range(8):
        reference.zero_grad()
        x, y = data.batch(torch.tensor([i]), 0)
        _loss(reference, (x, y))[0].sum().backward()
        flat = torch.cat([p.grad.flatten() for p in reference.parameters()])
        grads.append(flat * min(1.0, 0.1 / (flat.norm() + 1e-6)))
    clipped_sum = torch.stack(grads).sum(0)
    noise_gen = torch.Generator().manual_seed(2)
    # One draw for all parameters, in parameter order, of std noise_multiplier * sens * C.
    noise = torch.randn(sum(p.numel() for p in reference.parameters()),
                        generator=noise_gen) * (0.5 * 2.0 * 0.1)
    expected = torch.cat([b.flatten() for b in before]) - (clipped_sum + noise) / 8
    after = torch.cat([p.detach().flatten() for p in module.parameters()])
    torch.testing.assert_close(after, expected, atol=1e-5, rtol=1e-4)


def test_noise_std_matches_plan_statistically():
    """With zero gradients, the update is pure noise with std noise_multiplier*sens*C/B."""
    module = nn.Linear(200, 50, bias=False)
    nn.init.zeros_(module.weight)
    data = TensorExamples(torch.zeros(10, 200), torch.zeros(10))
    plan = DPSGDPlan("without_replacement", 10, 10, 1, noise_multiplier=3.0, max_grad_norm=2.0,
                     sensitivity=2.0)
    train_dpsgd(module, data, lambda m, b: (m(b[0]).sum(-1) * 0, None), plan, optimizer=SGD,
                generators=Generators(torch.Generator().manual_seed(0),
                                      torch.Generator().manual_seed(1)))
    std = module.weight.detach().std().item()
    assert std == pytest.approx(3.0 * 2.0 * 2.0 / 10, rel=0.05)


def test_history_and_empty_poisson_batches():
    module = nn.Linear(3, 1)
    plan = DPSGDPlan("poisson", 50, 1, 30, noise_multiplier=1.0, max_grad_norm=1.0)
    result = train_dpsgd(module, _data(), _loss, plan, optimizer=OptimizerSettings(lr=0.1),
                         generators=Generators(torch.Generator().manual_seed(0)),
                         callbacks=[EpsilonTracker(lambda steps: float(steps))])
    assert [r["epoch"] for r in result.history] == [1]
    assert result.history[-1]["epsilon"] == 30.0  # after all 30 steps, empty batches included
    assert not hasattr(result.module, "_module") and not result.module.training


def test_running_epsilon_is_the_plans_or_a_bound_above_it_whoever_watches():
    """Live (for a bar or a callback) each epoch records the plan's epsilon after its steps;
    after the loop, the epochs before the last may record the cheaper bound on the integer
    orders, capped by the last epoch's epsilon. Either way an upper bound, never
    decreasing, the last one exact, and the run the same."""
    plan = DPSGDPlan("poisson", 50, 10, 25, noise_multiplier=0.6, max_grad_norm=1.0)
    ends = [5, 10, 15, 20, 25]  # 5 steps an epoch
    exact = [plan.epsilon(1e-5, s) for s in ends]
    bound = [plan.epsilon(1e-5, s, integer_orders=True) for s in ends]
    runs = {}
    for watched in ("verbose", "on_epoch", "neither"):
        seen = []
        tracker = EpsilonTracker(
            lambda steps: plan.epsilon(1e-5, steps),
            bound_at=lambda steps: plan.epsilon(1e-5, steps, integer_orders=True))
        watcher = {"verbose": [ProgressBar("DP-SGD")], "neither": [],
                   "on_epoch": [_Seen(seen)]}[watched]
        result = train_dpsgd(
            _seeded_linear(), _data(), _loss, plan, optimizer=OptimizerSettings(lr=0.1),
            generators=Generators(torch.Generator().manual_seed(0),
                                  torch.Generator().manual_seed(1)),
            callbacks=[tracker, *watcher])
        epsilons = [r["epsilon"] for r in result.history]
        if watched == "neither":
            assert epsilons == [min(b, exact[-1]) for b in bound[:-1]] + exact[-1:]
        else:
            assert epsilons == exact
        if watched == "on_epoch":
            assert seen == exact
        assert all(e >= x for e, x in zip(epsilons, exact)) and epsilons == sorted(epsilons)
        runs[watched] = result.module.weight.detach().clone()
    assert bound[-2] > exact[-2]  # the bound is looser: the check above compares two things
    weight, *others = runs.values()
    assert all(torch.equal(other, weight) for other in others)


def test_a_cap_known_in_advance_replaces_the_exact_search_after_the_loop():
    """Given the fit's epsilon as a cap, the deferred records are min(bound, cap), no exact
    search runs, and where the run is the whole fit the last record is the cap itself. A
    live run ignores the cap."""
    plan = DPSGDPlan("poisson", 50, 10, 25, noise_multiplier=0.6, max_grad_norm=1.0)
    ends = [5, 10, 15, 20, 25]
    exact = [plan.epsilon(1e-5, s) for s in ends]
    bound = [plan.epsilon(1e-5, s, integer_orders=True) for s in ends]
    searched = []

    def epsilon_at(steps):
        searched.append(steps)
        return plan.epsilon(1e-5, steps)

    def run(*watchers):
        searched.clear()
        tracker = EpsilonTracker(
            epsilon_at, bound_at=lambda steps: plan.epsilon(1e-5, steps, integer_orders=True),
            cap=exact[-1])
        return [r["epsilon"] for r in train_dpsgd(
            _seeded_linear(), _data(), _loss, plan, optimizer=OptimizerSettings(lr=0.1),
            generators=Generators(torch.Generator().manual_seed(0),
                                  torch.Generator().manual_seed(1)),
            callbacks=[tracker, *watchers]).history]

    assert run() == [min(b, exact[-1]) for b in bound] and searched == []
    assert run()[-1] == exact[-1] and all(e >= x for e, x in zip(run(), exact))
    assert run(_Seen([])) == exact and searched == ends


class _Seen(Callback):
    """A callback that keeps each record's epsilon as it sees it."""

    def __init__(self, seen):
        self.seen = seen

    def on_epoch_end(self, module, record, **kwargs):
        self.seen.append(record["epsilon"])


def _seeded_linear():
    torch.manual_seed(0)
    return nn.Linear(3, 1)


def test_non_private_run_uses_plain_gradients():
    module = nn.Linear(3, 1)
    x = torch.randn(50, 3, generator=torch.Generator().manual_seed(0))
    data = TensorExamples(x, x @ torch.tensor([1.0, -2.0, 0.5]))
    plan = DPSGDPlan("poisson", 50, 10, 40, noise_multiplier=None, max_grad_norm=None)
    result = train_dpsgd(module, data, _loss, plan, optimizer=OptimizerSettings(lr=0.1),
                         generators=Generators(torch.Generator().manual_seed(0)))
    assert result.history[-1]["loss"] < result.history[0]["loss"]


def test_samplers_follow_their_distributions():
    g = torch.Generator().manual_seed(0)
    sizes = [len(PoissonSampler(1000, 0.05, g).sample()) for _ in range(400)]
    assert np.mean(sizes) == pytest.approx(50, rel=0.05)
    assert np.std(sizes) == pytest.approx(np.sqrt(1000 * 0.05 * 0.95), rel=0.15)
    fixed = FixedSizeWithoutReplacementSampler(20, 7, g)
    counts = np.zeros(20)
    for _ in range(2000):
        batch = fixed.sample().numpy()
        assert len(batch) == 7 and len(np.unique(batch)) == 7
        counts[batch] += 1
    np.testing.assert_allclose(counts / 2000, 7 / 20, atol=0.04)


def test_wrong_example_count_is_refused():
    plan = DPSGDPlan("poisson", 51, 10, 1, noise_multiplier=None, max_grad_norm=None)
    with pytest.raises(ValueError, match="plan is for 51 examples but the set has 50"):
        train_dpsgd(nn.Linear(3, 1), _data(), _loss, plan, optimizer=OptimizerSettings(lr=0.1),
                    generators=Generators(torch.Generator()))


def test_clipping_is_per_subgraph_for_dense_gnns():
    """Ghost clipping on (batch, nodes, features) inputs clips each subgraph's gradient."""
    from skdpgraph.nn import DenseSubgraphGNN

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 4, 5, generator=g)
    adj = (torch.rand(6, 4, 4, generator=g) < 0.5).float() * (1 - torch.eye(4))
    mask, y = torch.ones(6, 4), torch.randint(0, 3, (6,), generator=g)
    data = TensorExamples(x, adj, mask, y)

    def loss_fn(module, batch):
        xb, ab, mb, yb = batch
        return nn.functional.cross_entropy(module(xb, ab, mb), yb, reduction="none"), None

    module = DenseSubgraphGNN(5, 8, 3, conv="gcn", num_layers=2)
    reference = DenseSubgraphGNN(5, 8, 3, conv="gcn", num_layers=2)
    reference.load_state_dict(module.state_dict())
    plan = DPSGDPlan("without_replacement", 6, 6, 1, noise_multiplier=1e-3, max_grad_norm=0.05,
                     sensitivity=2.0)
    train_dpsgd(module, data, loss_fn, plan, optimizer=SGD,
                generators=Generators(torch.Generator().manual_seed(1),
                                      torch.Generator().manual_seed(2)))
    clipped = []
    for i in range(6):
        reference.zero_grad()
        loss_fn(reference, data.batch(torch.tensor([i]), 0))[0].sum().backward()
        flat = torch.cat([p.grad.flatten() for p in reference.parameters()])
        assert flat.norm() > 0.05  # every example is actually clipped
        clipped.append(flat * 0.05 / (flat.norm() + 1e-6))
    noise_gen = torch.Generator().manual_seed(2)
    noise = torch.randn(sum(p.numel() for p in reference.parameters()),
                        generator=noise_gen) * (1e-3 * 2.0 * 0.05)
    before = torch.cat([p.detach().flatten() for p in reference.parameters()])
    after = torch.cat([p.detach().flatten() for p in module.parameters()])
    torch.testing.assert_close(after, before - (torch.stack(clipped).sum(0) + noise) / 6,
                               atol=1e-5, rtol=1e-4)


def test_each_step_draws_fresh_noise_in_stream_order():
    """Zero gradients, plain SGD, three steps: the parameters move by minus the sum of three
    consecutive draws from the noise stream, one per step (a draw kept and reused, as a
    cached buffer could do, would move them by three times the first)."""
    module = nn.Linear(4, 3)
    for p in module.parameters():
        nn.init.zeros_(p)
    data = TensorExamples(torch.zeros(6, 4), torch.zeros(6))
    plan = DPSGDPlan("without_replacement", 6, 6, 3, noise_multiplier=2.0, max_grad_norm=0.5)
    train_dpsgd(module, data, lambda m, b: (m(b[0]).sum(-1) * 0, None), plan, optimizer=SGD,
                generators=Generators(torch.Generator().manual_seed(0),
                                      torch.Generator().manual_seed(7)))
    stream = torch.Generator().manual_seed(7)
    size = sum(p.numel() for p in module.parameters())
    draws = [torch.empty(size).normal_(0.0, 2.0 * 0.5 / 6, generator=stream) for _ in range(3)]
    after = torch.cat([p.detach().flatten() for p in module.parameters()])
    torch.testing.assert_close(after, -sum(draws), atol=1e-6, rtol=1e-5)
    assert not torch.allclose(after, -3 * draws[0], atol=1e-3)
