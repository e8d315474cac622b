"""Exact (epsilon, delta) of the Gaussian mechanism and of K composed Gaussians.

The Gaussian mechanism adds N(0, (s * Delta)^2) to every coordinate of a function with
L2 sensitivity Delta; ``s`` is its *noise multiplier*. Its exact privacy curve is the
analytic Gaussian mechanism of Balle & Wang [BW18]_ (Theorem 8):

.. math::

    \\delta(\\varepsilon) = \\Phi\\left(\\frac{1}{2s} - \\varepsilon s\\right)
        - e^{\\varepsilon}\\,\\Phi\\left(-\\frac{1}{2s} - \\varepsilon s\\right).

``K`` Gaussian mechanisms of the same sensitivity, each with multiplier ``s``, compose
(adaptively) into exactly one Gaussian mechanism with multiplier ``s / sqrt(K)``
([DRS22]_, Corollary 3.3), so the same formula gives their exact curve.

The curve is evaluated by dp-accounting's ``GaussianPrivacyLoss.get_delta_for_epsilon``
(closed form, no discretisation). Epsilons and multipliers are found by bisection on
that curve and always returned at the safe end of the bracket.

References
----------
.. [BW18] Balle, Wang. "Improving the Gaussian Mechanism for Differential Privacy:
   Analytical Calibration and Optimal Denoising", ICML 2018.
.. [DRS22] Dong, Roth, Su. "Gaussian Differential Privacy", JRSS-B 2022.
"""

from __future__ import annotations

import functools
import math

from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

from skdpgraph.privacy._calibration import MAX_NOISE_MULTIPLIER, PrivacyBudgetError

__all__ = ["MAX_GAUSSIAN_EPSILON", "gaussian_delta", "gaussian_epsilon",
           "calibrate_gaussian_noise"]

_RTOL = 1e-9

#: Largest epsilon the Gaussian calibration accepts. The curve is evaluated in float64:
#: at epsilon ~ 1e12 the multiplier is ~ 7e-7 and the arguments of Phi (~ 7e5) still
#: carry ~ 1e-10 absolute precision; from ~ 1e24 on they carry none.
MAX_GAUSSIAN_EPSILON = 1e12


def gaussian_delta(noise_multiplier: float, epsilon: float, *, count: int = 1) -> float:
    """Exact delta at ``epsilon`` of ``count`` composed Gaussian mechanisms.

    Parameters
    ----------
    noise_multiplier : float
        Noise std divided by the L2 sensitivity of each mechanism.
    epsilon : float
        >= 0.
    count : int, default=1
        Number of composed mechanisms (same sensitivity, same multiplier).

    Returns
    -------
    delta : float
        The smallest delta for which the mechanisms are (epsilon, delta)-DP.

    Examples
    --------
    Multiplier 1, epsilon 1: Phi(-0.5) - e Phi(-1.5) = 0.1269.

    >>> round(gaussian_delta(1.0, 1.0), 4)
    0.1269
    """
    effective = noise_multiplier / math.sqrt(count)
    loss = GaussianPrivacyLoss(effective, sensitivity=1.0)
    return float(max(0.0, loss.get_delta_for_epsilon(epsilon)))


@functools.lru_cache(maxsize=1024)  # pure; progress bars and releases ask again and again
def gaussian_epsilon(noise_multiplier: float, delta: float, *, count: int = 1) -> float:
    """Smallest epsilon (up to 1e-9 relative, rounded up) with ``gaussian_delta <= delta``.

    Examples
    --------
    >>> eps = gaussian_epsilon(1.0, 0.1269)
    >>> 0.99 < eps < 1.01
    True
    """
    if not 0 < delta < 1:
        raise ValueError(f"gaussian_epsilon: delta must be in (0, 1); got {delta}.")
    if gaussian_delta(noise_multiplier, 0.0, count=count) <= delta:
        return 0.0
    low, high = 0.0, 1.0
    while gaussian_delta(noise_multiplier, high, count=count) > delta:
        low, high = high, 2 * high
        if high > 4 * MAX_GAUSSIAN_EPSILON:
            raise PrivacyBudgetError(
                f"gaussian_epsilon: noise multiplier {noise_multiplier:.4g} gives epsilon above "
                f"{MAX_GAUSSIAN_EPSILON:g} (the largest the Gaussian calibration supports)."
            )
    while high - low > _RTOL * high:
        middle = (low + high) / 2
        if gaussian_delta(noise_multiplier, middle, count=count) > delta:
            low = middle
        else:
            high = middle
    return high


def calibrate_gaussian_noise(epsilon: float, delta: float, *, count: int = 1,
                             context: str = "Gaussian mechanism") -> float:
    """Smallest per-mechanism noise multiplier so ``count`` composed Gaussians are (eps, delta)-DP.

    Parameters
    ----------
    epsilon : float
        The budget of the ``count`` mechanisms together.
    delta : float
        Their delta.
    count : int, default=1
        The number of composed mechanisms (same sensitivity, same multiplier).
    context : str, default="Gaussian mechanism"
        What the noise is for, named in error messages.

    Returns
    -------
    noise_multiplier : float
        The upper end of the bisection bracket (relative width 1e-9), so
        ``gaussian_delta(noise_multiplier, epsilon, count=count) <= delta`` always holds.

    Raises
    ------
    PrivacyBudgetError
        If the budget is not finite and positive, exceeds :data:`MAX_GAUSSIAN_EPSILON`
        (the message names ``epsilon`` and points to ``epsilon=np.inf``), or needs a
        multiplier above 1e6.

    Examples
    --------
    >>> sigma = calibrate_gaussian_noise(1.0, 1e-5, count=2)
    >>> gaussian_delta(sigma, 1.0, count=2) <= 1e-5
    True
    """
    if not (epsilon > 0 and math.isfinite(epsilon) and 0 < delta < 1):
        raise PrivacyBudgetError(f"{context}: need finite epsilon > 0 and delta in (0, 1); got "
                                 f"epsilon={epsilon}, delta={delta}.")
    if epsilon > MAX_GAUSSIAN_EPSILON:
        raise PrivacyBudgetError(
            f"{context}: epsilon={epsilon:g} is beyond what the Gaussian calibration supports "
            f"(max {MAX_GAUSSIAN_EPSILON:g}); use epsilon=np.inf for the non-private model.")

    def too_small(sigma: float) -> bool:
        return gaussian_delta(sigma, epsilon, count=count) > delta

    low, high = 0.0, 1.0
    while too_small(high):
        low, high = high, 2 * high
        if high > MAX_NOISE_MULTIPLIER:
            raise PrivacyBudgetError(
                f"{context} cannot reach epsilon={epsilon:g} with delta={delta:g}: the noise "
                f"multiplier would exceed {MAX_NOISE_MULTIPLIER:g}. Increase epsilon or delta."
            )
    while high - low > _RTOL * high:
        middle = (low + high) / 2
        if too_small(middle):
            low = middle
        else:
            high = middle
    return high
