"""Selection charges what it reads: scoring releases, one unit, the refit's plan, all candidates."""

import pickle

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from scipy import stats
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, cross_validate, train_test_split

from skdpgraph import (DPMLPClassifier, DPNodeClassifier, DRWClassifier, FDPClassifier,
                       GAPClassifier, ProGAPClassifier)
from skdpgraph.datasets import make_csbm
from skdpgraph.model_selection import (
    BudgetedSearchCV,
    PrivateRandomSearch,
    planned_privacy,
    privacy_scoring,
    refit_within_budget,
    search_cost,
)
from skdpgraph.privacy import PrivacyBudgetError


pytestmark = pytest.mark.filterwarnings("ignore::skdpgraph.GraphDroppedWarning")


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=200, n_features=8, random_state=0)


def _progap_node(**overrides):
    """Node-level ProGAP without max_in_degree: its fit's release is never pickled."""
    params = dict(epsilon=4.0, unit="node", hops=1, hidden_dim=8, epochs=1,
                  encoder_epochs=1, batch_size=64, max_in_degree=None, random_state=0)
    return ProGAPClassifier(**{**params, **overrides})


def _gap_node(**overrides):
    """Node-level GAP with its trained head."""
    params = dict(epsilon=4.0, unit="node", head="trained", hops=1, hidden_dim=8,
                  epochs=1, encoder_epochs=1, batch_size=64, random_state=0)
    return GAPClassifier(**{**params, **overrides})


def _rows(data):
    """The node features as a plain array: scoring held-out rows builds a new graph, so
    every fold's scoring is a new release (as under a meta-estimator that drops the graph)."""
    return np.asarray(data.nodes())


def _rdp_epsilon(event, delta):
    accountant = rdp.RdpAccountant()
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def _scoring_release_event(report):
    """The scoring release as an independent dp-accounting event: K Gaussians at sigma."""
    (release,) = report.releases
    gaussian = dp_event.GaussianDpEvent(release["noise_multiplier"])
    return gaussian if release["hops"] == 1 else dp_event.SelfComposedDpEvent(
        gaussian, release["hops"])


# ------------------------------------------------------------------ scoring releases
def _recorded_equals_total(estimator, data):
    """Each fold's recorded epsilon against the fold's total after scoring (the attack)."""
    folds = cross_validate(estimator, _rows(data), data.y, cv=2, return_estimator=True,
                           scoring=privacy_scoring("accuracy"))
    for recorded, fitted in zip(folds["test_epsilon"], folds["estimator"]):
        assert fitted.privacy_.releases, "scoring made no release: the check proves nothing"
        assert fitted.privacy_.total_epsilon > fitted.privacy_.epsilon
        assert -recorded == pytest.approx(fitted.privacy_.total_epsilon, rel=1e-12)
    return folds


@pytest.mark.parametrize("make", [_progap_node, _gap_node], ids=["ProGAP-node", "GAP-node"])
def test_privacy_scoring_charges_the_scoring_release(data, make):
    folds = _recorded_equals_total(make(), data)
    assert (-folds["test_delta"] >= np.array(
        [e.privacy_.total_delta for e in folds["estimator"]]) * (1 - 1e-12)).all()


def test_a_scorer_reading_the_training_epsilon_is_caught(data, monkeypatch):
    from skdpgraph.model_selection import _scoring

    def training_only(estimator):
        return float(estimator.epsilon_spent_), float(estimator.delta_)

    monkeypatch.setattr(_scoring, "spent_so_far", training_only)
    with pytest.raises(AssertionError):
        _recorded_equals_total(_progap_node(), data)


def test_privacy_scoring_charges_the_release_of_an_unpickled_model(data):
    X_fit, X_val, y_fit, y_val = train_test_split(data.nodes(), data.y, test_size=0.3,
                                                  random_state=0, stratify=data.y)
    fitted = _progap_node().fit(X_fit, y_fit)
    loaded = pickle.loads(pickle.dumps(fitted))
    assert not loaded.privacy_.releases
    metrics = privacy_scoring("accuracy")(loaded, X_val, y_val)
    assert len(loaded.privacy_.releases) == 1  # the loaded copy keeps no release of the graph
    assert -metrics["epsilon"] == pytest.approx(loaded.privacy_.total_epsilon, rel=1e-12)
    assert -metrics["epsilon"] > loaded.privacy_.epsilon + 0.1


def test_search_cost_composes_every_fits_scoring_release(data):
    grid = GridSearchCV(_progap_node(), {"lr": [0.01, 0.05]}, cv=2, refit=False,
                        scoring=privacy_scoring("accuracy")).fit(_rows(data), data.y)
    folds = cross_validate(_progap_node(), _rows(data), data.y, cv=2, return_estimator=True,
                           scoring=privacy_scoring("accuracy"))
    per_fit = [e.privacy_.total_epsilon for e in folds["estimator"]]
    training = [e.privacy_.epsilon for e in folds["estimator"]]
    cost = search_cost(grid)
    assert cost.num_fits == 4
    assert cost.epsilon == pytest.approx(2 * sum(per_fit), rel=1e-9)  # lr changes no cost
    assert cost.epsilon > 2 * sum(training) + 1.0
    assert any("held-out nodes were scored" in note for note in cost.notes)


def test_private_random_search_composes_each_runs_scoring_release(data):
    search = PrivateRandomSearch(_progap_node(random_state=None), {"lr": [0.01, 0.05]},
                                 mean_repetitions=3.0, shape=1.0, random_state=0)
    search.fit(_rows(data), data.y)
    report = search.best_estimator_.privacy_
    run = dp_event.ComposedDpEvent([report.dp_event, _scoring_release_event(report)])
    expected = _rdp_epsilon(dp_event.RepeatAndSelectDpEvent(run, 3.0, 1.0), report.delta)
    training_only = _rdp_epsilon(dp_event.RepeatAndSelectDpEvent(report.dp_event, 3.0, 1.0),
                                 report.delta)
    assert search.privacy_cost_.epsilon == pytest.approx(expected, rel=1e-9)
    assert search.privacy_cost_.epsilon > training_only + 0.1


# ------------------------------------------------------------------ one unit
def test_search_cost_refuses_fits_on_different_units(data):
    grid = GridSearchCV(DPNodeClassifier(epsilon=4.0, random_state=0),
                        {"unit": ["features", "node"]}, cv=2, refit=False,
                        scoring=privacy_scoring("accuracy")).fit(data.nodes(), data.y)
    with pytest.raises(ValueError, match="different privacy units"):
        search_cost(grid)


def test_search_cost_refuses_a_refit_on_another_unit_than_its_fits(data):
    grid = GridSearchCV(_gap_node(epsilon=8.0), {"unit": ["edge"]}, cv=2,
                        refit=False, scoring=privacy_scoring("accuracy"))
    grid.fit(data.nodes(), data.y)
    grid.best_estimator_ = _gap_node().fit(data.nodes(), data.y)  # node level
    with pytest.raises(ValueError, match="different privacy units"):
        search_cost(grid)


def test_private_random_search_refuses_candidates_on_different_units(data):
    search = PrivateRandomSearch(_gap_node(), {"unit": ["edge", "node"]},
                                 mean_repetitions=2.0, random_state=0, keep_all_runs=True)
    with pytest.raises(ValueError, match="different privacy units"):
        search.fit(data.nodes(), data.y)
    assert not hasattr(search, "results_")


def test_front_door_tells_not_to_search_over_the_unit():
    doc = " ".join(DPNodeClassifier.__doc__.split())
    assert "Do not search over ``unit``" in doc
    assert "search_cost" in doc


# ------------------------------------------------------------------ the refit's plan
BUDGET = 2.4
#: Full-batch DP-SGD with a fixed multiplier: the refit on all nodes (delta 1/(10n) smaller)
#: spends more than a cross-validation fit on half of them: 2.478 against 2.330.
OVER = dict(noise_multiplier=2.0)
UNDER = dict(noise_multiplier=3.0)


def _noise_grid(*candidates):
    return GridSearchCV(DPMLPClassifier(epsilon=np.inf, epochs=2, batch_size=256, hidden_dim=8,
                                        random_state=0),
                        {"noise_multiplier": [c["noise_multiplier"] for c in candidates]},
                        cv=2, scoring=privacy_scoring("accuracy"))


def test_budgeted_search_raises_before_refitting_when_no_refit_fits(data, monkeypatch):
    plain = _noise_grid(OVER).set_params(refit=refit_within_budget(BUDGET))
    plain.fit(data.nodes(), data.y)  # scikit-learn's refit: unchecked, over the budget
    assert -plain.cv_results_["mean_test_epsilon"][0] <= BUDGET
    assert plain.best_estimator_.epsilon_spent_ > BUDGET
    fits = []
    original = DPMLPClassifier._train
    monkeypatch.setattr(DPMLPClassifier, "_train",
                        lambda self, *a: (fits.append(1), original(self, *a))[1])
    search = BudgetedSearchCV(_noise_grid(OVER), BUDGET)
    with pytest.raises(PrivacyBudgetError, match="Nothing was refitted"):
        search.fit(data.nodes(), data.y)
    assert len(fits) == 2  # the cross-validation fits only
    with pytest.raises(NotFittedError):
        search.predict(data.nodes())


def test_refit_within_budget_plans_the_refit_when_told_the_estimator_and_data(
        data, monkeypatch):
    grid = _noise_grid(OVER)
    with pytest.warns(UserWarning, match="cannot see the refit"):
        clone(grid).set_params(refit=refit_within_budget(BUDGET)).fit(data.nodes(), data.y)
    fits = []
    original = DPMLPClassifier._train
    monkeypatch.setattr(DPMLPClassifier, "_train",
                        lambda self, *a: (fits.append(1), original(self, *a))[1])
    refit = refit_within_budget(BUDGET, estimator=grid.estimator, X=data.nodes(), y=data.y)
    with pytest.raises(PrivacyBudgetError, match="Nothing was refitted"):
        clone(grid).set_params(refit=refit).fit(data.nodes(), data.y)
    assert len(fits) == 2  # the cross-validation fits only
    both = _noise_grid(OVER, UNDER)
    refit = refit_within_budget(BUDGET, estimator=both.estimator, X=data.nodes(), y=data.y)
    chosen = both.set_params(refit=refit).fit(data.nodes(), data.y)
    assert chosen.best_params_ == UNDER
    assert chosen.best_estimator_.epsilon_spent_ <= BUDGET


def test_budgeted_search_refits_the_best_candidate_whose_refit_plan_fits(data):
    search = BudgetedSearchCV(_noise_grid(OVER, UNDER), BUDGET).fit(data.nodes(), data.y)
    assert search.best_params_ == UNDER
    assert search.best_estimator_.privacy_.total_epsilon <= BUDGET
    assert search.refit_planned_epsilon_ == search.best_estimator_.epsilon_spent_
    planned = planned_privacy(search.best_estimator_, data.nodes(), data.y)
    assert planned.epsilon == search.best_estimator_.epsilon_spent_
    assert repr(planned.dp_event) == repr(search.best_estimator_.privacy_.dp_event)
    assert search_cost(search).num_fits == 5


def test_budgeted_search_discards_a_refit_over_the_budget(data, monkeypatch):
    # A broken planner that plans the refit on a cross-validation fold's size
    from skdpgraph.model_selection import _planned

    half = len(data.y) // 2
    monkeypatch.setattr(_planned, "planned_privacy",
                        lambda est, X, y: planned_privacy(est, X[:half], y[:half]))
    search = BudgetedSearchCV(_noise_grid(OVER), BUDGET)
    with pytest.raises(PrivacyBudgetError, match="discarded"):
        search.fit(data.nodes(), data.y)
    assert not hasattr(search, "best_estimator_")


# ------------------------------------------------------------------ the whole candidate space
def _dpmlp(**overrides):
    return DPMLPClassifier(**{**dict(epochs=1, hidden_dim=8, batch_size=64), **overrides})


def test_private_random_search_bounds_a_run_by_the_whole_candidate_space(data):
    space = {"epsilon": [1.0, 3.0]}
    # one run (mean 1): a seed whose only run is the more private candidate
    for seed in range(20):
        search = PrivateRandomSearch(_dpmlp(), space, mean_repetitions=1.0, random_state=seed)
        search.fit(data.nodes(), data.y)
        if search.best_params_ == {"epsilon": 1.0}:
            break
    else:
        pytest.fail("no seed ran the epsilon=1 candidate alone")
    X_fit, _, y_fit, _ = train_test_split(data.nodes(), data.y, test_size=0.25,
                                          stratify=data.y, random_state=0)
    least_private = _dpmlp(epsilon=3.0, random_state=0).fit(X_fit, y_fit).privacy_
    # same sampling rate and steps, less noise: its curve dominates the other's everywhere
    expected = _rdp_epsilon(dp_event.RepeatAndSelectDpEvent(least_private.dp_event, 1.0, 1.0),
                            least_private.delta)
    assert search.privacy_cost_.epsilon == pytest.approx(expected, rel=1e-9)
    assert search.privacy_cost_.epsilon > 3.0


def test_private_random_search_refuses_a_distribution_that_changes_the_event(data):
    search = PrivateRandomSearch(_dpmlp(), {"epsilon": stats.uniform(1.0, 3.0)},
                                 mean_repetitions=2.0, random_state=0)
    with pytest.raises(ValueError, match="parameter 'epsilon' is drawn from a distribution"):
        search.fit(data.nodes(), data.y)


def test_private_random_search_accepts_a_distribution_that_leaves_the_event(data):
    search = PrivateRandomSearch(_dpmlp(epsilon=2.0), {"lr": stats.loguniform(1e-3, 1e-1)},
                                 mean_repetitions=2.0, random_state=0).fit(data.nodes(), data.y)
    assert search.privacy_cost_.num_fits == 1
    assert any("drawn from distributions (lr)" in note for note in search.privacy_cost_.notes)


# ------------------------------------------------------------------ what scoring reads
def _states_training_features_read(notes):
    return any("training nodes' raw features" in note for note in notes)


def test_search_notes_state_that_drw_scoring_reads_training_features(data):
    grid = GridSearchCV(DRWClassifier(epsilon=4.0, epochs=1, hidden_dim=8, batch_size=64,
                                      random_state=0), {"lr": [0.01, 0.05]}, cv=2,
                        scoring=privacy_scoring("accuracy"), refit="score")
    cost = search_cost(grid.fit(data.nodes(), data.y))
    assert _states_training_features_read(cost.notes)
    assert any("random walks reach" in note for note in cost.notes)  # DRW's own statement


def test_search_notes_state_that_fdp_scoring_reads_training_features(data):
    grid = GridSearchCV(FDPClassifier(epsilon=4.0, epochs=1, hidden_dim=8, batch_size=64,
                                      max_degree=2, random_state=0), {"lr": [0.005, 0.01]},
                        cv=2, scoring=privacy_scoring("accuracy"), refit="score")
    cost = search_cost(grid.fit(data.nodes(), data.y))
    assert _states_training_features_read(cost.notes)
    assert any("neighbours' features" in note for note in cost.notes)  # FDP's own statement


def test_private_random_search_stops_at_a_run_that_releases_more_than_planned(data, monkeypatch):
    # A broken planner that forgets the scoring release: the run's release is caught
    from skdpgraph.model_selection import _candidates

    def training_only(estimator, params, X, y):
        return _candidates.checked_plan(clone(estimator).set_params(**params), X, y)[1]

    monkeypatch.setattr(_candidates, "_planned_run", training_only)
    search = PrivateRandomSearch(_progap_node(random_state=None), {"lr": [0.01, 0.05]},
                                 mean_repetitions=2.0, random_state=0)
    with pytest.raises(PrivacyBudgetError, match="no planned run allows"):
        search.fit(_rows(data), data.y)
    assert not hasattr(search, "privacy_cost_")
