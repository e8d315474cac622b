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

from skdpgraph._docstrings import fill_doc
from skdpgraph.privacy._calibration import PrivacyBudgetError
from skdpgraph.privacy._grr import grr_fs_epsilon, grr_fs_paper_epsilon
from skdpgraph.privacy._rdp_orders import OrderHint
from skdpgraph.privacy._dpsgd_plan import DPSGDPlan

__all__ = ["LocalRandomiser", "LocalDPPlan", "plan_local_grr", "split_local_budget",
           "UntilBudgetPlan", "plan_until_budget"]

#: RGNN's default split of a total budget: labels 3 parts, features 10 parts. These are the
#: paper's defaults (eps_y = 3 next to m * eps_x = 10 * 1), which ``epsilon=13`` reproduces.
LABEL_PARTS, TOTAL_PARTS = 3, 13


class LocalRandomiser(NamedTuple):
    """One local randomiser of a :class:`LocalDPPlan`.

    Parameters
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
        The local randomisers each unit's data goes through, composed by summing their
        epsilons.

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

    def running_epsilon(self, delta: float, stage: str, steps: int, *,
                        hint: OrderHint | None = None, integer_orders: bool = False) -> float:
        """The whole :meth:`epsilon` at any step: every report is made before training.

        Examples
        --------
        >>> plan = LocalDPPlan((LocalRandomiser("labels", "GRR over 3 classes", 1.5),))
        >>> plan.running_epsilon(0.0, "classifier", 0)
        1.5
        """
        return self.epsilon(delta)

    def dp_event(self) -> None:
        """None: local randomisers have no dp-accounting event here."""
        return None


def plan_local_grr(*, n_features: int, n_sampled_features: int, epsilon_per_feature: float,
                   n_classes: int, epsilon_labels: float) -> LocalDPPlan:
    r"""Plan GRR-FS on every node's features and GRR on every training node's label (RGNN).

    The features cost :func:`~skdpgraph.privacy.grr_fs_epsilon` (``m * eps_x``, tight);
    the paper's amplified value is shown as a remark, not used.

    Parameters
    ----------
    n_features : int
        :math:`d`, the number of encoded features.
    n_sampled_features : int
        :math:`m`, the features each node reports through GRR.
    epsilon_per_feature : float
        :math:`\varepsilon_x`, the budget of each reported feature.
    n_classes : int
        Number of classes of the labels' GRR.
    epsilon_labels : float
        :math:`\varepsilon_y`, the budget of each training node's label.

    Returns
    -------
    plan : LocalDPPlan
        The two randomisers, features then labels.

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


def split_local_budget(epsilon: float, n_sampled_features: int, *,
                       epsilon_per_feature: float | None = None,
                       epsilon_labels: float | None = None,
                       context: str = "split_local_budget") -> tuple[float, float]:
    r"""Split a total local budget between GRR-FS on features and GRR on labels (RGNN).

    A training node spends :math:`m\varepsilon_x + \varepsilon_y` (basic composition);
    the split makes that equal to ``epsilon``:

    - neither override: :math:`\varepsilon_y = \frac{3}{13}\varepsilon` and
      :math:`\varepsilon_x = (\varepsilon - \varepsilon_y) / m`, the paper's defaults
      (:math:`m = 10`, :math:`\varepsilon_x = 1`, :math:`\varepsilon_y = 3`) at
      :math:`\varepsilon = 13`;
    - one override: it is kept and the other part gets the rest of ``epsilon``;
    - both: :math:`m\varepsilon_x + \varepsilon_y` must equal ``epsilon``.

    ``epsilon=inf`` gives ``inf`` to every part not given (that data is sent in the clear).

    Parameters
    ----------
    epsilon : float
        Total per-node budget, in ``(0, inf]``.
    n_sampled_features : int
        :math:`m`, the features each node reports through GRR (already capped at ``d``).
    epsilon_per_feature, epsilon_labels : float or None, default=None
        Overrides of :math:`\varepsilon_x` and :math:`\varepsilon_y`.
    context : str, default="split_local_budget"
        Names the caller in error messages.

    Returns
    -------
    epsilon_per_feature : float
        :math:`\varepsilon_x`, the budget of each reported feature.
    epsilon_labels : float
        :math:`\varepsilon_y`, the budget of each training node's label.

    Raises
    ------
    PrivacyBudgetError
        If one override leaves no budget (zero or less) for the other part.
    ValueError
        If both overrides are given and do not add up to ``epsilon``.

    Examples
    --------
    >>> split_local_budget(13.0, 10)
    (1.0, 3.0)
    >>> split_local_budget(6.0, 10, epsilon_labels=1.0)
    (0.5, 1.0)
    """
    m = int(n_sampled_features)
    if epsilon_per_feature is not None and epsilon_labels is not None:
        total = m * epsilon_per_feature + epsilon_labels
        if not math.isclose(total, epsilon, rel_tol=1e-9):
            raise ValueError(
                f"{context}: epsilon_per_feature={epsilon_per_feature:g} and epsilon_labels="
                f"{epsilon_labels:g} spend m * epsilon_per_feature + epsilon_labels = {m} * "
                f"{epsilon_per_feature:g} + {epsilon_labels:g} = {total:g} (m = "
                f"n_sampled_features, capped at the number of encoded features), but "
                f"epsilon={epsilon:g}; they must add up to epsilon. Give only one of them (the "
                f"other gets the rest of epsilon) or set epsilon={total:g}.")
        return float(epsilon_per_feature), float(epsilon_labels)
    if math.isinf(epsilon):
        return (math.inf if epsilon_per_feature is None else float(epsilon_per_feature),
                math.inf if epsilon_labels is None else float(epsilon_labels))
    if epsilon_labels is not None:
        rest = epsilon - epsilon_labels
        if not rest > 0:
            raise PrivacyBudgetError(
                f"{context}: epsilon_labels={epsilon_labels:g} leaves no budget for the "
                f"features out of epsilon={epsilon:g}; epsilon_labels must be below epsilon.")
        return rest / m, float(epsilon_labels)
    if epsilon_per_feature is not None:
        rest = epsilon - m * epsilon_per_feature
        if not rest > 0:
            raise PrivacyBudgetError(
                f"{context}: epsilon_per_feature={epsilon_per_feature:g} on m={m} sampled "
                f"features spends {m * epsilon_per_feature:g}, leaving no budget for the "
                f"labels out of epsilon={epsilon:g}; m * epsilon_per_feature must be below "
                "epsilon.")
        return float(epsilon_per_feature), rest
    labels = epsilon * LABEL_PARTS / TOTAL_PARTS
    return (epsilon - labels) / m, labels


@fill_doc
@dataclasses.dataclass(frozen=True)
class UntilBudgetPlan(DPSGDPlan):
    """A DP-SGD plan with a given noise multiplier, cut to the steps the budget allows.

    ``steps`` is the largest number of steps, at most ``planned_steps``, whose epsilon
    stays within the budget; it is fixed from public quantities before training.

    Parameters
    ----------
    {{dpsgd_run}}
    {{dpsgd_noise}}
    planned_steps : int, default=0
        The steps planned before the cut (``steps`` is at most this).
    """

    planned_steps: int = 0

    @property
    def mechanism(self) -> str:
        return (f"{super().mechanism}; noise multiplier given, run until the budget: "
                f"{self.steps} of {self.planned_steps} planned steps")


@fill_doc
def plan_until_budget(plan: DPSGDPlan, epsilon: float, delta: float, *,
                      context: str) -> UntilBudgetPlan:
    """Cut ``plan`` to the most steps (at most ``plan.steps``) within ``(epsilon, delta)``.

    Epsilon grows with the number of steps, so a bisection finds the cut.

    Parameters
    ----------
    plan : DPSGDPlan
        A private plan with a given noise multiplier.
    {{plan_budget}}
    context : str
        Names the caller in error messages.

    Returns
    -------
    cut : UntilBudgetPlan
        ``plan`` with ``steps`` cut and ``planned_steps`` its original steps.

    Raises
    ------
    ValueError
        If ``plan`` is not private.
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
    cut.__dict__["_step_curve"] = plan._step_curve
    return cut
