"""Tests for the PyG backbones and the label-proportion loss."""

import pytest
import torch

from skdpgraph.nn import GNN, llp_loss


@pytest.mark.parametrize("backbone", ["sage", "gcn", "gat"])
@pytest.mark.parametrize("layers", [1, 2, 3])
def test_gnn_shapes(backbone, layers):
    edge_index = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]])
    out = GNN(5, 8, 3, num_layers=layers, backbone=backbone)(torch.randn(4, 5), edge_index)
    assert out.shape == (4, 3)


def test_gnn_unknown_backbone():
    with pytest.raises(ValueError, match="backbone must be one of"):
        GNN(2, 2, 2, backbone="gin")


def test_llp_loss_hand_computed():
    probs = torch.tensor([[0.8, 0.2], [0.4, 0.6], [0.5, 0.5]])
    bag = torch.tensor([0, 0, 1])
    target = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
    predicted = torch.tensor([[0.6, 0.4], [0.5, 0.5]])
    kl = (target * (torch.log(target.clamp_min(1e-30)) - torch.log(predicted))).sum(1)
    kl[1] = torch.log(torch.tensor(1.0 / 0.5))  # 0 * log 0 = 0
    assert float(llp_loss(probs, bag, target)) == pytest.approx(float(kl.mean()), rel=1e-6)


def test_llp_loss_skips_empty_bags():
    probs = torch.tensor([[0.8, 0.2], [0.4, 0.6]])
    target = torch.tensor([[0.5, 0.5], [0.1, 0.9], [0.9, 0.1]])
    with_gaps = llp_loss(probs, torch.tensor([0, 2]), target)  # bag 1 is empty
    dense = llp_loss(probs, torch.tensor([0, 1]), target[[0, 2]])
    assert torch.isfinite(with_gaps) and float(with_gaps) == pytest.approx(float(dense))
    assert float(llp_loss(probs, torch.tensor([0, 0]), torch.tensor([[0.6, 0.4]]))) == (
        pytest.approx(0.0, abs=1e-6))


def test_llp_loss_has_gradients():
    logits = torch.randn(6, 3, requires_grad=True)
    loss = llp_loss(logits.softmax(-1), torch.tensor([0, 0, 1, 1, 2, 2]), torch.eye(3))
    loss.backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all()
