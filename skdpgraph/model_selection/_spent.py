"""What a fitted scikit-learn search spent in total."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from skdpgraph.model_selection._contained import privacy_spent
from skdpgraph.model_selection._cost import VALIDATION_LABELS_PUBLIC, PrivacyCost

__all__ = ["search_cost"]


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
