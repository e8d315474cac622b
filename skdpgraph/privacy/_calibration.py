"""Noise calibration to a target (epsilon, delta) that fails closed."""

from __future__ import annotations

import math
from typing import Callable

from skdpgraph._docstrings import register_fragments
from skdpgraph.exceptions import PrivacyBudgetError

__all__ = ["PrivacyBudgetError", "calibrate_noise_multiplier", "MAX_NOISE_MULTIPLIER"]

register_fragments(plan_budget="""
    epsilon : float
        The privacy budget, in ``(0, inf]``.
    delta : float
        The delta of the ``(epsilon, delta)`` guarantee.""")

#: Largest noise multiplier calibration will return; a budget that needs more is refused.
MAX_NOISE_MULTIPLIER = 1e6
_MIN_NOISE_MULTIPLIER = 1e-2


def _safe_epsilon(epsilon_for: Callable[[float], float], sigma: float, context: str) -> float:
    try:
        epsilon = float(epsilon_for(sigma))
    except Exception as exc:  # any accountant failure must stop training
        raise PrivacyBudgetError(
            f"{context}: the accountant failed at noise multiplier {sigma:.4g} ({exc})."
        ) from exc
    if math.isnan(epsilon) or epsilon < 0:
        raise PrivacyBudgetError(
            f"{context}: the accountant returned epsilon={epsilon} at noise multiplier {sigma:.4g}."
        )
    return epsilon


def _log_interpolate(low: float, eps_low: float, high: float, eps_high: float,
                     goal: float) -> float | None:
    """Where the line through the two points in log-log space reaches ``goal``."""
    if not (math.isfinite(eps_low) and eps_high > 0 and eps_low > eps_high):
        return None
    slope = (math.log(eps_high) - math.log(eps_low)) / (math.log(high) - math.log(low))
    try:
        return math.exp(math.log(high) + (math.log(goal) - math.log(eps_high)) / slope)
    except OverflowError:  # a step far beyond any float: let bisection take over
        return None


def calibrate_noise_multiplier(epsilon_for: Callable[[float], float], target_epsilon: float,
                               *, context: str = "calibration", rtol: float = 0.01,
                               max_iterations: int = 100,
                               upper_bound_for: Callable[[float], float] | None = None) -> float:
    """Smallest noise multiplier (up to ``rtol``) whose epsilon does not exceed the target.

    A bracketing search on ``sigma``, assuming ``epsilon_for`` decreases in ``sigma``:
    secant steps in log-log space (epsilon is close to a power law in sigma), safeguarded
    by bisection whenever a step does not shrink the bracket enough. The returned value is
    always the *upper* end of the bracket, so ``epsilon_for(sigma) <= target_epsilon``
    holds for the value returned, and ``epsilon_for(sigma) >= (1 - rtol) * target_epsilon``
    unless the smallest multiplier tried (0.01) already meets the target.

    Parameters
    ----------
    epsilon_for : callable
        Maps a noise multiplier to the epsilon of the whole private computation.
    target_epsilon : float
        The budget, > 0 and finite.
    context : str
        Words naming the computation, used in error messages (for example
        ``"GAPClassifier (unit='node', hops=2, epochs=10)"``).
    rtol : float, default=0.01
        Relative tolerance below the target.
    max_iterations : int, default=100
        Most secant or bisection steps once the target is bracketed.
    upper_bound_for : callable, optional
        A cheaper function with ``upper_bound_for(sigma) >= epsilon_for(sigma)`` for every
        sigma (for example the same accountant on fewer RDP orders). The search first
        calibrates on it, then refines on ``epsilon_for`` from the multiplier found, which
        already meets the target; the result is the same as without it, up to ``rtol``.

    Returns
    -------
    float
        The calibrated noise multiplier, never 0.

    Raises
    ------
    PrivacyBudgetError
        If the accountant fails or returns NaN, if the target cannot be reached with a
        multiplier up to 1e6, or if the target is not a finite positive number.

    Examples
    --------
    >>> sigma = calibrate_noise_multiplier(lambda s: 1.0 / s, 0.5)
    >>> 1.98 <= sigma <= 2.02
    True
    """
    return _calibrate(epsilon_for, target_epsilon, context=context, rtol=rtol,
                      max_iterations=max_iterations, upper_bound_for=upper_bound_for)[0]


def _calibrate(epsilon_for: Callable[[float], float], target_epsilon: float, *, context: str,
               rtol: float, max_iterations: int,
               upper_bound_for: Callable[[float], float] | None) -> tuple[float, float | None]:
    """:func:`calibrate_noise_multiplier`, also returning the slope of ``log epsilon`` in
    ``log sigma`` over the last two multipliers tried (None if unknown)."""
    if not (target_epsilon > 0 and math.isfinite(target_epsilon)):
        raise PrivacyBudgetError(f"{context}: target epsilon must be finite and > 0; "
                                 f"got {target_epsilon}.")

    def evaluate(sigma: float) -> float:
        return _safe_epsilon(epsilon_for, sigma, context)

    def met(epsilon: float) -> bool:
        return (1 - rtol) * target_epsilon <= epsilon <= target_epsilon

    sigma, first_step, slope = 1.0, 2.0, None
    if upper_bound_for is not None:
        try:
            sigma, slope = _calibrate(upper_bound_for, target_epsilon, context=context,
                                      rtol=rtol, max_iterations=max_iterations,
                                      upper_bound_for=None)
            first_step = 1.05  # the bound is a few percent loose: the answer is close below
        except PrivacyBudgetError:  # the looser bound may fail where epsilon_for does not
            pass
    goal = (1 - rtol / 2) * target_epsilon
    # Bracket the target: start at sigma, then extrapolate in log-log space from the last two
    # points (overshooting by 10%), at most 16x per step, within [0.01, 1e6]. A multiplier
    # whose epsilon is already within the tolerance ends the search. From the bound's
    # answer, the first step follows the bound's slope to the goal: the bound and epsilon
    # run nearly parallel, so it usually lands within the tolerance.
    previous, eps_previous = None, None
    while True:
        eps = evaluate(sigma)
        if met(eps):
            return sigma, _slope(previous, eps_previous, sigma, eps)
        if previous is not None and (eps <= target_epsilon) != (eps_previous <= target_epsilon):
            break
        if eps <= target_epsilon and sigma <= _MIN_NOISE_MULTIPLIER:
            return _MIN_NOISE_MULTIPLIER, None
        direction = 1.0 if eps > target_epsilon else -1.0
        if previous is None and slope is not None and slope < 0 and eps > 0:
            step = math.exp(abs(math.log(goal / eps) / slope))  # no overshoot: aim at the goal
        else:
            guess = None
            if previous is not None:
                pair = sorted([(previous, eps_previous), (sigma, eps)])
                guess = _log_interpolate(pair[0][0], pair[0][1], pair[1][0], pair[1][1], goal)
            # No guess, or one that underflowed to 0 on a flat curve: double or halve (or
            # take the first, smaller step from a start that is close).
            step = first_step if not guess else min(
                max((guess / sigma) ** direction * 1.1, 1.5), 16.0)
        previous, eps_previous = sigma, eps
        sigma = max(sigma * step ** direction, _MIN_NOISE_MULTIPLIER)
        if sigma > MAX_NOISE_MULTIPLIER:
            raise PrivacyBudgetError(
                f"{context} cannot reach epsilon={target_epsilon:g}: the noise multiplier "
                f"would exceed {MAX_NOISE_MULTIPLIER:g}. Increase epsilon or delta, or "
                "train for fewer steps."
            )
    bracket = sorted([(previous, eps_previous), (sigma, eps)])
    return _narrow(evaluate, bracket, target_epsilon, rtol=rtol, max_iterations=max_iterations)


def _narrow(evaluate: Callable[[float], float], bracket: list[tuple[float, float]],
            target_epsilon: float, *, rtol: float,
            max_iterations: int) -> tuple[float, float | None]:
    """Narrow a bracket ``[(low, eps_low), (high, eps_high)]`` of the target (``eps_high``
    within it, ``eps_low`` above) by log-log interpolation, bisecting where a guess falls
    near an end; returns the smallest multiplier within the budget and the slope there."""
    (low, eps_low), (high, eps_high) = bracket
    goal = (1 - rtol / 2) * target_epsilon
    for _ in range(max_iterations):
        if eps_high >= (1 - rtol) * target_epsilon or high / low < 1 + 1e-9:
            break
        width = math.log(high / low)
        guess = _log_interpolate(low, eps_low, high, eps_high, goal)
        margin = math.exp(0.05 * width)
        if guess is None or not low * margin < guess < high / margin:
            guess = math.sqrt(low * high)
        eps_guess = evaluate(guess)
        if eps_guess <= target_epsilon:
            high, eps_high = guess, eps_guess
        else:
            low, eps_low = guess, eps_guess
    return high, _slope(low, eps_low, high, eps_high)


def _slope(sigma_a: float | None, eps_a: float | None, sigma_b: float,
           eps_b: float) -> float | None:
    """The slope of ``log epsilon`` in ``log sigma`` between two points, if defined."""
    if sigma_a is None or sigma_a == sigma_b or not (
            0 < eps_a < math.inf and 0 < eps_b < math.inf):
        return None
    return (math.log(eps_b) - math.log(eps_a)) / (math.log(sigma_b) - math.log(sigma_a))
