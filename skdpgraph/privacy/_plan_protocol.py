"""What every privacy plan offers, and the budget check made before private data is read.

A *plan* fixes the privacy-relevant settings of one private computation (a DP-SGD run,
GAP's aggregation perturbation, FDP's multi-term training, local randomisers...) before
any private data is touched. Estimators build a plan, call :func:`check_plan` on it, and
only then train; ``estimators/_base.py`` turns the plan into the fitted ``privacy_``
record.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, runtime_checkable

from skdpgraph._docstrings import fill_doc
from skdpgraph.privacy._calibration import PrivacyBudgetError
from skdpgraph.privacy._rdp_orders import OrderHint

__all__ = ["PrivacyPlan", "check_plan"]


@runtime_checkable
class PrivacyPlan(Protocol):
    """The protocol of a privacy plan.

    Attributes
    ----------
    private : bool
        False for a non-private (``epsilon=inf``) run: no clipping, no noise.
    accountant : str
        The accountant and conversion, in words.
    mechanism : str
        The mechanism, in words, with its parameters.
    events : tuple of str
        The composed mechanisms as the accountant sees them.
    """

    private: bool

    @property
    def accountant(self) -> str: ...

    @property
    def mechanism(self) -> str: ...

    @property
    def events(self) -> tuple[str, ...]: ...

    def epsilon(self, delta: float) -> float:
        """The accountant's upper bound on epsilon at ``delta`` (``inf`` if not private)."""

    def running_epsilon(self, delta: float, stage: str, steps: int, *,
                        hint: OrderHint | None = None, integer_orders: bool = False) -> float:
        """Epsilon spent after ``steps`` steps of the training run ``stage``, an upper bound
        from the plan's accountant (``inf`` if not private): each epoch's record.

        ``hint`` carries the best RDP order from one call to the next (the search then
        starts there); ``integer_orders=True`` asks for a cheaper, slightly looser bound on
        the integer orders, where the accountant has one.
        """

    def dp_event(self) -> Any:
        """The dp-accounting ``DpEvent`` of the whole plan, or None where none exists."""


@fill_doc
def check_plan(plan: PrivacyPlan, epsilon: float, delta: float, *, context: str) -> float:
    """Check ``plan`` against the budget before training; return its epsilon.

    Fails closed: an accountant error, a NaN, or an epsilon above the budget (beyond a
    1e-9 relative tolerance for calibration round-off) raises.

    Parameters
    ----------
    plan : PrivacyPlan
        The plan to check.
    {{plan_budget}}
    context : str
        Names the caller in error messages.

    Returns
    -------
    epsilon : float
        The plan's epsilon at ``delta`` (``inf`` for a non-private plan).

    Raises
    ------
    PrivacyBudgetError
        If the plan's epsilon exceeds ``epsilon`` or cannot be evaluated.

    Examples
    --------
    >>> from skdpgraph.privacy import plan_dpsgd
    >>> plan = plan_dpsgd(epsilon=1.0, delta=1e-5, sampling="poisson", num_examples=1000,
    ...                   batch_size=100, steps=100, max_grad_norm=1.0, noise_multiplier=0.5)
    >>> check_plan(plan, 1.0, 1e-5, context="example")
    Traceback (most recent call last):
    ...
    skdpgraph.exceptions.PrivacyBudgetError: example: the plan spends epsilon=...
    """
    if not plan.private:
        if math.isfinite(epsilon):
            raise PrivacyBudgetError(f"{context}: a non-private plan cannot meet the finite "
                                     f"budget epsilon={epsilon:g}.")
        return math.inf
    try:
        spent = float(plan.epsilon(delta))
    except PrivacyBudgetError:
        raise
    except Exception as exc:  # any accountant failure must stop the fit
        raise PrivacyBudgetError(f"{context}: the accountant failed ({exc}).") from exc
    if math.isnan(spent) or spent < 0:
        raise PrivacyBudgetError(f"{context}: the accountant returned epsilon={spent}.")
    if spent > epsilon * (1 + 1e-9):
        raise PrivacyBudgetError(
            f"{context}: the plan spends epsilon={spent:.4g} at delta={delta:.3g}, more than "
            f"the budget epsilon={epsilon:g}. Raise noise_multiplier, lower the number of "
            "steps, or raise epsilon.")
    return spent
