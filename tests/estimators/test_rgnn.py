"""Tests for RGNNClassifier: accounting, seeding (randomize=False equivalence), predict."""

import pickle

import numpy as np
import pytest
import torch
from sklearn import config_context

import skdpgraph.estimators._rgnn as rgnn_module
import skdpgraph.estimators._rgnn_labels as labels_module
import skdpgraph.preprocessing._randomizers as randomizers_module
import skdpgraph.privacy._local_plans as local_module
from skdpgraph import Graph, PrivacyBudgetError, RGNNClassifier
from skdpgraph.datasets import make_csbm
from skdpgraph.preprocessing import (CategoricalFeatureEncoder, GRRFeatureRandomizer,
                                     GRRLabelRandomizer)
from skdpgraph.privacy import grr_fs_paper_epsilon
from tests._replay import Replay, kept_integers

FAST = dict(epochs=15, feature_hops=4, label_hops=2, num_clusters=8)


@pytest.fixture(scope="module")
def binary_data():
    """A csbm graph with binary features (sign of the Gaussian features), 400 nodes."""
    data = make_csbm(n_nodes=400, n_features=40, random_state=0)
    graph = Graph(data.graph.edge_index, (data.graph.features() > 0).astype(np.float32))
    train = np.arange(0, 400, 2)
    return graph, data.y, train


def test_epsilon_and_report(binary_data):
    graph, y, train = binary_data
    clf = RGNNClassifier(epsilon=5.0, epsilon_labels=2.0, num_sampled_features=6,
                         feature_group_size=4, random_state=0, **FAST).fit(graph.nodes(train),
                                                                           y[train])
    assert clf.num_sampled_features_ == 6 and clf.domain_sizes_.tolist() == [2] * 10
    assert clf.epsilon_per_feature_ == pytest.approx(0.5)  # the rest, (5 - 2) / 6
    assert clf.epsilon_spent_ == pytest.approx(6 * 0.5 + 2.0)
    assert clf.delta_ == 0.0 and clf.privacy_.epsilon == clf.epsilon_spent_
    assert clf.privacy_.unit.startswith("local")
    paper = grr_fs_paper_epsilon(10, 6, 0.5)
    assert paper < 3.0 and f"{paper:.4g}" in clf.privacy_.events[0]
    assert clf.reconstructed_x_.shape == (400, 10)


def test_m_is_capped_at_the_number_of_features(binary_data):
    graph, y, train = binary_data
    clf = RGNNClassifier(num_sampled_features=100, feature_group_size=10, random_state=0,
                         **FAST).fit(graph.nodes(train), y[train])
    # the split uses the capped m: the features' 10/13 of epsilon go to 4 features
    assert clf.num_sampled_features_ == 4 and clf.epsilon_spent_ == pytest.approx(13.0)
    assert (clf.epsilon_per_feature_, clf.epsilon_labels_) == pytest.approx((10 / 4, 3.0))


@pytest.mark.parametrize("label_hops", [2, "auto"])
def test_randomize_false_on_prerandomised_data_gives_the_same_model(binary_data, label_hops):
    # With "auto" the rounds are chosen on held-out reports: the server, which holds only
    # the reports, makes the same choice as the simulated fit.
    graph, y, train = binary_data
    params = dict(epsilon=6.0, epsilon_labels=1.0, num_sampled_features=5,  # eps_x = 1
                  random_state=7, **{**FAST, "label_hops": label_hops})
    direct = RGNNClassifier(feature_group_size=2, **params).fit(graph.nodes(train), y[train])
    # The clients, with the same seed:
    codes = CategoricalFeatureEncoder(group_size=2).fit_transform(graph.x)
    reports = GRRFeatureRandomizer(epsilon_per_feature=1.0, n_sampled_features=5,
                                   random_state=7).fit_transform(codes)
    noisy_y = GRRLabelRandomizer(epsilon=1.0, random_state=7).fit_transform(y[train])
    assert (noisy_y != y[train]).any()
    reported = Graph(graph.edge_index, reports)
    server = RGNNClassifier(randomize=False, **params).fit(reported.nodes(train), noisy_y)
    np.testing.assert_array_equal(direct.reconstructed_x_, server.reconstructed_x_)
    assert direct.label_hops_ == server.label_hops_
    assert direct.label_hops_scores_ == server.label_hops_scores_
    assert bool(direct.label_hops_scores_) == (label_hops == "auto")
    for a, b in zip(direct.module_.state_dict().values(), server.module_.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    test = np.arange(1, 400, 2)
    np.testing.assert_array_equal(direct.predict_proba(graph.nodes(test)),
                                  server.predict_proba(reported.nodes(test)))
    other = RGNNClassifier(randomize=False, **{**params, "random_state": 8}).fit(
        reported.nodes(train), noisy_y)
    assert not np.allclose(other.predict_proba(reported.nodes(test)),
                           server.predict_proba(reported.nodes(test)))


def test_randomize_false_rejects_non_codes(binary_data):
    graph, y, train = binary_data
    bad = Graph(graph.edge_index, graph.features() - 0.5)
    with pytest.raises(ValueError, match="non-negative integer category codes"):
        RGNNClassifier(randomize=False, **FAST).fit(bad.nodes(train), y[train])


def test_learns_on_csbm_and_beats_the_noisy_baseline():
    data = make_csbm(n_nodes=600, random_state=1)
    train, test = np.arange(0, 600, 2), np.arange(1, 600, 2)
    kw = dict(epsilon=11.0, epsilon_labels=1.0, label_hops=2, epochs=60,  # eps_x = 1, m = 10
              feature_type="continuous", random_state=0)
    rgnn = RGNNClassifier(**kw).fit(data.graph.nodes(train), data.y[train])
    noisy = RGNNClassifier(**{**kw, "feature_hops": 0, "label_hops": 0, "llp_weight": 0.0}).fit(
        data.graph.nodes(train), data.y[train])
    acc = rgnn.score(data.graph.nodes(test), data.y[test])
    assert acc > 0.6  # 4 classes: chance is 0.25
    assert acc > noisy.score(data.graph.nodes(test), data.y[test]) + 0.1


@pytest.mark.parametrize("conv", ["gcn", "gat"])
def test_convs(binary_data, conv):
    graph, y, train = binary_data
    clf = RGNNClassifier(conv=conv, random_state=0, **FAST).fit(graph.nodes(train), y[train])
    assert clf.predict(graph.nodes([1, 3])).shape == (2,)


def test_predict_uses_cache_on_training_graph_and_its_copies(binary_data):
    graph, y, train = binary_data
    clf = RGNNClassifier(random_state=0, **FAST).fit(graph.nodes(train), y[train])
    raw = graph.features()
    assert not any(np.array_equal(np.asarray(v), raw) for v in vars(clf).values()
                   if isinstance(v, np.ndarray) and v.shape == raw.shape)
    with torch.no_grad():
        expected = clf.module_(torch.from_numpy(clf.reconstructed_x_),
                               torch.tensor(graph.edge_index)).softmax(-1)[:5].numpy()
    np.testing.assert_allclose(clf.predict_proba(graph.nodes(range(5))), expected, rtol=1e-5)
    copy = Graph(graph.edge_index, graph.x)  # same content, another uid (as the CLI builds)
    np.testing.assert_array_equal(clf.predict_proba(copy.nodes()),
                                  clf.predict_proba(graph.nodes()))
    assert clf.privacy_.releases == ()
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict_proba(graph.nodes()),
                                  clf.predict_proba(graph.nodes()))


def test_release_on_a_new_graph_is_recorded_with_fresh_reports(binary_data, monkeypatch):
    graph, y, train = binary_data
    reports = []
    original = randomizers_module.grr_fs_randomize
    monkeypatch.setattr(randomizers_module, "grr_fs_randomize",
                        lambda *a: reports.append(original(*a)) or reports[-1])
    clf = RGNNClassifier(epsilon=7.0, epsilon_per_feature=1.0, random_state=0,
                         num_sampled_features=4, **FAST).fit(graph.nodes(train), y[train])
    assert len(reports) == 1 and clf.privacy_.releases == ()
    clf.predict(Graph(graph.edge_index, graph.x).nodes())  # identical copy: cached
    assert len(reports) == 1 and clf.privacy_.releases == ()
    # same features, node 0's edges removed: a new graph, a new release of its features
    new = Graph(graph.edge_index[:, (graph.edge_index != 0).all(axis=0)], graph.x)
    first = clf.predict_proba(new.nodes())
    assert len(reports) == 2 and len(clf.privacy_.releases) == 1
    release = clf.privacy_.releases[0]
    assert release["kind"] == "features" and release["num_nodes"] == 400
    assert release["epsilon"] == pytest.approx(4 * 1.0) and release["delta"] == 0.0
    assert clf.privacy_.total_epsilon == pytest.approx(clf.epsilon_spent_ + 4.0)
    # fresh noise: not the training reports again (same features, same random_state)
    same = np.mean(reports[0] == reports[1])
    assert same < 0.9, f"the release reuses the training randomness ({same:.0%} equal)"
    # one query set, one release: asking again changes nothing
    np.testing.assert_array_equal(clf.predict_proba(new.nodes()), first)
    assert len(reports) == 2 and len(clf.privacy_.releases) == 1
    other = Graph(graph.edge_index[:, (graph.edge_index != 1).all(axis=0)], graph.x)
    clf.predict(other.nodes())
    assert len(clf.privacy_.releases) == 2 and np.mean(reports[1] == reports[2]) < 0.9


def test_duplicate_nodes_refused(binary_data):
    graph, y, train = binary_data
    index = np.r_[np.zeros(50, dtype=int), train[1:]]  # node 0 fifty times
    with pytest.raises(ValueError, match="more than once"):
        RGNNClassifier(epsilon_labels=0.5, random_state=0, **FAST).fit(graph.nodes(index),
                                                                       y[index])


def test_no_exact_data_bounds_in_the_fitted_estimator():
    data = make_csbm(n_nodes=200, n_features=6, random_state=3)
    x = data.graph.features()
    bounds = np.concatenate([x.min(axis=0), x.max(axis=0)]).astype(np.float64)
    clf = RGNNClassifier(feature_type="continuous", random_state=0, **FAST).fit(
        data.graph.nodes(range(100)), data.y[:100])
    floats = []

    def collect(obj, depth=0):
        if isinstance(obj, (float, np.floating)):
            floats.append(float(obj))
        elif isinstance(obj, np.ndarray) and obj.dtype.kind == "f":
            floats.extend(obj.astype(np.float64).ravel())
        elif isinstance(obj, dict) and depth < 8:
            [collect(v, depth + 1) for v in obj.values()]
        elif isinstance(obj, (list, tuple)) and depth < 8:
            [collect(v, depth + 1) for v in obj]
        elif hasattr(obj, "__dict__") and not isinstance(obj, torch.nn.Module) and depth < 8:
            collect(vars(obj), depth + 1)

    collect(vars(clf))
    kept = np.unique(np.array(floats))
    assert not np.isin(bounds, kept).any(), "the fitted RGNN keeps a column's min or max"
    np.testing.assert_allclose(clf.feature_encoder_.bin_edges_,
                               np.tile(np.linspace(-1.5, 1.5, 5), (6, 1)))
    assert any("feature_range=(-1.5, 1.5)" in text for text in clf.privacy_.assumptions)


def test_feature_range_is_validated(binary_data):
    graph, y, train = binary_data
    continuous = Graph(graph.edge_index, graph.features() * 0.5 + 0.1)
    with pytest.raises(ValueError, match="feature_range must be"):
        RGNNClassifier(feature_type="continuous", feature_range=(1.0, 1.0), **FAST).fit(
            continuous.nodes(train), y[train])


def test_plan_checked_against_both_budgets_before_the_clients_randomise(binary_data,
                                                                        monkeypatch):
    graph, y, train = binary_data

    def randomise(*args):
        raise AssertionError("the clients randomised before the budget check")

    monkeypatch.setattr(randomizers_module, "grr_fs_randomize", randomise)
    monkeypatch.setattr(local_module, "grr_fs_epsilon", lambda m, eps: (m + 1) * eps)
    with pytest.raises(PrivacyBudgetError, match="more than the budget"):
        RGNNClassifier(num_sampled_features=3, **FAST).fit(graph.nodes(train), y[train])


def test_no_kept_integer_replays_training(binary_data):
    graph, y, train = binary_data
    X, y = graph.nodes(train), y[train]

    def weights(random_state):
        with config_context(skip_parameter_validation=True):  # accept 128-bit roots
            est = RGNNClassifier(random_state=random_state, **FAST).fit(X, y)
        return est, est.module_.state_dict()

    def replays(seed, fitted):
        routes = [seed] + ([Replay(seed)] if seed < 2**63 else [])
        return any(all(torch.equal(weights(r)[1][k], v) for k, v in fitted.items())
                   for r in routes)

    assert replays(2**20 + 7, weights(Replay(2**20 + 7))[1])  # the check detects a replay
    est, fitted = weights(None)
    edges = graph.edge_index[:, (graph.edge_index != 0).all(axis=0)]
    est.predict(Graph(edges, graph.x).nodes())  # a release after fit
    assert len(est.privacy_.releases) == 1
    found = set()
    kept_integers(est, found, set())
    candidates = sorted(c for c in found if c >= 2**16)  # smaller ints are sizes and counts
    assert not [c for c in candidates if replays(c, fitted)]


def test_non_private_labels(binary_data):
    graph, y, train = binary_data
    clf = RGNNClassifier(epsilon=np.inf, epsilon_per_feature=1.0, random_state=0, **FAST).fit(
        graph.nodes(train), y[train])
    assert clf.epsilon_spent_ == np.inf and not clf.privacy_.private
    assert (clf.epsilon_per_feature_, clf.epsilon_labels_) == (1.0, np.inf)


def test_validation_fraction_selects_an_epoch_on_held_out_reconstructed_labels(binary_data):
    graph, y, train = binary_data
    kw = dict(epsilon_labels=1.0, random_state=0, label_loss="reconstructed", ensemble_size=1,
              **{**FAST, "epochs": 25})
    plain = RGNNClassifier(**kw).fit(graph.nodes(train), y[train])
    assert plain.best_epochs_ == (25,) and plain.history_[-1]["validation_accuracy"] is None
    clf = RGNNClassifier(validation_fraction=0.3, **kw).fit(graph.nodes(train), y[train])
    scores = [h["validation_accuracy"] for h in clf.history_]
    assert clf.best_epochs_ == (int(np.argmax(scores)) + 1,)
    assert not np.allclose(clf.predict_proba(graph.nodes()), plain.predict_proba(graph.nodes()))


def test_label_losses_see_the_same_reports_and_train_differently(binary_data, monkeypatch):
    # "forward" fits the noisy-label frequencies through the channel; "reconstructed" the
    # argmax of their de-biased version: same reports, different supervision.
    graph, y, train = binary_data
    seen = {}

    def spy(*args, **kwargs):
        seen.setdefault(kwargs["stage"], []).append((np.asarray(args[4]), kwargs["transition"]))
        return original(*args, **kwargs)

    original = labels_module.train_llp_gnn
    monkeypatch.setattr(labels_module, "train_llp_gnn", spy)
    probas = {}
    for loss in ("forward", "reconstructed"):
        seen.clear()
        clf = RGNNClassifier(epsilon_labels=1.0, label_loss=loss, ensemble_size=1,
                             random_state=0, **FAST).fit(graph.nodes(train), y[train])
        (targets, transition), = seen["classifier"]
        probas[loss] = clf.predict_proba(graph.nodes())
        if loss == "forward":
            assert targets.shape == (train.size, np.unique(y).size)
            assert np.allclose(targets.sum(1), 1.0)
            assert np.allclose(transition, transition.T) and transition[0, 0] > transition[0, 1]
            frequencies = targets
        else:
            assert transition is None and targets.shape == (train.size,)
            assert np.array_equal(targets, frequencies.argmax(1))  # same reports, hops
    assert not np.allclose(probas["forward"], probas["reconstructed"])


@pytest.mark.parametrize("eps_y, expected", [(0.5, "forward"), (1.0, "forward"),
                                             (1.2, "reconstructed"), (3.0, "reconstructed")])
def test_auto_label_loss_reads_the_flip_rate_of_the_public_budget(binary_data, eps_y, expected):
    # 4 classes: GRR keeps a label w.p. e^eps / (e^eps + 3), below 1/2 up to eps = ln 3.
    graph, y, train = binary_data
    clf = RGNNClassifier(epsilon_labels=eps_y, ensemble_size=1, random_state=0,
                         **{**FAST, "epochs": 2}).fit(graph.nodes(train), y[train])
    assert clf.label_loss_ == expected


def test_ensemble_averages_the_probabilities_of_its_gnns(binary_data):
    from skdpgraph.nn import GNN, ProbabilityAverage

    graph, y, train = binary_data
    clf = RGNNClassifier(epsilon_labels=1.0, ensemble_size=3, random_state=0,
                         **FAST).fit(graph.nodes(train), y[train])
    assert isinstance(clf.module_, ProbabilityAverage) and len(clf.module_.members) == 3
    assert len(clf.best_epochs_) == 3 and len(clf.history_) == 3 * FAST["epochs"]
    assert [h["stage"] for h in clf.history_[::FAST["epochs"]]] == [
        "classifier 1", "classifier 2", "classifier 3"]
    x, edges = torch.from_numpy(clf.reconstructed_x_), torch.tensor(graph.edge_index)
    with torch.no_grad():
        members = torch.stack([m(x, edges).softmax(-1) for m in clf.module_.members])
    assert np.allclose(clf.predict_proba(graph.nodes()), members.mean(0).numpy(), atol=1e-5)
    assert not torch.allclose(members[0], members[1])  # different initialisations
    single = RGNNClassifier(epsilon_labels=1.0, ensemble_size=1, random_state=0,
                            **FAST).fit(graph.nodes(train), y[train])
    assert isinstance(single.module_, GNN) and single.history_[0]["stage"] == "classifier"


def test_small_dense_graph_never_collapses_across_seeds():
    # With 16 fixed rounds of neighbourhood means, a 300-node graph of average degree 20
    # reduced every reconstructed label to the global majority for some seeds: accuracies
    # 0.63 / 0.49 / 0.48 / 0.82 / 0.49. The default "auto" rounds keep every seed high.
    from sklearn.model_selection import train_test_split

    accuracies = []
    for seed in range(5):
        data = make_csbm(n_nodes=300, random_state=seed)
        X_tr, X_te, y_tr, y_te = train_test_split(data.nodes(), data.y, test_size=0.3,
                                                  stratify=data.y, random_state=seed)
        clf = RGNNClassifier(feature_type="continuous", random_state=seed).fit(X_tr, y_tr)
        accuracies.append(clf.score(X_te, y_te))
        assert clf.label_hops_ <= clf.feature_hops_ < 16
    assert min(accuracies) > 0.9, accuracies
    assert max(accuracies) - min(accuracies) <= 0.05, accuracies


def test_propagation_hops_reads_the_spread_of_the_means():
    import scipy.sparse as sp

    from skdpgraph.preprocessing import mean_propagation_operator, propagation_hops

    # A path of 1,000 nodes: 16 rounds reach at most 33 nodes, far below half.
    path = sp.diags([np.ones(999), np.ones(999)], [-1, 1], shape=(1000, 1000)).tocsr()
    operator = sp.csr_matrix(sp.diags(1 / (path.sum(1).A1 + 1)) @ (path + sp.identity(1000)))
    assert propagation_hops(operator) == 16
    assert propagation_hops(operator, max_hops=5) == 5
    # A complete graph: one round already averages over every node.
    dense = make_csbm(n_nodes=300, random_state=0).graph
    assert propagation_hops(mean_propagation_operator(dense)) in (2, 3)
    complete = sp.csr_matrix(np.full((50, 50), 1 / 50))
    assert propagation_hops(complete) == 1


def _spy_on_the_clients(monkeypatch) -> dict:
    """Record the epsilons the simulated clients randomise with."""
    seen = {}
    features, labels = randomizers_module.grr_fs_randomize, rgnn_module.grr_randomize

    def spy_features(codes, domain_sizes, epsilon, m, rng):
        seen["features"] = (epsilon, m)
        return features(codes, domain_sizes, epsilon, m, rng)

    def spy_labels(values, n_classes, epsilon, rng):
        seen["labels"] = epsilon
        return labels(values, n_classes, epsilon, rng)

    monkeypatch.setattr(randomizers_module, "grr_fs_randomize", spy_features)
    monkeypatch.setattr(rgnn_module, "grr_randomize", spy_labels)
    return seen


@pytest.mark.parametrize("params, eps_x, eps_y", [
    # by hand: labels 3/13 of epsilon, the other 10/13 evenly over the m = 10 features
    (dict(epsilon=6.5), 6.5 * 10 / 13 / 10, 6.5 * 3 / 13),
    (dict(epsilon=13.0), 1.0, 3.0),  # the paper's defaults
    (dict(epsilon=4.0, epsilon_labels=1.0), (4.0 - 1.0) / 10, 1.0),
    (dict(epsilon=4.0, epsilon_per_feature=0.2), 0.2, 4.0 - 10 * 0.2),
    (dict(epsilon=3.0, epsilon_per_feature=0.25, epsilon_labels=0.5), 0.25, 0.5),
])
def test_total_epsilon_is_split_between_features_and_labels(binary_data, monkeypatch, params,
                                                            eps_x, eps_y):
    graph, y, train = binary_data
    seen = _spy_on_the_clients(monkeypatch)
    clf = RGNNClassifier(feature_group_size=2, random_state=0, **params, **FAST).fit(
        graph.nodes(train), y[train])  # d = 20 grouped features, m = 10
    assert seen["features"] == (pytest.approx(eps_x), 10)
    assert seen["labels"] == pytest.approx(eps_y)
    assert (clf.epsilon_per_feature_, clf.epsilon_labels_) == pytest.approx((eps_x, eps_y))
    # the same accountant as before: GRR-FS's m * eps_x plus GRR's eps_y, the whole budget
    assert clf.epsilon_spent_ == pytest.approx(10 * eps_x + eps_y, rel=1e-12)
    assert clf.epsilon_spent_ <= params["epsilon"] * (1 + 1e-9)
    assert clf.epsilon_spent_ == pytest.approx(params["epsilon"], rel=1e-12)
    assert f"eps_x={eps_x:g}" in clf.privacy_.events[0]


@pytest.mark.parametrize("params, error, match", [
    (dict(epsilon=3.0, epsilon_per_feature=0.1, epsilon_labels=1.0), ValueError,
     r"spend m \* epsilon_per_feature \+ epsilon_labels = 10 \* 0.1 \+ 1 = 2 .* but "
     r"epsilon=3; they must add up to epsilon"),
    (dict(epsilon=2.0, epsilon_labels=2.0), PrivacyBudgetError,
     r"epsilon_labels=2 leaves no budget for the features out of epsilon=2"),
    (dict(epsilon=2.0, epsilon_per_feature=0.5), PrivacyBudgetError,
     r"epsilon_per_feature=0.5 on m=10 sampled features spends 5, leaving no budget for the "
     r"labels out of epsilon=2"),
])
def test_overrides_that_do_not_fit_epsilon_are_refused_before_the_clients_randomise(
        binary_data, monkeypatch, params, error, match):
    graph, y, train = binary_data
    seen = _spy_on_the_clients(monkeypatch)
    with pytest.raises(error, match=match):
        RGNNClassifier(feature_group_size=2, **params, **FAST).fit(graph.nodes(train), y[train])
    assert seen == {}


def test_epsilon_is_a_search_parameter(binary_data):
    graph, y, train = binary_data
    clf = RGNNClassifier(random_state=0, **FAST)
    spent = [clf.set_params(epsilon=e).fit(graph.nodes(train), y[train]).epsilon_spent_
             for e in (2.0, 8.0)]
    assert spent == pytest.approx([2.0, 8.0])


def test_auto_hops_are_computed_once_per_fit(binary_data, monkeypatch):
    graph, y, train = binary_data
    calls = []
    original = rgnn_module.propagation_hops
    monkeypatch.setattr(rgnn_module, "propagation_hops",
                        lambda operator: calls.append(operator.shape) or original(operator))
    clf = RGNNClassifier(epochs=2, random_state=0).fit(graph.nodes(train), y[train])
    assert calls == [(400, 400)]  # one K-round pass serves the features and the labels
    searched = original(rgnn_module.mean_propagation_operator(graph))
    assert clf.feature_hops_ == searched
    # The labels' rounds are chosen on held-out reports, at most the searched ones.
    assert 0 <= clf.label_hops_ <= searched and 0 in clf.label_hops_scores_


def test_sage_reads_the_csr_adjacency_as_it_reads_the_edge_list(monkeypatch):
    from skdpgraph.nn import GNN, InNeighbourMean

    rng = np.random.default_rng(0)
    graph = Graph(rng.integers(0, 60, size=(2, 300)), rng.random((60, 5)), directed=True)
    x = torch.from_numpy(graph.features().astype(np.float32))
    torch.manual_seed(0)
    gnn = GNN(5, 8, 3, conv="sage", dropout=0.0)
    outputs, grads = [], []
    for structure in (rgnn_module.gnn_structure(graph, "sage"), torch.tensor(graph.edge_index)):
        gnn.zero_grad()
        out = gnn(x, structure)
        out.square().sum().backward()
        outputs.append(out.detach())
        grads.append([p.grad.clone() for p in gnn.parameters()])
    assert isinstance(rgnn_module.gnn_structure(graph, "sage"), InNeighbourMean)
    torch.testing.assert_close(outputs[0], outputs[1], rtol=1e-6, atol=1e-6)
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    # The whole fit on the edge list agrees up to float rounding.
    data = make_csbm(n_nodes=300, random_state=1)
    kw = dict(feature_type="continuous", random_state=0, **FAST)
    fitted = [RGNNClassifier(**kw).fit(data.nodes()[:150], data.y[:150])]
    monkeypatch.setattr(rgnn_module, "gnn_structure", lambda g, conv: torch.tensor(g.edge_index))
    fitted.append(RGNNClassifier(**kw).fit(data.nodes()[:150], data.y[:150]))
    np.testing.assert_allclose(*(c.predict_proba(data.nodes()) for c in fitted), atol=1e-4)


def test_auto_hops_skip_the_search_for_exact_reports(binary_data, monkeypatch):
    graph, y, train = binary_data
    calls = []
    original = rgnn_module.propagation_hops
    monkeypatch.setattr(rgnn_module, "propagation_hops",
                        lambda operator: calls.append(1) or original(operator))
    exact = RGNNClassifier(epsilon=np.inf, epochs=2, random_state=0).fit(
        graph.nodes(train), y[train])
    assert (exact.feature_hops_, exact.label_hops_, calls) == (0, 0, [])
    labels_only = RGNNClassifier(epsilon=np.inf, epsilon_labels=1.0, epochs=2,
                                 random_state=0).fit(graph.nodes(train), y[train])
    assert labels_only.feature_hops_ == 0
    assert labels_only.label_hops_ == original(rgnn_module.mean_propagation_operator(graph))


@pytest.mark.parametrize("epsilon, standardized", [(np.inf, True), (13.0, False)])
def test_auto_standardize_only_exact_features(binary_data, epsilon, standardized):
    graph, y, train = binary_data
    clf = RGNNClassifier(epsilon=epsilon, random_state=0, ensemble_size=1, **FAST).fit(
        graph.nodes(train), y[train])
    assert clf.standardize_ is standardized
    x = clf.reconstructed_x_.astype(np.float64)
    if standardized:  # an independent computation of the shift and scale
        np.testing.assert_allclose(clf.feature_mean_, x.mean(0), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(clf.feature_scale_, x.std(0), rtol=1e-5, atol=1e-6)
    else:
        assert not clf.feature_mean_.any() and (clf.feature_scale_ == 1).all()


def test_standardized_inputs_are_what_the_gnn_reads_at_predict(binary_data, monkeypatch):
    graph, y, train = binary_data
    clf = RGNNClassifier(epsilon=np.inf, standardize=True, random_state=0, ensemble_size=1,
                         **FAST).fit(graph.nodes(train), y[train])
    seen = []
    forward = type(clf.module_).forward
    monkeypatch.setattr(type(clf.module_), "forward",
                        lambda self, x, structure: seen.append(x) or forward(self, x, structure))
    clf.predict_proba(graph.nodes(np.arange(1, 400, 2)))
    expected = (clf.reconstructed_x_ - clf.reconstructed_x_.mean(0)) / clf.reconstructed_x_.std(0)
    np.testing.assert_allclose(seen[0].numpy(), expected, rtol=1e-4, atol=1e-4)
    assert np.abs(seen[0].numpy().mean(0)).max() < 1e-4  # a failing check if it were unscaled


def _heterophilous_data():
    """Edges between classes as often as within (homophily = 1/4), features informative."""
    data = make_csbm(n_nodes=1000, n_classes=4, n_features=4, avg_degree=30, homophily=0.25,
                     feature_signal=3.0, random_state=1)
    return data, np.arange(0, 1000, 2), np.arange(1, 1000, 2)


def test_auto_label_hops_drop_the_rounds_when_the_held_out_labels_say_so():
    # On a graph whose edges say nothing about the labels, neighbourhood means of the
    # labels only blur them. The old rule kept the searched rounds (2 here); "auto" now
    # fits one GNN each way and keeps 0, which is ahead on the held-out noisy labels.
    data, train, test = _heterophilous_data()
    kw = dict(epsilon=np.inf, epsilon_labels=2.0, ensemble_size=1, epochs=50,
              feature_type="continuous", random_state=1)
    auto = RGNNClassifier(**kw).fit(data.nodes()[train], data.y[train])
    searched = rgnn_module.propagation_hops(rgnn_module.mean_propagation_operator(data.graph))
    assert searched > 0 and set(auto.label_hops_scores_) == {0, searched}
    assert auto.label_hops_ == 0
    assert auto.label_hops_scores_[0] > auto.label_hops_scores_[searched]
    fixed = {k: RGNNClassifier(label_hops=k, **kw).fit(data.nodes()[train], data.y[train])
             for k in (0, searched)}
    assert fixed[0].score(data.nodes()[test], data.y[test]) > fixed[searched].score(
        data.nodes()[test], data.y[test]) + 0.1
    # The choice draws its own streams: the fit is the one label_hops=0 gives.
    np.testing.assert_array_equal(auto.predict_proba(data.nodes()[test]),
                                  fixed[0].predict_proba(data.nodes()[test]))
    assert auto.epsilon_labels_ == 2.0 and auto.epsilon_spent_ == fixed[0].epsilon_spent_


def test_two_standard_errors_decide_the_label_hops():
    gain = np.array([1.0, 0.0, 0.0, 1.0, 0.0, -1.0, 1.0, 0.0])
    # scipy's one-sample t statistic is mean / (std(ddof=1) / sqrt(n)): the same number.
    from scipy import stats
    t = stats.ttest_1samp(gain, 0.0).statistic
    assert labels_module._clearly_ahead(gain) == (t > 2)
    assert labels_module._clearly_ahead(np.ones(5) * 0.5 + np.arange(5) * 0.01)
    assert not labels_module._clearly_ahead(np.array([1.0, -1.0] * 20))
    assert not labels_module._clearly_ahead(np.array([1.0]))  # one node proves nothing


def _label_means_seen(monkeypatch, split=None):
    """Fit "auto" on the heterophilous graph; return the held-out nodes and the nodes
    whose reports fed each call of the label means."""
    data, train, _ = _heterophilous_data()
    fed, held_out = [], []
    means = labels_module.reconstruct_labels
    monkeypatch.setattr(labels_module, "reconstruct_labels",
                        lambda op, index, *a: fed.append(set(index.tolist())) or means(
                            op, index, *a))
    original_split = split or labels_module.holdout_split

    def recording_split(n, fraction, rng):
        kept, held = original_split(n, fraction, rng)
        if fraction == 0.2:
            held_out.append(set(train[held].tolist()))
        return kept, held
    monkeypatch.setattr(labels_module, "holdout_split", recording_split)
    RGNNClassifier(epsilon=np.inf, epsilon_labels=2.0, ensemble_size=1, epochs=5,
                   feature_type="continuous", random_state=1).fit(data.nodes()[train],
                                                                  data.y[train])
    return held_out[0], fed


def test_held_out_reports_never_feed_the_candidates(monkeypatch):
    held, fed = _label_means_seen(monkeypatch)
    assert len(fed) == 3 and len(held) == 100  # two candidates, then the fit itself
    assert all(not (held & nodes) for nodes in fed[:2])
    assert held <= fed[2]  # the fit uses every report


def test_held_out_check_catches_a_split_that_keeps_the_held_nodes(monkeypatch):
    # Deliberately broken: the held-out fifth is also kept for training.
    from skdpgraph.preprocessing import holdout_split

    def leaky(n, fraction, rng):
        kept, held = holdout_split(n, fraction, rng)
        return (np.arange(n), held) if fraction == 0.2 else (kept, held)
    held, fed = _label_means_seen(monkeypatch, split=leaky)
    assert any(held & nodes for nodes in fed[:2])


def test_auto_label_hops_otherwise_take_the_rounds_the_held_out_reports_pick(monkeypatch):
    data, train, _ = _heterophilous_data()
    picked = []
    original = labels_module.held_out_label_hops
    monkeypatch.setattr(labels_module, "_clearly_ahead", lambda gain: False)
    averaged_and_scored = []

    def recording(operator, train_index, labels, held_index, *rest):
        averaged_and_scored.append((set(train_index.tolist()), set(held_index.tolist())))
        picked.append(original(operator, train_index, labels, held_index, *rest))
        return picked[-1]
    monkeypatch.setattr(labels_module, "held_out_label_hops", recording)
    clf = RGNNClassifier(epsilon=np.inf, epsilon_labels=2.0, ensemble_size=1, epochs=5,
                         feature_type="continuous", random_state=1).fit(data.nodes()[train],
                                                                        data.y[train])
    assert len(picked) == 1 and clf.label_hops_ == picked[0] >= 1
    averaged, scored = averaged_and_scored[0]
    assert len(scored) == 100 and not averaged & scored  # a report is averaged or scored


def test_validation_fraction_splits_the_reports_as_every_estimator_splits_its_nodes():
    from skdpgraph._random import RandomStreams

    auto = RGNNClassifier(validation_fraction="auto")
    assert (auto._validation_size(600), auto._validation_size(499)) == (60, 0)
    # Rounded up, and allowed at a finite epsilon: the labels it reads are reports.
    assert RGNNClassifier(epsilon=4.0, validation_fraction=0.25)._validation_size(30) == 8
    y = np.array([0] * 90 + [1] * 10)
    train, val = RGNNClassifier(validation_fraction=0.2)._validation_split(y, RandomStreams(0))
    assert np.bincount(y[val]).tolist() == [18, 2]  # stratified
    assert sorted(np.concatenate([train, val]).tolist()) == list(range(100))


def test_a_private_fit_holds_out_the_rounded_up_fraction_of_its_reports(binary_data, monkeypatch):
    graph, y, train = binary_data
    held = []
    original = labels_module.train_llp_gnn

    def spy(*args, **kwargs):
        held.append(len(kwargs["val_index"]))
        return original(*args, **kwargs)
    monkeypatch.setattr(labels_module, "train_llp_gnn", spy)
    RGNNClassifier(validation_fraction=0.33, ensemble_size=1, random_state=0,
                   **{**FAST, "epochs": 2, "label_hops": 0}).fit(graph.nodes(train), y[train])
    assert held == [66]  # ceil(0.33 * 200)
