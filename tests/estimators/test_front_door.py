"""DPNodeClassifier: the unit picks the estimator; a normal estimator otherwise."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV

from skdpgraph import DPNodeClassifier, Graph
from skdpgraph.datasets import make_csbm
from skdpgraph.estimators._front_door import choose


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=300, random_state=0)


@pytest.mark.parametrize("unit,expected,unit_word", [
    ("edge", "NeighbourVoteClassifier", "edge"), ("node", "DPMLPClassifier", "node"),
    ("features", "DRWClassifier", "node"), ("local", "RGNNClassifier", "local")])
def test_each_unit_fits_its_chosen_estimator_and_says_why(unit, expected, unit_word, data):
    epsilon = 13.0 if unit == "local" else 4.0
    graph, y = data.graph, data.y
    if unit == "local":  # RGNN's default schema: binary (bag-of-words) features
        graph = Graph(graph.edge_index, (graph.x > 0).astype(float))
    clf = DPNodeClassifier(unit=unit, epsilon=epsilon, random_state=0)
    clf.fit(graph.nodes()[:200], y[:200])
    assert type(clf.estimator_).__name__ == expected
    assert clf.privacy_.choice == clf.choice_ == choose(unit, epsilon).reason
    assert clf.privacy_.choice.startswith(expected)
    assert unit_word in clf.privacy_.unit
    assert clf.epsilon_spent_ == clf.estimator_.epsilon_spent_ <= epsilon
    np.testing.assert_array_equal(clf.predict(graph.nodes()[200:]),
                                  clf.estimator_.predict(graph.nodes()[200:]))
    assert clf.score(graph.nodes()[200:], y[200:]) > 0.5


def test_releases_after_fit_show_in_the_report(data):
    clf = DPNodeClassifier(unit="edge", epsilon=4.0, random_state=0)
    clf.fit(data.nodes()[:200], data.y[:200])
    other = make_csbm(n_nodes=100, random_state=1)
    clf.predict(other.nodes())
    assert len(clf.privacy_.releases) == 1
    assert clf.privacy_.total_epsilon > clf.epsilon_spent_


def test_clone_and_search_over_epsilon(data):
    clf = DPNodeClassifier(unit="node", random_state=0)
    assert clone(clf).get_params() == clf.get_params()
    search = GridSearchCV(clf, {"epsilon": [1.0, 8.0]}, cv=2).fit(data.nodes()[:200],
                                                                  data.y[:200])
    assert search.best_params_["epsilon"] in (1.0, 8.0)
    assert search.best_estimator_.epsilon_spent_ <= search.best_params_["epsilon"]


def test_a_failed_fit_leaves_it_unfitted(data):
    clf = DPNodeClassifier(unit="node", epsilon=4.0, random_state=0)
    clf.fit(data.nodes()[:200], data.y[:200])
    with pytest.raises(ValueError, match="classes"):
        clf.fit(data.nodes()[:200], np.zeros(200))  # one class
    assert not [k for k in vars(clf) if k.endswith("_")]
    with pytest.raises(NotFittedError):
        clf.predict(data.nodes()[200:])
    with pytest.raises(NotFittedError):
        clf.privacy_  # noqa: B018
    with pytest.raises(ValueError, match=r"'unit' parameter of DPNodeClassifier must be .*"
                                         r"Got 'street'"):
        DPNodeClassifier(unit="street").fit(data.nodes()[:200], data.y[:200])


def test_works_on_a_plain_graph_with_public_classes():
    graph = Graph([[0, 1, 2, 3], [1, 2, 3, 0]], np.eye(4, dtype=np.float32))
    clf = DPNodeClassifier(unit="node", epsilon=np.inf, classes=[0, 1, 2], random_state=0)
    clf.fit(graph.nodes([0, 1, 2, 3]), [0, 1, 0, 1])
    np.testing.assert_array_equal(clf.classes_, [0, 1, 2])
    assert clf.predict_proba(graph.nodes([0])).shape == (1, 3)
