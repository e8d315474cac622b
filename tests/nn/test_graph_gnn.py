"""Whole-graph GNNs on padded batches: one gradient per graph, padding changes nothing."""

import numpy as np
import pytest
import torch
from opacus import GradSampleModule

from skdpgraph import Graph
from skdpgraph.training import ClippedSumModule
from skdpgraph.datasets import make_graph_classification
from skdpgraph.nn import (DenseGraphGNN, GraphBatches, GraphExamples, masked_readout,
                          root_cross_entropy)


@pytest.fixture(scope="module")
def graphs():
    return make_graph_classification(n_graphs=12, n_nodes=(3, 9), random_state=0)


def _model(conv, readout="sum", seed=0):
    torch.manual_seed(seed)
    return DenseGraphGNN(4, 8, 2, conv=conv, num_layers=2, readout=readout)


def _one_graph_gradients(model, batches, y):
    """Each graph's gradient from a plain backward on that graph alone (padded to itself)."""
    out = []
    for i in range(len(batches)):
        model.zero_grad()
        loss, _ = root_cross_entropy(model, (*batches.dense(np.array([i])), y[i:i + 1]))
        loss.sum().backward()
        out.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    return torch.stack(out)


@pytest.mark.parametrize("conv", ["gin", "gcn", "sage"])
def test_per_graph_gradients_of_a_batch_equal_one_graph_at_a_time(graphs, conv):
    """Opacus' per-sample gradients of a padded batch are the graphs' own gradients."""
    X, y = graphs
    batches, labels = GraphBatches(X), torch.from_numpy(y)
    model = _model(conv)
    expected = _one_graph_gradients(model, batches, labels)
    wrapped = GradSampleModule(_model(conv), loss_reduction="sum")
    losses, _ = root_cross_entropy(wrapped, (*batches.dense(np.arange(len(X))), labels))
    losses.sum().backward()
    per_graph = torch.cat([p.grad_sample.flatten(1) for p in wrapped.parameters()], dim=1)
    torch.testing.assert_close(per_graph, expected, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(per_graph.norm(dim=1), expected.norm(dim=1), rtol=1e-4,
                               atol=1e-6)


@pytest.mark.parametrize("conv", ["gin", "sage"])
def test_clipped_sum_of_a_padded_batch_clips_each_graph(graphs, conv):
    """The loop's one-pass clipped sum equals the sum of each graph's clipped gradient."""
    X, y = graphs
    batches, labels, clip = GraphBatches(X), torch.from_numpy(y), 0.05
    expected = _one_graph_gradients(_model(conv), batches, labels)
    factors = (clip / (expected.norm(dim=1) + 1e-6)).clamp(max=1.0)
    assert (factors < 1).any()  # the clipping bites
    model = _model(conv)
    assert ClippedSumModule.supports(model)
    wrapped = ClippedSumModule(model, clip)
    losses, _ = root_cross_entropy(wrapped, (*batches.dense(np.arange(len(X))), labels))
    wrapped.clipped_sum(losses)
    got = torch.cat([p.grad.flatten() for p in model.parameters()])
    torch.testing.assert_close(got, (factors[:, None] * expected).sum(0), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("readout", ["sum", "mean"])
@pytest.mark.parametrize("conv", ["gin", "gcn", "sage"])
def test_logits_do_not_depend_on_padding_or_batch_companions(graphs, conv, readout):
    X, _ = graphs
    batches, model = GraphBatches(X), _model(conv, readout)
    together = model(*batches.dense(np.arange(len(X))))
    alone = torch.cat([model(*batches.dense(np.array([i]))) for i in range(len(X))])
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-5)


def test_dense_batches_hold_each_graphs_adjacency_and_features(graphs):
    X, _ = graphs
    x, adj, mask = GraphBatches(X).dense(np.array([3, 0]))
    for row, graph in zip(range(2), (X[3], X[0])):
        n = graph.num_nodes
        np.testing.assert_array_equal(adj[row, :n, :n].numpy(), graph.adjacency().toarray())
        np.testing.assert_array_equal(x[row, :n].numpy(), graph.features())
        assert mask[row].sum() == n and adj[row, n:].sum() == 0 and x[row, n:].abs().sum() == 0
    directed = Graph([[0], [1]], np.ones((2, 1)), directed=True)  # 0 -> 1: 1 receives from 0
    assert GraphBatches([directed]).dense(np.array([0]))[1][0].tolist() == [[0, 0], [1, 0]]


def test_graph_examples_return_labels_with_the_batch(graphs):
    X, y = graphs
    examples = GraphExamples(X, torch.from_numpy(y))
    *_, labels = examples.batch(torch.tensor([2, 5]), step=0)
    assert len(examples) == len(X) and labels.tolist() == [y[2], y[5]]
    with pytest.raises(ValueError, match="12 graphs but 3 labels"):
        GraphExamples(X, torch.zeros(3))


def test_masked_readout_and_bad_options():
    h, mask = torch.arange(6.0).reshape(1, 3, 2), torch.tensor([[1.0, 1.0, 0.0]])
    assert masked_readout(h, mask, "sum").tolist() == [[2.0, 4.0]]
    assert masked_readout(h, mask, "mean").tolist() == [[1.0, 2.0]]
    with pytest.raises(ValueError, match="readout 'max'"):
        masked_readout(h, mask, "max")
    with pytest.raises(ValueError, match="convolution 'gat'"):
        DenseGraphGNN(2, 4, 2, conv="gat")
    with pytest.raises(ValueError, match="num_layers must be >= 1"):
        DenseGraphGNN(2, 4, 2, num_layers=0)
