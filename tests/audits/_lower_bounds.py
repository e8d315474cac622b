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
from scipy.special import expit
from scipy.stats import beta, binom

__all__ = [
    "DIRECTIONS",
    "AuditResult",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "epsilon_lower_bound_from_counts",
    "OneRunResult",
    "one_run_audit",
    "one_run_epsilon_lower_bound",
    "one_run_p_value",
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


# ---------------------------------------------------------------------------- one run
# Steinke, Nasr, Jagielski. "Privacy Auditing with One (1) Training Run", NeurIPS 2023
# (arXiv:2305.08846): m canaries, each included in the training data independently with
# probability 1/2; one training run; a guesser reads the trained model and guesses
# "included" or "excluded" for r of the canaries, abstaining on the others. If the run is
# (epsilon, delta)-DP with respect to each canary's inclusion (the other canaries and the
# rest of the data fixed), the number W of right guesses is nearly dominated by
# Binomial(r, e^eps / (1 + e^eps)), the right guesses of randomised response: their main
# theorem for (epsilon, delta)-DP gives, for every v,
#
#     P[W >= v] <= f(v) + 2 m delta max_{1 <= i <= v} (f(v - i) - f(v)) / i,
#     f(u) = P[Binomial(r, e^eps / (1 + e^eps)) >= u].
#
# The right-hand side is the p-value of "the run is (eps, delta)-DP" after v right guesses;
# the lower bound is the largest eps this p-value rejects at level alpha.

def _check_one_run(correct, guesses, canaries, delta):
    for name, value in (("correct", correct), ("guesses", guesses), ("canaries", canaries)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an integer; got {value!r}.")
    if not 0 <= correct <= guesses <= canaries or canaries < 1:
        raise ValueError("need 0 <= correct <= guesses <= canaries and canaries >= 1; got "
                         f"correct={correct}, guesses={guesses}, canaries={canaries}.")
    _check_delta(delta)
    if 2 * canaries * delta > 1:
        # Above 1 the bound is no longer monotone in eps and in v (see one_run_p_value), and
        # it is vacuous anyway (the delta term alone is then of the order of the tail).
        raise ValueError(f"the one-run bound needs 2 * canaries * delta <= 1; got "
                         f"2 * {canaries} * {delta} = {2 * canaries * delta:g}.")


def _one_run_tail(correct: int, guesses: int, canaries: int, epsilon: float,
                  delta: float) -> float:
    q = float(expit(epsilon))  # accuracy of eps-DP randomised response; 1.0 for eps = inf
    tail = float(binom.sf(correct - 1, guesses, q))  # f(v) = P[Binomial(r, q) >= v]
    if delta > 0 and correct > 0:
        # f(v - i) - f(v) = P[v - i <= Binomial(r, q) <= v - 1], for i = 1..v.
        below = binom.pmf(np.arange(correct - 1, -1, -1), guesses, q)
        tail += 2 * canaries * delta * float(np.max(np.cumsum(below) / np.arange(1, correct + 1)))
    return min(tail, 1.0)


def one_run_p_value(correct: int, guesses: int, canaries: int, epsilon: float,
                    delta: float) -> float:
    """Bound on P[at least ``correct`` right guesses of ``guesses``] under (eps, delta)-DP.

    The right-hand side of the one-run theorem (see the comment above) at
    ``v = correct``, ``r = guesses``, ``m = canaries``, capped at 1.

    It is nondecreasing in ``epsilon`` and nonincreasing in ``correct`` when
    ``c = 2 m delta <= 1`` (required). In ``epsilon``: the term ``i`` of the maximum is
    ``(1 - c/i) f(v) + (c/i) f(v - i)``, nonnegative weights on binomial tails, each
    nondecreasing in the success probability. In ``v``: with ``D(v)`` the maximum and
    ``p_j = P[Binomial(r, q) = j]``, ``D(v + 1) <= p_v + D(v)`` (split off ``p_v`` from
    each partial sum), so the bound moves by at most ``(c - 1) p_v <= 0``. Both make the
    lower bound of :func:`one_run_epsilon_lower_bound` a valid one-sided confidence bound.

    Examples
    --------
    With delta = 0 it is the binomial tail: 10 right of 10 under eps = 0 (coin flips).

    >>> one_run_p_value(10, 10, 100, 0.0, 0.0) == 0.5 ** 10
    True
    """
    _check_one_run(correct, guesses, canaries, delta)
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0; got {epsilon!r}.")
    return _one_run_tail(int(correct), int(guesses), int(canaries), float(epsilon), float(delta))


def one_run_epsilon_lower_bound(correct: int, guesses: int, canaries: int, *, delta: float,
                                alpha: float = 0.05, tolerance: float = 1e-9) -> float:
    """Largest epsilon rejected at level ``alpha`` after ``correct`` right guesses of ``guesses``.

    ``sup {eps >= 0 : one_run_p_value(correct, guesses, canaries, eps, delta) < alpha}``
    (0 if even eps = 0 is not rejected), found by bisection to ``tolerance`` and rounded
    down. If the run is (eps0, delta)-DP, the bound exceeds eps0 with probability at most
    ``alpha``: by monotonicity (see :func:`one_run_p_value`) that event is
    ``{W >= v*}`` with ``v*`` the fewest right guesses that reject eps0, and the theorem
    bounds its probability by the p-value at ``v*``, which is below ``alpha``.

    Parameters
    ----------
    correct, guesses, canaries : int
        ``v`` right guesses among ``r`` guesses (abstentions excluded), ``m`` canaries.
        ``r`` must be fixed before the run (e.g. top-k and bottom-k scores, k fixed).
    delta : float
        The delta of the audited claim; ``2 * canaries * delta <= 1``.
    alpha : float, default=0.05
    tolerance : float, default=1e-9

    Returns
    -------
    float

    Examples
    --------
    With delta = 0 the bound is the logit of the Clopper--Pearson lower bound on the
    accuracy; 20 right of 20:

    >>> lb = one_run_epsilon_lower_bound(20, 20, 100, delta=0.0)
    >>> round(lb, 4) == round(math.log(0.05 ** (1 / 20) / (1 - 0.05 ** (1 / 20))), 4)
    True
    """
    _check_one_run(correct, guesses, canaries, delta)
    _check_alpha(alpha)
    v, r, m = int(correct), int(guesses), int(canaries)

    def rejected(epsilon: float) -> bool:
        return _one_run_tail(v, r, m, epsilon, float(delta)) < alpha

    if not rejected(0.0):
        return 0.0
    low, high = 0.0, 1.0
    while rejected(high):  # terminates: at eps = inf the p-value is 1 (q = 1, f(v) = 1)
        low, high = high, 2 * high
    while high - low > tolerance:
        middle = (low + high) / 2
        low, high = (middle, high) if rejected(middle) else (low, middle)
    return low


@dataclass(frozen=True)
class OneRunResult:
    """The outcome of a one-run audit (:func:`one_run_audit`).

    Attributes
    ----------
    epsilon : float
        The lower bound, valid with probability >= ``1 - alpha`` (all candidate ``k``
        together).
    canaries : int
        ``m``.
    guesses, correct : int
        ``r = 2k`` and the right guesses, for the ``k`` that gave the bound.
    guesses_per_side : tuple of int
        The candidate ``k``, fixed before the run; each was tested at
        ``alpha / len(guesses_per_side)``.
    alpha, delta : float
    """

    epsilon: float
    canaries: int
    guesses: int
    correct: int
    guesses_per_side: tuple[int, ...]
    alpha: float
    delta: float


def one_run_audit(scores, included, *, guesses_per_side, delta: float,
                  alpha: float = 0.05) -> OneRunResult:
    """One-run lower bound from canary scores: top k guessed "included", bottom k "excluded".

    Parameters
    ----------
    scores : array-like of float, shape (m,)
        One score per canary, computed from the trained model only (higher: more likely
        included). Ties are broken by canary index, which carries no information.
    included : array-like of bool, shape (m,)
        Whether each canary was in the training data (drawn independently, probability
        1/2, before the run).
    guesses_per_side : sequence of int
        Candidate ``k`` (``2k <= m``), fixed before the run. Each is tested at level
        ``alpha / len(guesses_per_side)`` (Bonferroni), and the largest bound is returned.
    delta : float
        The delta of the audited claim; ``2 m delta <= 1``.
    alpha : float, default=0.05

    Returns
    -------
    OneRunResult

    Examples
    --------
    Scores that separate perfectly: all 2k guesses are right.

    >>> included = np.arange(200) % 2 == 0
    >>> result = one_run_audit(included * 1.0, included, guesses_per_side=[10, 50], delta=0.0)
    >>> (result.guesses, result.correct)
    (100, 100)
    """
    _check_alpha(alpha)
    scores = np.asarray(scores, dtype=float)
    included = np.asarray(included)
    if scores.ndim != 1 or included.shape != scores.shape or included.dtype != bool:
        raise ValueError("scores and included must be 1-D of the same length, included boolean; "
                         f"got shapes {scores.shape} and {included.shape}, dtype "
                         f"{included.dtype}.")
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"scores must be finite; got {int(np.sum(~np.isfinite(scores)))} "
                         "non-finite scores.")
    ks = tuple(int(k) for k in guesses_per_side)
    m = scores.size
    if not ks or any(k < 1 or 2 * k > m for k in ks):
        raise ValueError(f"guesses_per_side must be non-empty with 1 <= k <= m / 2 = {m / 2:g}; "
                         f"got {guesses_per_side!r}.")
    order = np.argsort(-scores, kind="stable")  # highest first; ties by index
    best = None
    for k in ks:
        correct = int(np.sum(included[order[:k]]) + np.sum(~included[order[m - k:]]))
        epsilon = one_run_epsilon_lower_bound(correct, 2 * k, m, delta=delta,
                                              alpha=alpha / len(ks))
        if best is None or epsilon > best[0]:
            best = (epsilon, 2 * k, correct)
    return OneRunResult(epsilon=best[0], canaries=m, guesses=best[1], correct=best[2],
                        guesses_per_side=ks, alpha=float(alpha), delta=float(delta))
