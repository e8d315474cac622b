"""The privacy ledger: every fit and release of a workflow counted, checked against an
independent composition with dp-accounting, and a cap that refuses before data is read."""

import math
import pickle
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import BaggingClassifier, StackingClassifier, VotingClassifier
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.inspection import permutation_importance
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (
    GridSearchCV, HalvingGridSearchCV, KFold, cross_validate, learning_curve,
)

import skdpgraph
from skdpgraph import DPMLPClassifier, GAPClassifier, Graph, PrivacyLedger, process_ledger
from skdpgraph.datasets import make_csbm
from skdpgraph.estimators import _base
from skdpgraph.estimators._gap_heads import TrainedHead
from skdpgraph.model_selection import privacy_spent
from skdpgraph.privacy import PrivacyBudgetError, Spend, compose_spends

DELTA = 1e-5
ESTIMATORS = {
    "DPMLP": DPMLPClassifier(epsilon=1.0, delta=DELTA, hidden_dim=8, epochs=2, batch_size=64,
                             random_state=0),
    "GAP-edge": GAPClassifier(epsilon=1.0, delta=DELTA, hops=1, hidden_dim=8, epochs=2,
                              encoder_epochs=2, random_state=0),
}


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=240, n_features=8, random_state=0)


def _independent_epsilon(events, delta=DELTA):
    """Compose the events with dp-accounting's own RDP accountant."""
    accountant = rdp.RdpAccountant()
    for event in events:
        accountant.compose(event)
    return accountant.get_epsilon(delta)


def _fit_events(estimator, nodes, y, splits):
    """The training events of fitting ``estimator`` on each split, made here, outside
    any workflow (plans depend on public quantities only, so the events are the same)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [clone(estimator).fit(nodes[train], y[train]).privacy_.dp_event
                for train in splits]


def _kfold_trains(n, k):
    return [train for train, _ in KFold(k).split(np.zeros(n))]


# ------------------------------------------------------------------ totals
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_cross_validation_total_equals_dp_accounting(name, data):
    estimator = ESTIMATORS[name]
    with PrivacyLedger(delta=DELTA) as ledger:
        cross_validate(estimator, data.nodes(), data.y, cv=KFold(3))
    events = _fit_events(estimator, data.nodes(), data.y, _kfold_trains(len(data.y), 3))
    assert [entry.kind for entry in ledger.entries] == ["fit"] * 3
    assert ledger.total().epsilon == pytest.approx(_independent_epsilon(events), rel=1e-9)
    assert ledger.total().epsilon < 3 * estimator.epsilon  # tighter than adding epsilons


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_grid_search_total_counts_every_fit_and_the_refit(name, data):
    estimator = ESTIMATORS[name]
    grid = {"lr": [0.01, 0.1]}
    with PrivacyLedger(delta=DELTA) as ledger:
        GridSearchCV(estimator, grid, cv=KFold(2)).fit(data.nodes(), data.y)
    splits = _kfold_trains(len(data.y), 2)
    events = []
    for lr in grid["lr"]:
        events += _fit_events(clone(estimator).set_params(lr=lr), data.nodes(), data.y, splits)
    events += _fit_events(estimator, data.nodes(), data.y, [np.arange(len(data.y))])  # refit
    assert len(ledger.entries) == 5
    assert ledger.total().epsilon == pytest.approx(_independent_epsilon(events), rel=1e-9)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_calibration_total_and_what_the_object_contains(name, data):
    estimator = ESTIMATORS[name]
    with PrivacyLedger(delta=DELTA) as ledger:
        calibrated = CalibratedClassifierCV(estimator, cv=KFold(3)).fit(data.nodes(), data.y)
    events = _fit_events(estimator, data.nodes(), data.y, _kfold_trains(len(data.y), 3))
    assert ledger.total().epsilon == pytest.approx(_independent_epsilon(events), rel=1e-9)
    contained = privacy_spent(calibrated)
    if name == "GAP-edge":  # labels are public at edge level: the calibration maps are free
        assert contained.num_fits == 3
        assert contained.epsilon == pytest.approx(ledger.total().epsilon, rel=1e-9)
    else:  # the calibration maps are fitted on held-out private labels without noise
        assert math.isinf(contained.epsilon)
        assert any("calibrators" in note for note in contained.notes)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_bagging_total_equals_dp_accounting_and_privacy_spent(name, data):
    estimator = ESTIMATORS[name]
    bag = BaggingClassifier(estimator, n_estimators=3, bootstrap=False, max_samples=0.5,
                            random_state=0)
    with warnings.catch_warnings(), PrivacyLedger(delta=DELTA) as ledger:
        warnings.simplefilter("ignore")
        bag.fit(data.nodes(), data.y)
    events = [member.privacy_.dp_event for member in bag.estimators_]
    expected = _independent_epsilon(events)
    assert len(ledger.entries) == 3
    assert ledger.total().epsilon == pytest.approx(expected, rel=1e-9)
    assert privacy_spent(bag).epsilon == pytest.approx(expected, rel=1e-9)


# ------------------------------------------------------------------ releases
def _new_graph_release_workflow(data):
    """A fitted GAP, then predictions on two other graphs: two new, recorded releases."""
    clf = clone(ESTIMATORS["GAP-edge"]).fit(data.nodes(), data.y)
    other = make_csbm(n_nodes=60, n_features=8, random_state=1)
    with PrivacyLedger(delta=DELTA) as ledger:
        clf.predict(other.nodes())
        clf.predict(Graph(other.graph.edge_index, other.graph.x * 2).nodes())
    return clf, ledger


def _releases_match(clf, ledger) -> bool:
    """The ledger holds exactly the estimator's recorded releases, at their cost."""
    recorded = [(r["epsilon"], r["delta"]) for r in clf.privacy_.releases]
    counted = [(e.spend.epsilon, e.spend.delta) for e in ledger.entries if e.kind == "release"]
    return len(recorded) > 0 and recorded == counted


def _gaussian_release_events(releases):
    """Each recorded release as ``hops`` Gaussian mechanisms at its noise multiplier."""
    return [dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(r["noise_multiplier"]),
                                         r["hops"]) for r in releases]


def test_releases_after_fit_are_counted(data):
    clf, ledger = _new_graph_release_workflow(data)
    assert _releases_match(clf, ledger)
    releases = clf.privacy_.releases
    assert ledger.total().epsilon == pytest.approx(
        _independent_epsilon(_gaussian_release_events(releases)), rel=1e-9)
    assert ledger.total().epsilon < sum(r["epsilon"] for r in releases)  # tighter than adding


def test_releases_check_catches_a_release_that_is_not_counted(data, monkeypatch):
    class Silent:
        def commit(self, spend=None):
            pass

        def cancel(self):
            pass

    monkeypatch.setattr(_base, "reserve_spend", lambda *args, **kwargs: Silent())
    clf, ledger = _new_graph_release_workflow(data)
    assert not _releases_match(clf, ledger)


def test_permutation_importance_releases_are_counted(data):
    clf = clone(ESTIMATORS["GAP-edge"]).fit(data.nodes(), data.y)
    with warnings.catch_warnings(), PrivacyLedger(delta=DELTA) as ledger:
        warnings.simplefilter("ignore")
        permutation_importance(clf, data.nodes(), data.y, n_repeats=2, random_state=0)
    releases = clf.privacy_.releases
    assert len(releases) > 0 and len(ledger.entries) == len(releases)
    assert ledger.total().epsilon == pytest.approx(
        _independent_epsilon(_gaussian_release_events(releases)), rel=1e-9)


def test_learning_curve_and_halving_search_count_every_fit(data):
    estimator = ESTIMATORS["DPMLP"]
    with PrivacyLedger() as ledger:
        learning_curve(estimator, data.nodes(), data.y, train_sizes=[0.5, 1.0], cv=KFold(2))
    assert len(ledger.entries) == 4
    with warnings.catch_warnings(), PrivacyLedger() as ledger:
        warnings.simplefilter("ignore")
        search = HalvingGridSearchCV(estimator, {"lr": [0.01, 0.05, 0.1]}, cv=KFold(2),
                                     min_resources=60, random_state=0)
        search.fit(data.nodes(), data.y)
    assert len(ledger.entries) == sum(2 * n for n in search.n_candidates_) + 1


def test_voting_and_stacking_count_every_fit(data):
    members = [("a", ESTIMATORS["DPMLP"]), ("b", clone(ESTIMATORS["DPMLP"]).set_params(lr=0.1))]
    with PrivacyLedger() as ledger:
        voting = VotingClassifier(members, voting="soft").fit(data.nodes(), data.y)
    assert len(ledger.entries) == 2
    assert privacy_spent(voting).num_fits == 2
    with PrivacyLedger() as ledger:
        stacking = StackingClassifier(members, LogisticRegression(), cv=KFold(2))
        stacking.fit(data.nodes(), data.y)
    assert len(ledger.entries) == 2 + 2 * 2  # the members, plus their cross-validated fits
    assert math.isinf(privacy_spent(stacking).epsilon)  # its head reads labels without DP


def test_parallel_fits_inside_a_scope_are_counted(data):
    with PrivacyLedger() as ledger:
        cross_validate(ESTIMATORS["DPMLP"], data.nodes(), data.y, cv=KFold(3), n_jobs=2)
    assert len(ledger.entries) == 3


# ------------------------------------------------------------------ units and the cap
def test_different_units_are_never_added(data):
    with warnings.catch_warnings(), PrivacyLedger() as ledger:
        warnings.simplefilter("ignore")
        for estimator in ESTIMATORS.values():
            clone(estimator).fit(data.nodes(), data.y)
    assert len(ledger.totals()) == 2
    with pytest.raises(ValueError, match="different units"):
        ledger.total()
    assert ledger.total(unit=ledger.units[0][0]).num_fits == 1
    voting = VotingClassifier([(n, e) for n, e in ESTIMATORS.items()], voting="soft")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        voting.fit(data.nodes(), data.y)
    with pytest.raises(ValueError, match="different units"):
        privacy_spent(voting)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_cap_refuses_a_fit_before_it_reads_data(name, data, monkeypatch):
    estimator = ESTIMATORS[name]
    trained = []
    original = type(estimator)._train
    monkeypatch.setattr(type(estimator), "_train",
                        lambda self, *args: trained.append(1) or original(self, *args))
    with PrivacyLedger(epsilon=1.2, delta=DELTA) as ledger:
        first = clone(estimator).fit(data.nodes(), data.y)
        second = clone(estimator)
        with pytest.raises(PrivacyBudgetError,
                           match=r"ledger \(epsilon=1.2, delta=1e-05\) refuses"):
            second.fit(data.nodes(), data.y)
    assert len(trained) == 1  # the refused fit never trained
    assert not hasattr(second, "privacy_") and hasattr(first, "privacy_")
    assert len(ledger.entries) == 1


def test_cap_refuses_a_release_before_it_is_made(data, monkeypatch):
    clf = clone(ESTIMATORS["GAP-edge"]).fit(data.nodes(), data.y)
    made = []
    original = TrainedHead.release

    def counted(self, *args, **kwargs):
        made.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(TrainedHead, "release", counted)
    other = make_csbm(n_nodes=60, n_features=8, random_state=1)
    with PrivacyLedger(epsilon=1e-3) as ledger:
        with pytest.raises(PrivacyBudgetError, match="refuses"):
            clf.predict(other.nodes())
    assert made == [] and clf.privacy_.releases == () and ledger.entries == ()
    clf.predict(other.nodes())  # without the cap, the same call makes the release
    assert made == [1]


def test_a_failed_fit_leaves_no_entry(data):
    with PrivacyLedger() as ledger:
        with pytest.raises(ValueError):
            clone(ESTIMATORS["DPMLP"]).set_params(hidden_dim=0).fit(data.nodes(), data.y)
    assert ledger.entries == ()


def test_process_ledger_records_outside_any_scope(data):
    before = len(process_ledger().entries)
    clone(ESTIMATORS["DPMLP"]).fit(data.nodes(), data.y)
    assert len(process_ledger().entries) == before + 1
    assert skdpgraph.process_ledger() is process_ledger()


def test_spend_by_hand_and_nesting():
    outer = PrivacyLedger(epsilon=2.0, name="outer")
    with outer, PrivacyLedger(name="inner") as inner:
        outer.spend(1.0, 0.0, unit="node", relation="add or remove one node")
        assert len(inner.entries) == 0  # a hand-made spend is recorded where it is made
        with pytest.raises(PrivacyBudgetError, match="outer"):
            outer.spend(1.5, 0.0, unit="node", relation="add or remove one node")
    assert outer.total().epsilon == 1.0
    with pytest.raises(ValueError, match="epsilon"):
        PrivacyLedger(epsilon=0)


def test_composition_keeps_a_single_release_and_refuses_mixed_units():
    one = Spend(1.0, 1e-5, "node", "add or remove one node")
    assert compose_spends([one]).epsilon == 1.0
    with pytest.raises(ValueError, match="different privacy units"):
        compose_spends([one, Spend(1.0, 1e-5, "edge", "add or remove one edge")])


def test_ledger_pickles_nothing_of_a_fit(data):
    clf = clone(ESTIMATORS["DPMLP"]).fit(data.nodes(), data.y)
    assert "ledger" not in pickle.dumps(clf).decode("latin-1").lower()
