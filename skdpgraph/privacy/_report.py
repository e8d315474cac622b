"""The frozen record of what a fitted estimator spent and what it protects."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from skdpgraph.privacy._composition import Spend, release_event

__all__ = ["PrivacyReport", "NON_PRIVATE_NOTE", "report_from_plan", "spend_of_report"]

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
        Noisy releases made after ``fit`` (e.g. a fresh aggregation for predictions on
        another graph), each with its ``kind``, ``epsilon`` and ``delta``.
    choice : str
        Set by :class:`~skdpgraph.DPNodeClassifier`: which estimator it chose for the
        unit and budget, and the benchmark that supports the choice. Empty otherwise.

    Notes
    -----
    ``epsilon`` and ``delta`` are the training release's; ``total_epsilon`` and
    ``total_delta`` bound everything the estimator has given back so far, the training
    release and every later release, by basic composition (sums: an upper bound whatever
    the releases share).
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
    choice: str = ""

    @property
    def total_epsilon(self) -> float:
        """Epsilon of the training release plus every later release (basic composition)."""
        return float(self.epsilon + sum(float(r["epsilon"]) for r in self.releases))

    @property
    def total_delta(self) -> float:
        """Delta of the training release plus every later release (basic composition)."""
        return float(self.delta + sum(float(r["delta"]) for r in self.releases))

    @property
    def private(self) -> bool:
        """Whether the training release has a finite epsilon."""
        return self.epsilon != float("inf")

    def spends(self) -> tuple[Spend, ...]:
        """The training release and every later release, as composition sees them.

        The training release carries ``dp_event``; later releases carry their own
        (epsilon, delta) and, where it is known, their event
        (:func:`~skdpgraph.privacy.release_event`). All are on this report's unit and
        relation.

        Examples
        --------
        >>> report = PrivacyReport("X", "node", "add or remove one node", 1.0, 1e-5, "rdp",
        ...                        "dp-sgd").with_release(kind="pma", epsilon=0.5, delta=1e-5)
        >>> [spend.epsilon for spend in report.spends()]
        [1.0, 0.5]
        """
        first = spend_of_report(self)
        return (first,) + tuple(
            Spend(float(r["epsilon"]), float(r["delta"]), self.unit, self.neighbouring_relation,
                  release_event(r))
            for r in self.releases)

    def with_release(self, **release: Any) -> PrivacyReport:
        """A copy with one more entry in ``releases`` (it must state ``epsilon`` and ``delta``)."""
        missing = {"kind", "epsilon", "delta"} - set(release)
        if missing:
            raise ValueError(f"PrivacyReport.with_release: a release must state {sorted(missing)}.")
        return dataclasses.replace(self, releases=self.releases + (dict(release),))

    def to_dict(self) -> dict[str, Any]:
        """The report as built-in Python values, ready for :func:`json.dumps`.

        Every field except ``dp_event`` (an accounting object, not data), plus
        ``private``, ``total_epsilon`` and ``total_delta``. Tuples become lists and numpy
        scalars in ``releases`` become Python numbers. A non-private fit keeps
        ``epsilon=float("inf")``, which :func:`json.dumps` writes as ``Infinity``.

        Returns
        -------
        report : dict

        Examples
        --------
        >>> report = PrivacyReport(estimator="DPMLPClassifier", unit="node",
        ...                        neighbouring_relation="add or remove one node",
        ...                        epsilon=2.0, delta=1e-5, accountant="RDP",
        ...                        mechanism="DP-SGD")
        >>> report.to_dict()["total_epsilon"]
        2.0
        """
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name != "dp_event"}
        for name in ("events", "assumptions", "not_covered"):
            out[name] = list(out[name])
        out["releases"] = [{key: _plain(value) for key, value in release.items()}
                           for release in self.releases]
        out.update(private=self.private, total_epsilon=self.total_epsilon,
                   total_delta=self.total_delta)
        return out

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
        if self.releases:
            lines.append(f"  total with releases: ({self.total_epsilon:.4g}, "
                         f"{self.total_delta:.3g})-DP (basic composition)")
        return "\n".join(lines)


def report_from_plan(plan: Any, *, estimator: str, unit: str, relation: str, delta: float,
                     epsilon: float, inference: str, assumptions: tuple[str, ...] = (),
                     not_covered: tuple[str, ...] = ()) -> PrivacyReport:
    """The one constructor of fitted ``privacy_`` records: a plan plus what the class declares.

    Parameters
    ----------
    plan : PrivacyPlan
        The checked plan of the training release.
    estimator, unit, relation : str
        The class's name, privacy unit and neighbouring relation.
    delta, epsilon : float
        The delta the plan was checked at and the epsilon :func:`check_plan` returned.
    inference : str
        The class's inference statement.
    assumptions, not_covered : tuple of str, default=()
        What the guarantee assumes, and what the record lists as not covered.

    Returns
    -------
    report : PrivacyReport
        The fitted ``privacy_`` record.
    """
    private = bool(plan.private)
    return PrivacyReport(
        estimator=estimator, unit=unit, neighbouring_relation=relation,
        epsilon=float(epsilon) if private else float("inf"),
        delta=float(delta) if private else 0.0,
        accountant=plan.accountant, mechanism=plan.mechanism, events=tuple(plan.events),
        inference=inference, assumptions=tuple(assumptions), not_covered=tuple(not_covered),
        dp_event=plan.dp_event() if private else None,
    )


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds; anything else unchanged."""
    item = getattr(value, "item", None)
    return item() if callable(item) and getattr(value, "ndim", None) == 0 else value


def spend_of_report(report: PrivacyReport) -> Spend:
    """The training release of ``report`` as composition sees it (its event included).

    Parameters
    ----------
    report : PrivacyReport
        A fitted ``privacy_`` record.

    Returns
    -------
    spend : Spend
        Its training release's epsilon, delta, unit, relation and event.
    """
    return Spend(float(report.epsilon), float(report.delta) if report.private else 0.0,
                 report.unit, report.neighbouring_relation,
                 report.dp_event if report.private else None)
