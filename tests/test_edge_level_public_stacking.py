"""The public-stacking prototype of the edge-level study: one private release of vote sums.

The study module lives in ``benchmarks/studies/edge_level_gain``; these tests check the
release's sensitivity by flipping every single edge of small graphs, its noise scales
against independent computations, and that the release is the only use of the edges,
each with a deliberately wrong variant that the same check catches.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from tests._edge_study import flipped, load_study_module, random_graph

ps = load_study_module("public_stacking")


def _probability_rows(rng, n, classes):
    rows = rng.dirichlet(np.full(classes, 0.3), size=n)
    rows[: n // 3] = np.eye(classes)[rng.integers(0, classes, n // 3)]  # one-hot rows too
    return rows


def _worst_change(statistic, graphs):
    """Max L1 and L2 change of ``statistic(adjacency, rows)`` over all single-edge flips."""
    worst_l1 = worst_l2 = 0.0
    for adjacency, rows in graphs:
        base = statistic(sp.csr_matrix(adjacency), rows)
        n = adjacency.shape[0]
        for i in range(n):
            for j in range(i + 1, n):
                moved = statistic(sp.csr_matrix(flipped(adjacency, i, j)), rows) - base
                worst_l1 = max(worst_l1, float(np.abs(moved).sum()))
                worst_l2 = max(worst_l2, float(np.linalg.norm(moved)))
    return worst_l1, worst_l2


def _graphs(seed=0, count=6):
    rng = np.random.default_rng(seed)
    out = [(np.zeros((2, 2)), np.eye(2))]  # two isolated nodes with different one-hot rows
    for _ in range(count):
        n = int(rng.integers(4, 9))
        out.append((random_graph(rng, n, rng.uniform(0.1, 0.7)), _probability_rows(rng, n, 3)))
    return out


def _within_sensitivity(statistic, graphs):
    worst_l1, worst_l2 = _worst_change(statistic, graphs)
    return worst_l1 <= 2.0 + 1e-9 and worst_l2 <= math.sqrt(2.0) + 1e-9


def test_vote_sums_move_by_at_most_l1_two_and_l2_root_two_per_edge():
    graphs = _graphs()
    worst_l1, worst_l2 = _worst_change(ps.clean_release, graphs)
    assert worst_l1 <= 2.0 + 1e-9 and worst_l2 <= math.sqrt(2.0) + 1e-9
    assert worst_l1 == pytest.approx(2.0)  # attained: the isolated pair with one-hot rows
    assert worst_l2 == pytest.approx(math.sqrt(2.0))


def test_sensitivity_check_catches_unnormalised_rows_and_a_released_degree():
    graphs = _graphs()
    l2_rows = [(a, r / np.linalg.norm(r, axis=1, keepdims=True)) for a, r in graphs]
    assert not _within_sensitivity(ps.clean_release, l2_rows)  # L2-unit rows: L1 norm > 1
    scaled = [(a, 2.0 * r) for a, r in graphs]
    assert not _within_sensitivity(ps.clean_release, scaled)

    def with_degree(adjacency, rows):
        degree = np.asarray(adjacency.sum(axis=1))
        return np.concatenate([ps.clean_release(adjacency, rows), degree], axis=1)

    assert not _within_sensitivity(with_degree, graphs)


def test_vote_rows_are_probability_vectors():
    rng = np.random.default_rng(1)
    n, classes = 12, 3
    y = rng.integers(0, classes, n)
    split = {"train": np.arange(6), "val": np.arange(6, 9), "test": np.arange(9, 12)}
    stage = {"probs": rng.dirichlet(np.ones(classes), n),
             "crossfit": rng.dirichlet(np.ones(classes), 6)}
    for train_rows in ps.TRAIN_ROWS:
        rows = ps.vote_rows(stage, y, split, train_rows)
        assert rows.min() >= 0 and np.allclose(rows.sum(axis=1), 1.0)
    assert np.array_equal(ps.vote_rows(stage, y, split, "onehot")[:6].argmax(1), y[:6])


def _balle_wang_delta(sigma, sensitivity, epsilon):
    """The exact delta of the Gaussian mechanism (Balle and Wang 2018, Theorem 8)."""
    a = sensitivity / (2 * sigma)
    b = epsilon * sigma / sensitivity
    return stats.norm.cdf(a - b) - math.exp(epsilon) * stats.norm.cdf(-a - b)


@pytest.mark.parametrize("epsilon", [8.0, 4.0, 1.0])
def test_gaussian_std_meets_its_delta_at_root_two_and_not_below(epsilon):
    delta = 2.7e-8
    sigma = ps.gaussian_sigma(epsilon, delta)
    assert _balle_wang_delta(sigma, math.sqrt(2.0), epsilon) <= delta
    assert _balle_wang_delta(0.99 * sigma, math.sqrt(2.0), epsilon) > delta
    # noise calibrated for sensitivity 1 (one node's change only) is caught
    assert _balle_wang_delta(sigma / math.sqrt(2.0), math.sqrt(2.0), epsilon) > delta


@pytest.mark.parametrize("epsilon", [8.0, 4.0, 1.0])
def test_laplace_scale_bounds_the_log_density_ratio_by_epsilon(epsilon):
    scale = ps.laplace_scale(epsilon)
    rng = np.random.default_rng(2)
    graphs = _graphs(seed=3)
    sensitivity = _worst_change(ps.clean_release, graphs)[0]
    # Laplace log density ratio at any output is at most ||a - a'||_1 / scale.
    a = np.zeros(4)
    b = np.array([1.0, -1.0, 0.0, 0.0]) * sensitivity / 2
    out = rng.laplace(0.0, scale, (2000, 4))
    ratio = (np.abs(out - b).sum(1) - np.abs(out - a).sum(1)) / scale
    assert ratio.max() <= epsilon + 1e-9 and sensitivity / scale <= epsilon + 1e-9
    assert sensitivity / (scale / 2) > epsilon  # half the scale is caught
    assert ps.laplace_scale(epsilon, hops=2) == pytest.approx(2 * scale)


def _tiny_problem(seed=4, n=60, classes=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    split = {"train": np.arange(30), "val": np.arange(30, 45), "test": np.arange(45, n)}
    probs = 0.5 * np.eye(classes)[y] + 0.5 * rng.dirichlet(np.ones(classes), n)
    stage = {"probs": probs, "crossfit": probs[:30]}
    graphs = [sp.csr_matrix(random_graph(rng, n, p)) for p in (0.05, 0.3)]
    return stage, y, split, graphs


def _predictions_given_one_release(monkeypatch, stage, y, split, graphs):
    """Stage 3's outputs on each graph when every graph gets the same released sums.

    Stage 3 is asked for the normalised block (it would pick the own-only form where the
    release does not help), so that the release and its degree estimate are read.
    """
    fixed = ps.release(graphs[0], ps.vote_rows(stage, y, split, "onehot"), 4.0, "laplace",
                       1e-8, np.random.default_rng(0))
    monkeypatch.setattr(ps, "release", lambda *args: fixed.copy())
    monkeypatch.setattr(ps, "FORMS", ("normalised",))
    return [ps.stack_predict(g, stage, y, split, 4.0, "laplace", "onehot", 1e-8,
                             np.random.default_rng(0))["probabilities"] for g in graphs]


def test_the_release_is_the_only_use_of_the_edges(monkeypatch):
    stage, y, split, graphs = _tiny_problem()
    first, second = _predictions_given_one_release(monkeypatch, stage, y, split, graphs)
    assert np.array_equal(first, second)
    assert len(np.unique(first.argmax(1))) > 1  # stage 3 is not a constant


def test_edge_use_check_catches_a_true_degree_normaliser(monkeypatch):
    stage, y, split, graphs = _tiny_problem()
    current = {}
    stack_predict = ps.stack_predict

    def recording(adjacency, *args):
        current["adjacency"] = adjacency
        return stack_predict(adjacency, *args)

    def true_degree(released):  # the broken variant: stage 3 reads the private graph
        return np.maximum(np.asarray(current["adjacency"].sum(axis=1)).ravel(), 1.0)

    monkeypatch.setattr(ps, "stack_predict", recording)
    monkeypatch.setattr(ps, "degree_estimate", true_degree)
    first, second = _predictions_given_one_release(monkeypatch, stage, y, split, graphs)
    assert np.abs(first - second).max() > 1e-3


def test_noise_free_release_is_the_sums_and_noise_has_its_scale():
    rng = np.random.default_rng(5)
    adjacency = sp.csr_matrix(random_graph(rng, 30, 0.2))
    rows = _probability_rows(rng, 30, 4)
    clean = ps.release(adjacency, rows, math.inf, "laplace", 1e-8, rng)
    assert np.allclose(clean, adjacency.toarray() @ rows)
    noise = ps.release(adjacency, rows, 2.0, "laplace", 1e-8, np.random.default_rng(6)) - clean
    assert np.std(noise) == pytest.approx(math.sqrt(2) * ps.laplace_scale(2.0), rel=0.15)
    with pytest.raises(ValueError, match="noise"):
        ps.release(adjacency, rows, 2.0, "uniform", 1e-8, rng)
