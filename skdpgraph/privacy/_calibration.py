"""Noise calibration to a target (epsilon, delta) that fails closed."""

from __future__ import annotations

import math
from typing import Callable

__all__ = ["PrivacyBudgetError", "calibrate_noise_multiplier", "MAX_NOISE_MULTIPLIER"]

#: Largest noise multiplier calibration will return; a budget that needs more is refused.
MAX_NOISE_MULTIPLIER = 1e6
_MIN_NOISE_MULTIPLIER = 1e-2


class PrivacyBudgetError(ValueError):
    """The requested privacy budget cannot be met, or could not be evaluated."""


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


def calibrate_noise_multiplier(epsilon_for: Callable[[float], float], target_epsilon: float,
                               *, context: str = "calibration", rtol: float = 0.01,
                               max_iterations: int = 200) -> float:
    """Smallest noise multiplier (up to ``rtol``) whose epsilon does not exceed the target.

    Bisection in log-space on ``sigma``, assuming ``epsilon_for`` decreases in ``sigma``.
    The returned value is always the *upper* end of the bracket, so
    ``epsilon_for(sigma) <= target_epsilon`` holds for the value returned, and
    ``epsilon_for(sigma) >= (1 - rtol) * target_epsilon`` unless the smallest multiplier
    tried (0.01) already meets the target.

    Parameters
    ----------
    epsilon_for : callable
        Maps a noise multiplier to the epsilon of the whole private computation.
    target_epsilon : float
        The budget, > 0 and finite.
    context : str
        Words naming the computation, used in error messages (for example
        ``"GAPClassifier (privacy_level='node', hops=2, epochs=10)"``).
    rtol : float, default=0.01
        Relative tolerance below the target.

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
    if not (target_epsilon > 0 and math.isfinite(target_epsilon)):
        raise PrivacyBudgetError(f"{context}: target epsilon must be finite and > 0; "
                                 f"got {target_epsilon}.")
    high = _MIN_NOISE_MULTIPLIER
    eps_high = _safe_epsilon(epsilon_for, high, context)
    if eps_high <= target_epsilon:
        return high
    low = high
    while eps_high > target_epsilon:
        low, high = high, high * 4
        if high > MAX_NOISE_MULTIPLIER:
            raise PrivacyBudgetError(
                f"{context} cannot reach epsilon={target_epsilon:g}: the noise multiplier "
                f"would exceed {MAX_NOISE_MULTIPLIER:g}. Increase epsilon or delta, or train "
                "for fewer steps."
            )
        eps_high = _safe_epsilon(epsilon_for, high, context)
    for _ in range(max_iterations):
        if eps_high >= (1 - rtol) * target_epsilon:
            break
        middle = math.sqrt(low * high)
        eps_middle = _safe_epsilon(epsilon_for, middle, context)
        if eps_middle <= target_epsilon:
            high, eps_high = middle, eps_middle
        else:
            low = middle
        if high / low < 1 + 1e-9:
            break
    return high
