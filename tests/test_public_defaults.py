"""Defaults and budgets come from public quantities only.

The default delta and RGNN's feature encoding are kept in the fitted (pickled) estimator;
each attack fits two inputs that differ in one protected unit and compares what the
unpickled estimators hold, next to a deliberately broken variant (``monkeypatch``) that
the attack must catch. Budgets given as NumPy scalars plan exactly as Python floats.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from skdpgraph import GAPClassifier, ProGAPClassifier, RGNNClassifier
from skdpgraph.datasets import make_csbm
from skdpgraph.graph import Graph
from tests._fast_estimators import FAST, make


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=120, n_classes=3, n_features=6, random_state=0)


def _one_edge_apart(data) -> tuple[Graph, Graph]:
    """The CSBM graph and the same graph without its first undirected edge."""
    edges = data.graph.edge_index
    u, v = edges[:, 0]
    keep = ~(((edges[0] == u) & (edges[1] == v)) | ((edges[0] == v) & (edges[1] == u)))
    return data.graph, Graph(edges[:, keep], data.graph.x)


def _unpickled(est):
    return pickle.loads(pickle.dumps(est))


def _old_edge_count_rule(monkeypatch) -> None:
    """Broken variant: the default delta counts the protected edges themselves."""
    def edges(self, nodes):
        g = nodes.graph
        return g.num_nodes if self._node_unit else g.num_edges // (1 if g.directed else 2)

    monkeypatch.setattr(GAPClassifier, "_protected_units", edges)


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.parametrize("cls", [GAPClassifier, ProGAPClassifier])
def test_edge_level_default_delta_is_the_same_for_graphs_one_edge_apart(
        cls, broken, data, monkeypatch):
    """Two graphs one edge apart: the pickled ``delta_`` and the calibrated noise are
    identical, so a saved model does not reveal the number of edges."""
    if broken:
        _old_edge_count_rule(monkeypatch)
    index = np.arange(0, 120, 2)
    fitted = []
    for graph in _one_edge_apart(data):
        assert graph.num_nodes == 120
        est = cls(epsilon=2.0, hops=1, hidden_dim=4, epochs=1, encoder_epochs=1,
                  random_state=0).fit(graph.nodes(index), data.y[index])
        fitted.append(_unpickled(est))
    a, b = fitted
    same = (a.delta_ == b.delta_ and a.noise_multiplier_ == b.noise_multiplier_
            and a.privacy_.delta == b.privacy_.delta)
    assert same != broken, (a.delta_, b.delta_, a.noise_multiplier_, b.noise_multiplier_)
    if not broken:
        edges = data.graph.num_edges // 2
        assert a.delta_ < 1 / edges and a.delta_ == pytest.approx(1 / (10 * 120 * 119 / 2))
        assert any("number of nodes" in s and "possible" in s for s in a.privacy_.assumptions)


#: What each estimator's report says about the count its default delta reads.
_COUNT_STATED = {"DPMLP": "number of training nodes", "GAP-node": "number of nodes sets the "
                 "default delta", "ProGAP-node": "number of nodes sets the default delta",
                 "FDP": "number of nodes (N=120) is public", "DRW": "graph structure",
                 "GAP-edge": "public number of nodes", "ProGAP-edge": "public number of nodes"}


@pytest.mark.parametrize("name", sorted(_COUNT_STATED))
def test_the_count_behind_the_default_delta_is_stated_public(name, data):
    index = np.arange(0, 120, 2)
    est = make(name, random_state=0).fit(data.graph.nodes(index), data.y[index])
    stated = [a for a in est.privacy_.assumptions if _COUNT_STATED[name] in a]
    assert stated and "public" in stated[0], est.privacy_.assumptions
    explicit = make(name, random_state=0, delta=1e-6).fit(data.graph.nodes(index), data.y[index])
    assert explicit.delta_ == 1e-6


# ---------------------------------------------------------------------------- numpy budgets
@pytest.mark.parametrize("name", [name for name in FAST if name != "FDP-private"])
def test_numpy_scalar_epsilon_is_the_same_budget(name, data):
    """``epsilon=np.float32(4)`` plans and spends as ``epsilon=4.0`` for every estimator."""
    index = np.arange(0, 120, 2)
    X, y = data.graph.nodes(index), data.y[index]
    budget = 4.0
    scalar = make(name, random_state=0, epsilon=np.float32(budget)).fit(X, y)
    plain = make(name, random_state=0, epsilon=budget).fit(X, y)
    assert scalar.epsilon_spent_ == plain.epsilon_spent_ <= budget
    assert type(scalar.get_params()["epsilon"]) is np.float32  # the parameter as given


# ---------------------------------------------------------------------------- RGNN's schema
def _binary_graphs(data) -> tuple[Graph, Graph]:
    """Binary features, and the same with one node's first feature set to 0.5."""
    x = (data.graph.x > 0).astype(np.float64)
    changed = x.copy()
    changed[7, 0] = 0.5
    return Graph(data.graph.edge_index, x), Graph(data.graph.edge_index, changed)


def _schema(est) -> tuple:
    """What a saved RGNN holds of the feature encoding."""
    encoder = est.feature_encoder_
    return (tuple(est.domain_sizes_), tuple(sorted(encoder.get_params().items())),
            None if getattr(encoder, "bin_edges_", None) is None else encoder.bin_edges_.tobytes(),
            est.module_.state_dict()[next(iter(est.module_.state_dict()))].shape)


def _schema_read_from_the_data(monkeypatch) -> None:
    """Broken variant: binary or binned is decided by the raw values, as if auto-detected."""
    from skdpgraph.preprocessing import _randomizers

    original = _randomizers.feature_schema

    def detect(x, **kwargs):
        values = x.data if hasattr(x, "data") and not isinstance(x, np.ndarray) else x
        binary = bool(np.all((values == 0) | (values == 1)))
        return original(x, **{**kwargs, "feature_type": "binary" if binary else "continuous"})

    monkeypatch.setattr("skdpgraph.estimators._rgnn.feature_schema", detect)


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.parametrize("feature_type", ["binary", "continuous"])
def test_rgnn_encoding_does_not_depend_on_one_nodes_value(feature_type, broken, data,
                                                          monkeypatch):
    """Two datasets one node's value apart: the pickled encoding is the same, or the
    stated schema refuses the value by name; never a schema read from the data."""
    if broken:
        _schema_read_from_the_data(monkeypatch)
    index = np.arange(0, 120, 2)
    outcomes = []
    for graph in _binary_graphs(data):
        est = RGNNClassifier(feature_type=feature_type, num_sampled_features=2, epochs=1,
                             ensemble_size=1, feature_hops=1, label_hops=0, num_clusters=2,
                             random_state=0)
        try:
            outcomes.append(_schema(_unpickled(est.fit(graph.nodes(index), data.y[index]))))
        except ValueError as error:
            assert "feature_type='binary'" in str(error) and "0.5" in str(error)
            assert "X[7, 0]" in str(error) and "RGNNClassifier" in str(error)
            outcomes.append("refused")
    first, second = outcomes
    consistent = first == second or (second == "refused" and feature_type == "binary")
    assert consistent != broken, outcomes


def test_rgnn_binary_schema_refuses_a_non_binary_value_at_predict(data):
    binary, changed = _binary_graphs(data)
    est = RGNNClassifier(num_sampled_features=2, epochs=1, ensemble_size=1, feature_hops=1,
                         label_hops=0, num_clusters=2, random_state=0)
    est.fit(binary.nodes(np.arange(60)), data.y[:60])
    assert any("feature_type='binary'" in a for a in est.privacy_.assumptions)
    with pytest.raises(ValueError, match=r"feature_type='binary'.*X\[7, 0\] = 0.5"):
        est.predict(changed.nodes(np.arange(60, 120)))
