"""The frozen record of what a fitted estimator spent and what it protects."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PrivacyReport", "NON_PRIVATE_NOTE"]

NON_PRIVATE_NOTE = "epsilon=inf: trained without clipping or noise; no privacy guarantee."


@dataclass(frozen=True)
class PrivacyReport:
    """What a fitted estimator spent, on which unit, and under which assumptions.

    Parameters
    ----------
    estimator : str
        Name of the estimator class.
    unit : str
        The privacy unit: what one neighbouring dataset changes (``"node"``, ``"edge"``,
        ``"local"``...).
    neighbouring_relation : str
        The relation the accountant assumes, in words (``"add or remove one node"``).
    epsilon, delta : float
        The guarantee of the training release; ``epsilon`` is an upper bound from
        ``accountant``. ``inf`` for a non-private fit.
    accountant : str
        The accountant and conversion used.
    mechanism : str
        The mechanism, in words.
    events : tuple of str
        The composed mechanisms as the accountant saw them.
    inference : str
        What ``predict`` reveals and whether it costs budget.
    assumptions : tuple of str
        Conditions the guarantee depends on (degree bounds, public structure...).
    not_covered : tuple of str
        Outputs of the estimator that are *not* protected (e.g. ``history_``).
    dp_event : object or None
        The dp-accounting ``DpEvent`` of the training release, when one exists; used to
        account for hyperparameter searches.
    releases : tuple of dict
        Later releases, e.g. a fresh noisy aggregation for predictions on another graph.
    """

    estimator: str
    unit: str
    neighbouring_relation: str
    epsilon: float
    delta: float
    accountant: str
    mechanism: str
    events: tuple[str, ...] = ()
    inference: str = ""
    assumptions: tuple[str, ...] = ()
    not_covered: tuple[str, ...] = ()
    dp_event: Any = field(default=None, repr=False, compare=False)
    releases: tuple[dict, ...] = ()

    @property
    def private(self) -> bool:
        """Whether the training release has a finite epsilon."""
        return self.epsilon != float("inf")

    def with_release(self, **release: Any) -> PrivacyReport:
        """A copy with one more entry in ``releases``."""
        return dataclasses.replace(self, releases=self.releases + (dict(release),))

    def __str__(self) -> str:
        lines = [
            f"{self.estimator}: ({self.epsilon:.4g}, {self.delta:.3g})-DP" if self.private
            else f"{self.estimator}: not private (epsilon=inf)",
            f"  unit: {self.unit} ({self.neighbouring_relation})",
            f"  mechanism: {self.mechanism}",
            f"  accountant: {self.accountant}",
        ]
        lines += [f"  event: {event}" for event in self.events]
        lines += [f"  assumes: {text}" for text in self.assumptions]
        if self.inference:
            lines.append(f"  inference: {self.inference}")
        lines += [f"  not covered: {text}" for text in self.not_covered]
        lines += [f"  release: {release}" for release in self.releases]
        return "\n".join(lines)
