"""Generalized randomized response (GRR) and GRR with feature sampling (GRR-FS).

Pure functions for the local-DP mechanisms of RGNN: the client-side
randomisers, the server-side unbiased frequency estimator, and the exact
privacy loss of GRR-FS (with the paper's claimed value for comparison).

The neighbouring relation is local DP: any two inputs of one user (one label,
or one whole feature vector for GRR-FS).
"""

import itertools
import math
import numbers

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from skdpgraph._docstrings import fill_doc, register_fragments

__all__ = [
    "grr_probabilities",
    "label_transition_matrix",
    "grr_randomize",
    "grr_fs_randomize",
    "grr_fs_frequency_estimate",
    "grr_fs_epsilon",
    "grr_fs_paper_epsilon",
    "grr_fs_worst_case_log_ratio",
]

_MAX_ENUMERATION = 1024

register_fragments(
    references_bhww24="""
        References
        ----------
        .. [BHWW24] Bhaila, K., Huang, W., Wu, Y. and Wu, X. (2024). "Local
           Differential Privacy in Graph Neural Networks: a Reconstruction
           Approach". SIAM International Conference on Data Mining (SDM).
           Theorem 1 (privacy claim), Eq. (5) and Theorem 2 (estimator).""",
    references_kbr16="""
        References
        ----------
        .. [KBR16] Kairouz, P., Bonawitz, K. and Ramage, D. (2016). "Discrete
           Distribution Estimation under Local Privacy". ICML.""",
)


@fill_doc
def grr_probabilities(epsilon: float, domain_size: ArrayLike) -> tuple:
    r"""Keep and flip probabilities of generalized randomized response.

    GRR over a domain of size :math:`\gamma` reports the true value with
    probability :math:`p` and each of the :math:`\gamma - 1` other values
    with probability :math:`q`:

    .. math::

        p = \frac{e^\varepsilon}{e^\varepsilon + \gamma - 1}, \qquad
        q = \frac{1}{e^\varepsilon + \gamma - 1}, \qquad p / q = e^\varepsilon.

    Parameters
    ----------
    epsilon : float
        Local privacy budget, in ``(0, inf]``.
    domain_size : int or array-like of int
        Domain size :math:`\gamma >= 1` (broadcast if an array).

    Returns
    -------
    p : float or ndarray
        Probability of reporting the true value.
    q : float or ndarray
        Probability of reporting one given other value.

    Notes
    -----
    Evaluated as :math:`p = 1/(1 + (\gamma - 1)e^{-\varepsilon})`, which is
    exact for large ``epsilon`` and gives ``p = 1, q = 0`` at ``inf``.

    {{references_kbr16}}

    Examples
    --------
    >>> from skdpgraph.privacy._grr import grr_probabilities
    >>> p, q = grr_probabilities(1.0, 2)
    >>> round(float(p), 4), round(float(q), 4)
    (0.7311, 0.2689)
    """
    epsilon = _check_epsilon(epsilon)
    gamma = _check_domain_sizes(domain_size, ndim=None)
    tail = np.exp(-epsilon)
    denominator = 1.0 + (gamma - 1) * tail
    p, q = 1.0 / denominator, tail / denominator
    if np.ndim(p) == 0:
        return float(p), float(q)
    return p, q


@fill_doc
def label_transition_matrix(epsilon: float, n_classes: int) -> np.ndarray:
    r"""GRR channel matrix :math:`P[i, j] = P(\text{report } j \mid \text{true } i)`.

    Parameters
    ----------
    epsilon : float
        Local privacy budget, in ``(0, inf]``.
    n_classes : int
        Number of classes :math:`c >= 1`.

    Returns
    -------
    P : ndarray of shape (n_classes, n_classes)
        ``p`` on the diagonal and ``q`` elsewhere (see
        :func:`grr_probabilities`); rows sum to one. The expected report
        frequencies are ``pi @ P`` for true frequencies ``pi``; as ``P`` is
        symmetric, ``np.linalg.solve(P, lam)`` inverts it.

    {{references_bhww24}}

    Examples
    --------
    >>> from skdpgraph.privacy._grr import label_transition_matrix
    >>> label_transition_matrix(float("inf"), 2)
    array([[1., 0.],
           [0., 1.]])
    >>> label_transition_matrix(1.0, 3).sum(axis=1)
    array([1., 1., 1.])
    """
    n_classes = _check_int(n_classes, "n_classes", low=1)
    p, q = grr_probabilities(epsilon, n_classes)
    return np.full((n_classes, n_classes), q) + (p - q) * np.eye(n_classes)


@fill_doc
def grr_randomize(
    values: ArrayLike, domain_size: ArrayLike, epsilon: float, rng: np.random.Generator
) -> np.ndarray:
    r"""Apply generalized randomized response to every entry of ``values``.

    Each entry ``v`` in ``{0, ..., gamma - 1}`` is kept with probability
    :math:`p` and otherwise replaced by a uniformly random *other* value, so
    each other value has probability :math:`q` (see
    :func:`grr_probabilities`). Entries are randomised independently, in one
    vectorised draw.

    Parameters
    ----------
    values : array-like of int
        True values, e.g. a label vector of shape ``(n,)`` or a categorical
        matrix of shape ``(n, d)``.
    domain_size : int or array-like of int
        Domain size, broadcast against ``values`` (one per column for a
        ``(n, d)`` matrix: shape ``(d,)``).
    epsilon : float
        Budget spent on each entry, in ``(0, inf]``.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    reports : ndarray of int64, same shape as ``values``
        Randomised values.

    Notes
    -----
    Each entry is :math:`\varepsilon`-LDP. A row of ``d`` entries is
    :math:`d\varepsilon`-LDP by composition.

    {{references_kbr16}}

    Examples
    --------
    >>> from skdpgraph._random import RandomStreams
    >>> from skdpgraph.privacy._grr import grr_randomize
    >>> rng = RandomStreams(0).numpy("clients")
    >>> grr_randomize([0, 1, 2, 1], 3, float("inf"), rng)
    array([0, 1, 2, 1])
    >>> grr_randomize([[0, 3], [1, 0]], [2, 4], 2.0, rng).shape
    (2, 2)
    """
    _check_rng(rng)
    return _grr_draw(*_check_values(values, domain_size), epsilon, rng)


def _grr_draw(values, gamma, sizes, epsilon, rng):
    """GRR of checked ``values`` (int64); ``gamma`` their broadcast domain sizes, ``sizes``
    the same before broadcasting (one probability per size, not per entry)."""
    p, _ = grr_probabilities(epsilon, sizes)
    keep = rng.random(values.shape) < p
    # Uniform over the gamma - 1 other values: draw in [0, gamma - 2], skip v.
    other = rng.integers(0, np.maximum(gamma - 1, 1), size=values.shape)
    other += other >= values
    return np.where(keep, values, other)


@fill_doc
def grr_fs_randomize(
    values: ArrayLike,
    domain_sizes: ArrayLike,
    epsilon_per_feature: float,
    n_sampled_features: int,
    rng: np.random.Generator,
) -> np.ndarray:
    r"""GRR with feature sampling (GRR-FS), one report per row.

    For each row (user) independently: sample :math:`m` of the :math:`d`
    features uniformly without replacement, apply GRR with budget
    :math:`\varepsilon_x` to the sampled ones, and report a value drawn
    uniformly from the column's domain for the :math:`d - m` others. The
    report does not reveal which features were sampled.

    Parameters
    ----------
    values : array-like of int of shape (n, d)
        True categorical features; column ``j`` takes values in
        ``{0, ..., domain_sizes[j] - 1}``.
    domain_sizes : array-like of int of shape (d,)
        Domain size :math:`\gamma_j` of each column (per column, not per row).
    epsilon_per_feature : float
        :math:`\varepsilon_x`, the GRR budget of each sampled feature.
    n_sampled_features : int
        :math:`m`, with ``1 <= m <= d``.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    reports : ndarray of int64 of shape (n, d)
        Randomised feature matrix.

    Notes
    -----
    Each row is :math:`m\varepsilon_x`-LDP (see :func:`grr_fs_epsilon`); the
    smaller value claimed by the paper is not a bound (see
    :func:`grr_fs_paper_epsilon`).

    {{references_bhww24}}

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph._random import RandomStreams
    >>> from skdpgraph.privacy._grr import grr_fs_randomize
    >>> x = np.array([[0, 1, 2], [1, 0, 3]])
    >>> grr_fs_randomize(x, [2, 2, 4], 1.0, 2, RandomStreams(0).numpy("clients")).shape
    (2, 3)
    """
    _check_rng(rng)
    values, gamma, sizes = _check_values(values, domain_sizes, ndim=2)
    n, d = values.shape
    m = _check_int(n_sampled_features, "n_sampled_features", low=1, high=d)
    # The m smallest of d i.i.d. uniform keys are a uniform m-subset (found by a partial
    # sort: the subset of the full sort's m first ranks, which only a tie could change).
    smallest = np.argpartition(rng.random((n, d)), m - 1, axis=1)[:, :m]
    sampled = np.zeros((n, d), dtype=bool)
    np.put_along_axis(sampled, smallest, True, axis=1)
    randomised = _grr_draw(values, gamma, sizes, epsilon_per_feature, rng)
    reports = rng.integers(0, gamma, size=(n, d))  # uniform, kept for the unsampled ones
    np.copyto(reports, randomised, where=sampled)
    return reports


@fill_doc
def grr_fs_frequency_estimate(
    observed: ArrayLike,
    domain_sizes: ArrayLike,
    epsilon_per_feature: float,
    n_sampled_features: int,
    n_features: int | None = None,
) -> np.ndarray:
    r"""Unbiased estimate of true value frequencies from GRR-FS reports.

    For feature :math:`j` with domain size :math:`\gamma`, the probability
    that a report equals :math:`v` is
    :math:`\frac{m}{d}p + (1 - \frac{m}{d})\frac{1}{\gamma}` if the true value
    is :math:`v` and :math:`\frac{m}{d}q + (1 - \frac{m}{d})\frac{1}{\gamma}`
    otherwise. So the expected observed frequency is
    :math:`\lambda = \frac{m}{d}(p - q)\pi + \frac{m}{d}q + \frac{d - m}{d\gamma}`,
    and inverting this affine map gives

    .. math::

        \tilde\pi = \frac{d\,\lambda}{m(p - q)}
        + \frac{m - d - m\gamma q}{m\gamma(p - q)}.

    Parameters
    ----------
    observed : array-like of float of shape (..., sum(domain_sizes))
        Observed frequencies :math:`\lambda`: the one-hot encoding of the
        reports, column blocks in feature order (block ``j`` has
        ``domain_sizes[j]`` columns), possibly averaged over users or over
        neighbourhoods.
    domain_sizes : array-like of int of shape (n_blocks,)
        Domain sizes of the features whose blocks ``observed`` holds.
    epsilon_per_feature : float
        :math:`\varepsilon_x` used by :func:`grr_fs_randomize`.
    n_sampled_features : int
        :math:`m` used by :func:`grr_fs_randomize`.
    n_features : int, default=None
        :math:`d`, the number of features the mechanism randomised. ``None``
        means ``len(domain_sizes)``. Set it to estimate only some features,
        e.g. one feature's ``(..., gamma)`` block with ``domain_sizes=[gamma]``
        and ``n_features=d``.

    Returns
    -------
    estimate : ndarray of shape ``observed.shape``
        :math:`\tilde\pi` per column. Unbiased, hence not clipped: values may
        fall outside ``[0, 1]``; each block sums to one when the observed
        block does.

    Notes
    -----
    Same estimator as Eq. (5) of [BHWW24]_, with :math:`\gamma` per column
    (the domain size of the column's feature). The estimator is affine in
    :math:`\lambda`, so it stays unbiased for averages of reports, e.g.
    neighbourhood means.

    {{references_bhww24}}

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph.privacy._grr import grr_fs_frequency_estimate
    >>> lam = np.array([0.5, 0.5, 0.25, 0.25, 0.25, 0.25])
    >>> grr_fs_frequency_estimate(lam, [2, 4], 1.0, 1).round(3)
    array([0.5 , 0.5 , 0.25, 0.25, 0.25, 0.25])
    """
    gamma = _check_domain_sizes(domain_sizes, ndim=1)
    if n_features is None:
        n_features = gamma.size
    d = _check_int(n_features, "n_features", low=gamma.size)
    m = _check_int(n_sampled_features, "n_sampled_features", low=1, high=d)
    epsilon = _check_epsilon(epsilon_per_feature)
    observed = np.array(observed, dtype=float)  # a copy: estimated in place
    columns = np.repeat(gamma, gamma)
    if observed.ndim == 0 or observed.shape[-1] != columns.size:
        raise ValueError(
            "observed must have sum(domain_sizes) = "
            f"{columns.size} columns (one one-hot block per feature). "
            f"Got shape {observed.shape} instead."
        )
    return grr_fs_estimate_columns(observed, columns, epsilon, m, d)


def grr_fs_estimate_columns(observed: np.ndarray, columns: np.ndarray, epsilon: float,
                            n_sampled_features: int, n_features: int) -> np.ndarray:
    r"""The affine map of :func:`grr_fs_frequency_estimate`, in place, column by column.

    For callers that keep only some columns of the one-hot blocks (e.g. value 1 of a binary
    feature): column ``j`` of ``observed`` belongs to a feature with domain size
    ``columns[j]``. Arguments are not checked. The operations are those of
    :func:`grr_fs_frequency_estimate` in the same order, so the results agree bit for bit.

    Parameters
    ----------
    observed : ndarray of float64 of shape (..., n_columns)
        Overwritten with the estimates.
    columns : ndarray of int of shape (n_columns,)
        Domain size of the feature each column of ``observed`` belongs to.
    epsilon : float
        Local privacy budget of each reported feature, in ``(0, inf]``.
    n_sampled_features, n_features : int
        :math:`m` and :math:`d`.

    Returns
    -------
    ndarray
        ``observed``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph.privacy import grr_fs_estimate_columns
    >>> grr_fs_estimate_columns(np.array([0.5]), np.array([2]), 1.0, 1, 2).round(3)
    array([0.5])
    """
    m, d = n_sampled_features, n_features
    p, q = grr_probabilities(epsilon, columns)
    observed *= d
    observed /= m * (p - q)
    observed += (m - d - m * columns * q) / (m * columns * (p - q))
    return observed


@fill_doc
def grr_fs_epsilon(n_sampled_features: int, epsilon_per_feature: float) -> float:
    r"""Tight local-DP budget of GRR-FS: :math:`m\,\varepsilon_x`.

    Parameters
    ----------
    n_sampled_features : int
        :math:`m >= 1`.
    epsilon_per_feature : float
        :math:`\varepsilon_x`, in ``(0, inf]``.

    Returns
    -------
    epsilon : float
        :math:`m\varepsilon_x`. It is an upper bound by composition and it is
        attained: for :math:`x, x'` differing in every feature, the output
        :math:`y = x` has likelihood ratio exactly :math:`e^{m\varepsilon_x}`
        (see :func:`grr_fs_worst_case_log_ratio`).

    {{references_bhww24}}

    Examples
    --------
    >>> from skdpgraph.privacy._grr import grr_fs_epsilon
    >>> grr_fs_epsilon(10, 1.0)
    10.0
    """
    m = _check_int(n_sampled_features, "n_sampled_features", low=1)
    return float(m * _check_epsilon(epsilon_per_feature))


@fill_doc
def grr_fs_paper_epsilon(
    n_features: int, n_sampled_features: int, epsilon_per_feature: float
) -> float:
    r"""The budget claimed by RGNN's Theorem 1 (NOT an upper bound).

    .. math::

        \varepsilon_X = \ln\left(1 + \frac{m}{d}(e^{m\varepsilon_x} - 1)\right).

    Provided only to compare with the true privacy loss; never use it to
    report a guarantee. Use :func:`grr_fs_epsilon` instead.

    Parameters
    ----------
    n_features : int
        :math:`d`.
    n_sampled_features : int
        :math:`m`, with ``1 <= m <= d``.
    epsilon_per_feature : float
        :math:`\varepsilon_x`.

    Returns
    -------
    epsilon : float
        The paper's :math:`\varepsilon_X`.

    Notes
    -----
    The paper applies amplification by sampling with rate :math:`m/d` to
    the composed budget :math:`m\varepsilon_x`. That lemma needs the
    differing data to be left out of the computation with probability
    :math:`1 - m/d`, and the left-out branch to dilute the likelihood ratio.
    Under local DP a user's two inputs may differ in *every* feature, so
    every sampled subset touches differing features: for the output
    :math:`y = x`, each sampled feature contributes :math:`e^{\varepsilon_x}`
    and each unsampled one the same :math:`1/\gamma_j` under both inputs, so
    the ratio is :math:`e^{m\varepsilon_x}` for every subset and hence for
    their mixture. Even for inputs differing in one feature, the branch that
    does not sample that feature still randomises others, whose likelihood
    can be small, so it does not dilute the ratio as the lemma requires;
    with non-binary domains the paper's value is then exceeded too
    (:math:`\gamma = (3, 2, 4)`, :math:`m = 1`, :math:`\varepsilon_x = 1`:
    true 0.496, paper 0.453).

    {{references_bhww24}}

    Examples
    --------
    >>> from skdpgraph.privacy._grr import grr_fs_paper_epsilon
    >>> round(grr_fs_paper_epsilon(5, 1, 1.0), 3)
    0.295
    """
    d = _check_int(n_features, "n_features", low=1)
    m = _check_int(n_sampled_features, "n_sampled_features", low=1, high=d)
    epsilon = _check_epsilon(epsilon_per_feature)
    with np.errstate(over="ignore"):  # inf for budgets past exp's range (m * eps > 709)
        return float(np.log1p(m / d * np.expm1(m * epsilon)))


@fill_doc
def grr_fs_worst_case_log_ratio(
    domain_sizes: ArrayLike,
    epsilon_per_feature: float,
    n_sampled_features: int,
    neighbouring: str = "any",
) -> float:
    r"""Exact worst-case privacy loss of GRR-FS, by enumeration.

    Computes :math:`\max_{x, x', y} \log P(y \mid x) / P(y \mid x')` with

    .. math::

        P(y \mid x) = \binom{d}{m}^{-1} \sum_{|S| = m}
        \prod_{j \in S} \mathrm{GRR}_j(y_j \mid x_j)
        \prod_{j \notin S} \frac{1}{\gamma_j},

    over all inputs and outputs. Meant for small examples (tests, docs).

    Parameters
    ----------
    domain_sizes : array-like of int of shape (d,)
        Domain sizes :math:`\gamma_j`; their product must be at most 1024.
    epsilon_per_feature : float
        :math:`\varepsilon_x`.
    n_sampled_features : int
        :math:`m`, with ``1 <= m <= d``.
    neighbouring : {"any", "one-feature"}, default="any"
        ``"any"``: all pairs :math:`x, x'` (local DP, the relation of the
        paper). ``"one-feature"``: pairs differing in exactly one feature.

    Returns
    -------
    epsilon : float
        The exact (tight) pure-DP epsilon of one GRR-FS report under the
        chosen relation.

    Notes
    -----
    Under ``"any"`` the result is :math:`m\varepsilon_x` (see
    :func:`grr_fs_epsilon`), larger than :func:`grr_fs_paper_epsilon` for
    :math:`m < d`.

    {{references_bhww24}}

    Examples
    --------
    >>> from skdpgraph.privacy._grr import grr_fs_worst_case_log_ratio
    >>> round(grr_fs_worst_case_log_ratio([2] * 5, 1.0, 1), 6)
    1.0
    >>> round(grr_fs_worst_case_log_ratio([3, 2, 4], 1.0, 1, "one-feature"), 3)
    0.496
    """
    gamma = _check_domain_sizes(domain_sizes, ndim=1)
    d = gamma.size
    m = _check_int(n_sampled_features, "n_sampled_features", low=1, high=d)
    epsilon = _check_epsilon(epsilon_per_feature)
    if neighbouring not in ("any", "one-feature"):
        raise ValueError(
            f"neighbouring must be 'any' or 'one-feature'. Got {neighbouring!r} instead."
        )
    if np.prod(gamma) > _MAX_ENUMERATION:
        raise ValueError(
            f"grr_fs_worst_case_log_ratio enumerates all inputs: prod(domain_sizes) must "
            f"be <= {_MAX_ENUMERATION}. Got {int(np.prod(gamma))}; use fewer or smaller "
            "features."
        )
    log_lik = _log_likelihood_grr_fs(gamma, epsilon, m)
    with np.errstate(invalid="ignore"):
        if neighbouring == "any":
            return float(np.max(np.ptp(log_lik, axis=0)))
        per_input = log_lik.reshape(tuple(gamma) + (-1,))
        return float(max(np.max(np.ptp(per_input, axis=j)) for j in range(d)))


def _log_likelihood_grr_fs(gamma, epsilon, m):
    """``log P(y | x)`` of GRR-FS as an (inputs, outputs) matrix, C order."""
    grr_logs, uniform_logs = [], []
    for g in gamma:
        p, q = grr_probabilities(epsilon, g)
        with np.errstate(divide="ignore"):
            grr_logs.append(np.where(np.eye(g, dtype=bool), np.log(p), np.log(q)))
        uniform_logs.append(np.full((g, g), -np.log(g)))
    per_subset = []
    for subset in itertools.combinations(range(gamma.size), m):
        log_lik = np.zeros((1, 1))
        for j, g in enumerate(gamma):
            factor = grr_logs[j] if j in subset else uniform_logs[j]
            rows, cols = log_lik.shape
            log_lik = (log_lik[:, None, :, None] + factor[None, :, None, :]).reshape(
                rows * g, cols * g
            )
        per_subset.append(log_lik)
    return logsumexp(np.stack(per_subset), axis=0) - math.log(math.comb(gamma.size, m))


def _check_epsilon(epsilon):
    """Return ``epsilon`` as a float in ``(0, inf]`` or raise."""
    if not isinstance(epsilon, numbers.Real) or isinstance(epsilon, bool):
        raise TypeError(f"epsilon must be a real number. Got {epsilon!r} instead.")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be in (0, inf]. Got {epsilon!r} instead.")
    return float(epsilon)


def _check_int(value, name, low, high=None):
    """Return ``value`` as an int in ``[low, high]`` or raise."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int. Got {value!r} instead.")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {bound}. Got {value} instead.")
    return int(value)


def _check_domain_sizes(domain_sizes, ndim):
    """Return domain sizes as an int64 array of values >= 1 or raise."""
    gamma = np.asarray(domain_sizes)
    if ndim is not None and gamma.ndim != ndim:
        raise ValueError(
            f"domain_sizes must be a {ndim}-D array. Got shape {gamma.shape} instead."
        )
    if gamma.size == 0 or not np.all(np.mod(gamma, 1) == 0) or np.any(gamma < 1):
        raise ValueError(f"domain sizes must be integers >= 1. Got {domain_sizes!r} instead.")
    return gamma.astype(np.int64)


def _check_values(values, domain_size, ndim=None):
    """Return (values, gamma, sizes): int64 values in range, their broadcast domain sizes,
    and the checked domain sizes before broadcasting."""
    values = np.asarray(values)
    if ndim is not None and values.ndim != ndim:
        raise ValueError(f"values must be a {ndim}-D array. Got shape {values.shape} instead.")
    if values.dtype.kind not in "biuf" or (
            values.dtype.kind == "f" and not np.all(np.mod(values, 1) == 0)):
        raise TypeError(f"values must hold integer category codes. Got dtype {values.dtype}.")
    values = values.astype(np.int64, copy=False)  # read, never written
    sizes = _check_domain_sizes(domain_size, ndim=None)
    try:
        gamma = np.broadcast_to(sizes, values.shape)
    except ValueError:
        raise ValueError(
            f"domain_size of shape {np.shape(domain_size)} does not broadcast against "
            f"values of shape {values.shape}; pass one domain size per column."
        ) from None
    bad = (values < 0) | (values >= gamma)
    if np.any(bad):
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"values must lie in [0, domain_size - 1]: values{list(index)} = "
            f"{values[index]} with domain size {gamma[index]}."
        )
    return values, gamma, sizes


def _check_rng(rng):
    """Raise unless ``rng`` is a :class:`numpy.random.Generator`."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator, e.g. "
            f"skdpgraph._random.RandomStreams(seed).numpy('clients'). "
            f"Got {type(rng).__name__} instead."
        )
