import math
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skdpgraph import DPMLPClassifier
from skdpgraph.datasets import make_csbm
from skdpgraph.model_selection import (
    PrivateRandomSearch,
    composition_cost,
    draw_repetitions,
    neg_epsilon_spent,
    privacy_scoring,
    privacy_spent,
    refit_within_budget,
    repeat_and_select_cost,
    search_cost,
    truncated_negative_binomial_gamma,
)
from skdpgraph.preprocessing import NodeFeatureTransformer, NonPrivateStepWarning
from skdpgraph.privacy import PrivacyReport, poisson_dpsgd_event

FAST = dict(epochs=2, hidden_dim=8, batch_size=64, random_state=0)


def _report(event=None, epsilon=1.0, delta=1e-5, unit="node"):
    return PrivacyReport("X", unit, "add or remove one node", epsilon, delta, "rdp", "dp-sgd",
                         dp_event=event)


def _dp_accounting_epsilon(event, delta):
    accountant = rdp.RdpAccountant()
    accountant.compose(event)
    return accountant.get_epsilon(delta)


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=200, n_features=8, random_state=0)


# ------------------------------------------------------------------- scorer and refit
def test_scorer_returns_minus_epsilon_spent(data):
    clf = DPMLPClassifier(epsilon=2.0, **FAST).fit(data.nodes(), data.y)
    assert neg_epsilon_spent(clf, data.nodes(), data.y) == -clf.epsilon_spent_
    assert -2.0 <= neg_epsilon_spent(clf) < 0


def test_scorer_rejects_non_private_estimator():
    with pytest.raises(TypeError, match="has no epsilon_spent_"):
        neg_epsilon_spent(StandardScaler().fit([[0.0], [1.0]]))


def test_refit_within_budget_picks_best_candidate_whose_worst_split_fits():
    cv_results = {
        # candidate 0 has the best score but one split spends 3.5 > 3.0
        "mean_test_score": np.array([0.95, 0.90, 0.80, np.nan, 0.92]),
        "split0_test_epsilon": -np.array([2.0, 2.9, 1.0, 0.5, 8.0]),
        "split1_test_epsilon": -np.array([3.5, 3.0, 1.0, 0.5, 8.0]),
        "mean_test_epsilon": -np.array([2.75, 2.95, 1.0, 0.5, 8.0]),
    }
    assert refit_within_budget(3.0)(cv_results) == 1
    assert refit_within_budget(3.5)(cv_results) == 0
    assert refit_within_budget(1.0)(cv_results) == 2  # candidate 3 failed (NaN score)


def test_refit_within_budget_raises_when_nothing_fits():
    cv_results = {"mean_test_score": [0.9], "mean_test_epsilon": [-4.0]}
    with pytest.raises(ValueError, match=r"smallest epsilon_spent_ of any candidate is 4"):
        refit_within_budget(1.0)(cv_results)
    with pytest.raises(KeyError, match="mean_test_accuracy"):
        refit_within_budget(5.0, score="accuracy")(cv_results)


# ------------------------------------------------------------------- search-cost bounds
EVENT_A = poisson_dpsgd_event(1.1, 0.01, 1000)
EVENT_B = poisson_dpsgd_event(2.0, 0.02, 500)


def test_composition_matches_dp_accounting():
    reports = [_report(EVENT_A)] * 3 + [_report(EVENT_B)] * 2
    expected = _dp_accounting_epsilon(
        dp_event.ComposedDpEvent([EVENT_A] * 3 + [EVENT_B] * 2), 1e-5)
    cost = composition_cost(reports, delta=1e-5)
    assert cost.epsilon == pytest.approx(expected, rel=1e-9)
    assert cost.num_fits == 5 and cost.method.startswith("RDP")


def test_composition_falls_back_to_basic_composition_and_says_so():
    cost = composition_cost([_report(None, 1.0, 1e-6), _report(EVENT_A, 2.0, 1e-5)])
    assert cost.epsilon == pytest.approx(3.0) and cost.delta == pytest.approx(1.1e-5)
    assert cost.method == "basic composition"
    assert any("basic composition" in note for note in cost.notes)


def test_composition_refuses_different_units():
    with pytest.raises(ValueError, match="different privacy units"):
        composition_cost([_report(EVENT_A), _report(EVENT_A, unit="edge")])


@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, 2.0, math.inf])
def test_repeat_and_select_matches_dp_accounting(shape):
    expected = _dp_accounting_epsilon(dp_event.RepeatAndSelectDpEvent(EVENT_A, 10.0, shape), 1e-5)
    cost = repeat_and_select_cost([_report(EVENT_A)] * 4, 10.0, shape, delta=1e-5)
    assert cost.epsilon == pytest.approx(expected, rel=1e-9)


def test_repeat_and_select_uses_the_least_private_candidate():
    # same sampling and steps, less noise: EVENT_A's curve dominates at every order
    dominated = poisson_dpsgd_event(1.5, 0.01, 1000)
    expected = _dp_accounting_epsilon(dp_event.RepeatAndSelectDpEvent(EVENT_A, 10.0, 1.0), 1e-5)
    cost = repeat_and_select_cost([_report(dominated), _report(EVENT_A)], 10.0, 1.0, 1e-5)
    assert cost.epsilon == pytest.approx(expected, rel=1e-9)
    assert cost.notes and "pointwise maximum" in cost.notes[0]


@pytest.mark.parametrize("n_candidates", [10, 20])
@pytest.mark.parametrize("shape", [0.0, 1.0])
def test_random_repetition_beats_naive_for_many_candidates(n_candidates, shape):
    naive = composition_cost([_report(EVENT_A)] * n_candidates, delta=1e-5)
    repeated = repeat_and_select_cost([_report(EVENT_A)], n_candidates, shape, delta=1e-5)
    single = composition_cost([_report(EVENT_A)], delta=1e-5)
    assert single.epsilon < repeated.epsilon < naive.epsilon


def test_repeat_and_select_needs_events():
    with pytest.raises(ValueError, match="has no dp-accounting event"):
        repeat_and_select_cost([_report(None)], 10.0)
    with pytest.raises(ValueError, match="mean_repetitions must be a finite number >= 1"):
        repeat_and_select_cost([_report(EVENT_A)], 0.5)


# ------------------------------------------------------------------- drawing repetitions
@pytest.mark.parametrize("shape", [0.0, 0.5, 2.0])
def test_tnb_gamma_agrees_with_dp_accounting(shape):
    ours = truncated_negative_binomial_gamma(10.0, shape)
    assert ours == pytest.approx(rdp._gamma_truncated_negative_binomial(shape, 10.0), rel=1e-8)
    assert rdp._truncated_negative_binomial_mean(ours, shape) == pytest.approx(10.0, rel=1e-6)


@pytest.mark.parametrize("shape", [0.5, 1.0, 2.0, math.inf])
def test_draw_repetitions_follows_the_distribution(shape):
    rng = np.random.RandomState(0)
    draws = np.array([draw_repetitions(5.0, shape, rng) for _ in range(3000)])
    assert draws.mean() == pytest.approx(5.0, rel=0.08)
    if shape == math.inf:
        assert (draws == 0).mean() == pytest.approx(math.exp(-5.0), abs=0.01)
        return
    assert draws.min() >= 1
    gamma = truncated_negative_binomial_gamma(5.0, shape)
    # P(K=1) of the truncated negative binomial: shape * gamma**shape * (1 - gamma) / (1 - gamma**shape)
    p1 = shape * gamma ** shape * (1 - gamma) / (1 - gamma ** shape)
    assert (draws == 1).mean() == pytest.approx(p1, abs=0.03)


def test_private_random_search_reports_the_repetition_bound(data):
    search = PrivateRandomSearch(DPMLPClassifier(epsilon=2.0, **FAST), {"lr": [0.01, 0.05, 0.1]},
                                 mean_repetitions=3.0, shape=1.0, random_state=0)
    search.fit(data.nodes(), data.y)
    scores = [r["score"] for r in search.results_]
    assert len(scores) == search.n_repetitions_ >= 1
    assert search.best_score_ == max(scores)
    # lr does not change the privacy event: the bound is that of one fit's event
    event = search.best_estimator_.privacy_.dp_event
    expected = _dp_accounting_epsilon(dp_event.RepeatAndSelectDpEvent(event, 3.0, 1.0),
                                      search.best_estimator_.delta_)
    assert search.privacy_cost_.epsilon == pytest.approx(expected, rel=1e-9)
    assert search.predict(data.nodes()).shape == (200,)


# ------------------------------------------------------------------- pipelines and searches
class _DPScaler(TransformerMixin, BaseEstimator):
    """A transformer that declares its own budget, like diffprivlib's."""

    def __init__(self, epsilon=0.5):
        self.epsilon = epsilon

    def fit(self, X, y=None):
        self.scale_ = np.abs(np.asarray(X)).max(axis=0) + 1.0
        self.epsilon_spent_, self.delta_ = self.epsilon, 0.0
        return self

    def transform(self, X):
        return np.asarray(X.todense() if hasattr(X, "todense") else X) / self.scale_


def test_privacy_spent_composes_the_pipeline(data):
    pipe = Pipeline([("scale", NodeFeatureTransformer(_DPScaler(0.5))),
                     ("clf", DPMLPClassifier(epsilon=2.0, **FAST))])
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonPrivateStepWarning)  # a DP step does not warn
        pipe.fit(data.nodes(), data.y)
    cost = privacy_spent(pipe)
    assert cost.epsilon == pytest.approx(0.5 + pipe[-1].epsilon_spent_)
    assert cost.delta == pytest.approx(pipe[-1].delta_)
    assert neg_epsilon_spent(pipe) == -cost.epsilon


def test_privacy_spent_of_a_non_private_step_is_infinite(data):
    pipe = Pipeline([("scale", NodeFeatureTransformer(StandardScaler())),
                     ("clf", DPMLPClassifier(epsilon=2.0, **FAST))])
    with pytest.warns(NonPrivateStepWarning, match="not differentially private"):
        pipe.fit(data.nodes(), data.y)
    assert privacy_spent(pipe).epsilon == math.inf


def test_pipeline_in_grid_search_with_budget_refit(data):
    pipe = Pipeline([("scale", NodeFeatureTransformer(StandardScaler(), public_features=True)),
                     ("clf", DPMLPClassifier(**dict(FAST, epochs=1)))])
    search = GridSearchCV(pipe, {"clf__epsilon": [0.5, 2.0, 8.0]}, cv=2, n_jobs=2,
                          scoring=privacy_scoring("accuracy"), refit=refit_within_budget(2.0))
    search.fit(data.nodes(), data.y)
    spent = -np.column_stack([search.cv_results_[f"split{k}_test_epsilon"] for k in range(2)])
    assert np.all(spent <= np.array([0.5, 2.0, 8.0])[:, None] * (1 + 1e-9))
    assert search.best_params_["clf__epsilon"] in (0.5, 2.0)
    assert search.best_index_ == refit_within_budget(2.0)(search.cv_results_)
    assert search.best_estimator_[-1].epsilon_spent_ <= 2.0
    cost = search_cost(search)
    assert cost.num_fits == 7
    assert cost.epsilon == pytest.approx(spent.sum() + search.best_estimator_[-1].epsilon_spent_)
    assert search.best_estimator_.score(data.nodes(), data.y) > 0.25
