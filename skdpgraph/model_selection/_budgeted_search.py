"""A scikit-learn search whose refit on all data is planned within the budget before it is made."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.utils.validation import check_is_fitted

from skdpgraph.model_selection._cost import VALIDATION_LABELS_PUBLIC
from skdpgraph.model_selection._scoring import (
    first_refit_within_budget, ranked_within_budget, spent_so_far,
)
from skdpgraph.privacy import PrivacyBudgetError

__all__ = ["BudgetedSearchCV"]

#: Relative slack of a budget comparison, as :func:`~skdpgraph.privacy.check_plan`'s.
_ROUND_OFF = 1e-9


class BudgetedSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Run a search, then refit the best candidate whose refit is planned within the budget.

    ``fit`` runs ``search`` (a ``GridSearchCV`` or ``RandomizedSearchCV`` with
    ``scoring=privacy_scoring(...)``) without its refit. Candidates qualify as for
    :func:`~skdpgraph.model_selection.refit_within_budget`: every cross-validation fit spent
    at most ``epsilon_budget`` (training plus the releases its scoring made). Then, best
    mean score first, each qualifying candidate's refit on all of ``X`` is *planned*
    (:func:`~skdpgraph.model_selection.planned_privacy`: from public quantities, before any
    data is read): the refit has its own sampling rate and number of steps, so it can spend
    more than its cross-validation fits. The first candidate whose refit plan fits the
    budget is refitted. If none does, ``fit`` raises before refitting anything.

    Parameters
    ----------
    search : GridSearchCV or RandomizedSearchCV
        Unfitted; its ``scoring`` must record ``score`` and ``epsilon`` (e.g.
        ``privacy_scoring("accuracy")``). Its ``refit`` is ignored: the refit is made here.
    epsilon_budget : float
        Largest epsilon of any cross-validation fit and of the refit.
    score_key : str, default="score"
        The scoring key to maximise.
    epsilon_key : str, default="epsilon"
        The scoring key of minus the epsilon spent.

    Attributes
    ----------
    best_estimator_ : estimator
        The refit, whose ``privacy_`` spends at most ``epsilon_budget``.
    best_index_ : int
    best_params_ : dict
    best_score_ : float
        Mean cross-validated ``score`` of the chosen candidate.
    refit_planned_epsilon_ : float
        The refit's planned epsilon, checked before it was made.
    cv_results_ : dict
        The search's results: every fit's validation score (not covered; do not publish).
    search_ : fitted search
        The inner search (fitted with ``refit=False``).
    classes_ : ndarray

    Raises
    ------
    PrivacyBudgetError
        From ``fit``, before any refit, if no qualifying candidate's refit plan fits the
        budget; and, should a refit spend more than planned, after it (the refit is then
        discarded, never returned).

    Notes
    -----
    The budget bounds each fit, not the search: :func:`~skdpgraph.model_selection.search_cost`
    composes every fit and the refit. Validation labels are treated as public (``notes``
    says so).

    Examples
    --------
    >>> from sklearn.model_selection import GridSearchCV
    >>> from skdpgraph import DPMLPClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> from skdpgraph.model_selection import BudgetedSearchCV, privacy_scoring
    >>> data = make_csbm(n_nodes=200, random_state=0)
    >>> grid = GridSearchCV(DPMLPClassifier(epochs=1, random_state=0),
    ...                     {"epsilon": [1.0, 4.0]}, cv=2, scoring=privacy_scoring("accuracy"))
    >>> search = BudgetedSearchCV(grid, 2.0).fit(data.nodes(), data.y)
    >>> search.best_estimator_.epsilon_spent_ <= 2.0
    True
    """

    notes = (VALIDATION_LABELS_PUBLIC,)

    def __init__(self, search, epsilon_budget, *, score_key="score", epsilon_key="epsilon"):
        self.search = search
        self.epsilon_budget = epsilon_budget
        self.score_key = score_key
        self.epsilon_key = epsilon_key

    def fit(self, X: Any, y: Any, **params: Any) -> BudgetedSearchCV:
        """Run the search, then make the best refit whose plan fits the budget.

        On any error the wrapper is left unfitted.
        """
        for name in [n for n in vars(self) if n.endswith("_") and not n.startswith("__")]:
            delattr(self, name)
        budget = self.epsilon_budget
        if not (isinstance(budget, (int, float, np.floating)) and 0 < budget < np.inf):
            raise ValueError(f"epsilon_budget must be a positive finite number; got {budget!r}.")
        search = clone(self.search).set_params(refit=False).fit(X, y, **params)
        results = search.cv_results_
        ranked = ranked_within_budget(results, budget, score=self.score_key,
                                      epsilon=self.epsilon_key)
        index, candidate, planned = first_refit_within_budget(
            search.estimator, results["params"], ranked, X, y, budget,
            context="BudgetedSearchCV")
        fitted = candidate.fit(X, y, **params)
        spent = spent_so_far(fitted)[0]
        if spent > budget * (1 + _ROUND_OFF):
            raise PrivacyBudgetError(
                f"BudgetedSearchCV: the refit of candidate {index} spent epsilon={spent:.4g}, "
                f"more than planned ({planned:.4g}) and than epsilon_budget={budget:g}; it is "
                "discarded.")
        self.search_, self.cv_results_ = search, results
        self.best_index_, self.best_params_ = index, results["params"][index]
        self.best_score_ = float(results[f"mean_test_{self.score_key}"][index])
        self.best_estimator_, self.refit_planned_epsilon_ = fitted, planned
        self.classes_ = getattr(fitted, "classes_", None)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predictions of the refit."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of the refit."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_proba(X)

    def score(self, X: Any, y: Any) -> float:
        """Score of the refit."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score(X, y)
