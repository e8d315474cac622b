"""DPMLPClassifier: the reference implementation of the estimator contract."""

import joblib
import numpy as np
import pytest
from sklearn.model_selection import (GridSearchCV, StratifiedKFold, cross_val_score,
                                     train_test_split)
from sklearn.pipeline import Pipeline

from skdpgraph import DPMLPClassifier, Graph, PrivacyBudgetError
from skdpgraph.datasets import make_csbm
from skdpgraph.privacy import compute_epsilon, poisson_dpsgd_event


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=600, n_classes=3, n_features=16, random_state=0)


@pytest.fixture(scope="module")
def split(data):
    return train_test_split(data.nodes(), data.y, test_size=0.3, stratify=data.y,
                            random_state=0)


@pytest.mark.parametrize("epsilon, floor", [(np.inf, 0.70), (8.0, 0.60)])
def test_accuracy_floor_on_csbm(split, epsilon, floor):
    # Chance is 1/3; the MLP sees features only (the graph is what GNNs add). Defaults:
    # 420 training nodes make one full batch per epoch, 50 steps.
    X_tr, X_te, y_tr, y_te = split
    clf = DPMLPClassifier(epsilon=epsilon, random_state=0).fit(X_tr, y_tr)
    assert clf.score(X_te, y_te) >= floor
    assert clf.epsilon_spent_ <= epsilon


def test_epsilon_spent_is_the_accountants_value(split):
    X_tr, _, y_tr, _ = split
    clf = DPMLPClassifier(epsilon=2.0, epochs=4, batch_size=64, random_state=0).fit(X_tr, y_tr)
    n = len(X_tr)
    steps = 4 * int(np.ceil(n / 64))
    independent = compute_epsilon(poisson_dpsgd_event(clf.noise_multiplier_, 64 / n, steps),
                                  clf.delta_)
    assert clf.epsilon_spent_ == pytest.approx(independent, rel=1e-9)
    assert 0.99 * 2.0 <= clf.epsilon_spent_ <= 2.0
    assert clf.delta_ == pytest.approx(1 / (10 * n))
    assert clf.privacy_.unit.startswith("node")
    assert [h["epoch"] for h in clf.history_] == [1, 2, 3, 4]
    assert clf.history_[-1]["epsilon"] == pytest.approx(clf.epsilon_spent_)


def test_same_seed_same_model_and_no_global_state_touched(split):
    import torch

    X_tr, X_te, y_tr, _ = split
    state = torch.random.get_rng_state()
    a = DPMLPClassifier(epsilon=4.0, epochs=3, random_state=7).fit(X_tr, y_tr)
    assert torch.equal(state, torch.random.get_rng_state())
    b = DPMLPClassifier(epsilon=4.0, epochs=3, random_state=7).fit(X_tr, y_tr)
    c = DPMLPClassifier(epsilon=4.0, epochs=3, random_state=8).fit(X_tr, y_tr)
    np.testing.assert_array_equal(a.predict_proba(X_te), b.predict_proba(X_te))
    assert not np.array_equal(a.predict_proba(X_te), c.predict_proba(X_te))


def test_non_private_run_reports_infinite_epsilon(split):
    X_tr, _, y_tr, _ = split
    clf = DPMLPClassifier(epsilon=np.inf, epochs=2, random_state=0).fit(X_tr, y_tr)
    assert clf.epsilon_spent_ == np.inf and clf.noise_multiplier_ is None
    assert not clf.privacy_.private


def test_fixed_noise_multiplier_over_budget_fails_closed(split):
    X_tr, _, y_tr, _ = split
    with pytest.raises(PrivacyBudgetError,
                       match="spends epsilon=.* more than the budget epsilon=1"):
        DPMLPClassifier(epsilon=1.0, noise_multiplier=0.5, epochs=5).fit(X_tr, y_tr)
    with pytest.raises(PrivacyBudgetError, match="cannot reach epsilon=1e-05"):
        DPMLPClassifier(epsilon=1e-5, delta=1e-12, epochs=50, batch_size=8).fit(X_tr, y_tr)


def test_grid_search_with_a_privacy_scorer(data):
    def epsilon_spent(estimator, X, y):
        return -estimator.epsilon_spent_

    search = GridSearchCV(
        DPMLPClassifier(epochs=2, random_state=0),
        {"epsilon": [1.0, 4.0]},
        scoring={"accuracy": "accuracy", "epsilon": epsilon_spent},
        refit="accuracy", cv=StratifiedKFold(2),
    ).fit(data.nodes(), data.y)
    spent = -search.cv_results_["mean_test_epsilon"]
    assert spent[0] <= 1.0 and 1.0 < spent[1] <= 4.0
    assert search.best_estimator_.epsilon_spent_ <= 4.0


def test_cross_val_score_pipeline_and_joblib(tmp_path, data):
    scores = cross_val_score(DPMLPClassifier(epsilon=4.0, epochs=2, random_state=0),
                             data.nodes(), data.y, cv=3)
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))
    pipe = Pipeline([("clf", DPMLPClassifier(epsilon=4.0, epochs=2, random_state=0))])
    pipe.fit(data.nodes()[:400], data.y[:400])
    path = tmp_path / "model.joblib"
    joblib.dump(pipe, path)
    loaded = joblib.load(path)
    np.testing.assert_array_equal(loaded.predict(data.nodes()[400:]),
                                  pipe.predict(data.nodes()[400:]))


def test_bad_inputs_name_the_problem(data):
    nodes, y = data.nodes(), data.y
    clf = DPMLPClassifier(epochs=1)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        clf.fit(nodes[:10], y[:9])
    with pytest.raises(ValueError, match="only one class"):
        clf.fit(nodes[:10], np.zeros(10))
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(np.array([[0.0, np.nan], [1.0, 2.0]]), [0, 1])
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(nodes[:2], np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="Unknown label type"):
        clf.fit(nodes[:10], np.linspace(0, 1, 10))
    with pytest.raises(ValueError, match="0 nodes"):
        clf.fit(nodes[np.zeros(len(nodes), dtype=bool)], np.array([]))
    with pytest.raises(TypeError, match="Graph.from_pyg"):
        from torch_geometric.data import Data
        import torch
        clf.fit(Data(x=torch.zeros(3, 2), edge_index=torch.zeros(
            2, 0, dtype=torch.long)), [0, 1, 0])
    fitted = DPMLPClassifier(epochs=1, random_state=0).fit(nodes[:100], y[:100])
    with pytest.raises(ValueError, match="never seen in fit: \\[9\\]"):
        fitted.score(nodes[100:110], np.full(10, 9))
    other = Graph(np.zeros((2, 0), dtype=int), np.zeros((5, 3)))
    with pytest.raises(ValueError, match="X has 3 features, but DPMLPClassifier is expecting 16"):
        fitted.predict(other.nodes())
    with pytest.raises(ValueError, match="'epsilon' parameter of DPMLPClassifier"):
        DPMLPClassifier(epsilon=0).fit(nodes[:10], y[:10])


def test_callers_arrays_are_not_mutated():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = np.repeat([2, 5, 7], 20)
    X_copy, y_copy = X.copy(), y.copy()
    clf = DPMLPClassifier(epsilon=4.0, epochs=2, random_state=0).fit(X, y)
    clf.predict(X)
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(y, y_copy)
    assert set(clf.predict(X)) <= {2, 5, 7}


def test_non_private_mlp_stops_early_on_held_out_nodes_and_beats_the_private_one():
    # The demo's graph: without early stopping the non-private MLP overfitted (0.517 against
    # 0.623 for DP-MLP at epsilon=4).
    from sklearn.model_selection import train_test_split

    from skdpgraph.datasets import make_csbm

    data = make_csbm(random_state=0)
    X_tr, X_te, y_tr, y_te = train_test_split(data.nodes(), data.y, test_size=0.3,
                                              stratify=data.y, random_state=0)
    plain = DPMLPClassifier(epsilon=np.inf, random_state=0).fit(X_tr, y_tr)
    scores = [r["validation_accuracy"] for r in plain.history_]
    assert None not in scores and len(scores) == 50
    assert plain._plan_.num_examples == len(y_tr) - int(np.ceil(0.1 * len(y_tr)))
    private = DPMLPClassifier(epsilon=4.0, random_state=0).fit(X_tr, y_tr)
    assert all(r["validation_accuracy"] is None for r in private.history_)
    assert private._plan_.num_examples == len(y_tr)
    assert plain.score(X_te, y_te) >= private.score(X_te, y_te)
    with pytest.raises(ValueError, match="validation_fraction=0.2 would select epochs"):
        DPMLPClassifier(epsilon=4.0, validation_fraction=0.2).fit(X_tr, y_tr)
