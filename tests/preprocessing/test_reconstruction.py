"""Tests for the server-side reconstruction of RGNN (features, labels, bag proportions)."""

import time

import numpy as np
import pytest
import scipy.sparse as sp

from skdpgraph import Graph
from skdpgraph.preprocessing import (bag_label_proportions, feature_frequency_estimates,
                                     holdout_split, mean_propagation_operator, one_hot_blocks, propagate,
                                     reconstruct_features, reconstruct_labels)
from skdpgraph.privacy import grr_fs_randomize, grr_randomize


def _cliques(n_cliques=4, size=10, bridges=True):
    """Disjoint cliques (one label each), optionally chained by one edge."""
    edges = [(c * size + i, c * size + j) for c in range(n_cliques)
             for i in range(size) for j in range(i + 1, size)]
    if bridges:
        edges += [(c * size, (c + 1) * size) for c in range(n_cliques - 1)]
    n = n_cliques * size
    return Graph(np.array(edges).T, np.zeros((n, 1))), np.repeat(np.arange(n_cliques), size)


def _loop_propagate(graph, values, hops):
    """Reference: per-node mean over {v} and its neighbours, one node at a time."""
    for _ in range(hops):
        new = np.empty_like(values)
        for v in range(graph.num_nodes):
            members = np.append(graph.indices[graph.indptr[v]:graph.indptr[v + 1]], v)
            new[v] = values[members].mean(axis=0)
        values = new
    return values


def test_vectorised_propagation_matches_per_node_loop():
    rng = np.random.default_rng(0)
    g = Graph(rng.integers(0, 25, size=(2, 60)), np.zeros((25, 1)))
    values = rng.random((25, 4))
    op = mean_propagation_operator(g)
    np.testing.assert_allclose(propagate(op, values, 3), _loop_propagate(g, values, 3))
    np.testing.assert_allclose(op.sum(axis=1), 1.0)


def test_feature_estimates_are_unbiased_for_neighbourhood_frequencies():
    rng = np.random.default_rng(1)
    g = Graph(rng.integers(0, 30, size=(2, 50)), np.zeros((30, 1)))
    gammas, eps, m, hops = np.array([3, 2, 4]), 1.0, 2, 2
    codes = np.column_stack([rng.integers(0, k, size=30) for k in gammas])
    op = mean_propagation_operator(g)
    truth = propagate(op, one_hot_blocks(codes, gammas), hops)
    reps = 600
    estimates = np.stack([
        feature_frequency_estimates(op, grr_fs_randomize(codes, gammas, eps, m, rng), gammas,
                                    eps, m, hops) for _ in range(reps)])
    se = estimates.std(axis=0, ddof=1) / np.sqrt(reps)
    z = np.abs(estimates.mean(axis=0) - truth) / se
    assert z.max() < 5.0
    # The naive propagated reports are biased: the comparison can fail.
    naive = propagate(op, one_hot_blocks(grr_fs_randomize(codes, gammas, eps, m, rng), gammas),
                      hops)
    assert np.abs(naive - truth).mean() > 3 * np.abs(estimates.mean(axis=0) - truth).mean()


def test_reconstructed_feature_layout():
    g, _ = _cliques()
    codes = np.column_stack([np.zeros(40, int), np.arange(40) % 3])
    x = reconstruct_features(mean_propagation_operator(g), codes, np.array([2, 3]), np.inf, 2, 0)
    assert x.shape == (40, 1 + 3) and x.dtype == np.float32
    np.testing.assert_array_equal(x[:, 0], 0.0)  # binary: clipped pi[:, 1]
    np.testing.assert_array_equal(x[:, 1:].argmax(axis=1), codes[:, 1])  # one-hot argmax
    assert 0.0 <= x.min() and x.max() <= 1.0


def test_label_reconstruction_recovers_true_labels_at_high_epsilon():
    g, y = _cliques()
    rng = np.random.default_rng(2)
    train = np.sort(rng.choice(40, 20, replace=False))
    op = mean_propagation_operator(g)
    noisy = grr_randomize(y[train], 4, 10.0, rng)
    dist = reconstruct_labels(op, train, noisy, 4, 10.0, hops=2)
    np.testing.assert_allclose(dist.sum(axis=1), 1.0)
    np.testing.assert_array_equal(dist.argmax(axis=1), y[train])


def test_label_reconstruction_beats_the_noisy_labels():
    g, y = _cliques(n_cliques=4, size=60)
    rng = np.random.default_rng(3)
    train = np.arange(0, 240, 2)
    noisy = grr_randomize(y[train], 4, 1.5, rng)  # keeps the true label with p = 0.6
    dist = reconstruct_labels(mean_propagation_operator(g), train, noisy, 4, 1.5, hops=2)
    recovered = (dist.argmax(axis=1) == y[train]).mean()
    assert recovered > (noisy == y[train]).mean() + 0.2
    assert recovered > 0.9


def test_bag_proportions_skip_empty_bags_and_debias():
    bags = np.array([0, 0, 3, 3, 3, 3])
    labels = np.array([1, 1, 0, 0, 0, 2])
    bag, props = bag_label_proportions(bags, labels, 3, np.inf)
    np.testing.assert_array_equal(bag, [0, 0, 1, 1, 1, 1])  # bags 1 and 2 hold no node
    np.testing.assert_allclose(props, [[0, 1, 0], [0.75, 0, 0.25]])
    rng = np.random.default_rng(4)
    truth = rng.choice(3, size=20000, p=[0.6, 0.3, 0.1])
    _, props = bag_label_proportions(np.zeros(20000, int), grr_randomize(truth, 3, 1.0, rng),
                                     3, 1.0)
    np.testing.assert_allclose(props[0], [0.6, 0.3, 0.1], atol=0.03)


def test_reconstruction_scales_to_facebook_size():
    hops = 16
    rng = np.random.default_rng(5)
    n, d = 22_000, 48
    g = Graph(rng.integers(0, n, size=(2, 4 * n)), sp.csr_matrix((n, 1)))
    reports = rng.integers(0, 2, size=(n, d))
    start = time.perf_counter()
    op = mean_propagation_operator(g)
    x = reconstruct_features(op, reports, np.full(d, 2), 1.0, 10, hops)
    reconstruct_labels(op, np.arange(0, n, 2), rng.integers(0, 4, n // 2), 4, 1.0, hops)
    assert x.shape == (n, d)
    assert time.perf_counter() - start < 20.0  # ~1 s vectorised; a per-node loop takes minutes


def test_holdout_split():
    kept, held = holdout_split(10, 1 / 3, np.random.default_rng(0))
    assert held.size == 3 and kept.size == 7
    np.testing.assert_array_equal(np.sort(np.concatenate([kept, held])), np.arange(10))
    other = holdout_split(10, 1 / 3, np.random.default_rng(1))[1]
    assert not np.array_equal(held, other)
    rng = np.random.default_rng(0)
    kept, held = holdout_split(5, 0.0, rng)
    assert held.size == 0 and kept.tolist() == list(range(5))
    assert rng.integers(1 << 30) == np.random.default_rng(0).integers(1 << 30)  # no draw
    assert holdout_split(3, 0.01, rng)[1].size == 1 and holdout_split(3, 0.99, rng)[0].size == 1
    with pytest.raises(ValueError, match="at least 2 labelled nodes"):
        holdout_split(1, 0.5, rng)
