"""Tests for the PyG convolutions and the label-proportion loss."""

import numpy as np
import pytest
import torch

from skdpgraph.nn import GNN, ProbabilityAverage, forward_corrected_loss, llp_loss
from skdpgraph.training import train_llp_gnn


@pytest.mark.parametrize("conv", ["sage", "gcn", "gat"])
@pytest.mark.parametrize("layers", [1, 2, 3])
def test_gnn_shapes(conv, layers):
    edge_index = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]])
    out = GNN(5, 8, 3, num_layers=layers, conv=conv)(torch.randn(4, 5), edge_index)
    assert out.shape == (4, 3)


def test_gnn_unknown_conv():
    with pytest.raises(ValueError, match="conv must be one of"):
        GNN(2, 2, 2, conv="gin")


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


def _toy_problem():
    torch.manual_seed(0)
    x = torch.randn(40, 4)
    y = (x[:, 0] > 0).long()
    edge_index = torch.tensor([list(range(39)), list(range(1, 40))])
    bag = torch.zeros(30, dtype=torch.long)
    return x, edge_index, y, bag, torch.tensor([[0.5, 0.5]])


def test_train_llp_gnn_keeps_the_best_validation_epoch():
    x, edge_index, y, bag, prop = _toy_problem()
    val = torch.arange(30, 40)
    noisy_val = torch.randint(0, 2, (10,), generator=torch.Generator().manual_seed(1))
    module = GNN(4, 8, 2, conv="sage", dropout=0.5)
    history, best = train_llp_gnn(module, x, edge_index, torch.arange(30), y[:30], bag, prop,
                                  llp_weight=0.1, epochs=30, lr=0.05, val_index=val,
                                  val_targets=noisy_val)
    scores = [h["validation_accuracy"] for h in history]
    assert best == int(np.argmax(scores)) + 1  # first epoch with the best score
    module.eval()
    with torch.no_grad():
        restored = (module(x, edge_index)[val].argmax(-1) == noisy_val).float().mean()
    assert float(restored) == pytest.approx(max(scores))


def test_train_llp_gnn_without_validation_and_with_clipping():
    x, edge_index, y, bag, prop = _toy_problem()
    moved = {}
    for clip in (None, 1e-12):  # Adam's eps swamps a gradient clipped to 1e-12
        torch.manual_seed(0)
        module = GNN(4, 8, 2)
        before = [p.detach().clone() for p in module.parameters()]
        history, best = train_llp_gnn(module, x, edge_index, torch.arange(30), y[:30], bag,
                                      prop, llp_weight=0.0, epochs=5, lr=0.1,
                                      max_grad_norm=clip)
        assert best == 5 and history[-1]["validation_accuracy"] is None
        moved[clip] = max(float((p.detach() - b).abs().max())
                          for p, b in zip(module.parameters(), before))
    assert moved[None] > 0.1 and moved[1e-12] < 1e-3


def test_forward_corrected_loss_is_minimised_by_the_true_distribution():
    # Reports through a GRR-like channel: the expected report frequencies are pi @ P. Free
    # logits fitted to them must recover pi itself (de-biased), including a zero class that
    # P^-1 then clamping would only approximate.
    P = torch.full((3, 3), 0.2) + 0.4 * torch.eye(3)
    pi = torch.tensor([[0.7, 0.3, 0.0], [0.1, 0.1, 0.8]])
    logits = torch.zeros(2, 3, requires_grad=True)
    optimizer = torch.optim.Adam([logits], lr=0.1)
    for _ in range(3000):
        optimizer.zero_grad()
        forward_corrected_loss(logits, pi @ P, P).backward()
        optimizer.step()
    assert torch.allclose(logits.softmax(-1), pi, atol=0.02)


def test_train_llp_gnn_with_a_channel_keeps_the_epoch_of_lowest_held_out_loss():
    x, edge_index, y, bag, prop = _toy_problem()
    P = torch.tensor([[0.7, 0.3], [0.3, 0.7]])
    frequencies = torch.nn.functional.one_hot(y, 2).float() * 0.6 + 0.2
    val = torch.arange(30, 40)

    def fit(epochs):
        torch.manual_seed(0)
        module = GNN(4, 8, 2, dropout=0.5)
        history, best = train_llp_gnn(module, x, edge_index, torch.arange(30), frequencies[:30],
                                      bag, prop, llp_weight=0.1, epochs=epochs, lr=0.05,
                                      val_index=val, val_targets=frequencies[30:],
                                      transition=P)
        module.eval()
        with torch.no_grad():
            logits = module(x, edge_index)
        return history, best, float(forward_corrected_loss(logits[val], frequencies[30:], P))

    history, best, kept = fit(12)
    losses = [fit(epochs)[2] for epochs in range(1, 13)]  # deterministic replays
    assert best == int(np.argmin(losses)) + 1 and kept == pytest.approx(min(losses))
    assert len(set(np.round(losses, 6))) > 1  # the choice is not trivial
    # accuracies are against the frequencies' argmax
    assert all(h["validation_accuracy"] is not None for h in history)


def test_probability_average_averages_the_members_probabilities():
    torch.manual_seed(0)
    x, edge_index = torch.randn(5, 3), torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])
    members = [GNN(3, 4, 2).eval() for _ in range(3)]
    mean = torch.stack([m(x, edge_index).softmax(-1) for m in members]).mean(0)
    out = ProbabilityAverage(members)(x, edge_index)
    assert torch.allclose(out.softmax(-1), mean, atol=1e-6)
    assert not torch.allclose(mean, members[0](x, edge_index).softmax(-1))


def _assert_sage_matches_pyg(widths, structure, reference_structure):
    """Our SAGE layer on ``structure`` against PyG's SAGEConv (same weights) on
    ``reference_structure``: outputs, input gradients and parameter gradients.

    Returns the reference layer, its input and our output for further checks.
    """
    from torch_geometric.nn import SAGEConv

    from skdpgraph.nn._gnn import _mean_sage

    ours, reference = _mean_sage()(*widths), SAGEConv(*widths)
    reference.load_state_dict(ours.state_dict())
    x = torch.randn(5, widths[0], requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    out, expected = ours(x, structure), reference(x_ref, reference_structure)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)
    weights = torch.randn_like(out)
    (out * weights).sum().backward()
    (expected * weights).sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=1e-5, atol=1e-6)
    for (name, p), q in zip(ours.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6, msg=name)
    return reference, x_ref, out.detach()


@pytest.mark.parametrize("widths", [(12, 5), (5, 12), (6, 6)])
@pytest.mark.parametrize("sparse", [False, True])
def test_sage_projects_first_with_pyg_outputs_and_gradients(widths, sparse):
    """GNN's SAGE layer equals PyG's SAGEConv with the same weights, projecting first or not.

    Node 4 has no in-neighbours (its aggregation is the bias alone in both orders).
    """
    import scipy.sparse as sp

    from skdpgraph.preprocessing._sparse import torch_csr

    torch.manual_seed(0)
    source, target = [0, 1, 2, 3, 0, 2], [1, 2, 3, 0, 3, 1]
    edges = torch.tensor([source, target])
    adjacency = (torch_csr(sp.csr_matrix((np.ones(6), (target, source)), shape=(5, 5)),
                           np.float32) if sparse else edges)
    reference, x_ref, out = _assert_sage_matches_pyg(widths, adjacency, adjacency)
    torch.testing.assert_close(out[4], (reference.lin_r(x_ref[4]) + reference.lin_l.bias).detach())


def test_sage_gnn_pickles_into_a_fresh_process(tmp_path):
    """The SAGE subclass is built lazily; a pickled GNN must still load where it is not built."""
    import pickle
    import subprocess
    import sys

    gnn = GNN(6, 4, 2).eval()
    x, edges = torch.randn(5, 6), torch.tensor([[0, 1, 2], [1, 2, 3]])
    path = tmp_path / "gnn.pkl"
    path.write_bytes(pickle.dumps((gnn, x, edges, gnn(x, edges))))
    code = ("import pickle, sys, torch; gnn, x, e, out = pickle.load(open(sys.argv[1], 'rb')); "
            "assert torch.equal(gnn(x, e), out), 'outputs differ'")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_in_neighbour_mean_matches_pyg_sage_with_gradients():
    """SAGE on an InNeighbourMean equals PyG's SAGEConv on edge_index, values and gradients.

    Duplicate edges count once in both (PyG's mean counts each listed edge, so the reference
    graph lists each once); node 4 has no in-neighbours.
    """
    import scipy.sparse as sp

    from skdpgraph.nn import InNeighbourMean
    from skdpgraph.nn._gnn import _mean_sage

    torch.manual_seed(1)
    source, target = [0, 1, 2, 3, 0, 2, 3], [1, 2, 3, 0, 3, 1, 1]
    edges = torch.tensor([source, target])
    doubled = sp.csr_matrix((np.ones(8), (target + [1], source + [3])), shape=(5, 5))
    mean = InNeighbourMean(doubled)  # the duplicate (3 -> 1) is one edge
    for widths in [(9, 4), (4, 9)]:
        _assert_sage_matches_pyg(widths, mean, edges)
    with pytest.raises(ValueError, match="SAGEConv's defaults"):
        _mean_sage()(4, 2, normalize=True)(torch.randn(5, 4), mean)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_uniform_dropout_keeps_entries_at_the_rate_of_torch_dropout(p):
    """Kept fraction within 5 standard errors of 1 - p, kept entries scaled by 1 / (1 - p),
    gradients through the same mask; identity in eval mode and at p = 0."""
    from skdpgraph.nn._dropout import UniformDropout

    torch.manual_seed(0)
    x = torch.ones(200_000, requires_grad=True)
    out = UniformDropout(p)(x)
    kept = out != 0
    n = x.numel()
    assert abs(float(kept.float().mean()) - (1 - p)) < 5 * ((p * (1 - p) / n) ** 0.5)
    torch.testing.assert_close(out[kept], torch.full((int(kept.sum()),), 1 / (1 - p)))
    out.sum().backward()
    torch.testing.assert_close(x.grad, out.detach())
    assert torch.equal(UniformDropout(p).eval()(x), x)
    assert torch.equal(UniformDropout(0.0)(x), x)
