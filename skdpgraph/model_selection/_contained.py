"""What a fitted object contains, and the total guarantee of everything in it.

A fitted scikit-learn object can hold many private models: a ``Pipeline``'s steps, a
search's refit, the folds of ``CalibratedClassifierCV``, the members of a bagging, voting
or stacking ensemble. :func:`privacy_spent` walks the fitted object (the attributes
scikit-learn's convention marks as fitted, ending in ``_``, and a pipeline's steps), with
no code for any particular meta-estimator, and composes what it finds.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import LabelBinarizer, LabelEncoder
from sklearn.utils.validation import check_is_fitted

from skdpgraph.preprocessing import NodeFeatureTransformer, declared_budget
from skdpgraph.privacy import PrivacyCost, PrivacyReport, Spend, compose_spends

__all__ = ["privacy_spent", "labels_public"]

#: Units under which node features and labels are public: edge-level privacy protects the
#: edges only, so a component that reads features and labels costs nothing there.
_EDGE_UNIT_PREFIX = "edge"


def labels_public(report: PrivacyReport) -> bool:
    """Whether ``report``'s unit leaves node features and labels public (edge level).

    Parameters
    ----------
    report : PrivacyReport
        A privacy record.

    Returns
    -------
    public : bool
        True for an edge-level unit.
    """
    return report.unit.startswith(_EDGE_UNIT_PREFIX)


def _children(obj: Any) -> Iterator[tuple[str, Any]]:
    """The fitted parts of ``obj``: a pipeline's steps and its fitted attributes."""
    if isinstance(obj, Pipeline):
        yield from ((f"step {name!r}", step) for name, step in obj.steps)
        return
    names = vars(obj) if hasattr(obj, "__dict__") else {}
    fitted_only = isinstance(obj, BaseEstimator)
    for name, value in names.items():
        if fitted_only and not (name.endswith("_") and not name.startswith("_")):
            continue  # constructor parameters (unfitted templates) and private state
        yield from _flatten(name, value)


def _flatten(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _flatten(f"{name}[{key!r}]", item)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _flatten(f"{name}[{i}]", item)
    elif _is_model(value):
        yield name, value


def _is_model(value: Any) -> bool:
    """An estimator, or a fitted part of a scikit-learn meta-estimator holding estimators."""
    if isinstance(value, (BaseEstimator, PrivacyReport)):
        return True
    module = type(value).__module__ or ""
    return module.startswith("sklearn.") and hasattr(value, "__dict__") and any(
        _is_model(item) for _, item in _flatten("", list(vars(value).values())))


def _walk(obj: Any, path: str, seen: set[int]) -> Iterator[tuple[str, Any]]:
    """``(path, part)`` for every private model and every other fitted leaf in ``obj``."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(getattr(obj, "privacy_", None), PrivacyReport) or isinstance(
            obj, NodeFeatureTransformer):
        yield path, obj
        return
    children = list(_children(obj))
    if not children:
        if _fitted(obj):  # an unfitted template (a meta-estimator's estimator_) read nothing
            yield path, obj
        return
    for name, child in children:
        yield from _walk(child, f"{path}.{name}" if path else name, seen)


def _fitted(obj: Any) -> bool:
    if not isinstance(obj, BaseEstimator):
        return True
    try:
        check_is_fitted(obj)
    except NotFittedError:
        return False
    return True


def _leaf_budget(path: str, leaf: Any, reports: list[PrivacyReport]
                 ) -> tuple[tuple[float, float] | None, str | None]:
    """A non-skdpgraph fitted part's ``(epsilon, delta)`` (None: free) and a note."""
    public = bool(reports) and all(labels_public(report) for report in reports)
    if isinstance(leaf, NodeFeatureTransformer):
        if leaf.privacy_budget_ is not None:
            return leaf.privacy_budget_, f"{path}: declared DP budget {leaf.privacy_budget_}"
        if leaf.public_features is True or public:
            return None, f"{path}: fitted on node features, public here (no cost)"
        return (math.inf, 0.0), f"{path}: fitted on private features without DP"
    if isinstance(leaf, (LabelEncoder, LabelBinarizer)):
        return None, f"{path}: the label set, public (every model here states it)"
    budget = declared_budget(leaf)
    if budget is not None:
        return budget, f"{path}: declared DP budget {budget}"
    if public:
        return None, (f"{path} ({type(leaf).__name__}): fitted without DP on node features, "
                      "labels or model outputs, all public at edge level (no cost)")
    return (math.inf, 0.0), (f"{path} ({type(leaf).__name__}) declares no privacy budget and "
                             "may have read private features or labels; counted as not "
                             "private")


def privacy_spent(obj: Any) -> PrivacyCost:
    """The total guarantee of everything a fitted object contains.

    ``obj`` is a fitted skdpgraph estimator, a ``Pipeline``, or any fitted scikit-learn
    meta-estimator around them (``CalibratedClassifierCV``, ``BaggingClassifier``,
    ``VotingClassifier``, ``StackingClassifier``, a search's ``best_estimator_``...). Every
    skdpgraph model found contributes its training release and every later release in its
    ``privacy_.releases``; releases with dp-accounting events compose in RDP, the others
    add up. A wrapped DP transformer contributes its declared budget. Any other fitted part
    (a scaler, a calibration map, a stacking head) is free where the unit leaves features
    and labels public (edge level) and counts as not private (``inf``) elsewhere.

    Parameters
    ----------
    obj : object
        The fitted object.

    Returns
    -------
    PrivacyCost
        With ``unit`` and ``relation`` of the models found.

    Raises
    ------
    ValueError
        If the object holds models protecting different units: their guarantees do not
        add into one number.

    Notes
    -----
    Only what the object keeps is counted: the cross-validation fits of a search, or the
    models stacking trains for its cross-validated predictions, are gone after ``fit``. A
    :class:`~skdpgraph.PrivacyLedger` around the workflow counts those as well.

    Examples
    --------
    >>> from sklearn.ensemble import BaggingClassifier
    >>> from skdpgraph import DPMLPClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=200, random_state=0)
    >>> bag = BaggingClassifier(DPMLPClassifier(epsilon=1.0, epochs=2), n_estimators=3,
    ...                         bootstrap=False, max_samples=0.5, random_state=0)
    >>> cost = privacy_spent(bag.fit(data.nodes(), data.y))
    >>> cost.num_fits, 1.0 < cost.epsilon < 3.0
    (3, True)
    """
    parts = list(_walk(obj, "", set()))
    reports = [part.privacy_ for _, part in parts
               if isinstance(getattr(part, "privacy_", None), PrivacyReport)]
    spends = [spend for report in reports for spend in report.spends()]
    keys = sorted({spend.key for spend in spends})
    if len(keys) > 1:
        raise ValueError(
            f"{type(obj).__name__} holds models protecting different units: "
            f"{[unit for unit, _ in keys]}. A guarantee on one unit says nothing about "
            "another, so there is no single total; compute each model's apart.")
    unit, relation = keys[0] if keys else ("", "")
    notes, pairs = [], []
    for path, part in parts:
        if isinstance(getattr(part, "privacy_", None), PrivacyReport):
            continue
        budget, note = _leaf_budget(path or type(part).__name__, part, reports)
        notes.append(note)
        if budget is not None:
            pairs.append(Spend(float(budget[0]), float(budget[1]), unit, relation))
    if pairs:
        notes.append("declared budgets of other steps are assumed to protect the same unit")
    if not spends and not pairs:
        return PrivacyCost(0.0, 0.0, "no private part", 0, tuple(notes))
    cost = compose_spends(spends + pairs)
    releases = len(spends) - len(reports)
    if releases:
        notes.insert(0, f"{len(reports)} models and {releases} releases after fit")
    return PrivacyCost(cost.epsilon, cost.delta, cost.method, cost.num_fits,
                       cost.notes + tuple(notes), unit, relation)
