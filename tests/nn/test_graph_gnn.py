"""Whole-graph GNNs on packed batches: one gradient per graph, batch companions change nothing."""

import numpy as np
import pytest
import torch

from skdpgraph import Graph
from skdpgraph.training import ClippedSumModule
from skdpgraph.datasets import make_graph_classification
from skdpgraph.nn import (GraphBatches, GraphExamples, GraphGNN, graph_cross_entropy,
                          graph_readout, padded_widths)
from skdpgraph.nn import _graph_gnn
from skdpgraph.training import _clipped_sum


@pytest.fixture(scope="module")
def graphs():
    X, y = make_graph_classification(n_graphs=12, n_nodes=(3, 9), random_state=0)
    # sizes that differ widely, for the size classes of the clipping
    large = Graph([np.arange(29), np.arange(1, 30)], np.ones((30, 4)), directed=False)
    return [*X, large], np.concatenate([y, [1]])


def _model(conv, readout="sum", seed=0, norm=None):
    torch.manual_seed(seed)
    return GraphGNN(4, 8, 2, conv=conv, num_layers=2, readout=readout, norm=norm)


def _one_graph_gradients(model, batches, y):
    """Each graph's gradient from a plain backward on that graph alone."""
    out = []
    for i in range(len(batches)):
        model.zero_grad()
        loss, _ = graph_cross_entropy(model, (*batches.packed(np.array([i])), y[i:i + 1]))
        loss.sum().backward()
        out.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    return torch.stack(out)


def _batch(batches, order, layout):
    """The graphs ``order`` packed, or sorted by size and padded (as private training
    lays them out)."""
    if layout == "packed":
        return order, batches.packed(order)
    order = order[np.argsort(batches.num_nodes[order], kind="stable")]
    return order, batches.padded(order, slack=0.5)


@pytest.mark.parametrize("kept", [True, False])
@pytest.mark.parametrize("layout", ["packed", "padded"])
@pytest.mark.parametrize("conv, norm", [("gin", None), ("gcn", None), ("sage", None),
                                        ("gin", "layer")])
def test_clipped_sum_of_a_batch_clips_each_graph(graphs, conv, norm, layout, kept,
                                                 monkeypatch):
    """The loop's one-pass clipped sum equals the sum of each graph's clipped gradient,
    each computed by a plain backward on that graph alone (per-graph gradients kept, or
    only their norms when they would be too large)."""
    if not kept:
        monkeypatch.setattr(_clipped_sum, "_KEPT_GRADIENT_ELEMENTS", 0)
    X, y = graphs
    batches, labels = GraphBatches(X), torch.from_numpy(y)
    expected = _one_graph_gradients(_model(conv, norm=norm), batches, labels)
    clip = float(expected.norm(dim=1).median())
    factors = (clip / (expected.norm(dim=1) + 1e-6)).clamp(max=1.0)
    assert (factors < 1).any() and (factors == 1).any()  # clipping bites on some graphs
    model = _model(conv, norm=norm)
    assert ClippedSumModule.supports(model)
    wrapped = ClippedSumModule(model, clip)
    order, batch = _batch(batches, np.random.default_rng(0).permutation(len(X)), layout)
    if layout == "padded":
        assert (batch[3] > batch[2]).any()  # some graphs have padding rows
    losses, _ = graph_cross_entropy(wrapped, (*batch, labels[order]))
    wrapped.clipped_sum(losses)
    got = torch.cat([p.grad.flatten() for p in model.parameters()])
    torch.testing.assert_close(got, (factors[:, None] * expected).sum(0), rtol=1e-4, atol=1e-6)


def test_clipped_sum_counts_a_row_towards_its_own_graph(graphs, monkeypatch):
    """Broken variant: owners shifted by one graph give a different clipped sum."""
    X, y = graphs
    batches, labels = GraphBatches(X[:12]), torch.from_numpy(y[:12])
    expected = _one_graph_gradients(_model("gin"), batches, labels)
    factors = (0.05 / (expected.norm(dim=1) + 1e-6)).clamp(max=1.0)
    model = _model("gin")
    shifted = GraphGNN.example_of_rows
    monkeypatch.setattr(GraphGNN, "example_of_rows",
                        lambda self, *inputs: shifted(self, *inputs).roll(1))
    wrapped = ClippedSumModule(model, 0.05)
    losses, _ = graph_cross_entropy(wrapped, (*batches.packed(np.arange(12)), labels))
    wrapped.clipped_sum(losses)
    got = torch.cat([p.grad.flatten() for p in model.parameters()])
    assert not torch.allclose(got, (factors[:, None] * expected).sum(0), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("layout", ["packed", "padded"])
@pytest.mark.parametrize("norm", [None, "layer"])
@pytest.mark.parametrize("readout", ["sum", "mean"])
@pytest.mark.parametrize("conv", ["gin", "gcn", "sage"])
def test_logits_do_not_depend_on_batch_companions(graphs, conv, readout, norm, layout):
    X, _ = graphs
    batches, model = GraphBatches(X), _model(conv, readout, norm=norm)
    order, batch = _batch(batches, np.arange(len(X)), layout)
    together = model(*batch)
    alone = torch.cat([model(*batches.packed(np.array([i]))) for i in order])
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-5)


def test_padding_rows_stay_out_of_the_readout(graphs, monkeypatch):
    """Broken variant: a readout over every row of a padded batch changes the logits."""
    X, _ = graphs
    batches, model = GraphBatches(X), _model("gin")
    order, batch = _batch(batches, np.arange(len(X)), "padded")
    alone = torch.cat([model(*batches.packed(np.array([i]))) for i in order])
    monkeypatch.setattr(_graph_gnn, "_readout_index",
                        lambda sizes, slots: _graph_gnn._owner(sizes if slots is None else slots))
    assert not torch.allclose(model(*batch), alone, rtol=1e-5, atol=1e-5)


def test_padded_batches_put_each_graph_in_its_block(graphs):
    X, _ = graphs
    batches = GraphBatches(X)
    order = np.argsort(batches.num_nodes, kind="stable")
    x, edge_index, sizes, slots = batches.padded(order, slack=0.5)
    assert (slots >= sizes).all() and len(x) == int(slots.sum()) > int(sizes.sum())
    first = (slots.cumsum(0) - slots).tolist()
    for b, graph in enumerate(order):
        rows = slice(first[b], first[b] + int(sizes[b]))
        np.testing.assert_array_equal(x[rows].numpy(), X[graph].features())
        assert not x[first[b] + int(sizes[b]):first[b] + int(slots[b])].any()
    padding = np.ones(len(x), bool)
    for b in range(len(order)):
        padding[first[b]:first[b] + int(sizes[b])] = False
    assert not padding[edge_index.numpy()].any()  # no edge touches a padding row


@pytest.mark.parametrize("slack", [0.0, 0.1, 0.5])
def test_padded_widths_keep_each_block_within_its_slack(slack):
    sizes = np.sort(np.random.default_rng(1).integers(0, 60, 200))
    slots = padded_widths(sizes, slack)
    assert (slots >= sizes).all()
    if slack == 0:
        np.testing.assert_array_equal(slots, sizes)
    start = 0
    for end in [*np.flatnonzero(np.diff(slots)) + 1, len(slots)]:  # blocks: runs of a width
        assert slots[start:end].sum() <= (1 + slack) * sizes[start:end].sum() + 1e-9
        start = end
    assert len(np.unique(slots)) < len(np.unique(sizes)) or slack == 0


def test_packed_batches_hold_each_graphs_edges_and_features(graphs):
    X, _ = graphs
    x, edge_index, sizes = GraphBatches(X).packed(np.array([3, 0]))
    assert sizes.tolist() == [X[3].num_nodes, X[0].num_nodes]
    np.testing.assert_array_equal(x.numpy(), np.vstack([X[3].features(), X[0].features()]))
    first = X[3].num_nodes
    adjacency = np.zeros((len(x), len(x)))
    adjacency[edge_index[1].numpy(), edge_index[0].numpy()] = 1  # [target, source]
    np.testing.assert_array_equal(adjacency[:first, :first], X[3].adjacency().toarray())
    np.testing.assert_array_equal(adjacency[first:, first:], X[0].adjacency().toarray())
    assert adjacency[:first, first:].sum() == adjacency[first:, :first].sum() == 0
    directed = Graph([[0], [1]], np.ones((2, 1)), directed=True)  # 0 -> 1: 1 receives from 0
    assert GraphBatches([directed]).packed(np.array([0]))[1].tolist() == [[0], [1]]


def test_graph_examples_return_labels_with_the_batch(graphs):
    X, y = graphs
    examples = GraphExamples(X, torch.from_numpy(y))
    *_, labels = examples.batch(torch.tensor([2, 5]), step=0)
    assert len(examples) == len(X) and labels.tolist() == [y[2], y[5]]
    padded = GraphExamples(X, torch.from_numpy(y), padded=True)
    big_first = torch.tensor([12, 2])  # graph 12 has 30 nodes: the batch puts it last
    x, edge_index, sizes, slots, labels = padded.batch(big_first, step=0)
    assert sizes.tolist() == [X[2].num_nodes, 30] and labels.tolist() == [y[2], y[12]]
    with pytest.raises(ValueError, match="13 graphs but 3 labels"):
        GraphExamples(X, torch.zeros(3))


def test_graph_readout_and_bad_options():
    h, sizes = torch.arange(6.0).reshape(3, 2), torch.tensor([2, 0, 1])
    assert graph_readout(h, sizes, "sum").tolist() == [[2.0, 4.0], [0.0, 0.0], [4.0, 5.0]]
    assert graph_readout(h, sizes, "mean").tolist() == [[1.0, 2.0], [0.0, 0.0], [4.0, 5.0]]
    with pytest.raises(ValueError, match="readout 'max'"):
        graph_readout(h, sizes, "max")
    with pytest.raises(ValueError, match="convolution 'gat'"):
        GraphGNN(2, 4, 2, conv="gat")
    with pytest.raises(ValueError, match="num_layers must be >= 1"):
        GraphGNN(2, 4, 2, num_layers=0)
    with pytest.raises(ValueError, match="norm 'batch'"):
        GraphGNN(2, 4, 2, norm="batch")
