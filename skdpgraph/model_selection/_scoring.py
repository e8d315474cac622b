"""Privacy as a metric of scikit-learn searches: a scorer and a budget-aware refit."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from sklearn.metrics import check_scoring
from sklearn.pipeline import Pipeline

from skdpgraph._docstrings import fill_doc, register_fragments
from skdpgraph.model_selection._cost import VALIDATION_LABELS_PUBLIC, unit_code
from skdpgraph.privacy import PrivacyBudgetError

__all__ = ["neg_epsilon_spent", "neg_delta_spent", "privacy_scoring", "refit_within_budget",
           "ranked_within_budget", "report_of", "spent_so_far", "unit_of"]


def report_of(estimator: Any) -> Any | None:
    """The report of a fitted skdpgraph estimator, or of a Pipeline's last step; else None."""
    if isinstance(estimator, Pipeline):
        estimator = estimator.steps[-1][1]
    report = getattr(estimator, "privacy_", None)
    return report if hasattr(report, "total_epsilon") else None


def spent_so_far(estimator: Any) -> tuple[float, float]:
    """``(epsilon, delta)`` a fitted estimator has spent so far: training and later releases.

    For a skdpgraph estimator, ``privacy_.total_epsilon`` and ``total_delta``: the training
    release plus every release recorded since (e.g. a new noisy aggregation made when
    held-out nodes were scored). For a Pipeline, the pipeline's total
    (:func:`~skdpgraph.model_selection.privacy_spent`, which includes every step's releases).
    Any other object: its declared ``epsilon_spent_`` and ``delta_``.
    """
    if isinstance(estimator, Pipeline):
        from skdpgraph.model_selection._contained import privacy_spent

        cost = privacy_spent(estimator)
        return cost.epsilon, cost.delta
    report = report_of(estimator)
    if report is not None:
        return float(report.total_epsilon), float(report.total_delta)
    if hasattr(estimator, "epsilon_spent_"):
        return float(estimator.epsilon_spent_), float(getattr(estimator, "delta_", 0.0))
    raise TypeError(
        f"{type(estimator).__name__} has no epsilon_spent_: the privacy scorers need a fitted "
        "skdpgraph estimator or a Pipeline of them."
    )


def unit_of(estimator: Any) -> tuple[str, str]:
    """``(unit, neighbouring_relation)`` of a fitted estimator (a Pipeline's last step)."""
    report = report_of(estimator)
    if report is None:
        raise TypeError(f"{type(estimator).__name__} has no privacy_ report: its privacy unit "
                        "is unknown.")
    return report.unit, report.neighbouring_relation


register_fragments(scorer_sections="""
    Parameters
    ----------
    estimator : fitted skdpgraph estimator
        The estimator scored.
    X : object, default=None
        Ignored.
    y : object, default=None
        Ignored.

    Returns
    -------
    score : float
        Minus the amount spent so far (greater is better).""")


@fill_doc
def neg_epsilon_spent(estimator: Any, X: Any = None, y: Any = None) -> float:
    """Scorer: minus what the fitted estimator has spent so far (greater is better).

    Minus ``privacy_.total_epsilon``: the training release plus every release recorded
    since (:func:`spent_so_far`). ``X`` and ``y`` are ignored, so it makes no release
    itself; but it sees only the releases made *before* it is called. In a scoring dict,
    scikit-learn calls the scorers in the dict's order: a release made by a scorer called
    later is missed. :func:`privacy_scoring` computes the score first and reads the total
    after it, whatever the order; use it rather than this scorer in a dict.

    {{scorer_sections}}

    Examples
    --------
    >>> from skdpgraph.model_selection import neg_epsilon_spent
    >>> class Fitted:
    ...     epsilon_spent_ = 2.5
    >>> neg_epsilon_spent(Fitted())
    -2.5
    """
    return -spent_so_far(estimator)[0]


@fill_doc
def neg_delta_spent(estimator: Any, X: Any = None, y: Any = None) -> float:
    """Scorer: minus the fitted estimator's ``privacy_.total_delta``.

    See :func:`neg_epsilon_spent` for what it sees.

    {{scorer_sections}}
    """
    return -spent_so_far(estimator)[1]


class _PrivacyScoring:
    """One scorer returning the score, then what the fit spent including the scoring."""

    def __init__(self, score: str | Callable):
        self.score = score

    def __call__(self, estimator: Any, X: Any, y: Any, **kwargs: Any) -> dict[str, float]:
        value = check_scoring(estimator, scoring=self.score)(estimator, X, y, **kwargs)
        epsilon, delta = spent_so_far(estimator)  # after the score: its releases included
        return {"score": value, "epsilon": -epsilon, "delta": -delta,
                "unit": unit_code(*unit_of(estimator))}

    def __repr__(self) -> str:
        return f"privacy_scoring({self.score!r})"


def privacy_scoring(score: str | Callable = "accuracy") -> Callable[..., dict[str, float]]:
    """Multi-metric ``scoring`` for a search or ``cross_validate``: score, then its cost.

    One scorer that computes ``score`` on the held-out nodes first and then reads what the
    fit has spent, so that any release the scoring made (e.g. node-level GAP or ProGAP
    without ``max_in_degree`` makes a new noisy aggregation to predict held-out nodes of
    the fitted graph) is charged to the fit. It returns four metrics: ``"score"``;
    ``"epsilon"`` and ``"delta"``, minus ``privacy_.total_epsilon`` and ``total_delta``
    after scoring (greater is better for scikit-learn); and ``"unit"``, a number
    identifying the fit's privacy unit and relation (:func:`~skdpgraph.model_selection.search_cost`
    refuses a search whose fits protect different units). ``cv_results_`` then holds them
    per split, which :func:`refit_within_budget` and ``search_cost`` read.

    Parameters
    ----------
    score : str or callable, default="accuracy"
        Any scikit-learn scoring string or scorer.

    Returns
    -------
    callable
        ``scorer(estimator, X, y) -> dict``; pass it as ``scoring=`` (with ``refit`` a
        metric name or a callable, as for any multi-metric scoring).
    """
    return _PrivacyScoring(score)


def _worst_over_splits(cv_results: Mapping[str, Any], metric: str) -> np.ndarray:
    """Per candidate, the least favourable split value of a greater-is-better metric."""
    keys = sorted(k for k in cv_results if k.startswith("split") and k.endswith(f"_test_{metric}"))
    if keys:
        return np.min(np.column_stack([np.asarray(cv_results[k], dtype=float) for k in keys]),
                      axis=1)
    key = f"mean_test_{metric}"
    if key not in cv_results:
        raise KeyError(
            f"cv_results_ has no {key!r}; pass scoring with a {metric!r} entry, e.g. "
            "scoring=privacy_scoring('accuracy')."
        )
    return np.asarray(cv_results[key], dtype=float)


def ranked_within_budget(cv_results: Mapping[str, Any], epsilon_budget: float, *,
                         score: str = "score", epsilon: str = "epsilon") -> np.ndarray:
    """Candidates whose every split spent at most ``epsilon_budget``, best mean score first.

    Ties keep the candidates' order; failed fits (NaN score) are left out. Raises
    ``ValueError`` when no candidate qualifies.
    """
    spent = -_worst_over_splits(cv_results, epsilon)
    key = f"mean_test_{score}"
    if key not in cv_results:
        raise KeyError(f"cv_results_ has no {key!r}; the scoring keys are the refit's "
                       f"score={score!r} and epsilon={epsilon!r}.")
    scores = np.asarray(cv_results[key], dtype=float)
    ok = np.flatnonzero((spent <= epsilon_budget) & np.isfinite(scores))
    if not ok.size:
        finite = spent[np.isfinite(spent)]
        smallest = f"{finite.min():.4g}" if finite.size else "none (all fits failed)"
        raise ValueError(
            f"No candidate fits epsilon_budget={epsilon_budget:g}: the smallest "
            f"epsilon spent by any candidate's fit is {smallest}. Raise the budget or add "
            "candidates with a smaller epsilon."
        )
    return ok[np.argsort(-scores[ok], kind="stable")]


def first_refit_within_budget(estimator: Any, candidates: list[dict], ranked: np.ndarray,
                              X: Any, y: Any, epsilon_budget: float, *,
                              context: str) -> tuple[int, Any, float]:
    """``(index, unfitted candidate, planned epsilon)`` of the first of ``ranked`` whose
    refit on ``(X, y)`` plans within ``epsilon_budget`` (public quantities only).

    Raises
    ------
    PrivacyBudgetError
        If no candidate's refit plan fits: nothing is refitted.
    """
    from sklearn.base import clone

    from skdpgraph.model_selection._planned import planned_privacy

    planned = {}
    for index in ranked:
        candidate = clone(estimator).set_params(**clone(candidates[int(index)], safe=False))
        try:
            epsilon = planned_privacy(candidate, X, y).epsilon
        except PrivacyBudgetError:  # its own budget check would refuse the refit
            epsilon = np.inf
        planned[int(index)] = epsilon
        if epsilon <= epsilon_budget * (1 + 1e-9):
            return int(index), candidate, epsilon
    shown = ", ".join(f"candidate {i}: {e:.4g}" for i, e in planned.items())
    raise PrivacyBudgetError(
        f"{context}: no candidate's refit on all {len(y)} nodes fits epsilon_budget="
        f"{epsilon_budget:g}; planned refit epsilons of the candidates whose cross-validation "
        f"fits did: {shown}. Nothing was refitted.")


def refit_within_budget(epsilon_budget: float, *, score: str = "score",
                        epsilon: str = "epsilon", estimator: Any = None, X: Any = None,
                        y: Any = None) -> Callable[[Mapping[str, Any]], int]:
    """A ``refit`` callable: the best candidate whose fits, refit included, stay within budget.

    For ``GridSearchCV``/``RandomizedSearchCV`` with ``scoring=privacy_scoring(...)``. A
    candidate qualifies when its largest epsilon over the splits (training plus the
    releases its scoring made) is at most ``epsilon_budget``; among those the highest
    ``mean_test_<score>`` wins (ties: the first). Failed fits (NaN) never win.

    The refit on all the data has another sampling rate and number of steps, so it can
    spend more than any of its cross-validation fits. Given the search's ``estimator`` and
    the ``X``, ``y`` it is fitted on, the callable plans each qualifying candidate's refit
    (:func:`~skdpgraph.model_selection.planned_privacy`: public quantities only, nothing
    trained) and picks the best one whose refit plan stays within ``epsilon_budget``; if
    none does it raises :class:`~skdpgraph.PrivacyBudgetError` before anything is refitted.
    Without them it cannot see the refit and warns so;
    :class:`~skdpgraph.model_selection.BudgetedSearchCV` does the same planning without
    passing the data twice.

    Parameters
    ----------
    epsilon_budget : float
        Largest acceptable epsilon of one fit.
    score : str, default="score"
        The scoring key to maximise.
    epsilon : str, default="epsilon"
        The scoring key of minus the epsilon spent (``privacy_scoring``'s ``"epsilon"``).
    estimator : estimator, default=None
        The search's estimator (candidates are its clones with each ``params``).
    X, y : default=None
        What the search is fitted on; the refit's plan reads their sizes only.

    Returns
    -------
    callable
        ``refit(cv_results) -> int``, the index of the chosen candidate.

    Notes
    -----
    This bounds one fit; the search as a whole costs more (see
    :func:`skdpgraph.model_selection.search_cost`). Validation labels are treated as
    public: the ``mean_test_<score>`` that picks the candidate is computed on the held-out
    folds' labels, and neither the scores nor the choice is covered by any epsilon here.
    The returned callable states this in its ``notes`` attribute.

    Examples
    --------
    >>> import warnings
    >>> refit = refit_within_budget(2.0)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     refit({"mean_test_score": [0.9, 0.8, 0.7], "mean_test_epsilon": [-4.0, -2.0, -1.0]})
    1
    """
    if not (isinstance(epsilon_budget, (int, float)) and epsilon_budget > 0):
        raise ValueError(f"epsilon_budget must be a positive number; got {epsilon_budget!r}.")
    planning = (estimator, X, y)
    if any(part is not None for part in planning) and any(part is None for part in planning):
        raise ValueError("refit_within_budget: pass estimator, X and y together (to plan the "
                         "refit), or none of them.")

    def refit(cv_results: Mapping[str, Any]) -> int:
        ranked = ranked_within_budget(cv_results, epsilon_budget, score=score, epsilon=epsilon)
        if estimator is None:
            warnings.warn(
                f"refit_within_budget({epsilon_budget:g}) cannot see the refit: the refit on "
                "all data may spend more than the budget. Pass estimator=, X=, y= or use "
                "BudgetedSearchCV to plan it before it is made.", UserWarning, stacklevel=2)
            return int(ranked[0])
        return first_refit_within_budget(estimator, cv_results["params"], ranked, X, y,
                                         epsilon_budget, context=refit.__name__)[0]

    refit.__name__ = f"refit_within_budget({epsilon_budget:g})"
    refit.notes = (VALIDATION_LABELS_PUBLIC,)
    return refit
