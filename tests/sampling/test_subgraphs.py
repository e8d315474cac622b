"""Padding node tables of subgraphs into dense (x, adj, mask) batches."""

import numpy as np
import pytest

from skdpgraph import Graph
from skdpgraph.sampling import gather_csr_rows, pad_subgraphs, subgraph_adjacency


@pytest.fixture
def graph():
    rng = np.random.default_rng(0)
    upper = np.triu(rng.random((30, 30)) < 0.2, 1)
    source, target = np.nonzero(upper)
    return Graph(np.vstack([source, target]), rng.normal(size=(30, 4)))


def test_gather_matches_scipy(graph):
    rows = np.array([3, 0, 3, 29])
    owner, columns = gather_csr_rows(graph.indptr, graph.indices, rows)
    for k, row in enumerate(rows):
        np.testing.assert_array_equal(np.sort(columns[owner == k]),
                                      np.sort(graph.adjacency()[row].indices))


def test_induced_adjacency_matches_dense_submatrix(graph):
    rng = np.random.default_rng(1)
    table = np.full((6, 5), -1)
    for b in range(6):  # rows may overlap: each is looked up on its own
        size = rng.integers(1, 6)
        table[b, :size] = rng.choice(30, size, replace=False)
    x, adj, mask = pad_subgraphs(graph, table)
    dense = graph.adjacency().toarray()
    for b, row in enumerate(table):
        k = (row >= 0).sum()
        np.testing.assert_array_equal(adj[b, :k, :k].numpy(), dense[np.ix_(row[:k], row[:k])])
        assert adj[b, k:].sum() == 0 and adj[b, :, k:].sum() == 0
        np.testing.assert_allclose(x[b, :k].numpy(), graph.features(row[:k]))
        assert x[b, k:].abs().sum() == 0
        np.testing.assert_array_equal(mask[b].numpy(), (row >= 0).astype(np.float32))


def test_star_edges_and_errors(graph):
    table = np.array([[4, 7, 9], [2, -1, -1]])
    adj = subgraph_adjacency(graph.indptr, graph.indices, table, edges="star")
    np.testing.assert_array_equal(adj[0], [[0, 1, 1], [1, 0, 0], [1, 0, 0]])
    assert adj[1].sum() == 0
    with pytest.raises(ValueError, match="Unknown edges"):
        subgraph_adjacency(graph.indptr, graph.indices, table, edges="full")
    with pytest.raises(ValueError, match="table must have shape"):
        pad_subgraphs(graph, np.array([1, 2]))
