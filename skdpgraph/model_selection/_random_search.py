"""A search that runs a random number of candidates, as the Papernot--Steinke bound requires."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.metrics import check_scoring
from sklearn.model_selection import ParameterSampler, train_test_split
from sklearn.utils.validation import check_is_fitted

from skdpgraph._random import RandomStreams
from skdpgraph.model_selection._candidates import candidate_runs, check_run
from skdpgraph.model_selection._cost import (
    PrivacyCost,
    as_report,
    check_repetition_distribution,
    composition_cost,
    repeat_and_select_cost,
)

__all__ = ["PrivateRandomSearch", "draw_repetitions", "truncated_negative_binomial_gamma",
           "ALL_RUNS_NOT_COVERED"]

#: Stated in ``privacy_cost_.notes`` when ``keep_all_runs=True``.
ALL_RUNS_NOT_COVERED = (
    "keep_all_runs=True: n_repetitions_, results_ (every run's parameters and score) and "
    "naive_cost_ are diagnostics NOT covered by this bound, which holds only when the best "
    "run alone is released; do not publish them"
)


def _tnb_mean(gamma: float, shape: float) -> float:
    """Mean of the truncated negative binomial with parameters (shape, gamma)."""
    if shape == 0:  # logarithmic
        return (1 - gamma) / (gamma * math.log(1 / gamma))
    return shape * (1 - gamma) / (gamma * (1 - gamma ** shape))


def truncated_negative_binomial_gamma(mean: float, shape: float, tol: float = 1e-9) -> float:
    """The success probability gamma of the truncated negative binomial with this mean.

    Bisection on the (decreasing) mean, returning the lower end: a smaller gamma means
    more repetitions on average, the side dp-accounting's bound also takes.

    Parameters
    ----------
    mean : float
        The mean number of runs.
    shape : float
        The shape eta of the distribution.
    tol : float, default=1e-9
        The bisection's relative bracket width.

    Returns
    -------
    gamma : float
        The success probability.
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

    Parameters
    ----------
    mean, shape : float
        The distribution (see above).
    random_state : None, int, RandomState or numpy Generator, default=None
        A Generator is used as is; anything else seeds a fresh stream of
        :class:`~skdpgraph._random.RandomStreams` (OS entropy for None).

    Returns
    -------
    runs : int
        The number of runs drawn.

    Examples
    --------
    >>> draw_repetitions(1.0, 1.0, random_state=0)
    1
    """
    check_repetition_distribution(mean, shape)
    rng = (random_state if isinstance(random_state, np.random.Generator)
           else RandomStreams(random_state).numpy("split"))
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
    validation part. Only the best run is kept: its estimator, parameters and score, and
    its guarantee :func:`~skdpgraph.model_selection.repeat_and_select_cost` in
    ``privacy_cost_``. The bound holds only if nothing else about the runs is released,
    not even how many there were, so nothing else is kept unless ``keep_all_runs=True``.

    Parameters
    ----------
    estimator : estimator
        A skdpgraph estimator that plans its privacy before training (every class of
        :mod:`skdpgraph` except the front door ``DPNodeClassifier``: search the estimator it
        chooses instead).
    param_distributions : dict or list of dicts
        As in ``RandomizedSearchCV``. Before any run, every candidate of the space is
        planned (from public quantities: the estimator's plan on the training part's size),
        and a run is bounded by the least private of them, whichever candidates then run.
        Parameters that change the privacy of a run (``epsilon``, ``epochs``,
        ``batch_size``...) must therefore be finite lists: one given as a distribution is
        refused, by name, when its draws plan different events. Parameters that leave it
        unchanged (``lr``, ``hidden_dim``, ``dropout``...) may be distributions.
    mean_repetitions : float, default=10.0
        Mean of the random number of runs :math:`K`, finite and at least 1. The bound
        grows with it (roughly as its logarithm), and so does the run time.
    shape : float, default=1.0
        Shape (>= 0) of the distribution of :math:`K`: 0 logarithmic, 1 geometric,
        ``inf`` Poisson (see :func:`draw_repetitions`). It enters the bound through
        Papernot and Steinke's Theorem 2 (:func:`repeat_and_select_cost`).
    scoring : str or callable, default=None
        Validation metric that picks the best run; None uses the estimator's ``score``.
        The validation labels it reads are treated as public (see Notes).
    validation_size : float, default=0.25
        Fraction of the nodes of ``X`` held out for selection (stratified); the runs
        train on the rest.
    delta : float, default=None
        Target delta of the reported cost; defaults to the fits' largest delta.
    keep_all_runs : bool, default=False
        Also keep ``n_repetitions_``, ``results_`` and ``naive_cost_``. These diagnostics
        are NOT covered by the bound (``privacy_cost_.notes`` then says so): publish only
        the selected run.
    random_state : int, RandomState or None, default=None
        Root of the search's own streams (number of runs, candidates, split) and of each
        run's ``random_state``. With None every run gets ``random_state=None`` (fresh OS
        entropy) and no seed is kept anywhere; with a seed each run gets one derived from
        it, so whoever knows the seed can replay the runs.

    Attributes
    ----------
    best_estimator_ : estimator
        The selected run (trained on the training part; there is no refit, which would be
        one more release).
    best_params_ : dict
    best_score_ : float
        Its validation score.
    privacy_cost_ : PrivacyCost
        The random-repetition bound of the released run.
    n_repetitions_ : int
        Only with ``keep_all_runs=True`` (not covered): the number of runs drawn.
    results_ : list of dict
        Only with ``keep_all_runs=True`` (not covered): per run, ``params``, ``score`` and
        ``epsilon_spent`` (its total once scored, releases included).
    naive_cost_ : PrivacyCost
        Only with ``keep_all_runs=True`` (not covered: it depends on the number of runs):
        the composition of the runs that were executed, for comparison.

    Notes
    -----
    The guarantee covers the training nodes under the estimator's own privacy unit; the
    candidates must all protect the same unit and relation (``fit`` refuses a space that
    mixes them, before any run). One run is a fit and its scoring: where scoring the
    held-out nodes makes a release (node-level GAP or ProGAP without ``max_in_degree``
    keeps no release of the fitted graph, so predicting its nodes makes a new one), that
    release is composed into the run's curve; a run that makes a release its plan did not
    allow stops the search, and nothing is released. The validation labels used to choose
    the run are treated as public, and so is whatever prediction reads (for DRW and FDP,
    the training nodes' raw features): not covered (``privacy_cost_.notes`` says so). For
    ``shape=inf`` (Poisson) the search may draw zero runs; ``fit`` then raises and nothing
    is released.

    References
    ----------
    Papernot, Steinke. "Hyperparameter Tuning with Renyi Differential Privacy", ICLR 2022.
    """

    def __init__(self, estimator, param_distributions, *, mean_repetitions=10.0, shape=1.0,
                 scoring=None, validation_size=0.25, delta=None, keep_all_runs=False,
                 random_state=None):
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.mean_repetitions = mean_repetitions
        self.shape = shape
        self.scoring = scoring
        self.validation_size = validation_size
        self.delta = delta
        self.keep_all_runs = keep_all_runs
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> PrivateRandomSearch:
        """Run the search on nodes ``X`` with labels ``y``; keep the best run only.

        On any error the search is left unfitted.
        """
        self._reset()
        try:
            self._search(X, y)
        except BaseException:
            self._reset()
            raise
        return self

    def _reset(self) -> None:
        keep = set(self._get_param_names())
        for name in [n for n in vars(self)
                     if n not in keep and n.endswith("_") and not n.startswith("__")]:
            delattr(self, name)

    def _search(self, X: Any, y: Any) -> None:
        streams = RandomStreams(self.random_state)
        n_runs = draw_repetitions(self.mean_repetitions, self.shape, streams.numpy("split"))
        if n_runs == 0:
            raise ValueError("PrivateRandomSearch drew 0 runs (Poisson); nothing is released. "
                             "Refit with another random_state or use a finite shape.")
        y = np.asarray(y)
        X_fit, X_val, y_fit, y_val = train_test_split(
            X, y, test_size=self.validation_size, stratify=y,
            random_state=streams.integer("split"))
        # Every run the space allows, planned before any run reads the data; a separate
        # stream draws the distributions' probe values, so the runs' draws do not move.
        planned, notes = candidate_runs(self.estimator, self.param_distributions, X_fit, y_fit,
                                        RandomStreams(self.random_state, key=(1,)).numpy("split"))
        cost = repeat_and_select_cost(planned, self.mean_repetitions, self.shape, self.delta)
        scorer = check_scoring(self.estimator, scoring=self.scoring)
        best, results, reports = None, [], []
        for _ in range(n_runs):
            params = next(iter(ParameterSampler(self.param_distributions, n_iter=1,
                                                random_state=streams.integer("split"))))
            est = clone(self.estimator).set_params(**params)
            if "random_state" in est.get_params():
                est.set_params(random_state=None if self.random_state is None
                               else streams.integer("split"))
            est.fit(X_fit, y_fit)
            score = float(scorer(est, X_val, y_val))
            report = as_report(est)  # after scoring: with the releases it made
            check_run(report, planned)
            if self.keep_all_runs:
                results.append({"params": params, "score": score,
                                "epsilon_spent": report.total_epsilon})
                reports.append(report)
            if best is None or score > best[2] or (math.isnan(best[2]) and not math.isnan(score)):
                best = (est, params, score)
        cost = _with_notes(cost, notes + (_inference_note(best[0]),))
        self.best_estimator_, self.best_params_, self.best_score_ = best
        self.classes_ = self.best_estimator_.classes_
        if self.keep_all_runs:
            self.n_repetitions_ = n_runs
            self.results_ = results
            self.naive_cost_ = composition_cost(reports, cost.delta)
            cost = _with_notes(cost, (ALL_RUNS_NOT_COVERED,))
        self.privacy_cost_ = cost

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


def _with_notes(cost: PrivacyCost, notes: tuple[str, ...]) -> PrivacyCost:
    return PrivacyCost(cost.epsilon, cost.delta, cost.method, cost.num_fits, cost.notes + notes)


def _inference_note(estimator: Any) -> str:
    """What scoring read: the estimator's own statement of what ``predict`` reads."""
    return f"scoring read what predict reads: {as_report(estimator).inference}"
