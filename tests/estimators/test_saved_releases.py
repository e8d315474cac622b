"""Saved estimators reuse the releases paid for in fit: on the graph they were fitted on, a
reloaded estimator predicts as the live one did, at no cost; which release serves a graph is
decided by the user's mark after public checks, never by a hash of the graph's content."""

import io
import pickle

import joblib
import numpy as np
import pytest

from skdpgraph import GAPClassifier, Graph, ProGAPClassifier
from skdpgraph.datasets import make_csbm
from skdpgraph.estimators._base import BaseDPClassifier

FAST = dict(epochs=2, encoder_epochs=2, hidden_dim=8, random_state=0)
CONFIGURATIONS = {
    "GAP edge": (GAPClassifier, dict(unit="edge")),
    "GAP node": (GAPClassifier, dict(unit="node")),
    "GAP node trained head": (GAPClassifier, dict(unit="node", head="trained")),
    "ProGAP edge": (ProGAPClassifier, dict(unit="edge")),
    "ProGAP node": (ProGAPClassifier, dict(unit="node")),
}


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=150, n_classes=3, n_features=6, random_state=0)


def _fit(name, data, **extra):
    cls, params = CONFIGURATIONS[name]
    return cls(epsilon=4.0, **params, **{**FAST, **extra}).fit(data.nodes()[:100], data.y[:100])


def _rebuilt(graph):
    """The same graph read again (from files, say): same content, a new object and uid."""
    return Graph(np.array(graph.edge_index), np.array(graph.x), directed=graph.directed)


def _joblib_round_trip(estimator):
    buffer = io.BytesIO()
    joblib.dump(estimator, buffer)
    buffer.seek(0)
    return joblib.load(buffer), buffer.getvalue()


@pytest.mark.parametrize("name", CONFIGURATIONS)
def test_a_marked_rebuilt_graph_gets_the_fit_time_predictions_at_no_cost(name, data):
    clf = _fit(name, data, random_state=None)  # unseeded: a new release could not match
    live = clf.predict_proba(data.nodes()[100:])
    assert clf.privacy_.releases == ()
    loaded, _ = _joblib_round_trip(clf)
    graph = _rebuilt(data.graph)
    assert loaded.mark_fitted_graph(graph) is loaded
    np.testing.assert_array_equal(loaded.predict_proba(graph.nodes()[100:]), live)
    assert loaded.score(graph.nodes()[100:], data.y[100:]) == clf.score(
        data.nodes()[100:], data.y[100:])
    assert loaded.privacy_.releases == ()
    assert loaded.privacy_.total_epsilon == clf.epsilon_spent_
    # Unmarked, the rebuilt graph is a new graph: a new release, recorded.
    loaded.predict_proba(_rebuilt(data.graph).nodes()[100:])
    assert len(loaded.privacy_.releases) == 1


@pytest.mark.parametrize("name", ["GAP node", "ProGAP node"])
def test_node_level_defaults_predict_alike_after_unpickling(name, data):
    clf = _fit(name, data, random_state=None)
    live = clf.predict_proba(data.nodes()[100:])
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict_proba(data.nodes()[100:]), live)
    assert restored.privacy_.releases == ()


def _content_hashes(graph):
    """Byte strings by which a pickle would hold the graph's content hash."""
    digest = graph.fingerprint()
    return [digest.encode(), bytes.fromhex(digest)]


def _holds_a_content_hash(blob, graph):
    return any(pattern in blob for pattern in _content_hashes(graph))


def _keeping_fingerprints(self):  # the broken variant: the cache pickled as it is in memory
    return dict(super(BaseDPClassifier, self).__getstate__())


@pytest.mark.parametrize("name", ["GAP edge", "GAP node"])
def test_a_saved_marked_estimator_holds_no_hash_of_the_graph(name, data, monkeypatch):
    clf = _fit(name, data)
    graph = _rebuilt(data.graph)
    clf.mark_fitted_graph(graph).predict(graph.nodes()[100:])
    clf.predict(Graph(np.zeros((2, 0), dtype=int), data.graph.x).nodes()[:5])  # a new release
    loaded, blob = _joblib_round_trip(clf)
    assert not _holds_a_content_hash(blob, data.graph)
    assert not _holds_a_content_hash(pickle.dumps(clf), data.graph)
    # A reloaded estimator serves the marked graph without any content check.
    loaded.mark_fitted_graph(_rebuilt(data.graph)).predict(data.nodes()[100:])
    assert len(loaded.privacy_.releases) == len(clf.privacy_.releases)
    # The broken variant that pickles the cache as it is in memory is caught.
    monkeypatch.setattr(BaseDPClassifier, "__getstate__", _keeping_fingerprints)
    assert _holds_a_content_hash(_joblib_round_trip(clf)[1], data.graph)


@pytest.mark.parametrize("change, message", [
    (lambda g: Graph(g.edge_index, np.vstack([g.x, g.x[:1]])), "151 nodes, the fitted graph 150"),
    (lambda g: Graph(g.edge_index, g.x[:, :5]), "5 features, the fitted graph 6"),
    (lambda g: Graph(g.edge_index, g.x, directed=True), "directed, the fitted graph undirected"),
], ids=["one node more", "one feature fewer", "directed"])
def test_marking_a_graph_of_other_public_sizes_is_refused(change, message, data):
    clf = _fit("GAP edge", data)
    other = change(data.graph)
    with pytest.raises(ValueError, match=f"mark_fitted_graph: .*{message}"):
        clf.mark_fitted_graph(other)
    assert other.uid not in getattr(clf, "_fitted_graph_uids_", [])
    with pytest.raises(TypeError, match="must be a skdpgraph.Graph or Nodes"):
        clf.mark_fitted_graph(np.asarray(data.graph.x))


def test_marks_are_forgotten_by_a_new_fit(data):
    clf = _fit("GAP edge", data)
    edgeless = Graph(np.zeros((2, 0), dtype=int), data.graph.x)  # the same public sizes
    clf.mark_fitted_graph(edgeless.nodes()[:3])  # Nodes name their graph
    clf.predict(edgeless.nodes()[100:])
    assert clf.privacy_.releases == ()  # the user's choice: the fit's release serves it
    clf.fit(data.nodes()[:100], data.y[:100])
    clf.predict(edgeless.nodes()[100:])
    assert len(clf.privacy_.releases) == 1  # a new fit forgets the mark
