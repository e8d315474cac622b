"""One-pass clipped gradient sums equal a per-example loop and Opacus' two-pass clipping."""

import pickle

import pytest
import torch
from torch import nn

import skdpgraph.training._clipped_sum as clipped_sum_module
from skdpgraph.training import ClippedSumModule
from skdpgraph.privacy import DPSGDPlan
from skdpgraph.training import (Generators, OptimizerSettings, Stepper, TensorExamples,
                                train_dpsgd)


class _Positions(nn.Module):
    """Linear layers on (batch, positions, features) inputs; ``shared`` is called twice."""

    def __init__(self, d_in, width, d_out):
        super().__init__()
        self.inner = nn.Linear(d_in, width)
        self.shared = nn.Linear(width, width)
        self.frozen = nn.Linear(width, width)
        self.frozen.weight.requires_grad_(False)  # its bias alone is trained
        self.unused = nn.Linear(width, 1)
        self.head = nn.Linear(width, d_out, bias=False)

    def forward(self, x):
        h = torch.tanh(self.inner(x))
        h = torch.tanh(self.shared(torch.tanh(self.shared(h))))
        return self.head(self.frozen(h).mean(1))


def _brute_force(module, loss_of, inputs, max_grad_norm):
    """Sum over examples of each example's gradient clipped to ``max_grad_norm``."""
    params = [p for p in module.parameters() if p.requires_grad]
    total = [torch.zeros_like(p) for p in params]
    for i in range(len(inputs[0])):
        grads = torch.autograd.grad(loss_of(module, [t[i:i + 1] for t in inputs]).sum(), params,
                                    allow_unused=True)
        grads = [torch.zeros_like(p) if g is None else g for g, p in zip(grads, params)]
        norm = torch.cat([g.flatten() for g in grads]).norm()
        factor = min(1.0, max_grad_norm / (float(norm) + 1e-6))
        total = [t + factor * g for t, g in zip(total, grads)]
    return total


def _cross_entropy(module, batch):
    x, y = batch
    return nn.functional.cross_entropy(module(x), y, reduction="none")


@pytest.mark.parametrize("model, x", [
    (lambda: nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3)), (7, 5)),
    # positions * (in + out) <= in * out: the Gram-matrix norms
    (lambda: _Positions(40, 32, 3), (6, 2, 40)),
    # and the explicit per-example gradients otherwise
    (lambda: _Positions(3, 4, 3), (6, 9, 3)),
], ids=["mlp", "positions-gram", "positions-explicit"])
@pytest.mark.parametrize("max_grad_norm", [1e-3, 1e3], ids=["clipped", "unclipped"])
def test_clipped_sum_equals_a_per_example_loop(model, x, max_grad_norm):
    torch.manual_seed(0)
    module = model()
    inputs = [torch.randn(*x), torch.randint(0, 3, (x[0],))]
    expected = _brute_force(module, _cross_entropy, inputs, max_grad_norm)
    wrapped = ClippedSumModule(module, max_grad_norm)
    wrapped.clipped_sum(_cross_entropy(wrapped, inputs))
    got = [p.grad for p in module.parameters() if p.requires_grad]
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, atol=1e-6, rtol=1e-5)


def test_clipped_sum_ignores_forward_passes_without_gradient():
    module = nn.Linear(3, 2)
    wrapped = ClippedSumModule(module, 1.0)
    with torch.no_grad():
        wrapped(torch.randn(4, 3))  # e.g. an evaluation between steps
    module(torch.randn(4, 3)).sum()  # the bare module, outside the wrapper
    x = torch.randn(5, 3)
    wrapped.clipped_sum(wrapped(x).sum(-1))
    expected = _brute_force(module, lambda m, b: m(b[0]).sum(-1), [x], 1.0)
    torch.testing.assert_close(module.weight.grad, expected[0])


def test_removing_the_recording_restores_the_layers():
    module = _Positions(3, 4, 2)
    wrapped = ClippedSumModule(module, 1.0)
    recorded = [layer for layer in module.modules() if "forward" in vars(layer)]
    assert recorded == [module.inner, module.shared, module.frozen, module.unused, module.head]
    wrapped.stop_recording()
    assert not any("forward" in vars(layer) for layer in module.modules())
    wrapped(torch.randn(2, 5, 3))
    assert wrapped._records == []  # nothing recorded any more
    pickle.loads(pickle.dumps(module))  # no bound recorder left on the layers


def test_clipped_sum_refuses_other_layers_and_non_batch_first_inputs():
    with pytest.raises(ValueError, match="nn.Linear"):
        ClippedSumModule(nn.Embedding(4, 2), 1.0)
    assert ClippedSumModule.supports(nn.Sequential(nn.Linear(2, 2), nn.ReLU()))
    assert not ClippedSumModule.supports(nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2)))
    wrapped = ClippedSumModule(nn.Linear(3, 1), 1.0)
    out = wrapped(torch.randn(4, 3)).sum(0)  # one "example" per feature column: wrong
    with pytest.raises(ValueError, match="batch must come first"):
        wrapped.clipped_sum(out.expand(2))


def _train(module, plan, steps_seed=1):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(3)
    data = TensorExamples(torch.randn(40, 5, generator=g), torch.randint(0, 3, (40,), generator=g))
    return train_dpsgd(module, data, lambda m, b: (_cross_entropy(m, b), None), plan,
                       optimizer=OptimizerSettings(lr=0.05),
                       generators=Generators(torch.Generator().manual_seed(steps_seed),
                                             torch.Generator().manual_seed(2))).module


@pytest.mark.parametrize("sampling, sensitivity", [("poisson", 1.0),
                                                   ("without_replacement", 2.0)])
def test_one_pass_training_equals_opacus_ghost_clipping(monkeypatch, sampling, sensitivity):
    """The same batches, clipping and noise: the same model as Opacus' two-pass path."""
    plan = DPSGDPlan(sampling, 40, 10, 12, noise_multiplier=0.8, max_grad_norm=0.05,
                     sensitivity=sensitivity)

    def mlp():
        torch.manual_seed(5)
        return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3))

    stepper = {}
    original = Stepper.__init__

    def remember(self, *args):
        original(self, *args)
        stepper["model"] = type(self.model).__name__

    monkeypatch.setattr(Stepper, "__init__", remember)
    one_pass = _train(mlp(), plan)
    assert stepper["model"] == "ClippedSumModule"
    monkeypatch.setattr(clipped_sum_module.ClippedSumModule, "supports",
                        staticmethod(lambda module: False))
    two_pass = _train(mlp(), plan)
    assert stepper["model"] == "GradSampleModuleFastGradientClipping"
    for a, b in zip(one_pass.parameters(), two_pass.parameters()):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    assert not any(hasattr(m, "_forward_hooks") and m._forward_hooks
                   for m in one_pass.modules())  # unwrapped: no hook left behind


def test_models_of_other_layers_train_with_opacus_ghost_clipping():
    """An embedding (not a linear layer) still gets clipped and noised, through Opacus."""
    plan = DPSGDPlan("poisson", 6, 6, 1, noise_multiplier=1e-9, max_grad_norm=0.5)
    module = nn.Embedding.from_pretrained(torch.zeros(6, 1), freeze=False)
    data = TensorExamples(torch.arange(6))
    result = train_dpsgd(module, data, lambda m, b: (m(b[0]).squeeze(-1) * -10.0, None), plan,
                         optimizer=OptimizerSettings(lr=1.0, name="sgd"),
                         generators=Generators(torch.Generator().manual_seed(0),
                                               torch.Generator().manual_seed(0)))
    # Poisson rate 1: every example's gradient (-10 on its own row) is clipped to 0.5, / 6.
    torch.testing.assert_close(result.module.weight.flatten(), torch.full((6,), 0.5 / 6),
                               atol=1e-6, rtol=1e-5)


class _Rows(nn.Module):
    """Row layers: each input row belongs to one example (``owner``), in any order; the
    batch is ``owner``'s examples, one with no rows; ``shared`` is called twice."""

    def __init__(self, d_in, width, d_out, batch):
        super().__init__()
        self.batch = batch
        self.inner = nn.Linear(d_in, width)
        self.shared = nn.Linear(width, width)
        self.frozen = nn.Linear(width, width)
        self.frozen.weight.requires_grad_(False)  # its bias alone is trained
        self.head = nn.Linear(width, d_out)

    def forward(self, x, owner):
        h = torch.tanh(self.shared(torch.tanh(self.shared(torch.tanh(self.inner(x))))))
        pooled = h.new_zeros(self.batch, h.shape[1]).index_add_(0, owner, self.frozen(h))
        return self.head(pooled)

    def row_layers(self):
        return [self.inner, self.shared, self.frozen]

    def example_of_rows(self, x, owner):
        return owner


@pytest.mark.parametrize("kept", [True, False], ids=["kept", "norms-only"])
@pytest.mark.parametrize("max_grad_norm", [1e-3, 1e3], ids=["clipped", "unclipped"])
def test_row_layers_clip_each_examples_rows(kept, max_grad_norm, monkeypatch):
    """Rows of examples in any order, of unequal counts (one example has none), and a row
    layer called twice: the clipped sum equals a loop over examples, each alone."""
    if not kept:
        monkeypatch.setattr(clipped_sum_module, "_KEPT_GRADIENT_ELEMENTS", 0)
    torch.manual_seed(0)
    batch = 5
    owner = torch.tensor([3, 0, 0, 4, 3, 0, 4, 4, 4, 1, 3, 0])  # example 2 has no row
    module = _Rows(3, 6, 2, batch)
    x, y = torch.randn(len(owner), 3), torch.randint(0, 2, (batch,))
    params = [p for p in module.parameters() if p.requires_grad]
    expected = [torch.zeros_like(p) for p in params]
    for i in range(batch):
        mine = owner == i
        module.batch = 1
        loss = nn.functional.cross_entropy(module(x[mine], owner[mine] * 0), y[i:i + 1])
        grads = torch.autograd.grad(loss, params)
        factor = min(1.0, max_grad_norm / (float(torch.cat([g.flatten() for g in grads]).norm())
                                           + 1e-6))
        expected = [e + factor * g for e, g in zip(expected, grads)]
    module.batch = batch
    wrapped = ClippedSumModule(module, max_grad_norm)
    wrapped.clipped_sum(nn.functional.cross_entropy(wrapped(x, owner), y, reduction="none"))
    for p, e in zip(params, expected):
        torch.testing.assert_close(p.grad, e, atol=1e-6, rtol=1e-5)
