"""Plans without a central accountant: local randomisers, and DP-SGD run until its budget.

:class:`LocalDPPlan` describes pure local DP: every unit randomises its own data with one or
more local randomisers (GRR, GRR-FS...) before it leaves the device, and the per-unit
epsilon is the sum of theirs (basic composition, delta 0). :func:`plan_until_budget` turns
a DP-SGD plan with a user-given noise multiplier into the *run-until-budget* plan of DRW's
paper mode: as many of the planned steps as the budget allows, fixed before training.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

from skdpgraph.privacy._calibration import PrivacyBudgetError
from skdpgraph.privacy._grr import grr_fs_epsilon, grr_fs_paper_epsilon
from skdpgraph.privacy._plan import DPSGDPlan

__all__ = ["LocalRandomiser", "LocalDPPlan", "plan_local_grr", "UntilBudgetPlan",
           "plan_until_budget"]


class LocalRandomiser(NamedTuple):
    """One local randomiser of a :class:`LocalDPPlan`.

    Attributes
    ----------
    name : str
        What it randomises, e.g. ``"features (every node)"``.
    mechanism : str
        The mechanism with its parameters, e.g. ``"GRR-FS, m=10 of d=32 at eps_x=1"``.
    epsilon : float
        Its pure local-DP epsilon (``inf``: data sent in the clear).
    remark : str, default=""
        Anything the accountant's reader should know (e.g. a published value that is not
        a bound).
    """

    name: str
    mechanism: str
    epsilon: float
    remark: str = ""


@dataclasses.dataclass(frozen=True)
class LocalDPPlan:
    """Pure local DP: each unit's epsilon is the sum of its randomisers' (delta 0).

    Implements :class:`~skdpgraph.privacy.PrivacyPlan`. The plan is private when every
    randomiser has a finite epsilon.

    Parameters
    ----------
    randomisers : tuple of LocalRandomiser

    Examples
    --------
    >>> plan = LocalDPPlan((LocalRandomiser("labels", "GRR over 3 classes", 1.5),
    ...                     LocalRandomiser("features", "GRR-FS, m=2 at 0.5 each", 1.0)))
    >>> plan.epsilon(0.0), plan.private
    (2.5, True)
    """

    randomisers: tuple[LocalRandomiser, ...]

    @property
    def private(self) -> bool:
        return all(math.isfinite(r.epsilon) for r in self.randomisers)

    @property
    def accountant(self) -> str:
        return ("pure local DP, basic composition: the sum of the local randomisers' epsilons "
                "(delta = 0)")

    @property
    def mechanism(self) -> str:
        return "; ".join(f"{r.name}: {r.mechanism}" for r in self.randomisers)

    @property
    def events(self) -> tuple[str, ...]:
        return tuple(f"{r.name}: {r.mechanism}, epsilon {r.epsilon:g}"
                     + (f" ({r.remark})" if r.remark else "") for r in self.randomisers)

    def epsilon(self, delta: float = 0.0) -> float:
        """The per-unit epsilon; pure DP, so it does not depend on ``delta``."""
        return float(sum(float(r.epsilon) for r in self.randomisers))

    def dp_event(self) -> None:
        """None: local randomisers have no dp-accounting event here."""
        return None


def plan_local_grr(*, n_features: int, n_sampled_features: int, epsilon_per_feature: float,
                   n_classes: int, epsilon_labels: float) -> LocalDPPlan:
    """GRR-FS on every node's features and GRR on every training node's label (RGNN).

    The features cost :func:`~skdpgraph.privacy.grr_fs_epsilon` (``m * eps_x``, tight);
    the paper's amplified value is shown as a remark, not used.

    Examples
    --------
    >>> plan = plan_local_grr(n_features=58, n_sampled_features=10, epsilon_per_feature=1.0,
    ...                       n_classes=7, epsilon_labels=2.0)
    >>> plan.epsilon(0.0)
    12.0
    """
    m, d, eps_x = n_sampled_features, n_features, epsilon_per_feature
    paper = grr_fs_paper_epsilon(d, m, eps_x)
    return LocalDPPlan((
        LocalRandomiser("features (every node)", f"GRR-FS, m={m} of d={d} encoded features at "
                        f"eps_x={eps_x:g} each", grr_fs_epsilon(m, eps_x),
                        f"the paper's Theorem 1 would claim {paper:.4g}, not an upper bound"),
        LocalRandomiser("labels (training nodes)", f"GRR over {n_classes} classes",
                        float(epsilon_labels))))


@dataclasses.dataclass(frozen=True)
class UntilBudgetPlan(DPSGDPlan):
    """A DP-SGD plan with a given noise multiplier, cut to the steps the budget allows.

    ``steps`` is the largest number of steps, at most ``planned_steps``, whose epsilon
    stays within the budget; it is fixed from public quantities before training.
    """

    planned_steps: int = 0

    @property
    def mechanism(self) -> str:
        return (f"{super().mechanism}; noise multiplier given, run until the budget: "
                f"{self.steps} of {self.planned_steps} planned steps")


def plan_until_budget(plan: DPSGDPlan, epsilon: float, delta: float, *,
                      context: str) -> UntilBudgetPlan:
    """``plan`` cut to the most steps (at most ``plan.steps``) within ``(epsilon, delta)``.

    Epsilon grows with the number of steps, so a bisection finds the cut.

    Raises
    ------
    PrivacyBudgetError
        If even one step spends more than ``epsilon``.
    """
    if not plan.private:
        raise ValueError(f"{context}: plan_until_budget needs a private plan.")
    first = plan.epsilon(delta, 1)
    if first > epsilon:
        raise PrivacyBudgetError(
            f"{context}: noise_multiplier={plan.noise_multiplier:g} spends epsilon={first:.4g} "
            f"> epsilon={epsilon:g} in a single step. Increase noise_multiplier or epsilon, or "
            "lower batch_size.")
    low, high = 1, plan.steps
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if plan.epsilon(delta, middle) <= epsilon else (low, middle - 1)
    fields = {f.name: getattr(plan, f.name) for f in dataclasses.fields(DPSGDPlan)}
    cut = UntilBudgetPlan(**{**fields, "steps": low}, planned_steps=plan.steps)
    # Same sampling and noise: the one-step RDP curve is the same, so reuse it.
    cut.__dict__["_step_rdp"] = plan._step_rdp
    return cut
