import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler

from skdpgraph import DPMLPClassifier
from skdpgraph.datasets import make_csbm
from skdpgraph.model_selection import (
    PrivateRandomSearch,
    composition_cost,
    draw_repetitions,
    neg_epsilon_spent,
    privacy_scoring,
    refit_within_budget,
    repeat_and_select_cost,
    search_cost,
    truncated_negative_binomial_gamma,
)
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
    with pytest.raises(ValueError, match=r"smallest epsilon spent by any candidate's fit is 4"):
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
    # P(K=1) of the truncated negative binomial:
    # shape * gamma**shape * (1 - gamma) / (1 - gamma**shape)
    p1 = shape * gamma ** shape * (1 - gamma) / (1 - gamma ** shape)
    assert (draws == 1).mean() == pytest.approx(p1, abs=0.03)


def _search(keep_all_runs=False, random_state=0):
    options = {"keep_all_runs": True} if keep_all_runs else {}  # default: not passed
    return PrivateRandomSearch(DPMLPClassifier(epsilon=2.0, **dict(FAST, random_state=None)),
                               {"lr": [0.01, 0.05, 0.1]}, mean_repetitions=3.0, shape=1.0,
                               random_state=random_state, **options)


def test_private_random_search_reports_the_repetition_bound(data):
    search = _search(keep_all_runs=True).fit(data.nodes(), data.y)
    scores = [r["score"] for r in search.results_]
    assert len(scores) == search.n_repetitions_ >= 1
    assert search.best_score_ == max(scores)
    # lr does not change the privacy event: the bound is that of one fit's event
    event = search.best_estimator_.privacy_.dp_event
    expected = _dp_accounting_epsilon(dp_event.RepeatAndSelectDpEvent(event, 3.0, 1.0),
                                      search.best_estimator_.delta_)
    assert search.privacy_cost_.epsilon == pytest.approx(expected, rel=1e-9)
    assert search.predict(data.nodes()).shape == (200,)


#: What a fitted PrivateRandomSearch may hold by default: its parameters and the selected run.
_RELEASED = {"best_estimator_", "best_params_", "best_score_", "privacy_cost_", "classes_"}


@pytest.fixture(scope="module")
def fitted_search(data):
    return _search().fit(data.nodes(), data.y)


def test_private_random_search_keeps_only_the_selected_run(data, fitted_search):
    search = fitted_search
    fitted = {name for name in vars(search) if name not in search.get_params(deep=False)}
    assert fitted == _RELEASED, fitted - _RELEASED
    for name in ("n_repetitions_", "results_", "naive_cost_"):
        assert not hasattr(search, name)
    # nothing reveals the number of runs: one distinct event, one fit in the bound
    assert search.privacy_cost_.num_fits == 1
    assert not any("keep_all_runs" in note for note in search.privacy_cost_.notes)
    # the same search with diagnostics selects the same run: the option changes only what is kept
    diagnosed = _search(keep_all_runs=True).fit(data.nodes(), data.y)
    assert diagnosed.best_params_ == search.best_params_
    assert diagnosed.best_score_ == search.best_score_
    assert diagnosed.privacy_cost_.epsilon == search.privacy_cost_.epsilon


def test_private_random_search_diagnostics_are_stated_as_not_covered(data):
    search = _search(keep_all_runs=True, random_state=3).fit(data.nodes(), data.y)
    assert len(search.results_) == search.n_repetitions_
    assert search.naive_cost_.num_fits == search.n_repetitions_
    assert {r["score"] for r in search.results_} >= {search.best_score_}
    note = [n for n in search.privacy_cost_.notes if "keep_all_runs=True" in n]
    assert note and "NOT covered" in note[0]
    assert all(name in note[0] for name in ("n_repetitions_", "results_", "naive_cost_"))


def test_private_random_search_keeps_no_seed_of_its_runs(data):
    # random_state=None: every run draws OS entropy and no run's seed is kept anywhere
    search = _search(random_state=None).fit(data.nodes(), data.y)
    assert search.best_estimator_.random_state is None
    assert search.random_state is None


def test_failed_search_leaves_it_unfitted(data):
    from sklearn.exceptions import NotFittedError

    search = _search().fit(data.nodes(), data.y)
    # Poisson with mean 1 draws 0 runs w.p. 1/e: such a refit raises and releases nothing
    for seed in range(30):
        search.set_params(mean_repetitions=1.0, shape=math.inf, random_state=seed)
        try:
            search.fit(data.nodes(), data.y)
        except ValueError as exc:
            assert "drew 0 runs" in str(exc)
            break
    else:
        pytest.fail("no seed drew 0 runs")
    with pytest.raises(NotFittedError):
        search.predict(data.nodes())
    assert not any(name.endswith("_") for name in vars(search))


def test_selection_costs_state_that_validation_labels_are_public(data, fitted_search):
    def states_it(notes):
        return any("validation labels are treated as public" in note for note in notes)

    assert states_it(repeat_and_select_cost([_report(EVENT_A)], 10.0, 1.0, 1e-5).notes)
    assert states_it(fitted_search.privacy_cost_.notes)
    refit = refit_within_budget(2.0)
    assert states_it(refit.notes)
    assert "Validation labels are treated as" in refit_within_budget.__doc__
    grid = GridSearchCV(DPMLPClassifier(**dict(FAST, epochs=1)), {"epsilon": [1.0, 2.0]}, cv=2,
                        scoring=privacy_scoring("accuracy"), refit=refit)
    cost = search_cost(grid.fit(data.nodes(), data.y))
    assert states_it(cost.notes)
    assert cost.num_fits == 5


def _module_sources():
    import pathlib

    import skdpgraph.model_selection as package

    root = pathlib.Path(package.__file__).parent
    sources = sorted(root.glob("*.py"))
    assert len(sources) >= 5
    return [(path.name, path.read_text()) for path in sources]


def test_model_selection_accounts_only_through_skdpgraph_privacy():
    import ast

    for name, source in _module_sources():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            assert not any(m.split(".")[0] == "dp_accounting" for m in modules), (name, modules)


def test_model_selection_draws_randomness_only_from_random_streams():
    import ast

    makers = {"check_random_state", "default_rng", "RandomState", "Generator", "manual_seed",
              "SeedSequence", "seed", "randint", "rand"}
    for name, source in _module_sources():
        tree = ast.parse(source)
        called = {node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                  for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and isinstance(node.func, (ast.Attribute, ast.Name))}
        imported = {alias.name for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) for alias in node.names}
        assert not called & makers, (name, called & makers)
        assert "check_random_state" not in imported, name
    assert "RandomStreams" in dict(_module_sources())["_random_search.py"]
