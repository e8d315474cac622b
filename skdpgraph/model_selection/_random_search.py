"""A search that runs a random number of candidates, as the Papernot--Steinke bound requires."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.metrics import check_scoring
from sklearn.model_selection import ParameterSampler, train_test_split
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from skdpgraph.model_selection._cost import (
    check_repetition_distribution,
    composition_cost,
    repeat_and_select_cost,
)

__all__ = ["PrivateRandomSearch", "draw_repetitions", "truncated_negative_binomial_gamma"]


def _tnb_mean(gamma: float, shape: float) -> float:
    """Mean of the truncated negative binomial with parameters (shape, gamma)."""
    if shape == 0:  # logarithmic
        return (1 - gamma) / (gamma * math.log(1 / gamma))
    return shape * (1 - gamma) / (gamma * (1 - gamma ** shape))


def truncated_negative_binomial_gamma(mean: float, shape: float, tol: float = 1e-9) -> float:
    """The success probability gamma of the truncated negative binomial with this mean.

    Bisection on the (decreasing) mean, returning the lower end: a smaller gamma means
    more repetitions on average, the side dp-accounting's bound also takes.
    """
    check_repetition_distribution(mean, shape)
    if mean == 1:
        return 1.0
    if shape == 1:
        return 1.0 / mean
    low, high = 0.0, min(1.0, 2 * (shape + 1) / mean)
    while high > low * (1 + tol):
        mid = (low + high) / 2
        if _tnb_mean(mid, shape) < mean:
            high = mid
        else:
            low = mid
    return low


def draw_repetitions(mean: float, shape: float, random_state: Any = None) -> int:
    r"""Draw the number of runs :math:`K` of a Papernot--Steinke search.

    ``shape=inf``: Poisson(mean) (may be 0). Otherwise the truncated negative binomial
    :math:`P(K=k) \propto \binom{k+\eta-1}{k}(1-\gamma)^k` for :math:`k \ge 1`, with
    :math:`\eta` = ``shape`` and :math:`\gamma` set by the mean; ``shape=0`` is the
    logarithmic and ``shape=1`` the geometric distribution.

    Examples
    --------
    >>> draw_repetitions(1.0, 1.0, random_state=0)
    1
    """
    check_repetition_distribution(mean, shape)
    rng = np.random.default_rng(check_random_state(random_state).randint(2**31 - 1))
    if shape == math.inf:
        return int(rng.poisson(mean))
    gamma = truncated_negative_binomial_gamma(mean, shape)
    if gamma >= 1.0:
        return 1
    if shape == 0:
        return int(rng.logseries(1.0 - gamma))
    if shape == 1:
        return int(rng.geometric(gamma))
    while True:  # negative binomial conditioned on K >= 1; accepts w.p. 1 - gamma**shape
        k = int(rng.negative_binomial(shape, gamma))
        if k >= 1:
            return k


class PrivateRandomSearch(MetaEstimatorMixin, BaseEstimator):
    """Random search with a random number of runs, released under the Papernot--Steinke bound.

    ``fit`` draws the number of runs :math:`K` (:func:`draw_repetitions`), and for each
    run draws one candidate from ``param_distributions`` (independently, uniformly from a
    grid of lists), fits it on the training part of ``X`` and scores it on a held-out
    validation part. Only the best run is kept. Its guarantee is
    :func:`~skdpgraph.model_selection.repeat_and_select_cost`, reported in ``privacy_cost_``
    next to the naive composition of all runs (``naive_cost_``).

    Parameters
    ----------
    estimator : estimator
        A skdpgraph estimator (it must have ``privacy_`` after fit).
    param_distributions : dict or list of dicts
        As in ``RandomizedSearchCV``. Searching parameters that leave the privacy event
        unchanged (``lr``, ``hidden_dim``, ``dropout``...) keeps the bound exact.
    mean_repetitions : float, default=10.0
        Mean number of runs.
    shape : float, default=1.0
        Distribution of the number of runs (1: geometric; see :func:`draw_repetitions`).
    scoring : str or callable, default=None
        Validation metric; None uses the estimator's ``score``.
    validation_size : float, default=0.25
        Fraction of ``X`` held out for selection (stratified).
    delta : float, default=None
        Target delta of the reported costs; defaults to the fits' largest delta.
    random_state : int, RandomState or None, default=None
        Seeds the number of runs, the candidates, the split and each fit.

    Attributes
    ----------
    best_estimator_ : estimator
        The selected run (trained on the training part; there is no refit, which would be
        one more release).
    best_params_ : dict
    best_score_ : float
    n_repetitions_ : int
        The number of runs drawn.
    results_ : list of dict
        Per run: ``params``, ``score`` and ``epsilon_spent``.
    privacy_cost_ : PrivacyCost
        The random-repetition bound of the released model.
    naive_cost_ : PrivacyCost
        The composition of the runs that were executed, for comparison. It is a realised
        value: with few runs drawn it can be below ``privacy_cost_``, but a bound fixed
        before the search (as a guarantee must be) has to cover every number of runs the
        distribution allows, which only ``privacy_cost_`` does.

    Notes
    -----
    The guarantee covers the training nodes under the estimator's own privacy unit. The
    validation nodes are used to choose the run and are treated as public: their privacy
    is not covered. For ``shape=inf`` (Poisson) the search may draw zero runs; ``fit``
    then raises and nothing is released.

    References
    ----------
    Papernot, Steinke. "Hyperparameter Tuning with Renyi Differential Privacy", ICLR 2022.
    """

    def __init__(self, estimator, param_distributions, *, mean_repetitions=10.0, shape=1.0,
                 scoring=None, validation_size=0.25, delta=None, random_state=None):
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.mean_repetitions = mean_repetitions
        self.shape = shape
        self.scoring = scoring
        self.validation_size = validation_size
        self.delta = delta
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> PrivateRandomSearch:
        """Run the search on nodes ``X`` with labels ``y``; keep the best run."""
        rng = check_random_state(self.random_state)
        self.n_repetitions_ = draw_repetitions(self.mean_repetitions, self.shape, rng)
        if self.n_repetitions_ == 0:
            raise ValueError("PrivateRandomSearch drew 0 runs (Poisson); nothing is released. "
                             "Refit with another random_state or use a finite shape.")
        y = np.asarray(y)
        X_fit, X_val, y_fit, y_val = train_test_split(
            X, y, test_size=self.validation_size, stratify=y, random_state=rng.randint(2**31 - 1))
        scorer = check_scoring(self.estimator, scoring=self.scoring)
        self.results_, fitted = [], []
        for _ in range(self.n_repetitions_):
            params = next(iter(ParameterSampler(self.param_distributions, n_iter=1,
                                                random_state=rng.randint(2**31 - 1))))
            est = clone(self.estimator).set_params(**params)
            if "random_state" in est.get_params():
                est.set_params(random_state=rng.randint(2**31 - 1))
            est.fit(X_fit, y_fit)
            score = float(scorer(est, X_val, y_val))
            self.results_.append({"params": params, "score": score,
                                  "epsilon_spent": float(est.epsilon_spent_)})
            fitted.append(est)
        best = int(np.argmax([r["score"] for r in self.results_]))
        self.best_estimator_ = fitted[best]
        self.best_params_ = self.results_[best]["params"]
        self.best_score_ = self.results_[best]["score"]
        self.privacy_cost_ = repeat_and_select_cost(fitted, self.mean_repetitions, self.shape,
                                                    self.delta)
        self.naive_cost_ = composition_cost(fitted, self.privacy_cost_.delta)
        self.classes_ = self.best_estimator_.classes_
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predictions of the selected run."""
        check_is_fitted(self)
        return self.best_estimator_.predict(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of the selected run."""
        check_is_fitted(self)
        return self.best_estimator_.predict_proba(X)

    def score(self, X: Any, y: Any) -> float:
        """Score of the selected run."""
        check_is_fitted(self)
        return self.best_estimator_.score(X, y)
