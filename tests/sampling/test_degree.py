"""Degree bounding samplers."""

import numpy as np
import pytest
import scipy.sparse as sp

from skdpgraph import Graph
from skdpgraph.sampling._degree import bound_star_membership


# ---------------------------------------------------------------- FDP: bound_star_membership
def _random_graph(seed=0, n=300, m=4000):
    rng = np.random.default_rng(seed)
    return Graph(rng.integers(0, n, size=(2, m)), np.zeros((n, 2)))


@pytest.mark.parametrize("method", ["bernoulli", "greedy"])
@pytest.mark.parametrize("k", [1, 3, 7])
def test_star_membership_bound_holds_for_every_node(method, k):
    graph = _random_graph()
    rng = np.random.default_rng(k)
    roots = rng.permutation(graph.num_nodes)[:200]
    kept = bound_star_membership(graph, roots, k, rng, method=method)
    assert kept.shape == (200, graph.num_nodes)
    feeds = np.asarray(kept.sum(axis=0)).ravel()
    assert feeds.max() <= k  # every node is in at most K other stars
    # Kept edges are edges of the graph into the roots, never self-loops.
    original = graph.adjacency()[roots].toarray()
    assert np.all(original[kept.nonzero()] == 1)
    assert not np.any(kept.toarray()[np.arange(200), roots])


def test_greedy_keeps_min_of_k_and_degree():
    graph = _random_graph(1)
    roots = np.arange(0, 300, 2)
    kept = bound_star_membership(graph, roots, 3, np.random.default_rng(0), method="greedy")
    feeds = np.asarray(graph.adjacency()[roots].sum(axis=0)).ravel()
    np.testing.assert_array_equal(np.asarray(kept.sum(axis=0)).ravel(), np.minimum(feeds, 3))


def test_bernoulli_matches_the_authors_rule():
    # A hub feeding 8 roots keeps each edge with probability K / (2 * 8) = 1/8 when K = 2,
    # and keeps none when more than 2 survive.
    hub = sp.csr_matrix((np.ones(8), (np.arange(1, 9), np.zeros(8))), shape=(9, 9))
    counts = np.array([bound_star_membership(hub, np.arange(1, 9), 2, np.random.default_rng(s))
                       .nnz for s in range(2000)])
    assert counts.max() <= 2
    p = 1 / 8
    expected = [(1 - p) ** 8, 8 * p * (1 - p) ** 7, 28 * p**2 * (1 - p) ** 6]
    expected[0] += 1 - sum(expected)  # more than 2 survivors -> all dropped
    observed = np.bincount(counts, minlength=3) / len(counts)
    np.testing.assert_allclose(observed, expected, atol=0.03)


def test_star_membership_validates():
    graph = _random_graph()
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="distinct"):
        bound_star_membership(graph, [1, 1], 2, rng)
    with pytest.raises(ValueError, match="method"):
        bound_star_membership(graph, [1, 2], 2, rng, method="exact")
    with pytest.raises(ValueError, match="max_degree"):
        bound_star_membership(graph, [1, 2], 0, rng)


# ---------------------------------------------------------------- GAP: bound_out_degree
from skdpgraph.sampling import bound_out_degree  # noqa: E402


def _out_degree(adjacency):
    return np.asarray((adjacency != 0).sum(axis=0)).ravel()


@pytest.mark.parametrize("max_degree", [1, 5, 40])
def test_out_degree_bound_holds_and_keeps_small_nodes_whole(max_degree):
    graph = _random_graph(seed=max_degree)
    before = graph.adjacency().copy()
    bounded = bound_out_degree(graph, max_degree, np.random.default_rng(0))
    original_out = _out_degree(graph.adjacency())
    assert _out_degree(bounded).max() <= max_degree
    np.testing.assert_array_equal(_out_degree(bounded), np.minimum(original_out, max_degree))
    # A subset of the original edges, and the input is untouched.
    assert (bounded - bounded.multiply(graph.adjacency())).nnz == 0
    assert (graph.adjacency() != before).nnz == 0


def test_out_degree_bound_keeps_the_last_nodes_edges():
    # The reference sampler dropped the last node's edges (off by one).
    n = 6
    source = np.r_[np.full(4, n - 1), [0, 1]]
    target = np.r_[[0, 1, 2, 3], [2, 3]]
    adjacency = sp.csr_matrix((np.ones(6), (target, source)), shape=(n, n))
    bounded = bound_out_degree(adjacency, 10, np.random.default_rng(0))
    assert (bounded != adjacency).nnz == 0


def test_out_degree_sampling_is_uniform():
    # A star centre with 10 out-edges keeps 3: every edge is kept with probability 3/10.
    n, trials = 11, 4000
    adjacency = sp.csr_matrix((np.ones(10), (np.arange(1, n), np.zeros(10))), shape=(n, n))
    rng = np.random.default_rng(1)
    counts = np.zeros(n)
    for _ in range(trials):  # small graph, repeated only to estimate frequencies
        counts += np.asarray(bound_out_degree(adjacency, 3, rng).sum(axis=1)).ravel()
    freq = counts[1:] / trials
    assert np.all(np.abs(freq - 0.3) < 5 * np.sqrt(0.3 * 0.7 / trials))


def test_out_degree_bound_validates():
    with pytest.raises(ValueError, match="max_degree must be >= 1"):
        bound_out_degree(_random_graph(), 0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="Expected a Graph or a scipy sparse"):
        bound_out_degree(np.eye(3), 2, np.random.default_rng(0))


# ---------------------------------------------------------------- GAP: bound_in_degree
from skdpgraph.sampling._degree import bound_in_degree  # noqa: E402


def _in_degree(adjacency):
    return np.asarray((adjacency != 0).sum(axis=1)).ravel()


@pytest.mark.parametrize("max_degree", [1, 5, 40])
def test_in_degree_bound_holds_and_keeps_small_nodes_whole(max_degree):
    graph = _random_graph(seed=100 + max_degree)
    bounded = bound_in_degree(graph, max_degree, np.random.default_rng(0))
    np.testing.assert_array_equal(_in_degree(bounded),
                                  np.minimum(_in_degree(graph.adjacency()), max_degree))
    assert (bounded - bounded.multiply(graph.adjacency())).nnz == 0
    # Applied after the out-degree bound (as node-level GAP does), both bounds hold.
    both = bound_in_degree(bound_out_degree(graph, 3, np.random.default_rng(1)), max_degree,
                           np.random.default_rng(2))
    assert _out_degree(both).max() <= 3 and _in_degree(both).max() <= max_degree


def test_in_degree_sampling_is_uniform():
    n, trials = 11, 4000
    adjacency = sp.csr_matrix((np.ones(10), (np.zeros(10), np.arange(1, n))), shape=(n, n))
    rng = np.random.default_rng(2)
    counts = np.zeros(n)
    for _ in range(trials):
        counts += np.asarray(bound_in_degree(adjacency, 3, rng).sum(axis=0)).ravel()
    freq = counts[1:] / trials
    assert np.all(np.abs(freq - 0.3) < 5 * np.sqrt(0.3 * 0.7 / trials))


def _isolate(adjacency, v):
    lil = sp.csr_matrix(adjacency).tolil()
    lil[v, :] = 0
    lil[:, v] = 0
    out = lil.tocsr()
    out.eliminate_zeros()
    return out


@pytest.mark.parametrize("bound, by", [(bound_out_degree, 0), (bound_in_degree, 1)])
def test_removing_a_node_changes_each_kept_set_by_at_most_one_swap(bound, by):
    # Data-dependent, but stable: with the same key, isolating node v changes what any
    # other node keeps only by dropping its edge with v and keeping at most one edge
    # in its place. (A positional random draw would reshuffle every node's choice.)
    graph = _random_graph(seed=7, n=60, m=900)
    adjacency = graph.adjacency()
    swaps = 0
    for v in range(0, 60, 7):
        kept = bound(adjacency, 4, np.random.default_rng(3))
        kept_without = bound(_isolate(adjacency, v), 4, np.random.default_rng(3))
        for node in range(60):
            if node == v:
                continue
            before = set((kept.getcol(node) if by == 0 else kept.getrow(node).T).nonzero()[0])
            after = set((kept_without.getcol(node) if by == 0 else
                         kept_without.getrow(node).T).nonzero()[0])
            assert before - {v} <= after and len(after - before) <= 1
            swaps += len(after - before)
    assert swaps > 0  # the dependence is real: the reports must not call it data-independent


def test_in_degree_bound_validates():
    with pytest.raises(ValueError, match="bound_in_degree: max_degree must be >= 1"):
        bound_in_degree(_random_graph(), 0, np.random.default_rng(0))
