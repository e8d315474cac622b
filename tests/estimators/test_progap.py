"""ProGAPClassifier: progressive stages, GAP's accounting, releases after fit."""

import pickle

import numpy as np
import pytest
import torch

from skdpgraph import GAPClassifier, ProGAPClassifier
from skdpgraph.datasets import make_csbm
from skdpgraph.nn import ProgressiveStage


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=400, random_state=0)


def _fit(data, **params):
    params = {"epsilon": 4.0, "epochs": 30, "encoder_epochs": 30, "random_state": 0, **params}
    return ProGAPClassifier(**params).fit(data.nodes()[:300], data.y[:300])


def test_stages_and_accounting_match_gap_at_edge_level(data):
    clf = _fit(data, hops=3)
    assert isinstance(clf.module_, ProgressiveStage) and len(clf.stages_) == 2
    stages = [record["stage"] for record in clf.history_]
    assert sorted(set(stages)) == ["stage 0", "stage 1", "stage 2", "stage 3"]
    assert stages == sorted(stages)
    gap = GAPClassifier(epsilon=4.0, hops=3, epochs=30, encoder_epochs=30,
                        random_state=0).fit(data.nodes()[:300], data.y[:300])
    # Edge level: the same K Gaussians at the same sigma, hence the same epsilon.
    assert clf.noise_multiplier_ == gap.noise_multiplier_
    assert clf.epsilon_spent_ == pytest.approx(gap.epsilon_spent_)
    assert clf.epsilon_spent_ <= 4.0
    assert "ProGAP" in clf.privacy_.mechanism
    running = [record["epsilon"] for record in clf.history_]
    assert running == sorted(running) and running[-1] == pytest.approx(clf.epsilon_spent_)
    assert clf.score(data.nodes()[300:], data.y[300:]) > 0.7  # chance: 0.25


def test_node_level_spends_the_budget_over_all_stages(data):
    clf = _fit(data, unit="node", epsilon=8.0, hops=2, epochs=3, encoder_epochs=3,
               batch_size=64, max_degree=10)
    gap = GAPClassifier(unit="node", epsilon=8.0, hops=2, epochs=3, encoder_epochs=3,
                        batch_size=64, max_degree=10, random_state=0).fit(
        data.nodes()[:300], data.y[:300])
    assert 0.99 * 8.0 <= clf.epsilon_spent_ <= 8.0
    # Three DP-SGD runs instead of two: more noise for the same budget.
    assert clf.noise_multiplier_ > gap.noise_multiplier_
    assert "K+1 stage DP-SGD runs" in clf.privacy_.accountant


def test_predict_reuses_the_fit_release_and_pays_for_new_graphs(data):
    clf = _fit(data, hops=2)
    proba = clf.predict_proba(data.nodes()[300:])
    assert clf.privacy_.releases == ()  # the fitted graph: the release paid in fit
    np.testing.assert_allclose(proba, clf.predict_proba(data.nodes()[300:]))
    other = make_csbm(n_nodes=200, random_state=1)
    first = clf.predict_proba(other.nodes())
    second = clf.predict_proba(make_csbm(n_nodes=200, random_state=1).nodes())
    np.testing.assert_allclose(first, second)  # same content: the cached new release
    assert len(clf.privacy_.releases) == 1
    cost = clf.privacy_.releases[0]
    assert cost["epsilon"] == pytest.approx(clf._plan_.release_epsilon(clf.delta_))


def test_releases_on_new_graphs_draw_fresh_noise(data):
    clf = _fit(data, hops=2, random_state=None)
    from skdpgraph import Graph

    graph = make_csbm(n_nodes=200, random_state=1).graph
    x = graph.features(np.arange(200)).copy()
    x[0, 0] += 1.0  # another graph: a second release
    edited = Graph(graph.edge_index, x)
    a = clf.predict_proba(graph.nodes(np.arange(100, 200)))
    b = clf.predict_proba(edited.nodes(np.arange(100, 200)))
    assert len(clf.privacy_.releases) == 2
    assert not np.allclose(a, b, atol=1e-4)  # not only the edited node's neighbourhood


def test_pickled_model_predicts_the_same_on_the_fitted_graph(data):
    clf = _fit(data, hops=2)
    expected = clf.predict(data.nodes()[300:])
    loaded = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(loaded.predict(data.nodes()[300:]), expected)
    assert loaded.privacy_.releases == ()


def test_non_private_progap_is_at_least_as_good_as_the_encoder_alone(data):
    clf = _fit(data, epsilon=np.inf, hops=2)
    encoder = clf.encoder_.eval()
    with torch.no_grad():
        alone = encoder(torch.from_numpy(data.graph.features(np.arange(300, 400)))).argmax(-1)
    encoder_accuracy = float((alone.numpy() == data.y[300:]).mean())
    assert clf.score(data.nodes()[300:], data.y[300:]) >= encoder_accuracy


def test_with_one_hop_progap_is_gap(data):
    """Stage 1 is GAP's classification module on [own embedding, aggregation]: with one hop
    the two estimators build the same networks from the same streams (no extra layer)."""
    params = dict(epsilon=4.0, hops=1, epochs=30, encoder_epochs=30, random_state=0)
    progap = ProGAPClassifier(**params).fit(data.nodes()[:300], data.y[:300])
    gap = GAPClassifier(**params).fit(data.nodes()[:300], data.y[:300])
    assert progap.module_.head is None
    assert ([p.shape for p in progap.module_.parameters()]
            == [p.shape for p in gap.module_.parameters()])
    np.testing.assert_allclose(progap.predict_proba(data.nodes()[300:]),
                               gap.predict_proba(data.nodes()[300:]), rtol=1e-5, atol=1e-6)


def test_aggregated_embeddings_come_from_an_embedding_layer(data):
    clf = _fit(data, hops=2, aggregate="embeddings", hidden_dim=8)
    (stage,) = clf.stages_
    rows = torch.zeros(5, 2, 8)
    assert stage.embed(rows).shape == (5, 8) and stage(rows).shape == (5, 4)
    assert clf.module_.head is None  # the last stage's embedding is never aggregated
    with pytest.raises(RuntimeError, match="embedding=True"):
        clf.module_.embed(torch.zeros(5, 3, 8))


def test_node_level_stages_have_the_dp_mlp_shape_and_the_last_trains_longest(data):
    clf = ProGAPClassifier(epsilon=8.0, unit="node", random_state=0).fit(
        data.nodes()[:300], data.y[:300])
    plan = clf._plan_
    assert clf.encoder_.body.layers[0].out_features == 64
    assert sum(isinstance(m, torch.nn.Linear) for m in clf.encoder_.body.modules()) == 1
    # Batches of 1024 (here all 300 training nodes): one step per epoch.
    assert (plan.classifier.batch_size, plan.classifier.steps) == (300, 50)
    assert (plan.encoder.batch_size, plan.encoder.steps) == (300, 20)
    edge = ProGAPClassifier(epsilon=4.0)
    edge._checked_plan(data.nodes()[:300], data.y[:300])  # resolves the defaults, no training
    assert (edge.epochs_, edge.encoder_epochs_) == (100, 100)  # edge level: GAP's
