"""GAPClassifier: accounting, caching of the noisy aggregations, the scikit-learn contract."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from opacus.accountants.analysis.rdp import compute_rdp as opacus_rdp
from opacus.accountants.analysis.rdp import get_privacy_spent
from scipy.stats import norm
from sklearn.model_selection import GridSearchCV

from skdpgraph import GAPClassifier, Graph, PrivacyBudgetError
from skdpgraph.datasets import make_csbm

FAST = dict(epochs=5, encoder_epochs=5, hidden_dim=8, random_state=0)


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=300, n_classes=3, n_features=8, random_state=0)


def _split(data):
    nodes = data.nodes()
    return nodes[:200], data.y[:200], nodes[200:], data.y[200:]


def _analytic_delta(multiplier, epsilon):
    a = 1.0 / (2.0 * multiplier)
    return norm.cdf(a - epsilon * multiplier) - np.exp(epsilon) * norm.cdf(-a - epsilon * multiplier)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0, 8.0])
@pytest.mark.parametrize("hops", [1, 3])
def test_edge_level_epsilon_is_the_analytic_gaussian_bound(data, epsilon, hops):
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=epsilon, hops=hops, **FAST).fit(X, y)
    graph = data.graph
    assert clf.delta_ == pytest.approx(1 / (10 * graph.num_edges / 2))
    assert clf.sensitivity_ == pytest.approx(np.sqrt(2))
    assert clf.epsilon_spent_ <= epsilon
    multiplier = clf.noise_multiplier_ / np.sqrt(hops)  # K Gaussians = one Gaussian
    assert _analytic_delta(multiplier, clf.epsilon_spent_) <= clf.delta_ * (1 + 1e-8)
    assert _analytic_delta(multiplier, clf.epsilon_spent_ * 0.999) > clf.delta_
    assert "edge" in clf.privacy_.unit and clf.privacy_.dp_event is not None


def test_directed_graph_protects_one_directed_edge(data):
    graph = Graph(data.graph.edge_index, data.graph.x, directed=True)
    clf = GAPClassifier(epsilon=2.0, **FAST).fit(graph.nodes()[:200], data.y[:200])
    assert clf.sensitivity_ == 1.0 and "directed edge" in clf.privacy_.unit
    assert clf.delta_ == pytest.approx(1 / (10 * graph.num_edges))


@pytest.mark.parametrize("epsilon", [2.0, 8.0, 16.0])
def test_node_level_epsilon_is_the_by_hand_rdp_sum(data, epsilon):
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=epsilon, privacy_level="node", hops=2, max_degree=20,
                        batch_size=50, epochs=3, encoder_epochs=2, hidden_dim=8,
                        random_state=0).fit(X, y)
    sigma, n = clf.noise_multiplier_, 200
    assert clf.sensitivity_ == pytest.approx(np.sqrt(20))
    assert clf.delta_ == pytest.approx(1 / (10 * data.graph.num_nodes))
    orders = np.arange(2, 128, dtype=float)
    q, steps_per_epoch = 50 / n, 4
    rdp = (opacus_rdp(q=q, noise_multiplier=sigma, steps=2 * steps_per_epoch, orders=orders)
           + 2 * orders / (2 * sigma**2)
           + opacus_rdp(q=q, noise_multiplier=sigma, steps=3 * steps_per_epoch, orders=orders))
    by_hand, _ = get_privacy_spent(orders=orders, rdp=rdp, delta=clf.delta_)
    # dp-accounting also uses fractional orders, so its bound can only be tighter.
    assert clf.epsilon_spent_ <= by_hand * (1 + 1e-6)
    assert clf.epsilon_spent_ == pytest.approx(by_hand, rel=0.05)
    assert 0.98 * epsilon <= clf.epsilon_spent_ <= epsilon
    assert any("out-degree" in a for a in clf.privacy_.assumptions)


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=1e-7, delta=1e-10), "cannot reach epsilon=1e-07"),
    (dict(epsilon=1e-7, delta=1e-12, privacy_level="node"), "cannot reach epsilon=1e-07"),
])
def test_impossible_budgets_raise(data, kwargs, match):
    X, y, _, _ = _split(data)
    with pytest.raises(PrivacyBudgetError, match=match):
        GAPClassifier(**{**FAST, **kwargs}).fit(X, y)


@pytest.mark.parametrize("level", ["edge", "node"])
def test_predict_on_the_fitted_graph_reuses_the_cached_release(data, level):
    X, y, X_test, _ = _split(data)
    clf = GAPClassifier(epsilon=4.0, privacy_level=level, **FAST).fit(X, y)
    report = clf.privacy_
    first = clf.predict_proba(X_test)
    np.testing.assert_array_equal(first, clf.predict_proba(X_test))
    assert clf.privacy_ is report and report.releases == ()
    assert clf.aggregations_.shape == (data.graph.num_nodes, 2, 8)
    torch.testing.assert_close(clf.aggregations_.norm(dim=-1), torch.ones(300, 2))


def test_predict_on_a_new_graph_is_a_recorded_release(data):
    X, y, X_test, _ = _split(data)
    clf = GAPClassifier(epsilon=4.0, **FAST).fit(X, y)
    other = make_csbm(n_nodes=100, n_classes=3, n_features=8, random_state=1)
    proba = clf.predict_proba(other.nodes())
    (release,) = clf.privacy_.releases
    assert release["graph_uid"] == other.graph.uid
    assert release["epsilon"] == pytest.approx(clf.epsilon_spent_)
    np.testing.assert_array_equal(proba, clf.predict_proba(other.nodes()))  # cached: no 2nd
    assert len(clf.privacy_.releases) == 1
    clf.predict(X_test)  # the fitted graph is still served from its cache
    assert len(clf.privacy_.releases) == 1


def test_keeps_no_raw_graph_data(data):
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=4.0, **FAST).fit(X, y)
    for value in vars(clf).values():
        assert not isinstance(value, (Graph, np.ndarray)) or value is clf.classes_
        assert not sp.issparse(value)
    assert data.graph.uid in clf._released  # keyed by id only


def test_gap_uses_the_graph(data):
    X, y, X_test, y_test = _split(data)
    kw = dict(epochs=60, encoder_epochs=60, random_state=0)
    gap = GAPClassifier(epsilon=np.inf, **kw).fit(X, y).score(X_test, y_test)
    edgeless = Graph(np.zeros((2, 0), dtype=int), data.graph.x)
    mlp = GAPClassifier(epsilon=np.inf, **kw).fit(edgeless.nodes()[:200], y).score(
        edgeless.nodes()[200:], y_test)
    assert gap > 0.9 and gap > mlp + 0.05


def test_grid_search_and_pickle(data):
    nodes, y = data.nodes(), data.y
    search = GridSearchCV(GAPClassifier(**FAST), {"hops": [1, 2], "epsilon": [1.0, np.inf]},
                          cv=2).fit(nodes, y)
    assert search.best_params_["hops"] in (1, 2)
    clf = search.best_estimator_
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(clf.predict(nodes), restored.predict(nodes))
    assert restored.privacy_ == clf.privacy_


def test_validation_fraction_keeps_the_best_epoch_at_edge_level_only(data):
    from sklearn.model_selection import train_test_split

    from skdpgraph._random import make_seeds

    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=4.0, validation_fraction=0.25, **{**FAST, "epochs": 15}).fit(X, y)
    _, held = train_test_split(np.arange(200), test_size=0.25, stratify=y,
                               random_state=make_seeds(0).seed)
    scores = [r["validation_accuracy"] for r in clf.history_["classifier"]]
    assert len(scores) == 15 and clf.score(X[held], y[held]) == pytest.approx(max(scores))
    with pytest.raises(ValueError, match="only allowed at privacy_level='edge'"):
        GAPClassifier(privacy_level="node", validation_fraction=0.1, **FAST).fit(X, y)
