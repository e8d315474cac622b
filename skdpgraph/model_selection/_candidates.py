"""The privacy of every run a random search can make, planned before any run is made.

The Papernot--Steinke bound needs the RDP curve of one run, and a run is any candidate of
the search space, not only those that happened to run (which ones ran depends on the
number of runs, which must stay secret). A run is a fit and its scoring: when scoring
held-out nodes makes a release (node-level GAP or ProGAP without an in-degree bound keeps
no release of the fitted graph, so predicting it makes a new one), the run's curve
includes it. Plans come from public quantities (:func:`checked_plan`), so all of this is
known before any private data is read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from sklearn.base import clone
from sklearn.model_selection import ParameterGrid

from skdpgraph.graph import Graph, Nodes
from skdpgraph.model_selection._planned import checked_plan
from skdpgraph.privacy import PrivacyBudgetError, PrivacyReport, release_event

__all__ = ["candidate_runs", "check_run", "DISTRIBUTION_DRAWS"]

#: Draws of each parameter given as a distribution, checked to leave a run's privacy unchanged.
DISTRIBUTION_DRAWS = 5


def _planned_run(estimator: Any, params: dict, X: Any, y: Any) -> PrivacyReport:
    """The report of one run of ``params``: the fit's plan and the release its scoring makes.

    Held-out nodes of the fitted graph are scored from the release the fit keeps, at no
    cost. A plain array ``X`` has no graph: scoring its held-out rows builds a new graph,
    so a plan that states the cost of a release on a new graph (``release_cost``) is
    charged one release for it. :func:`check_run` then refuses any run that releases more.
    """
    plan, report = checked_plan(clone(estimator).set_params(**params), X, y)
    if plan.private and hasattr(plan, "release_cost") and not isinstance(X, (Graph, Nodes)):
        report = report.with_release(kind="scoring", **plan.release_cost(report.delta))
    return report


def _signature(report: PrivacyReport) -> tuple:
    """What a run's privacy depends on: unit, relation, delta and the events of its releases."""
    return (report.unit, report.neighbouring_relation, report.delta, repr(report.dp_event),
            tuple(sorted(repr(release_event(r)) for r in report.releases)))


def candidate_runs(estimator: Any, param_distributions: Any, X: Any, y: Any,
                   rng: Any) -> tuple[list[PrivacyReport], tuple[str, ...]]:
    """One report per distinct run over the whole candidate space, and notes.

    Parameters given as lists are enumerated (every combination, as ``ParameterGrid``).
    A parameter given as a distribution (an object with ``rvs``) cannot be enumerated: it
    is drawn :data:`DISTRIBUTION_DRAWS` times with ``rng`` and must leave the run's privacy
    unchanged at every draw; otherwise a ``ValueError`` names it (give it as a list).

    Raises
    ------
    PrivacyBudgetError
        If a candidate's plan exceeds its own budget: that run would fail, and whether it
        ran would depend on the number of runs.
    """
    dicts = [param_distributions] if isinstance(param_distributions, Mapping) \
        else list(param_distributions)
    runs: dict[tuple, PrivacyReport] = {}
    notes = []
    for space in dicts:
        lists = {k: v for k, v in space.items() if not hasattr(v, "rvs")}
        drawn = {k: v for k, v in space.items() if hasattr(v, "rvs")}
        draws = {k: [v.rvs(random_state=rng) for _ in range(DISTRIBUTION_DRAWS)]
                 for k, v in drawn.items()}
        first = {k: values[0] for k, values in draws.items()}
        for grid_point in ParameterGrid(lists):
            report = _planned_run(estimator, {**grid_point, **first}, X, y)
            runs.setdefault(_signature(report), report)
        if not drawn:
            continue
        base = next(iter(ParameterGrid(lists)))
        reference = _signature(_planned_run(estimator, {**base, **first}, X, y))
        for name, values in draws.items():
            for value in values[1:]:
                if _signature(_planned_run(estimator, {**base, **first, name: value}, X, y)) \
                        != reference:
                    raise ValueError(
                        f"PrivateRandomSearch: parameter {name!r} is drawn from a distribution "
                        f"({type(drawn[name]).__name__}) and changes the privacy of a run "
                        f"({name}={first[name]!r} and {name}={value!r} plan different "
                        "events); the bound must cover every value it can take, which a "
                        f"distribution does not list. Give {name!r} as a finite list.")
        notes.append(f"parameters drawn from distributions ({', '.join(sorted(drawn))}) left "
                     f"the run's privacy unchanged at {DISTRIBUTION_DRAWS} draws each; the bound "
                     "assumes they leave it unchanged at every value")
    return list(runs.values()), tuple(notes)


def check_run(report: PrivacyReport, runs: list[PrivacyReport]) -> None:
    """Refuse a run whose fit and releases are not among those planned for the space.

    Raises
    ------
    PrivacyBudgetError
        If the run's training event differs from every planned run's, or it made a release
        that no planned run with that training event allows.
    """
    made = Counter(repr(release_event(r)) for r in report.releases)
    for planned in runs:
        if (planned.unit, planned.neighbouring_relation, repr(planned.dp_event)) != \
                (report.unit, report.neighbouring_relation, repr(report.dp_event)):
            continue
        allowed = Counter(repr(release_event(r)) for r in planned.releases)
        if not made - allowed:
            return
    raise PrivacyBudgetError(
        f"PrivateRandomSearch: a run of {report.estimator} spent what no planned run allows "
        f"(training event {report.dp_event}, releases {[r.get('kind') for r in report.releases]});"
        " the search's bound would not cover it, so nothing is released.")
