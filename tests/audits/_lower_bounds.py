"""Statistically valid empirical lower bounds on epsilon, from samples of a mechanism.

If ``M`` is (epsilon, delta)-DP, every set ``S`` of outputs and every ordered pair of
neighbouring inputs ``(A, B)`` satisfy ``P[M(A) in S] <= e^epsilon P[M(B) in S] + delta``,
hence

.. math::

    \\varepsilon \\ge \\log \\frac{P[M(A) \\in S] - \\delta}{P[M(B) \\in S]}.

An audit runs the mechanism ``n`` times on each of two neighbouring inputs ``D`` and
``D'``, counts how often the output falls in a rejection region ``S`` fixed in advance,
and replaces the probability in the numerator by a one-sided Clopper--Pearson *lower*
bound and the one in the denominator by an *upper* bound. The four ordered choices
(``S`` or its complement, ``(D, D')`` or ``(D', D)``) are the two directions of the test
``D`` vs ``D'`` (false positive rate ``P[M(D) in S]``, false negative rate
``P[M(D') not in S]``) and of the test ``D'`` vs ``D``. The bound holds with probability
at least ``1 - alpha`` over the samples: the intervals used are split by Bonferroni, so
that all of them hold at once with that probability.

For a real-valued output the region is a threshold ``{score > t}`` on a scalar test
statistic (e.g. the projection of the output on the difference of the two means, a
monotone proxy of the likelihood ratio). The threshold and the direction are chosen on one
part of the samples (the *selection* split) and the bound is computed on the other part
only (the *counting* split), so that the choice does not invalidate the intervals.
For discrete outputs with known likelihoods the region is fixed without data (the outputs
of largest likelihood ratio) and every sample is counted.

References
----------
Jagielski, Ullman, Oprea. "Auditing Differentially Private Machine Learning: How Private
is Private SGD?", NeurIPS 2020 (the Clopper--Pearson audit).
Nasr, Song, Thakurta, Papernot, Carlini. "Adversary Instantiation: Lower Bounds for
Differentially Private Machine Learning", IEEE S&P 2021.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

__all__ = [
    "DIRECTIONS",
    "AuditResult",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "epsilon_lower_bound_from_counts",
]

#: The four ordered tests of one region ``S`` (numerator event, denominator event):
#: ``"S:D'>D"`` reads ``P[M(D') in S] <= e^eps P[M(D) in S] + delta`` (``S`` is evidence
#: for ``D'``: false positive rate ``P[M(D) in S]``, false negative rate
#: ``P[M(D') not in S]``); ``"S:D>D'"`` swaps the inputs; ``"notS:..."`` use the complement.
DIRECTIONS = ("S:D'>D", "S:D>D'", "notS:D'>D", "notS:D>D'")

#: Default number of candidate thresholds on each tail (log-spaced tail probabilities).
_TAIL_CANDIDATES = 400

#: Level of the (selection-only) bound that ranks candidate regions, relative to alpha / 2.
_SELECTION_FACTOR = 0.01


def clopper_pearson_upper(successes, trials, alpha: float):
    """One-sided Clopper--Pearson upper bound on a binomial proportion at level ``1 - alpha``.

    ``P[p > upper(K)] <= alpha`` for ``K ~ Binomial(trials, p)``, every ``p``.

    Examples
    --------
    >>> round(float(clopper_pearson_upper(0, 100, 0.05)), 4)  # 1 - 0.05 ** (1 / 100)
    0.0295
    >>> float(clopper_pearson_upper(100, 100, 0.05))
    1.0
    """
    k, n = _check_counts(successes, trials)
    _check_alpha(alpha)
    safe_b = np.where(k < n, n - k, 1)  # beta's b > 0; the k == n branch returns 1
    return np.where(k >= n, 1.0, beta.ppf(1 - alpha, k + 1, safe_b))


def clopper_pearson_lower(successes, trials, alpha: float):
    """One-sided Clopper--Pearson lower bound on a binomial proportion at level ``1 - alpha``.

    ``P[p < lower(K)] <= alpha`` for ``K ~ Binomial(trials, p)``, every ``p``.

    Examples
    --------
    >>> float(clopper_pearson_lower(0, 100, 0.05))
    0.0
    >>> round(float(clopper_pearson_lower(100, 100, 0.05)), 4)  # 0.05 ** (1 / 100)
    0.9705
    """
    k, n = _check_counts(successes, trials)
    _check_alpha(alpha)
    safe_a = np.where(k > 0, k, 1)
    return np.where(k <= 0, 0.0, beta.ppf(alpha, safe_a, n - k + 1))


def _log_ratio(numerator_lower, denominator_upper, delta):
    """``log((numerator - delta) / denominator)``, ``-inf`` when the numerator is <= delta."""
    numerator = np.asarray(numerator_lower, dtype=float) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.log(np.maximum(numerator, 0.0)) - np.log(denominator_upper)
    return np.where(numerator > 0, value, -np.inf)


def _bounds_by_direction(k_d, n_d, k_dp, n_dp, delta, alpha_each):
    """The four directions' bounds, each from two one-sided intervals at ``alpha_each``.

    ``k_d`` of ``n_d`` outputs on ``D`` (``k_dp`` of ``n_dp`` on ``D'``) fell in ``S``.
    Returns an array of shape ``(4,) + shape(k)``, in the order of :data:`DIRECTIONS`.
    """
    k_d, k_dp = np.asarray(k_d), np.asarray(k_dp)
    in_d = (clopper_pearson_lower(k_d, n_d, alpha_each),
            clopper_pearson_upper(k_d, n_d, alpha_each))
    in_dp = (clopper_pearson_lower(k_dp, n_dp, alpha_each),
             clopper_pearson_upper(k_dp, n_dp, alpha_each))
    out_d = (1 - in_d[1], 1 - in_d[0])  # (lower, upper) of P[M(D) not in S]
    out_dp = (1 - in_dp[1], 1 - in_dp[0])
    return np.stack([
        _log_ratio(in_dp[0], in_d[1], delta),    # S is evidence for D'
        _log_ratio(in_d[0], in_dp[1], delta),    # S is evidence for D
        _log_ratio(out_dp[0], out_d[1], delta),  # not-S is evidence for D'
        _log_ratio(out_d[0], out_dp[1], delta),  # not-S is evidence for D
    ])


def epsilon_lower_bound_from_counts(in_region_d: int, trials_d: int, in_region_d_prime: int,
                                    trials_d_prime: int, *, delta: float, alpha: float = 0.05,
                                    direction: str | None = None) -> float:
    """Lower bound on epsilon from counts in a region fixed before sampling.

    Parameters
    ----------
    in_region_d, trials_d : int
        How many of ``trials_d`` runs on ``D`` gave an output in ``S``.
    in_region_d_prime, trials_d_prime : int
        The same on ``D'``.
    delta : float
        The delta of the claim being audited, in [0, 1).
    alpha : float, default=0.05
        The bound holds with probability at least ``1 - alpha``.
    direction : str or None
        One of :data:`DIRECTIONS`, fixed in advance (two intervals at ``alpha / 2``); None
        takes the best of the four (four intervals at ``alpha / 4``).

    Returns
    -------
    float
        The lower bound, clipped at 0.

    Examples
    --------
    Randomised response with keep probability 0.9 (epsilon = log 9 = 2.197), region
    "reports 1", 10^5 runs with true bit 0 and 10^5 with true bit 1:

    >>> lb = epsilon_lower_bound_from_counts(10_000, 100_000, 90_000, 100_000, delta=0.0,
    ...                                      direction="S:D'>D")
    >>> 2.1 < lb < math.log(9)
    True
    """
    _check_delta(delta)
    _check_alpha(alpha)
    if direction is not None and direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS} or None; got {direction!r}.")
    share = 2 if direction is not None else 4
    bounds = _bounds_by_direction(in_region_d, trials_d, in_region_d_prime, trials_d_prime,
                                  delta, alpha / share)
    value = bounds[DIRECTIONS.index(direction)] if direction is not None else bounds.max()
    return max(0.0, float(value))


@dataclass(frozen=True)
class AuditResult:
    """An empirical lower bound on epsilon and how it was obtained.

    Attributes
    ----------
    epsilon : float
        The lower bound (clipped at 0), valid with probability >= ``1 - alpha``.
    threshold : float
        The region is ``{score > threshold}``.
    direction : str
        One of :data:`DIRECTIONS`.
    counts : tuple of int
        ``(in_region_d, trials_d, in_region_d_prime, trials_d_prime)`` on the counting split.
    alpha, delta : float
    trials : int
        All samples, both inputs, both splits.
    """

    epsilon: float
    threshold: float
    direction: str
    counts: tuple[int, int, int, int]
    alpha: float
    delta: float
    trials: int


def epsilon_lower_bound(scores_d, scores_d_prime, *, delta: float, alpha: float = 0.05,
                        selection_fraction: float = 0.3,
                        candidates: int = _TAIL_CANDIDATES) -> AuditResult:
    """Lower bound on epsilon from scalar scores of outputs on ``D`` and ``D'``.

    The first ``selection_fraction`` of each sample picks the threshold ``t`` and the
    direction that maximise the bound computed on that part; the bound is then computed
    on the remaining samples alone (:func:`epsilon_lower_bound_from_counts` with that
    direction). Samples must be independent draws; their order must carry no information
    (draw them in one go, or shuffle with a public generator).

    Parameters
    ----------
    scores_d, scores_d_prime : array-like of float, 1-D
        A scalar statistic of each output of the mechanism on ``D`` and on ``D'``.
    delta : float
        The delta of the audited claim.
    alpha : float, default=0.05
    selection_fraction : float, default=0.3
        In (0, 1).
    candidates : int, default=400
        Thresholds tried on each tail (log-spaced tail probabilities of the pooled
        selection scores), plus a linear grid of quantiles.

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> from skdpgraph._random import RandomStreams
    >>> rng = RandomStreams(0).numpy("noise")
    >>> result = epsilon_lower_bound(rng.normal(0, 1, 20_000), rng.normal(3, 1, 20_000),
    ...                              delta=1e-5)
    >>> 3.0 < result.epsilon < 16.7  # the Gaussian mechanism (multiplier 1/3): 16.7 at 1e-5
    True
    """
    _check_delta(delta)
    _check_alpha(alpha)
    scores_d, scores_dp = _check_scores(scores_d, "scores_d"), _check_scores(scores_d_prime,
                                                                          "scores_d_prime")
    if not 0 < selection_fraction < 1:
        raise ValueError(f"selection_fraction must be in (0, 1); got {selection_fraction}.")
    cut_d = int(round(selection_fraction * scores_d.size))
    cut_dp = int(round(selection_fraction * scores_dp.size))
    if min(cut_d, cut_dp) < 1 or cut_d == scores_d.size or cut_dp == scores_dp.size:
        raise ValueError("epsilon_lower_bound: each split needs at least one sample per input; "
                         f"got {scores_d.size} and {scores_dp.size} samples.")
    select_d, count_d = np.sort(scores_d[:cut_d]), scores_d[cut_d:]
    select_dp, count_dp = np.sort(scores_dp[:cut_dp]), scores_dp[cut_dp:]

    thresholds = _candidate_thresholds(np.concatenate([select_d, select_dp]), candidates)
    k_d = select_d.size - np.searchsorted(select_d, thresholds, side="right")
    k_dp = select_dp.size - np.searchsorted(select_dp, thresholds, side="right")
    # The selection scores each candidate by a more conservative bound than the final one
    # (level alpha * _SELECTION_FACTOR): thresholds deep in a tail, where the selection split
    # has few counts and the counting split would have fewer, are preferred less often.
    bounds = _bounds_by_direction(k_d, select_d.size, k_dp, select_dp.size, delta,
                                  alpha / 2 * _SELECTION_FACTOR)
    best_direction, best_threshold = np.unravel_index(np.argmax(bounds), bounds.shape)
    threshold = float(thresholds[best_threshold])
    direction = DIRECTIONS[int(best_direction)]

    counts = (int(np.sum(count_d > threshold)), int(count_d.size),
              int(np.sum(count_dp > threshold)), int(count_dp.size))
    epsilon = epsilon_lower_bound_from_counts(*counts, delta=delta, alpha=alpha,
                                              direction=direction)
    return AuditResult(epsilon=epsilon, threshold=threshold, direction=direction, counts=counts,
                       alpha=float(alpha), delta=float(delta),
                       trials=int(scores_d.size + scores_dp.size))


def _candidate_thresholds(pooled_sorted: np.ndarray, candidates: int) -> np.ndarray:
    """Thresholds at log-spaced tail quantiles of both tails and at a linear grid."""
    pooled_sorted = np.sort(pooled_sorted)
    size = pooled_sorted.size
    if np.unique(pooled_sorted).size <= 2 * candidates:  # few values: try every one
        values = np.unique(pooled_sorted)
        return np.concatenate([[values[0] - 1.0], values])
    tails = np.geomspace(1.0 / size, 0.5, candidates)
    probabilities = np.unique(np.concatenate([tails, 1 - tails, np.linspace(0, 1, candidates)]))
    index = np.clip(np.round(probabilities * (size - 1)).astype(int), 0, size - 1)
    return np.unique(pooled_sorted[index])


def _check_scores(scores, name):
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1 or scores.size < 2:
        raise ValueError(f"{name} must be a 1-D array of at least 2 scores; got shape "
                         f"{scores.shape}.")
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"{name} must be finite; got {int(np.sum(~np.isfinite(scores)))} "
                         "non-finite scores.")
    return scores


def _check_counts(successes, trials):
    k = np.asarray(successes)
    n = np.asarray(trials)
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1; got successes="
                         f"{successes!r}, trials={trials!r}.")
    return k.astype(float), n.astype(float)


def _check_alpha(alpha):
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}.")


def _check_delta(delta):
    if not (0 <= delta < 1 and math.isfinite(delta)):
        raise ValueError(f"delta must be in [0, 1); got {delta!r}.")
