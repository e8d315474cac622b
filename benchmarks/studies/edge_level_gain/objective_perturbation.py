"""Objective perturbation on propagated public features: a study prototype at edge level.

NOT a library mechanism (not in ``skdpgraph``) and not vetted: the calibration below is
derived in this study (README, "Objective perturbation on propagated features") and
checked by the tests against an independent computation, with no audit. Records mark it
``"private": "unvetted"``.

Mechanism (edge level: node rows and labels public, one undirected edge protected):

1. Public rows ``r_i`` scaled to unit L2 norm, propagated by the random walk with
   self-loops ``P = (D + I)^-1 (A + I)``: ``Z_0 = R``, ``Z_k = P Z_(k-1)``.
2. Each node's input ``h_i = [w_0 Z_0[i], ..., w_K Z_K[i]]`` with ``sum w_k^2 <= 1``, so
   ``||h_i|| <= 1``. One edge added or removed moves the inputs of all nodes by at most
   ``sum_i ||h_i - h'_i|| <= psi = diameter * sum_k k w_k`` (:func:`sensitivity_bound`).
3. Logistic objective: ``W = argmin sum_(i in train) CE(W^T h_i, y_i) + reg / 2
   ||W||_F^2 + <b, W>``, ``b`` Gaussian of std ``sigma`` per entry, solved with L-BFGS.
   :func:`privacy_loss_bound` is the epsilon of the pair ``(sigma, reg)`` at ``delta``;
   :func:`calibrate` picks the pair for a target epsilon from public quantities only.
4. Linear objective: the loss ``-<W^T h_i, e_(y_i)>`` instead, whose perturbed minimiser
   is the Gaussian mechanism on the class sums of the inputs (:func:`linear_sigma`),
   predicted by the nearest noisy class mean (:func:`fit_linear`).
"""

import math

import numpy as np
from scipy import optimize, sparse

#: Largest distance between two rows of the convex hull of unit rows (any signs), and of
#: non-negative unit rows.
DIAMETER = {"any": 2.0, "nonnegative": math.sqrt(2.0)}


def unit_rows(rows):
    """Rows divided by their L2 norm (zero rows stay zero); a new float64 array."""
    rows = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def random_walk(adjacency):
    """``(D + I)^-1 (A + I)`` of a symmetric 0/1 adjacency, as CSR float64."""
    a = sparse.csr_matrix(adjacency, dtype=np.float64)
    a = a + sparse.eye(a.shape[0], format="csr")
    return (sparse.diags(1.0 / np.asarray(a.sum(axis=1)).ravel()) @ a).tocsr()


def hop_weights(hops):
    """The default weights: equal, ``1 / sqrt(hops + 1)`` each, so ``sum w_k^2 = 1``."""
    return np.full(hops + 1, 1.0 / math.sqrt(hops + 1))


def propagated_inputs(adjacency, rows, weights):
    """``(n, (K + 1) d)`` inputs ``[w_0 Z_0, ..., w_K Z_K]`` (module doc), rows unit-scaled.

    Parameters
    ----------
    adjacency : sparse matrix
        The symmetric 0/1 adjacency (the private part).
    rows : ndarray of shape (n, d)
        Public rows; they are scaled to unit norm first.
    weights : sequence of float
        ``w_0, ..., w_K``; ``sum w_k^2 <= 1`` keeps every input within the unit ball.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if np.sum(weights ** 2) > 1 + 1e-12 or np.any(weights < 0):
        raise ValueError(f"weights: need non-negative w_k with sum w_k^2 <= 1; got {weights}.")
    p, current, out = random_walk(adjacency), unit_rows(rows), []
    for k, w in enumerate(weights):
        if k:
            current = p @ current
        out.append(w * current)
    return np.concatenate(out, axis=1)


def sensitivity_bound(weights, diameter=DIAMETER["any"]):
    """``psi``: the bound on ``sum_i ||h_i - h'_i||`` over all nodes for one edge changed.

    Hop ``k`` moves by at most ``diameter * k`` summed over the nodes (README); the
    concatenation moves by at most ``sum_k w_k`` times that.
    """
    return float(diameter * sum(k * w for k, w in enumerate(weights)))


def spectral_tail(sigma, dim, classes, delta):
    """``B``: ``P(||b||_op > B) <= delta`` for a ``dim x classes`` matrix of N(0, sigma^2).

    ``E ||b||_op <= sigma (sqrt(dim) + sqrt(classes))`` (Gordon) and the operator norm is
    1-Lipschitz in the entries, so Gaussian concentration adds ``sigma sqrt(2 ln(1/delta))``.
    """
    return sigma * (math.sqrt(dim) + math.sqrt(classes) + math.sqrt(2 * math.log(1 / delta)))


def privacy_loss_bound(sigma, reg, n_train, dim, classes, psi, delta):
    """Epsilon of objective perturbation at ``(sigma, reg)``: ``(epsilon, delta)``-DP.

    Two events of probability ``delta / 2`` each are excluded (README): ``||b||_op > B``
    with ``B = spectral_tail(sigma, dim, classes, delta / 2)``, and a pair-dependent
    Lipschitz function of ``b`` exceeding ``sigma G (sqrt(classes) + t)``,
    ``t = sqrt(2 ln(2 / delta))``. Outside them, ``R = (sqrt(2) n_train + B) / reg``
    bounds ``||W||_op``, one edge changes the objective's gradient by at most
    ``G = (sqrt(2) + R / 2) psi`` and its Hessian by at most
    ``J = (2 + (sqrt(classes) + 2) R / 2) psi`` in trace norm, and the log density ratio
    is at most ``J / reg + (2 sigma G (sqrt(classes) + t) + G^2) / (2 sigma^2)``.
    ``inf`` at ``sigma == 0``.
    """
    if sigma <= 0:
        return math.inf
    radius = (math.sqrt(2) * n_train + spectral_tail(sigma, dim, classes, delta / 2)) / reg
    gradient = (math.sqrt(2) + radius / 2) * psi
    jacobian = (2 + (math.sqrt(classes) + 2) * radius / 2) * psi
    inner = sigma * gradient * (math.sqrt(classes) + math.sqrt(2 * math.log(2 / delta)))
    return jacobian / reg + (2 * inner + gradient ** 2) / (2 * sigma ** 2)


def smallest_sigma(epsilon, reg, n_train, dim, classes, psi, delta):
    """The smallest ``sigma`` with ``privacy_loss_bound(...) <= epsilon`` (``inf``: none)."""
    def loss(s):
        return privacy_loss_bound(s, reg, n_train, dim, classes, psi, delta)

    grid = np.logspace(-6, 12, 1801)
    ok = [i for i, s in enumerate(grid) if loss(s) <= epsilon]
    if not ok:
        return math.inf
    if ok[0] == 0:
        return float(grid[0])
    low, high = float(grid[ok[0] - 1]), float(grid[ok[0]])
    for _ in range(100):  # bisection on the first crossing: loss(low) > epsilon >= loss(high)
        mid = 0.5 * (low + high)
        low, high = (mid, high) if loss(mid) > epsilon else (low, mid)
    return high


def limit_sigma(epsilon, dim, classes, psi, delta):
    """The noise as ``reg`` grows without bound: ``R -> 0``, ``G -> sqrt(2) psi``."""
    a = math.sqrt(classes) + math.sqrt(2 * math.log(2 / delta))
    x = -a + math.sqrt(a * a + 2 * epsilon)  # x = G / sigma solves a x + x^2 / 2 = epsilon
    return math.sqrt(2) * psi / x


def calibrate(epsilon, delta, n_train, dim, classes, psi, reg, slack=0.1):
    """``(sigma, reg)`` for ``epsilon``: the smallest ``reg * 2^j`` (j >= 0) whose noise is
    within ``1 + slack`` of :func:`limit_sigma`, and that noise. Public inputs only.

    ``(0, reg)`` at ``epsilon=inf``.
    """
    if math.isinf(epsilon):
        return 0.0, reg
    target = (1 + slack) * limit_sigma(epsilon, dim, classes, psi, delta)
    for j in range(200):
        candidate = reg * 2.0 ** j
        sigma = smallest_sigma(epsilon, candidate, n_train, dim, classes, psi, delta)
        if sigma <= target:
            return sigma, candidate
    raise ValueError(f"calibrate: no regularisation found for epsilon={epsilon}.")


def fit_perturbed(inputs, y, classes, reg, noise):
    """``argmin_W sum_i CE(W^T h_i, y_i) + reg / 2 ||W||^2 + <noise, W>`` (L-BFGS).

    Parameters
    ----------
    inputs : ndarray of shape (n, d)
        The training nodes' inputs.
    y : ndarray of shape (n,)
        Their labels in ``0 .. classes - 1``.
    classes : int
        The number of classes.
    reg : float
        The L2 regularisation ``reg`` (of the summed loss).
    noise : ndarray of shape (d, classes)
        The linear term ``b`` (zeros: the non-private fit).

    Returns
    -------
    ndarray of shape (d, classes)
    """
    onehot = np.eye(classes)[y]
    shape = noise.shape

    def objective(flat):
        w = flat.reshape(shape)
        logits = inputs @ w
        logits -= logits.max(axis=1, keepdims=True)
        log_z = np.log(np.exp(logits).sum(axis=1, keepdims=True))
        prob = np.exp(logits - log_z)
        value = -(onehot * (logits - log_z)).sum() + 0.5 * reg * (w * w).sum() + (noise * w).sum()
        grad = inputs.T @ (prob - onehot) + reg * w + noise
        return value, grad.ravel()

    result = optimize.minimize(objective, np.zeros(noise.size), jac=True, method="L-BFGS-B",
                               options={"maxiter": 5000, "gtol": 1e-9, "ftol": 1e-15})
    return result.x.reshape(shape)


def linear_sigma(epsilon, delta, psi):
    """The noise of the linear objective: the exact Gaussian mechanism at sensitivity ``psi``.

    With the linear loss ``-<W^T h_i, e_(y_i)>`` the perturbed minimiser is
    ``(S - b) / reg`` with ``S = sum_(i in train) h_i e_(y_i)^T``, whose Frobenius
    sensitivity is ``sum_i ||h_i - h'_i|| <= psi``: the Gaussian mechanism, accounted on
    its analytic curve by the library's ``calibrate_gaussian_noise``. ``0`` at ``inf``.
    """
    from skdpgraph.privacy import calibrate_gaussian_noise

    if math.isinf(epsilon):
        return 0.0
    return psi * calibrate_gaussian_noise(epsilon, delta, context="linear objective")


def fit_linear(inputs, y, classes, noise, sigma):
    """Nearest noisy class mean: ``(means, offsets)``; the score is ``h @ means - offsets``.

    The means are ``S - b`` divided by the public class counts (post-processing); the
    offsets are half their squared norms less the noise's expected share,
    ``dim sigma^2 / count^2``.
    """
    counts = np.maximum(np.bincount(y, minlength=classes), 1).astype(np.float64)
    means = (inputs.T @ np.eye(classes)[y] - noise) / counts
    expected = inputs.shape[1] * sigma ** 2 / counts ** 2
    return means, 0.5 * ((means ** 2).sum(axis=0) - expected)


def objpert(ds, split_for_seed, args, emit):
    """Objective perturbation over ``--rows`` x ``--hops`` x budgets (see the module doc).

    ``delta`` is GAP's default at edge level (``propagation.edge_delta``); ``reg`` starts
    at ``--reg`` (chosen on the validation nodes at ``epsilon=inf``, README) and
    :func:`calibrate` raises it where the budget needs. Each budget fits the logistic
    objective (``objpert``) and the linear one (``objpert-linear``).
    """
    from propagation import public_rows

    for seed in range(args.first_seed, args.first_seed + args.seeds):
        split = split_for_seed(seed)
        rng = np.random.default_rng(seed)
        for kind in args.rows or ("svd-64",):
            rows = public_rows(kind, ds, split, seed)
            diameter = DIAMETER["nonnegative" if rows.min() >= 0 else "any"]
            for hops in args.hops or (2,):
                weights = hop_weights(hops)
                inputs = propagated_inputs(ds.graph.adjacency(), rows, weights)
                record = {"rows": kind, "hops": hops, "weights": weights.tolist(),
                          "seed": seed, "psi": sensitivity_bound(weights, diameter)}
                for epsilon in args.epsilons:
                    for fit in (_fit_logistic, _fit_linear):
                        emit({**record, "epsilon": epsilon,
                              "private": "unvetted" if math.isfinite(epsilon) else False,
                              **fit(ds, split, inputs, record["psi"], epsilon, args.reg, rng)})


def _fit_logistic(ds, split, inputs, psi, epsilon, reg, rng):
    """One logistic fit (``objpert``): calibration, noise, L-BFGS, accuracies."""
    import time

    from propagation import edge_delta

    start, train = time.perf_counter(), np.asarray(split["train"])
    classes, delta = int(ds.y.max()) + 1, edge_delta(ds.graph.num_nodes)
    sigma, reg = calibrate(epsilon, delta, len(train), inputs.shape[1], classes, psi, reg)
    noise = rng.normal(0.0, sigma, (inputs.shape[1], classes))
    w = fit_perturbed(inputs[train], ds.y[train], classes, reg, noise)
    return {"model": "objpert", "delta": delta, "sigma": sigma, "reg": reg,
            "fit_seconds": time.perf_counter() - start,
            **_accuracies(inputs, ds.y, split, lambda h: h @ w)}


def _fit_linear(ds, split, inputs, psi, epsilon, reg, rng):
    """One linear fit (``objpert-linear``): the exact Gaussian mechanism on class sums."""
    import time

    from propagation import edge_delta

    start, train = time.perf_counter(), np.asarray(split["train"])
    classes, delta = int(ds.y.max()) + 1, edge_delta(ds.graph.num_nodes)
    sigma = linear_sigma(epsilon, delta, psi)
    noise = rng.normal(0.0, sigma, (inputs.shape[1], classes))
    means, offsets = fit_linear(inputs[train], ds.y[train], classes, noise, sigma)
    return {"model": "objpert-linear", "delta": delta, "sigma": sigma,
            "fit_seconds": time.perf_counter() - start,
            **_accuracies(inputs, ds.y, split, lambda h: h @ means - offsets)}


def _accuracies(inputs, y, split, score):
    """Train, validation and test accuracy of the largest column of ``score(inputs)``."""
    return {f"{part}_accuracy": float(np.mean(
        score(inputs[split[part]]).argmax(axis=1) == y[split[part]]))
        for part in ("train", "val", "test")}
