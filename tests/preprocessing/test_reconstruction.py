"""Tests for the server-side reconstruction of RGNN (features, labels, bag proportions)."""

import time

import numpy as np
import pytest
import scipy.sparse as sp

from skdpgraph import Graph
from skdpgraph.preprocessing import (bag_label_proportions, feature_frequency_estimates,
                                     holdout_split, mean_propagation_operator, one_hot_blocks,
                                     propagate, reconstruct_features, reconstruct_labels)
from skdpgraph.privacy import grr_fs_frequency_estimate, grr_fs_randomize, grr_randomize


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


def _dense_reconstruction(operator, reports, domain_sizes, eps, m, hops):
    """Reference: every one-hot block through scipy's products, then one feature at a time."""
    offsets = np.concatenate([[0], np.cumsum(domain_sizes)[:-1]])
    lam = np.zeros((reports.shape[0], int(domain_sizes.sum())))
    lam[np.arange(reports.shape[0])[:, None], offsets + reports] = 1.0
    for _ in range(hops):
        lam = operator @ lam
    pi = grr_fs_frequency_estimate(lam, domain_sizes, eps, m)
    columns = []
    for start, size in zip(offsets, domain_sizes):
        block = pi[:, start:start + size]
        columns.append(np.clip(block[:, -1:], 0, 1) if size <= 2
                       else np.eye(size)[block.argmax(axis=1)])
    return np.hstack(columns).astype(np.float32), pi


# Runs of equal sizes, alternating sizes, single-value and binary features.
SIZES = np.array([4, 4, 4, 2, 2, 3, 2, 5, 1, 4, 3, 3, 2])


@pytest.mark.parametrize("block_columns", [None, 1, 3, 7])
@pytest.mark.parametrize("hops, eps", [(0, 1.0), (1, np.inf), (3, 0.7), (6, 2.0)])
def test_blocked_reconstruction_matches_the_dense_formula(monkeypatch, block_columns, hops, eps):
    import skdpgraph.preprocessing._reconstruction as module

    rng = np.random.default_rng(7)
    n = 300
    g = Graph(rng.integers(0, n, size=(2, 900)), np.zeros((n, 1)), directed=True)
    op = mean_propagation_operator(g)
    reports = grr_fs_randomize(np.column_stack([rng.integers(0, k, n) for k in SIZES]), SIZES,
                               1.0, 4, rng)
    if block_columns is not None:  # force blocks of a few columns (a 5-value feature alone)
        monkeypatch.setattr(module, "_BLOCK_BYTES", 8 * n * block_columns)
    x = reconstruct_features(op, reports, SIZES, eps, 4, hops)
    expected, pi = _dense_reconstruction(op, reports, SIZES, eps, 4, hops)
    assert x.shape == expected.shape and x.dtype == np.float32
    np.testing.assert_allclose(x, expected, rtol=0, atol=1e-6)
    assert (x == expected).mean() > 0.99
    offsets = np.concatenate([[0], np.cumsum(SIZES)[:-1]])
    for start, size in zip(offsets, SIZES):  # near-ties may break either way, nothing else
        if size > 2:
            top = np.sort(pi[:, start:start + size], axis=1)
            assert ((top[:, -1] - top[:, -2] < 1e-9) | (expected == x).all(axis=1)).all()


def test_propagation_hops_matches_the_dense_formula():
    from skdpgraph.preprocessing import propagation_hops

    def dense_hops(operator, max_hops=16, max_spread=0.5, n_probes=64):
        n = operator.shape[0]
        probes = np.unique(np.linspace(0, n - 1, min(n_probes, n)).astype(np.int64))
        rows = np.zeros((n, probes.size))
        rows[probes, np.arange(probes.size)] = 1.0
        chosen = min(1, max_hops)
        for hops in range(1, max_hops + 1):
            rows = operator.T @ rows
            if np.median(1.0 / np.square(rows).sum(axis=0)) > max_spread * n:
                break
            chosen = hops
        return chosen

    rng = np.random.default_rng(8)
    for n, m, directed in [(400, 800, False), (400, 4000, False), (1000, 3000, True),
                           (2000, 2000, False), (50, 1000, False)]:
        op = mean_propagation_operator(Graph(rng.integers(0, n, size=(2, m)), np.zeros((n, 1)),
                                             directed=directed))
        for max_hops in (16, 3):
            assert propagation_hops(op, max_hops=max_hops) == dense_hops(op, max_hops=max_hops)


def test_propagate_leaves_its_input_and_reads_vectors():
    rng = np.random.default_rng(9)
    g = Graph(rng.integers(0, 40, size=(2, 120)), np.zeros((40, 1)))
    op = mean_propagation_operator(g)
    values = rng.random(40)
    values.flags.writeable = False
    out = propagate(op, values, 2)
    assert out.shape == (40,)
    np.testing.assert_allclose(out, op @ (op @ values), rtol=1e-13)
    np.testing.assert_array_equal(propagate(op, values, 0), values)


def test_torch_csr_multiplies_as_scipy_does():
    import torch

    from skdpgraph.preprocessing._sparse import torch_csr

    rng = np.random.default_rng(10)
    matrix = sp.random(30, 20, density=0.2, format="csr", random_state=11)
    dense = rng.random((20, 5))
    for m in (matrix.copy(), matrix.astype(np.float32), matrix.tocsc()):
        if sp.isspmatrix_csr(m):
            m.indptr = m.indptr.astype(np.int64)  # index dtypes that differ are unified
            m.indices.flags.writeable = False      # read-only arrays are copied
        product = torch.sparse.mm(torch_csr(m), torch.from_numpy(dense)).numpy()
        np.testing.assert_allclose(product, m @ dense, rtol=1e-12)
    as_float32 = torch_csr(matrix, np.float32)
    assert as_float32.dtype == torch.float32 and as_float32.layout == torch.sparse_csr


def test_held_out_label_hops_matches_a_per_node_loop():
    from skdpgraph.preprocessing import held_out_label_hops

    def loop_hops(graph, train, labels, held, held_labels, c, max_hops):
        """Per held-out node: frequencies of the averaged reports from the loop propagation."""
        values = np.zeros((graph.num_nodes, c + 1))
        values[train, labels] = 1.0
        values[train, c] = 1.0
        scores = []
        for hops in range(1, max_hops + 1):
            rows = _loop_propagate(graph, values, hops)
            brier = []
            for v, report in zip(held, held_labels):
                f = rows[v, :c] / rows[v, c] if rows[v, c] > 0 else np.full(c, 1.0 / c)
                brier.append(sum((f[k] - (k == report)) ** 2 for k in range(c)))
            scores.append(np.mean(brier))
        return 1 + int(np.argmin(scores))  # argmin keeps the first (smaller) of ties

    rng = np.random.default_rng(3)
    graph, y = _cliques(n_cliques=4, size=12)
    for eps in (0.5, 2.0, np.inf):
        noisy = grr_randomize(y, 4, eps, rng)
        held = rng.choice(graph.num_nodes, 12, replace=False)
        train = np.setdiff1d(np.arange(graph.num_nodes), held)
        got = held_out_label_hops(mean_propagation_operator(graph), train, noisy[train], held,
                                  noisy[held], 4, 6)
        assert got == loop_hops(graph, train, noisy[train], held, noisy[held], 4, 6)


def test_held_out_label_hops_stop_before_the_other_class():
    # Two cliques of one class each, joined by one edge, clean labels: one round already
    # gives every held-out node its clique's class; more rounds only mix in the other's.
    from skdpgraph.preprocessing import held_out_label_hops

    graph, y = _cliques(n_cliques=2, size=20)
    op = mean_propagation_operator(graph)
    held = np.arange(0, 40, 4)
    train = np.setdiff1d(np.arange(40), held)
    assert held_out_label_hops(op, train, y[train], held, y[held], 2, 16) == 1
