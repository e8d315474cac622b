"""Stars: each training example is its root and only kept in-neighbours, padded."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from skdpgraph import Graph
from skdpgraph._random import RandomStreams
from skdpgraph.sampling import StarExamples, bound_star_membership, star_members, star_tensors
from skdpgraph.sampling._stars import star_rows


@pytest.fixture(scope="module")
def graph():
    rng = np.random.default_rng(0)
    edges = rng.integers(0, 200, size=(2, 1500))
    return Graph(edges, rng.normal(size=(200, 6)))


def test_stars_contain_only_kept_neighbours(graph):
    rng = np.random.default_rng(1)
    roots = rng.permutation(200)[:120]
    kept = bound_star_membership(graph, roots, 3, rng)
    members = star_members(kept, roots, 4, rng)
    assert members.shape == (120, 4)
    np.testing.assert_array_equal(members[:, 0], roots)
    dense = kept.toarray()
    for i in range(len(roots)):
        neighbours = members[i, 1:][members[i, 1:] >= 0]
        assert np.all(dense[i, neighbours] == 1)  # kept edges only
        assert len(set(neighbours.tolist())) == len(neighbours)
        # Padding only after the real neighbours; a full row when enough were kept.
        assert len(neighbours) == min(3, int(dense[i].sum()))
        assert np.all(members[i, 1 + len(neighbours):] == -1)


def test_truncation_is_a_uniform_subset():
    kept = sp.csr_matrix(np.ones((1, 6), dtype=np.float32))
    rng = np.random.default_rng(0)
    counts = np.zeros(6)
    for _ in range(600):
        counts[star_members(kept, np.array([9]), 3, rng)[0, 1:]] += 1
    assert counts.sum() == 1200
    assert counts.min() > 150  # each of 6 neighbours expected 200 times


def test_star_tensors_and_examples(graph):
    members = np.array([[5, 7, -1], [3, -1, -1]])
    x, adj, mask = star_tensors(graph, members)
    np.testing.assert_allclose(x[0, 1].numpy(), graph.features([7])[0])
    assert torch.all(x[0, 2] == 0) and torch.all(x[1, 1:] == 0)
    np.testing.assert_array_equal(mask.numpy(), [[1, 1, 0], [1, 0, 0]])
    expected = np.zeros((2, 3, 3))
    expected[0, 0, 1] = 1
    np.testing.assert_array_equal(adj.numpy(), expected)
    examples = StarExamples(graph, members, np.array([2, 1]))
    assert len(examples) == 2
    *_, y = examples.batch(torch.tensor([1]), step=0)
    assert y.tolist() == [1]


def test_star_members_rejects_mismatched_rows():
    with pytest.raises(ValueError, match="rows for"):
        star_members(sp.csr_matrix((2, 4)), np.array([0]), 3, np.random.default_rng(0))


@pytest.mark.parametrize("method", ["bernoulli", "greedy"])
def test_star_rows_bound_rows_and_columns(graph, method):
    k = 3
    rows = star_rows(graph, np.arange(200), k, RandomStreams(0).numpy("degree"), method=method)
    assert rows.shape == (200, 200)
    assert np.diff(rows.indptr).max() <= k  # at most K in-neighbours per star
    assert np.bincount(rows.indices, minlength=200).max() <= k  # each node in <= K stars
    kept = rows.tocoo()
    adjacency = graph.adjacency().toarray()
    assert np.all(adjacency[kept.row, kept.col] == 1)  # real edges only
    assert np.all(kept.row != kept.col)  # never the root itself
    assert rows.nnz > 100  # not trivially empty


def test_star_rows_keep_every_edge_when_the_graph_is_already_bounded():
    ring = Graph(np.stack([np.arange(30), (np.arange(30) + 1) % 30]), np.eye(30))
    rows = star_rows(ring, np.arange(30), 2, RandomStreams(0).numpy("degree"), method="greedy")
    assert (rows != ring.adjacency()).nnz == 0
