"""Large non-private batches run in chunks: the same training as one whole-batch pass."""

import copy

import pytest
import torch
from torch import nn

import skdpgraph.training._loop as loop
from skdpgraph.privacy import DPSGDPlan
from skdpgraph.training import Generators, OptimizerSettings, TensorExamples, train_dpsgd


def _loss(module, batch):
    x, y = batch
    logits = module(x)
    return nn.functional.cross_entropy(logits, y, reduction="none"), logits.argmax(-1) == y


def _fit(module, chunk, monkeypatch, sampling="without_replacement", batch_size=90):
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(90, 5, generator=g), torch.randint(0, 3, (90,), generator=g)
    monkeypatch.setattr(loop, "_CHUNK", chunk)
    plan = DPSGDPlan(sampling, 90, batch_size, 6, noise_multiplier=None, max_grad_norm=None)
    return train_dpsgd(module, TensorExamples(x, y), _loss, plan,
                       optimizer=OptimizerSettings(lr=0.05),
                       generators=Generators(torch.Generator().manual_seed(1)))


@pytest.mark.parametrize("sampling,batch_size", [("without_replacement", 90), ("poisson", 60)])
def test_chunked_steps_train_as_the_whole_batch(monkeypatch, sampling, batch_size):
    module = nn.Sequential(nn.Linear(5, 8), nn.SELU(), nn.Linear(8, 3))
    whole = _fit(copy.deepcopy(module), 10**9, monkeypatch, sampling, batch_size)
    chunked = _fit(copy.deepcopy(module), 7, monkeypatch, sampling, batch_size)  # 13 chunks
    for a, b in zip(whole.module.parameters(), chunked.module.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(whole.history, chunked.history):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-6)
        assert a["train_accuracy"] == b["train_accuracy"]
    # Training moved the weights: the comparison is not between two untouched copies.
    assert not torch.allclose(next(module.parameters()), next(chunked.module.parameters()))


def test_chunking_splits_only_large_non_private_batches(monkeypatch):
    sizes = []

    def counting_loss(module, batch):
        sizes.append(len(batch[0]))
        return _loss(module, batch)

    monkeypatch.setattr(loop, "_CHUNK", 40)
    g = torch.Generator().manual_seed(0)
    data = TensorExamples(torch.randn(90, 5, generator=g), torch.randint(0, 3, (90,), generator=g))
    plan = DPSGDPlan("without_replacement", 90, 90, 1, noise_multiplier=None,
                     max_grad_norm=None)
    train_dpsgd(nn.Linear(5, 3), data, counting_loss, plan, optimizer=OptimizerSettings(lr=0.1),
                generators=Generators(torch.Generator().manual_seed(0)))
    assert sizes == [40, 40, 10]
    sizes.clear()
    private = DPSGDPlan("without_replacement", 90, 90, 1, noise_multiplier=1.0,
                        max_grad_norm=1.0)
    train_dpsgd(nn.Linear(5, 3), data, counting_loss, private,
                optimizer=OptimizerSettings(lr=0.1),
                generators=Generators(torch.Generator().manual_seed(0),
                                      torch.Generator().manual_seed(2)))
    assert sizes == [90]  # clipping needs the whole batch at once
