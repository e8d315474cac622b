"""What a fitted scikit-learn search spent in total."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from skdpgraph.model_selection._cost import (
    RELEASES_COMPOSED,
    VALIDATION_LABELS_PUBLIC,
    PrivacyCost,
    check_same_unit,
    unit_code,
    unit_of_code,
)
from skdpgraph.model_selection._scoring import report_of, spent_so_far, unit_of

__all__ = ["search_cost"]


def _split_values(cv_results: dict, metric: str, sign: float = -1.0) -> np.ndarray:
    keys = sorted(k for k in cv_results if k.startswith("split") and k.endswith(f"_test_{metric}"))
    if not keys:
        raise KeyError(
            f"cv_results_ has no split*_test_{metric}; fit the search with "
            "scoring=privacy_scoring(...) so that every fit's epsilon, delta and privacy unit "
            "are recorded."
        )
    return sign * np.column_stack([np.asarray(cv_results[k], dtype=float) for k in keys])


def search_cost(search: Any) -> PrivacyCost:
    """Naive composition of every fit of a fitted ``GridSearchCV``/``RandomizedSearchCV``.

    The search must have been fitted with ``scoring=privacy_scoring(...)``, so that
    ``cv_results_`` records, per fit, what it had spent once scored (``privacy_.total_epsilon``
    and ``total_delta``: its training release plus every release its scoring made) and its
    privacy unit. scikit-learn keeps no per-fit privacy events, so the fits compose by basic
    composition (sum of epsilons and of deltas), plus the refit's total when there is one.
    Also accepts a fitted :class:`~skdpgraph.model_selection.BudgetedSearchCV`.

    Parameters
    ----------
    search : fitted GridSearchCV, RandomizedSearchCV or BudgetedSearchCV
        The search, fitted with ``scoring=privacy_scoring(...)``.

    Returns
    -------
    PrivacyCost
        The composed epsilon and delta of every fit, with notes on what is not covered.

    Raises
    ------
    KeyError
        If ``cv_results_`` lacks the epsilon, delta or unit of the fits.
    ValueError
        If the fits (or the refit) protect different privacy units or relations, e.g. a
        search over :class:`~skdpgraph.DPNodeClassifier`'s ``unit``: no single bound covers
        them.

    Notes
    -----
    The bound covers the fitted models and the releases their scoring made. Validation
    labels are treated as public: each fit's score on its held-out fold (in ``cv_results_``)
    and the choice of the best candidate read the held-out nodes' labels and whatever
    prediction reads, and are not covered; ``notes`` says so.
    """
    check_is_fitted(search, "cv_results_")
    epsilons = _split_values(search.cv_results_, "epsilon")
    deltas = _split_values(search.cv_results_, "delta")
    codes = _split_values(search.cv_results_, "unit", sign=1.0)
    failed = np.isnan(epsilons)
    units = {unit_of_code(code) for code in codes[~failed]}
    refit = getattr(search, "best_estimator_", None)
    if refit is not None:
        units.add(unit_of_code(unit_code(*unit_of(refit))))
    check_same_unit(units, "fits of this search")
    notes = ["cross-validation fits: basic composition of the (epsilon, delta) recorded in "
             "cv_results_ (scikit-learn does not keep their privacy events); each is the fit's "
             "total once scored: " + RELEASES_COMPOSED,
             VALIDATION_LABELS_PUBLIC + " (cv_results_ holds every fit's validation score)"]
    if failed.any():
        notes.append(f"{int(failed.sum())} fits failed (NaN score) and are counted as releasing "
                     "nothing: a fit that fails before training releases no model")
    epsilon = float(np.sum(epsilons[~failed]))
    delta = float(np.sum(deltas[~failed]))
    num_fits = int((~failed).sum())
    if refit is not None:
        refit_epsilon, refit_delta = spent_so_far(refit)
        epsilon, delta, num_fits = epsilon + refit_epsilon, delta + refit_delta, num_fits + 1
        notes.append("includes the refit on all data, with the releases it has made so far")
        inference = getattr(report_of(refit), "inference", "")
        if inference:
            notes.append(f"scoring read what predict reads: {inference}")
    return PrivacyCost(epsilon, min(delta, 1.0), "basic composition", num_fits, tuple(notes))
