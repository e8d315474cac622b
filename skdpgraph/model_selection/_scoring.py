"""Privacy as a metric of scikit-learn searches: a scorer and a budget-aware refit."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from sklearn.pipeline import Pipeline

from skdpgraph.model_selection._cost import VALIDATION_LABELS_PUBLIC

__all__ = ["neg_epsilon_spent", "neg_delta_spent", "privacy_scoring", "refit_within_budget"]


def _spent(estimator: Any) -> tuple[float, float]:
    """``(epsilon, delta)`` of a fitted estimator, or of a fitted Pipeline as a whole."""
    if hasattr(estimator, "epsilon_spent_"):
        return float(estimator.epsilon_spent_), float(getattr(estimator, "delta_", 0.0))
    if isinstance(estimator, Pipeline):
        from skdpgraph.model_selection._contained import privacy_spent

        cost = privacy_spent(estimator)
        return cost.epsilon, cost.delta
    raise TypeError(
        f"{type(estimator).__name__} has no epsilon_spent_: the privacy scorers need a fitted "
        "skdpgraph estimator or a Pipeline of them."
    )


def neg_epsilon_spent(estimator: Any, X: Any = None, y: Any = None) -> float:
    """Scorer: minus the fitted estimator's ``epsilon_spent_`` (greater is better).

    Use it as one metric of a multi-metric search; ``X`` and ``y`` are ignored, so it
    costs no privacy. For a ``Pipeline`` it reads the pipeline's total
    (:func:`~skdpgraph.model_selection.privacy_spent`).

    Examples
    --------
    >>> from skdpgraph.model_selection import neg_epsilon_spent
    >>> class Fitted:
    ...     epsilon_spent_ = 2.5
    >>> neg_epsilon_spent(Fitted())
    -2.5
    """
    return -_spent(estimator)[0]


def neg_delta_spent(estimator: Any, X: Any = None, y: Any = None) -> float:
    """Scorer: minus the fitted estimator's ``delta_`` (greater is better)."""
    return -_spent(estimator)[1]


def privacy_scoring(score: str | Callable = "accuracy") -> dict[str, Any]:
    """Multi-metric ``scoring`` for a search: ``{"score", "epsilon", "delta"}``.

    ``cv_results_`` then holds each fit's epsilon and delta (negated) next to the score,
    which :func:`refit_within_budget` and :func:`skdpgraph.model_selection.search_cost`
    read.
    """
    return {"score": score, "epsilon": neg_epsilon_spent, "delta": neg_delta_spent}


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


def refit_within_budget(epsilon_budget: float, *, score: str = "score",
                        epsilon: str = "epsilon") -> Callable[[Mapping[str, Any]], int]:
    """A ``refit`` callable: the best-scoring candidate whose fits all stay within budget.

    For ``GridSearchCV``/``RandomizedSearchCV`` with multi-metric ``scoring`` that includes
    :func:`neg_epsilon_spent` under the key ``epsilon``. A candidate qualifies when its
    largest ``epsilon_spent_`` over the splits is at most ``epsilon_budget``; among those
    the highest ``mean_test_<score>`` wins (ties: the first). Failed fits (NaN) never win.

    Parameters
    ----------
    epsilon_budget : float
        Largest acceptable ``epsilon_spent_`` of one fit.
    score : str, default="score"
        The scoring key to maximise.
    epsilon : str, default="epsilon"
        The scoring key of :func:`neg_epsilon_spent`.

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
    >>> refit = refit_within_budget(2.0)
    >>> refit({"mean_test_score": [0.9, 0.8, 0.7], "mean_test_epsilon": [-4.0, -2.0, -1.0]})
    1
    """
    if not (isinstance(epsilon_budget, (int, float)) and epsilon_budget > 0):
        raise ValueError(f"epsilon_budget must be a positive number; got {epsilon_budget!r}.")

    def refit(cv_results: Mapping[str, Any]) -> int:
        spent = -_worst_over_splits(cv_results, epsilon)
        key = f"mean_test_{score}"
        if key not in cv_results:
            raise KeyError(f"cv_results_ has no {key!r}; the scoring keys are the refit's "
                           f"score={score!r} and epsilon={epsilon!r}.")
        scores = np.asarray(cv_results[key], dtype=float)
        ok = (spent <= epsilon_budget) & np.isfinite(scores)
        if not ok.any():
            finite = spent[np.isfinite(spent)]
            smallest = f"{finite.min():.4g}" if finite.size else "none (all fits failed)"
            raise ValueError(
                f"No candidate fits epsilon_budget={epsilon_budget:g}: the smallest "
                f"epsilon_spent_ of any candidate is {smallest}. Raise the budget or add "
                "candidates with a smaller epsilon."
            )
        return int(np.flatnonzero(ok)[np.argmax(scores[ok])])

    refit.__name__ = f"refit_within_budget({epsilon_budget:g})"
    refit.notes = (VALIDATION_LABELS_PUBLIC,)
    return refit
