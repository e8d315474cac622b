"""The edge-level objective-perturbation prototype of the edge-level study.

The study module lives in ``benchmarks/studies/edge_level_gain``; these tests check its
sensitivity bound by flipping every single edge of small graphs, and its noise calibration
against the privacy-loss bound recomputed here from the theorem's formula, each with a
deliberately wrong variant that the same check catches.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from tests._edge_study import flipped, load_study_module, random_graph

op = load_study_module("objective_perturbation")


def _worst_total_change(adjacency, rows, weights):
    """Max over all single-edge additions and removals of ``sum_i ||h_i - h'_i||``."""
    n = adjacency.shape[0]
    base = op.propagated_inputs(sp.csr_matrix(adjacency), rows, weights)
    worst = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            moved = op.propagated_inputs(sp.csr_matrix(flipped(adjacency, i, j)), rows, weights)
            worst = max(worst, float(np.linalg.norm(moved - base, axis=1).sum()))
    return worst


def _check_sensitivity(bound_of, rng, graphs=6):
    """Assert that ``bound_of(weights, rows)`` covers every single-edge flip measured."""
    cases = [(np.zeros((2, 2)), np.array([[1.0, 0.0], [-1.0, 0.0]]))]  # antipodal isolated pair
    for _ in range(graphs):
        n = int(rng.integers(4, 9))
        cases.append((random_graph(rng, n, rng.uniform(0.1, 0.6)), rng.normal(size=(n, 3))))
    for adjacency, rows in cases:
        for hops in (1, 2, 3):
            for weights in (op.hop_weights(hops), np.eye(hops + 1)[-1]):
                measured = _worst_total_change(adjacency, rows, weights)
                assert measured <= bound_of(weights, rows) + 1e-9, (hops, weights, measured)


def test_total_input_change_of_one_edge_is_within_the_bound():
    _check_sensitivity(lambda weights, rows: op.sensitivity_bound(weights),
                       np.random.default_rng(0))


def test_the_sensitivity_check_catches_a_bound_half_too_small():
    with pytest.raises(AssertionError):
        _check_sensitivity(lambda weights, rows: 0.5 * op.sensitivity_bound(weights),
                           np.random.default_rng(0), graphs=0)


def test_non_negative_rows_are_within_the_smaller_diameter():
    rng = np.random.default_rng(1)
    for _ in range(4):
        n = int(rng.integers(4, 8))
        adjacency, rows = random_graph(rng, n, 0.4), rng.random((n, 4))
        weights = op.hop_weights(2)
        assert (_worst_total_change(adjacency, rows, weights)
                <= op.sensitivity_bound(weights, op.DIAMETER["nonnegative"]) + 1e-9)


def _independent_epsilon(sigma, reg, n, dim, classes, psi, delta):
    """The privacy-loss bound written out from the README's statement."""
    t = (2 * math.log(2 / delta)) ** 0.5  # each excluded event has probability delta / 2
    operator_norm = sigma * (dim ** 0.5 + classes ** 0.5 + t)
    radius = (2 ** 0.5 * n + operator_norm) / reg
    gradient = psi * (2 ** 0.5 + radius / 2)
    hessian = psi * (2 + (classes ** 0.5 + 2) * radius / 2)
    inner = sigma * (classes ** 0.5 + t) * gradient
    return hessian / reg + inner / sigma ** 2 + gradient ** 2 / (2 * sigma ** 2)


CASES = [(epsilon, n, dim, classes, psi) for epsilon in (8.0, 4.0, 1.0, 0.5)
         for n, dim, classes, psi in ((140, 192, 7, 3.46), (2031, 48, 7, 2.0), (500, 20, 2, 1.0))]


def _check_calibration(module):
    delta = 1e-6
    for epsilon, n, dim, classes, psi in CASES:
        sigma, reg = module.calibrate(epsilon, delta, n, dim, classes, psi, 1.0)
        assert _independent_epsilon(sigma, reg, n, dim, classes, psi, delta) <= epsilon * (
            1 + 1e-9)
        # the smallest noise at that regularisation: 1% less breaks the budget
        assert _independent_epsilon(0.99 * sigma, reg, n, dim, classes, psi, delta) > epsilon


def test_calibration_meets_the_independently_computed_bound():
    _check_calibration(op)


def test_the_calibration_check_catches_a_bound_without_the_jacobian_term(monkeypatch):
    original = op.privacy_loss_bound

    def without_jacobian(sigma, reg, n_train, dim, classes, psi, delta):
        radius_free = original(sigma, math.inf, n_train, dim, classes, psi, delta)
        return radius_free  # reg -> inf drops the Jacobian term and the radius

    monkeypatch.setattr(op, "privacy_loss_bound", without_jacobian)
    with pytest.raises(AssertionError):
        _check_calibration(op)


def test_the_calibration_check_catches_an_operator_norm_tail_without_the_dimension(
        monkeypatch):
    original = op.spectral_tail
    monkeypatch.setattr(op, "spectral_tail", lambda sigma, dim, classes, delta: original(
        sigma, 0, classes, delta))
    with pytest.raises(AssertionError):
        _check_calibration(op)


def _analytic_gaussian_delta(sigma, sensitivity, epsilon):
    """Balle and Wang's exact delta of the Gaussian mechanism, from scipy's normal cdf."""
    from scipy.stats import norm

    ratio = sensitivity / sigma
    return (norm.cdf(ratio / 2 - epsilon / ratio)
            - math.exp(epsilon) * norm.cdf(-ratio / 2 - epsilon / ratio))


def _check_linear_calibration(module):
    delta = 1e-7
    for epsilon, psi in [(e, p) for e in (8.0, 4.0, 1.0) for p in (0.5, 3.46)]:
        sigma = module.linear_sigma(epsilon, delta, psi)
        assert _analytic_gaussian_delta(sigma, psi, epsilon) <= delta * (1 + 1e-6)
        assert _analytic_gaussian_delta(0.99 * sigma, psi, epsilon) > delta


def test_linear_objective_noise_meets_the_analytic_gaussian_delta():
    _check_linear_calibration(op)


def test_the_linear_check_catches_noise_calibrated_to_one_node(monkeypatch):
    original = op.linear_sigma
    monkeypatch.setattr(op, "linear_sigma", lambda epsilon, delta, psi: original(
        epsilon, delta, min(psi, 1.0)))
    with pytest.raises(AssertionError):
        _check_linear_calibration(op)


def test_class_sums_move_by_at_most_the_bound_for_one_edge():
    rng = np.random.default_rng(2)
    n = 8
    adjacency, rows, labels = random_graph(rng, n, 0.4), rng.normal(size=(n, 3)), rng.integers(
        0, 3, n)
    weights = op.hop_weights(2)
    sums = op.propagated_inputs(sp.csr_matrix(adjacency), rows, weights).T @ np.eye(3)[labels]
    for i in range(n):
        for j in range(i + 1, n):
            moved = op.propagated_inputs(sp.csr_matrix(flipped(adjacency, i, j)), rows, weights)
            change = np.linalg.norm(moved.T @ np.eye(3)[labels] - sums)
            assert change <= op.sensitivity_bound(weights) + 1e-9


def _gradient_and_hessian(inputs, labels, weights, reg):
    """Gradient and Hessian (row-major ``vec(W)``) of the summed cross-entropy plus ridge."""
    logits = inputs @ weights
    prob = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    hessian = reg * np.eye(weights.size)
    for h, p in zip(inputs, prob):
        hessian += np.kron(np.outer(h, h), np.diag(p) - np.outer(p, p))
    return inputs.T @ (prob - np.eye(weights.shape[1])[labels]) + reg * weights, hessian


def _worst_realised_log_ratio(calibrate, epsilon, draws=40):
    """The largest log density ratio ``p_D(W) / p_D'(W)`` over outputs ``W`` of the mechanism
    on ``D``, for one edge joining two isolated nodes of opposite rows (the bound is tight)."""
    rng = np.random.default_rng(3)
    n, classes, delta = 10, 3, 1e-3
    adjacency = random_graph(rng, n, 0.3)
    adjacency[:2, :] = adjacency[:, :2] = 0.0
    rows = rng.normal(size=(n, 2))
    rows[1] = -rows[0]
    weights = op.hop_weights(1)
    inputs = op.propagated_inputs(sp.csr_matrix(adjacency), rows, weights)
    moved = op.propagated_inputs(sp.csr_matrix(flipped(adjacency, 0, 1)), rows, weights)
    labels = rng.integers(0, classes, n)
    sigma, reg = calibrate(epsilon, delta, n, inputs.shape[1], classes,
                           op.sensitivity_bound(weights), 1.0)
    worst = -math.inf
    for _ in range(draws):
        noise = rng.normal(0.0, sigma, (inputs.shape[1], classes))
        w = op.fit_perturbed(inputs, labels, classes, reg, noise)
        grad, hessian = _gradient_and_hessian(inputs, labels, w, reg)
        grad_moved, hessian_moved = _gradient_and_hessian(moved, labels, w, reg)
        noise_moved = noise + grad - grad_moved  # the noise that gives the same W on D'
        worst = max(worst, (np.sum(noise_moved ** 2) - np.sum(noise ** 2)) / (2 * sigma ** 2)
                    + np.linalg.slogdet(hessian)[1] - np.linalg.slogdet(hessian_moved)[1])
    return worst


def test_realised_privacy_loss_of_the_logistic_objective_is_within_epsilon():
    assert _worst_realised_log_ratio(op.calibrate, 1.0) <= 1.0


def test_the_privacy_loss_check_catches_noise_ten_times_too_small():
    def too_little(*args):
        sigma, reg = op.calibrate(*args)
        return sigma / 10, reg

    assert _worst_realised_log_ratio(too_little, 1.0) > 1.0
