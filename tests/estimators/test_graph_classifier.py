"""DPGraphClassifier: graph-level DP-SGD, one graph per example, on graph collections."""

import math
import pickle

import numpy as np
import pytest
import torch
from dp_accounting import dp_event, rdp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_validate, train_test_split
from sklearn.utils.validation import check_is_fitted

from skdpgraph import (DPGraphClassifier, Graph, GraphCollection, PrivacyBudgetError,
                       PrivacyLedger)
from skdpgraph.datasets import make_graph_classification
from skdpgraph.model_selection import planned_privacy
from skdpgraph.nn import _graph_batches
from tests.audits.test_released_objects import _kept_randomness

FAST = dict(epochs=2, hidden_dim=8, num_layers=2, batch_size=16, device="cpu")


@pytest.fixture(scope="module")
def graphs():
    return make_graph_classification(n_graphs=40, n_nodes=(4, 8), random_state=0)


def _fit(X, y, **params):
    return DPGraphClassifier(**{**FAST, "random_state": 0, **params}).fit(X, y)


# ------------------------------------------------------------------ scikit-learn API
def test_clone_get_params_and_pickle_round_trip_predicts_the_same(graphs):
    X, y = graphs
    clf = DPGraphClassifier(epsilon=2.0, conv="sage", readout="mean", **FAST)
    assert clone(clf).get_params() == clf.get_params()
    clf.fit(X, y)
    loaded = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    assert set(loaded.predict(X)) <= {0, 1} and 0 <= loaded.score(X, y) <= 1
    assert loaded.privacy_ == clf.privacy_ and loaded.n_features_in_ == 4


def test_grid_search_and_cross_validate_over_a_collection(graphs):
    X, y = graphs
    search = GridSearchCV(DPGraphClassifier(epsilon=np.inf, random_state=0, **FAST),
                          {"conv": ["gin", "gcn"]}, cv=2).fit(X, y)
    assert search.best_params_["conv"] in ("gin", "gcn")
    scores = cross_validate(DPGraphClassifier(epsilon=4.0, random_state=0, **FAST), X, y, cv=3)
    assert len(scores["test_score"]) == 3


def test_sample_weight_selects_graphs_and_refuses_counts(graphs):
    X, y = graphs
    keep = np.arange(len(X)) % 2
    clf = DPGraphClassifier(epsilon=4.0, random_state=0, **FAST).fit(X, y, sample_weight=keep)
    assert clf.privacy_.assumptions[0].startswith(f"the number of training graphs (N={20})")
    with pytest.raises(ValueError, match="sample_weight may only select"):
        DPGraphClassifier(**FAST).fit(X, y, sample_weight=np.full(len(X), 2))


# ------------------------------------------------------------------ privacy spine
def test_accountant_equals_an_independent_dp_accounting_computation(graphs):
    X, y = graphs
    clf = _fit(X, y, epsilon=3.0, epochs=3, batch_size=10)
    n = len(X)
    steps = 3 * math.ceil(n / 10)
    accountant = rdp.RdpAccountant()
    accountant.compose(dp_event.PoissonSampledDpEvent(
        10 / n, dp_event.GaussianDpEvent(clf.noise_multiplier_)), steps)
    assert clf.epsilon_spent_ == pytest.approx(accountant.get_epsilon(clf.delta_), rel=1e-9)
    assert clf.delta_ == pytest.approx(1 / (10 * n)) and clf.epsilon_spent_ <= 3.0
    assert 0.97 * 3.0 <= clf.epsilon_spent_


def test_planned_privacy_and_the_ledger_see_the_graph_unit(graphs):
    X, y = graphs
    planned = planned_privacy(DPGraphClassifier(epsilon=2.0, **FAST), X, y)
    with PrivacyLedger(delta=1e-3) as ledger:
        clf = _fit(X, y, epsilon=2.0)
    assert planned.epsilon == clf.epsilon_spent_ and planned.unit == clf.privacy_.unit
    assert [(e.kind, e.spend.unit) for e in ledger.entries] == [("fit", clf.privacy_.unit)]


def test_plan_is_refused_before_any_graph_is_read(graphs, monkeypatch):
    X, y = graphs
    clf = _fit(X, y, epsilon=4.0)

    def read(*args, **kwargs):
        raise AssertionError("training data read before the plan was checked")

    monkeypatch.setattr(_graph_batches.GraphBatches, "__init__", read)
    with pytest.raises(PrivacyBudgetError):
        clf.set_params(epsilon=0.5, noise_multiplier=0.3).fit(X, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)


def test_failed_fit_leaves_the_estimator_unfitted(graphs):
    X, y = graphs
    clf = _fit(X, y, epsilon=4.0)
    with pytest.raises(ValueError, match="only one class"):
        clf.fit(X, np.zeros(len(X), dtype=int))
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)
    assert not [name for name in vars(clf) if name.endswith("_")]


def test_the_same_graph_twice_and_equal_graphs(graphs):
    X, y = graphs
    twice = list(X) + [X[0]]
    with pytest.raises(ValueError, match=r"graphs \[0, 40\] are the same Graph object"):
        DPGraphClassifier(**FAST).fit(twice, np.r_[y, y[0]])
    copy = Graph(X[0].edge_index, X[0].x)
    with pytest.raises(ValueError, match="allow_equal_graphs=True"):
        DPGraphClassifier(**FAST).fit(list(X) + [copy], np.r_[y, y[0]])
    clf = _fit(list(X) + [copy], np.r_[y, y[0]], epsilon=4.0, allow_equal_graphs=True)
    assert any("equal content are different people's" in a for a in clf.privacy_.assumptions)
    with pytest.raises(ValueError, match="same Graph object"):
        _fit(twice, np.r_[y, y[0]], allow_equal_graphs=True)


def test_privacy_report_names_the_graph_unit_and_relation(graphs):
    X, y = graphs
    clf = _fit(X, y, epsilon=4.0, classes=[0, 1, 2])
    report = clf.privacy_
    assert report.unit == "one graph: its nodes, edges, features and label"
    assert report.neighbouring_relation == "add or remove one training graph"
    assert "each graph's prediction depends on that graph alone" in report.inference
    assert any("the public classes parameter" in a for a in report.assumptions)
    assert any(a.startswith("the number of training graphs (N=40) is public") and
               "default delta 1/(10 N)" in a for a in report.assumptions)
    assert clf.classes_.tolist() == [0, 1, 2] and clf.predict_proba(X).shape == (40, 3)
    assert all(r["loss"] is None for r in clf.history_)  # noise-free statistics: blanked


def test_pickled_estimator_keeps_no_generator_or_seed(graphs):
    X, y = graphs
    clf = _fit(X, y, epsilon=4.0, random_state=None)
    for holder in (clf, pickle.loads(pickle.dumps(clf))):
        candidates, objects = _kept_randomness(holder)
        assert not objects and not candidates


def test_epsilon_inf_is_the_non_private_gnn_with_early_stopping(graphs):
    X, y = graphs
    clf = _fit(X, y, epsilon=np.inf, epochs=4, validation_fraction=0.25)
    assert clf.noise_multiplier_ is None and clf.epsilon_spent_ == math.inf
    assert [r["validation_accuracy"] is not None for r in clf.history_] == [True] * 4
    assert clf.history_[0]["loss"] is not None  # nothing is protected: the history stays
    with pytest.raises(ValueError, match="validation_fraction=0.25 would select epochs"):
        _fit(X, y, epsilon=4.0, validation_fraction=0.25)


@pytest.mark.parametrize("epsilon, noise_multiplier, epochs, lr", [
    (np.inf, None, 200, 0.01), (4.0, None, 50, 0.003), (np.inf, 1.0, 50, 0.003)])
def test_epochs_and_lr_rules_follow_whether_the_fit_is_private(graphs, epsilon,
                                                               noise_multiplier, epochs, lr):
    """None: 200 epochs at lr 0.01 without noise, 50 at 0.003 with (a given noise
    multiplier makes even epsilon=inf private); the plan takes the resolved epochs."""
    X, y = graphs
    clf = _fit(X[:20], y[:20], epsilon=epsilon, noise_multiplier=noise_multiplier,
               epochs=None, lr=None, batch_size=20, validation_fraction=None)
    assert (clf.epochs_, clf.lr_, len(clf.history_)) == (epochs, lr, epochs)
    assert clf.get_params()["epochs"] is None and clf.get_params()["lr"] is None
    given = _fit(X[:20], y[:20], epsilon=epsilon, noise_multiplier=noise_multiplier,
                 epochs=3, lr=0.05)
    assert (given.epochs_, given.lr_) == (3, 0.05)


def test_a_gnn_beats_a_graph_free_baseline_without_noise():
    """The classes differ in edge density only (no feature shift): a GNN reads it, a model
    of each graph's mean features and size cannot."""
    X, y = make_graph_classification(n_graphs=200, n_nodes=(6, 12), feature_shift=0.0,
                                     random_state=0)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)

    def summary(graphs):
        return np.array([np.r_[g.features().mean(0), g.num_nodes] for g in graphs])

    baseline = LogisticRegression().fit(summary(X_tr), y_tr).score(summary(X_te), y_te)
    gnn = _fit(X_tr, y_tr, epsilon=np.inf, epochs=10, hidden_dim=16).score(X_te, y_te)
    assert gnn >= baseline + 0.2, (gnn, baseline)


# ------------------------------------------------------------------ bad inputs
def test_bad_inputs_are_refused_with_clear_errors(graphs):
    X, y = graphs
    clf = DPGraphClassifier(**FAST)
    with pytest.raises(ValueError, match="holds no graphs"):
        clf.fit(GraphCollection([]), [])
    with pytest.raises(ValueError, match="only one class"):
        clf.fit(X, np.ones(len(X)))
    with pytest.raises(ValueError, match="same number of node features"):
        clf.fit([X[0], Graph([[0], [1]], np.ones((2, 3)))], [0, 1])
    with pytest.raises(ValueError, match=r"no label for 2 graph\(s\) \(positions 1, 3\)"):
        clf.fit(X, np.where(np.isin(np.arange(len(X)), [1, 3]), None, y).astype(object))
    with pytest.raises(ValueError, match="requires y"):
        clf.fit(X, None)
    with pytest.raises(TypeError, match=r"graphs\[0\] must be a skdpgraph.Graph; got str"):
        clf.fit(["a graph", "another"], [0, 1])
    with pytest.raises(TypeError, match="must be a GraphCollection or a list"):
        clf.fit(3.0, [0, 1])
    with pytest.raises(ValueError):  # text node features: refused where the graph is built
        Graph([[0], [1]], np.array([["a"], ["b"]]))
    with pytest.raises(ValueError, match="0 node features"):
        clf.fit([Graph([[0], [1]], np.zeros((2, 0))), Graph([[], []], np.zeros((3, 0)))],
                [0, 1])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        clf.fit(X, y[:5])
    fitted = _fit(X, y, epsilon=4.0)
    with pytest.raises(ValueError, match="graphs with 3 node features, but DPGraphClassifier "
                                         "is expecting 4"):
        fitted.predict([Graph([[0], [1]], np.ones((2, 3)))])
    with pytest.raises(ValueError, match="holds no graphs"):
        fitted.predict(GraphCollection([]))


def test_prediction_reads_only_the_queried_graph(graphs):
    X, y = graphs
    clf = _fit(X, y, epsilon=4.0)
    alone = np.vstack([clf.predict_proba([graph]) for graph in X])
    np.testing.assert_allclose(clf.predict_proba(X), alone, rtol=1e-5, atol=1e-6)
    assert not any(isinstance(v, (GraphCollection, Graph, torch.Tensor))
                   for v in vars(clf).values())
