"""What a fit would spend, from its plan, without training: the guarantee before the data.

Every skdpgraph estimator builds its privacy plan from public quantities (sizes and
parameters) and checks it against its budget *before* reading private data (the fit
sequence of :class:`~skdpgraph.estimators._base.BaseDPClassifier`). :func:`planned_privacy`
runs that same sequence on a throwaway clone and stops at the first step that would read
private data, so a search can know what a fit would cost before deciding to make it.
"""

from __future__ import annotations

from typing import Any

from sklearn.base import clone
from sklearn.pipeline import Pipeline

from skdpgraph.privacy import PrivacyReport, report_from_plan

__all__ = ["planned_privacy", "checked_plan"]


def _final_step(estimator: Any, X: Any, y: Any) -> tuple[Any, Any]:
    """The estimator to plan and the nodes it would be fitted on (after free steps)."""
    if not isinstance(estimator, Pipeline):
        return estimator, X
    from skdpgraph.preprocessing import NodeFeatureTransformer

    for name, step in estimator.steps[:-1]:
        free = (step is None or step == "passthrough"
                or (isinstance(step, NodeFeatureTransformer) and step.public_features))
        if not free:
            raise TypeError(
                f"planned_privacy: step {name!r} ({type(step).__name__}) of the Pipeline is not "
                "a NodeFeatureTransformer on public features; fitting it to plan the last step "
                "could itself read private data or spend budget, so its plan is not computed.")
    head = clone(estimator[:-1])
    return estimator.steps[-1][1], head.fit_transform(X, y) if len(head) else X


def planned_privacy(estimator: Any, X: Any, y: Any) -> PrivacyReport:
    """The guarantee that fitting ``estimator`` on ``(X, y)`` would have, without fitting it.

    A clone of ``estimator`` runs the fit sequence up to its budget check (data
    validation, the default delta, the plan from public quantities, ``check_plan``) and
    stops where training would start. Nothing is trained, nothing is released, and no
    privacy ledger records or refuses anything.

    Parameters
    ----------
    estimator : skdpgraph estimator or Pipeline
        Unfitted or fitted (it is cloned). A Pipeline's earlier steps must be
        :class:`~skdpgraph.preprocessing.NodeFeatureTransformer` on public features (or
        ``"passthrough"``): they are fitted on a clone to give the last step its input.
    X : Nodes or array-like
        The nodes the fit would receive.
    y : array-like
        Their labels.

    Returns
    -------
    PrivacyReport
        The training release's guarantee (``epsilon``, ``delta``, ``unit``,
        ``neighbouring_relation``, ``dp_event``); ``inference`` is empty, and there are no
        releases, since none is made.

    Raises
    ------
    PrivacyBudgetError
        If the plan exceeds the estimator's own ``epsilon``, as ``fit`` would raise.
    TypeError
        If the estimator does not follow the skdpgraph fit sequence (it is not a
        ``BaseDPClassifier``), or a Pipeline step before it is not free to fit.

    Examples
    --------
    >>> from skdpgraph import DPMLPClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=200, random_state=0)
    >>> report = planned_privacy(DPMLPClassifier(epsilon=2.0), data.nodes(), data.y)
    >>> report.epsilon <= 2.0
    True
    """
    return checked_plan(estimator, X, y)[1]


def checked_plan(estimator: Any, X: Any, y: Any) -> tuple[Any, PrivacyReport]:
    """``(plan, report)`` of :func:`planned_privacy`: the checked plan itself as well."""
    from skdpgraph.estimators import BaseDPClassifier

    final, nodes = _final_step(estimator, X, y)
    if not isinstance(final, BaseDPClassifier):
        raise TypeError(
            f"planned_privacy needs a skdpgraph estimator that plans before training (a "
            f"BaseDPClassifier); got {type(final).__name__}. DPNodeClassifier: plan the "
            "estimator it chooses (choice_) instead.")
    probe = clone(final)
    nodes, _, plan, epsilon = probe._checked_plan(nodes, y)
    unit, relation = probe._unit_and_relation(getattr(nodes, "graph", None))
    return plan, report_from_plan(plan, estimator=type(probe).__name__, unit=unit,
                                  relation=relation, delta=probe.delta_, epsilon=epsilon,
                                  inference="")
