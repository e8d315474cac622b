"""What a fitted scikit-learn search or pipeline spent in total."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from skdpgraph.model_selection._cost import (
    VALIDATION_LABELS_PUBLIC,
    PrivacyCost,
    as_report,
    composition_cost,
)
from skdpgraph.preprocessing import NodeFeatureTransformer, declared_budget

__all__ = ["search_cost", "privacy_spent"]


def _split_values(cv_results: dict, metric: str) -> np.ndarray:
    keys = sorted(k for k in cv_results if k.startswith("split") and k.endswith(f"_test_{metric}"))
    if not keys:
        raise KeyError(
            f"cv_results_ has no split*_test_{metric}; fit the search with "
            "scoring=privacy_scoring(...) so that every fit's epsilon and delta are recorded."
        )
    return -np.column_stack([np.asarray(cv_results[k], dtype=float) for k in keys])


def search_cost(search: Any) -> PrivacyCost:
    """Naive composition of every fit of a fitted ``GridSearchCV``/``RandomizedSearchCV``.

    The search must have been fitted with ``scoring=privacy_scoring(...)``, so that
    ``cv_results_`` records each fit's ``epsilon_spent_`` and ``delta_``. scikit-learn keeps
    no per-fit privacy events, so the cross-validation fits compose by basic composition
    (sum of epsilons and of deltas), plus the refit's guarantee when there is one.

    Returns
    -------
    PrivacyCost

    Notes
    -----
    The bound covers the fitted models. Validation labels are treated as public: each
    fit's score on its held-out fold (in ``cv_results_``) and the choice of the best
    candidate read the held-out nodes' labels, and are not covered; ``notes`` says so.
    """
    check_is_fitted(search, "cv_results_")
    epsilons = _split_values(search.cv_results_, "epsilon")
    deltas = _split_values(search.cv_results_, "delta")
    failed = np.isnan(epsilons)
    notes = ["cross-validation fits: basic composition of the (epsilon, delta) recorded in "
             "cv_results_ (scikit-learn does not keep their privacy events)",
             VALIDATION_LABELS_PUBLIC + " (cv_results_ holds every fit's validation score)"]
    if failed.any():
        notes.append(f"{int(failed.sum())} fits failed (NaN score) and are counted as releasing "
                     "nothing: a fit that fails before training releases no model")
    epsilon = float(np.sum(epsilons[~failed]))
    delta = float(np.sum(deltas[~failed]))
    num_fits = int((~failed).sum())
    if hasattr(search, "best_estimator_"):
        refit = privacy_spent(search.best_estimator_)
        epsilon, delta, num_fits = epsilon + refit.epsilon, delta + refit.delta, num_fits + 1
        notes.append("includes the refit on all data")
    return PrivacyCost(epsilon, min(delta, 1.0), "basic composition", num_fits, tuple(notes))


def _step_budget(name: str, step: Any) -> tuple[Any, str | None]:
    """A step's report or (epsilon, delta), and a note; (None, note) for a free step."""
    if hasattr(step, "privacy_"):
        return as_report(step), None
    if isinstance(step, NodeFeatureTransformer):
        if step.privacy_budget_ is not None:
            return step.privacy_budget_, f"step {name!r}: declared DP budget {step.privacy_budget_}"
        if step.public_features:
            return None, f"step {name!r}: fitted on features declared public (no cost)"
        return (math.inf, 0.0), f"step {name!r}: fitted on private features without DP"
    budget = declared_budget(step)
    if budget is not None:
        return budget, f"step {name!r}: declared DP budget {budget}"
    return (math.inf, 0.0), (f"step {name!r} ({type(step).__name__}) declares no privacy "
                             "budget; counted as not private")


def privacy_spent(pipeline: Any) -> PrivacyCost:
    """Total guarantee of a fitted ``Pipeline`` (or a single fitted estimator).

    Each step contributes what it declares: skdpgraph estimators their ``privacy_``, a
    :class:`~skdpgraph.preprocessing.NodeFeatureTransformer` the budget of the DP
    transformer it wraps (nothing if its features are declared public, ``inf`` otherwise),
    any other step its declared budget or ``inf``. Steps are assumed to protect the same
    unit. Estimator reports alone compose in RDP; with transformer budgets the pairs add up
    (basic composition).

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdpgraph import DPMLPClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> from skdpgraph.preprocessing import NodeFeatureTransformer
    >>> data = make_csbm(n_nodes=200, random_state=0)
    >>> pipe = make_pipeline(NodeFeatureTransformer(StandardScaler(), public_features=True),
    ...                      DPMLPClassifier(epsilon=2.0, epochs=2, random_state=0))
    >>> cost = privacy_spent(pipe.fit(data.nodes(), data.y))
    >>> cost.epsilon <= 2.0
    True
    """
    steps = pipeline.steps if isinstance(pipeline, Pipeline) else [("estimator", pipeline)]
    reports, pairs, notes = [], [], []
    for name, step in steps:
        if step is None or step == "passthrough":
            continue
        check_is_fitted(step)
        budget, note = _step_budget(name, step)
        if note:
            notes.append(note)
        if budget is None:
            continue
        if hasattr(budget, "dp_event"):
            reports.append(budget)
        else:
            pairs.append(budget)
    if not reports and not pairs:
        return PrivacyCost(0.0, 0.0, "no private step", 0, tuple(notes))
    if not pairs:
        cost = composition_cost(reports) if len(reports) > 1 else None
        if cost is None:
            report = reports[0]
            return PrivacyCost(report.epsilon, report.delta, report.accountant, 1, tuple(notes))
        return PrivacyCost(cost.epsilon, cost.delta, cost.method, cost.num_fits,
                           cost.notes + tuple(notes))
    pairs += [(r.epsilon, r.delta) for r in reports]
    return PrivacyCost(float(sum(e for e, _ in pairs)), float(min(1.0, sum(d for _, d in pairs))),
                       "basic composition", len(pairs), tuple(notes))
