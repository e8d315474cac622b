"""FDPClassifier: sampling, accounting, inference and the no-graph-kept rule."""

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from scipy.stats import hypergeom

from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

import skdpgraph.estimators._fdp as fdp_module
from skdpgraph import FDPClassifier, Graph, PrivacyBudgetError
from skdpgraph.datasets import make_csbm
from skdpgraph.nn import DenseSubgraphGNN, encode_nodes, root_logits
from skdpgraph.privacy import FDP_RELATION, FINE_ORDERS, compute_rdp_fdp, inference_release_epsilon
from skdpgraph.sampling import bound_star_membership, star_tensors

FAST = dict(epochs=2, batch_size=64, hidden_dim=16, random_state=0)


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=300, n_classes=3, n_features=8, avg_degree=8.0, random_state=0)


def _direct_rdp(sigma, n, b, k, steps):
    """Independent multi-term bound: plain summation over the hypergeometric pmf."""
    kp = k + 1
    out = []
    for a in FINE_ORDERS:  # high orders overflow to inf; compute_epsilon skips them
        moment = sum(hypergeom.pmf(i, n, kp, b) * np.exp((a - 1) * a / (2 * sigma**2)
                                                         * (i / kp) ** 2)
                     for i in range(0, min(kp, b) + 1)
                     if hypergeom.pmf(i, n, kp, b) > 0)  # 0 * inf would be nan
        out.append(steps * np.log(moment) / (a - 1))
    return np.array(out)


_direct_rdp = np.errstate(over="ignore")(_direct_rdp)


def _capture(monkeypatch):
    seen = {}
    real = fdp_module.train_dpsgd

    def spy(module, examples, loss_fn, plan, **kwargs):
        seen["plan"], seen["examples"] = plan, examples
        return real(module, examples, loss_fn, plan, **kwargs)

    monkeypatch.setattr(fdp_module, "train_dpsgd", spy)
    return seen


@pytest.mark.parametrize("sampler", ["bernoulli", "greedy"])
def test_training_stars_respect_the_degree_bound(data, monkeypatch, sampler):
    seen = _capture(monkeypatch)
    train = np.arange(200)
    FDPClassifier(max_degree=3, degree_sampler=sampler, **FAST).fit(data.graph.nodes(train),
                                                                    data.y[train])
    members = seen["examples"].members
    assert members.shape == (200, 4)
    np.testing.assert_array_equal(members[:, 0], train)
    neighbours = members[:, 1:]
    real = neighbours >= 0
    # Every node is a neighbour in at most K stars, and only along real edges.
    assert np.bincount(neighbours[real]).max() <= 3
    adjacency = data.graph.adjacency().toarray()
    rows = np.repeat(train[:, None], 3, axis=1)[real]
    assert np.all(adjacency[rows, neighbours[real]] == 1)


def test_plan_and_accountant_match_an_independent_computation(data, monkeypatch):
    seen = _capture(monkeypatch)
    train = np.arange(200)
    clf = FDPClassifier(epsilon=6.0, max_degree=2, **
                        FAST).fit(data.graph.nodes(train), data.y[train])
    plan = seen["plan"]
    assert plan.sampling == "without_replacement" and plan.batch_size == 64
    assert plan.sensitivity == 2 * 3 and plan.noise_std == pytest.approx(
        clf.noise_multiplier_ * 6 * clf.max_grad_norm)
    rdp = _direct_rdp(clf.noise_multiplier_, 200, 64, 2, plan.steps)
    expected = compute_epsilon(FINE_ORDERS, rdp, 1 / 3000)[0]
    assert clf.epsilon_spent_ == pytest.approx(expected, rel=1e-6)
    assert 0.98 * 6.0 <= clf.epsilon_spent_ <= 6.0
    assert clf.delta_ == pytest.approx(1 / 3000)  # every node of the 300-node graph
    assert clf.privacy_.assumptions and "data-dependent" in clf.privacy_.assumptions[0]
    assert "not covered" in clf.privacy_.inference


@pytest.mark.parametrize("n_train, batch_size, steps",
                         [(200, 64, 500), (200, 4096, 500), (200, 30, 504)])
def test_default_epochs_run_at_least_500_steps(data, monkeypatch, n_train, batch_size, steps):
    # epochs=None: the fewest whole epochs of ceil(n / batch) steps that reach 500 steps
    # (200 nodes in batches of 30: 7 steps an epoch, 72 epochs, 504 steps).
    seen = _capture(monkeypatch)
    train = np.arange(n_train)
    clf = FDPClassifier(epsilon=8.0, batch_size=batch_size, hidden_dim=4, random_state=0)
    clf.fit(data.graph.nodes(train), data.y[train])
    assert seen["plan"].steps == steps
    assert len(clf.history_) == steps // int(np.ceil(n_train / min(batch_size, n_train)))
    sigma, batch = clf.noise_multiplier_, min(batch_size, n_train)
    expected = compute_epsilon(FINE_ORDERS, _direct_rdp(sigma, n_train, batch, 1, steps),
                               clf.delta_)[0]
    assert clf.epsilon_spent_ == pytest.approx(expected, rel=1e-6)


def test_private_inference_adds_exactly_the_test_time_gaussian(data):
    train, sigma = np.arange(200), 3.0
    fits = {pi: FDPClassifier(epsilon=50.0, noise_multiplier=sigma, private_inference=pi,
                              max_degree=2, **FAST).fit(data.graph.nodes(train), data.y[train])
            for pi in (False, True)}
    steps = 2 * int(np.ceil(200 / 64))
    rdp_train = _direct_rdp(sigma, 200, 64, 2, steps)
    gaussian = FINE_ORDERS / (2 * sigma**2)  # one release, sensitivity-normalised
    eps_train = compute_epsilon(FINE_ORDERS, rdp_train, 1 / 3000)[0]
    eps_both = compute_epsilon(FINE_ORDERS, rdp_train + gaussian, 1 / 3000)[0]
    assert fits[False].epsilon_spent_ == pytest.approx(eps_train, rel=1e-6)
    assert fits[True].epsilon_spent_ == pytest.approx(eps_both, rel=1e-6)
    assert fits[True].epsilon_spent_ > fits[False].epsilon_spent_


def test_private_inference_perturbs_predictions_reproducibly(data):
    train, test = np.arange(200), np.arange(200, 300)
    clf = FDPClassifier(epsilon=8.0, private_inference=True, **FAST).fit(data.graph.nodes(train),
                                                                         data.y[train])
    assert clf.epsilon_spent_ <= 8.0
    noisy = clf.predict_proba(data.graph.nodes(test))
    np.testing.assert_array_equal(noisy, clf.predict_proba(data.graph.nodes(test)))  # cached
    exact = clf.set_params(private_inference=False).predict_proba(data.graph.nodes(test))
    assert not np.allclose(noisy, exact)


def test_over_budget_noise_multiplier_raises_before_training_and_leaves_unfitted(data,
                                                                                 monkeypatch):
    train = data.graph.nodes(np.arange(200))
    clf = FDPClassifier(epsilon=1.0, **FAST).fit(train, data.y[:200])  # a good fit first
    touched = []
    for name in ("train_dpsgd", "bound_star_membership", "StarExamples"):
        real = getattr(fdp_module, name)
        monkeypatch.setattr(fdp_module, name,
                            lambda *a, _real=real, _name=name, **k: touched.append(_name)
                            or _real(*a, **k))
    with pytest.raises(PrivacyBudgetError, match="budget epsilon=1"):
        clf.set_params(noise_multiplier=0.3).fit(train, data.y[:200])
    assert touched == []  # refused before the graph or the labels were read
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)
    assert not hasattr(clf, "module_") and not hasattr(clf, "classes_")


def test_non_private_run_and_no_graph_kept(data):
    train = np.arange(200)
    clf = FDPClassifier(epsilon=np.inf, **FAST).fit(data.graph.nodes(train), data.y[train])
    assert clf.noise_multiplier_ is None and not clf.privacy_.private
    blob = pickle.dumps(clf)
    assert data.graph.uid.encode() not in blob
    assert not any(isinstance(v, (Graph, np.ndarray)) and getattr(v, "size", 0) > 100
                   for v in vars(clf).values())
    # predict reads the graph from the nodes passed: another graph works.
    other = make_csbm(n_nodes=50, n_classes=3, n_features=8, random_state=1)
    assert clf.predict(other.graph.nodes()).shape == (50,)


def test_sparse_inference_equals_the_star_model():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    graph = Graph(rng.integers(0, 40, size=(2, 60)), rng.normal(size=(40, 5)))
    module = DenseSubgraphGNN(5, 8, 3, conv="mean", encoder_layers=1, activation="tanh",
                              residual=True).eval()
    roots = np.arange(40)
    adjacency = graph.adjacency()
    size = int(graph.in_degree().max()) + 1
    members = np.full((40, size), -1)
    members[:, 0] = roots
    for v in roots:  # small test graph: a loop is fine here
        neighbours = adjacency[v].indices
        members[v, 1:1 + len(neighbours)] = neighbours
    with torch.no_grad():
        dense = module(*star_tensors(graph, members))
        sparse = root_logits(module, graph, roots, adjacency[roots])
    torch.testing.assert_close(sparse, dense, rtol=1e-5, atol=1e-5)


def test_duplicate_training_nodes_rejected(data):
    with pytest.raises(ValueError, match="more than once"):
        FDPClassifier(**FAST).fit(data.graph.nodes([0, 0, 1, 2]), data.y[[0, 0, 1, 2]])


# ------------------------------------------------------------ private inference releases
PRIVATE = dict(epsilon=8.0, private_inference=True, epochs=2, batch_size=64, hidden_dim=16)


def _copy(graph):
    """Another Graph object (another uid) with the same content."""
    return Graph(graph.edge_index, graph.features(np.arange(graph.num_nodes)),
                 num_nodes=graph.num_nodes, directed=graph.directed)


def test_private_inference_one_release_per_graph(data):
    train = np.arange(200)
    clf = FDPClassifier(random_state=None, **PRIVATE).fit(data.graph.nodes(train), data.y[train])
    assert clf.privacy_.releases == ()
    clf.predict_proba(data.graph.nodes(np.arange(200, 300)))  # the training graph: paid in fit
    assert clf.privacy_.releases == ()
    other = make_csbm(n_nodes=120, n_classes=3, n_features=8, avg_degree=8.0, random_state=1)
    query = other.graph.nodes(np.arange(60))
    proba = clf.predict_proba(query)
    labels = clf.predict(query)  # the same release: predict and predict_proba agree
    np.testing.assert_array_equal(labels, clf.classes_[proba.argmax(1)])
    np.testing.assert_array_equal(proba, clf.predict_proba(other.graph.nodes(np.arange(60))))
    clf.predict(other.graph.nodes(np.arange(60, 120)))  # another query set, same graph
    assert len(clf.privacy_.releases) == 1
    release = clf.privacy_.releases[0]
    assert release["num_nodes"] == 120 and release["delta"] == clf.delta_
    assert release["epsilon"] == pytest.approx(
        inference_release_epsilon(clf.noise_multiplier_, clf.delta_))
    assert clf.privacy_.total_epsilon == pytest.approx(clf.epsilon_spent_ + release["epsilon"])


def test_identical_graph_copy_gets_the_cached_release(data):
    train, test = np.arange(200), np.arange(200, 300)
    clf = FDPClassifier(random_state=None, **PRIVATE).fit(data.graph.nodes(train), data.y[train])
    on_training_graph = clf.predict_proba(data.graph.nodes(test))
    copy = _copy(data.graph)
    assert copy.uid != data.graph.uid
    np.testing.assert_array_equal(clf.predict_proba(copy.nodes(test)), on_training_graph)
    assert clf.privacy_.releases == ()


def test_release_on_a_new_graph_has_fresh_noise():
    # A ring: every node feeds 2 stars and has 2 in-neighbours, so the greedy bound and the
    # star truncation keep every edge and the noise is the release minus the exact sums.
    n = 120
    rng = np.random.default_rng(0)
    ring = np.stack([np.arange(n), (np.arange(n) + 1) % n])
    features = rng.normal(size=(n, 6))
    graph = Graph(ring, features)
    grown = Graph(ring, np.vstack([features, rng.normal(size=(1, 6))]))  # one more node
    clf = FDPClassifier(max_degree=2, degree_sampler="greedy", random_state=0,
                        **PRIVATE).fit(graph.nodes(np.arange(80)), rng.integers(0, 3, 80))
    clf.predict(grown.nodes(np.arange(n)))
    assert len(clf.privacy_.releases) == 1
    with torch.no_grad():
        h = encode_nodes(clf.module_, graph, np.arange(n)).numpy()
    h = h * np.minimum(1.0, np.sqrt(h.shape[1]) / np.linalg.norm(h, axis=1, keepdims=True))
    exact = graph.adjacency() @ h
    noise_fit = clf._cached(graph, "fdp_neighbour_sums").sums - exact
    noise_new = clf._cached(grown, "fdp_neighbour_sums").sums[:n] - exact
    std = clf.noise_multiplier_ * np.sqrt(2 * 3 * (16 + 1))
    assert noise_fit.std() == pytest.approx(std, rel=0.05)  # the noise is there...
    assert noise_new.std() == pytest.approx(std, rel=0.05)
    # ...and independent: not the training noise drawn again (correlation ~ 0).
    assert abs(np.corrcoef(noise_fit.ravel(), noise_new.ravel())[0, 1]) < 0.05


def test_default_delta_counts_every_node_of_the_graph(data):
    clf = FDPClassifier(**FAST).fit(data.graph.nodes(np.arange(20)), data.y[:20])
    assert clf.delta_ < 1 / data.graph.num_nodes
    assert clf.delta_ == pytest.approx(1 / (10 * data.graph.num_nodes))
    assert clf.privacy_.delta == clf.delta_


def test_report_states_the_accountants_relation(data):
    clf = FDPClassifier(**FAST).fit(data.graph.nodes(np.arange(200)), data.y[:200])

    def flat(text):
        return " ".join(text.split())

    relation = clf.privacy_.neighbouring_relation
    assert relation.startswith(FDP_RELATION) and "add" not in relation
    assert "number of training nodes is public" in relation
    for doc in (compute_rdp_fdp.__doc__, FDPClassifier.__doc__, bound_star_membership.__doc__):
        assert "data-independent" not in doc and "add/remove" not in doc
    assert FDP_RELATION in flat(compute_rdp_fdp.__doc__)
    assert FDP_RELATION in flat(FDPClassifier.__doc__)
    guide = Path(__file__).parents[2] / "doc" / "user_guide" / "privacy_units.rst"
    assert FDP_RELATION in flat(guide.read_text(encoding="utf-8"))
    assert any("data-dependent" in a and "degree-bounded stars taken as the input" in a
               for a in clf.privacy_.assumptions)
    assert any("number of training nodes" in a for a in clf.privacy_.assumptions)


def test_dropout_changes_training_and_its_default_changes_nothing(data):
    X, y, queries = data.graph.nodes()[:200], data.y[:200], data.graph.nodes()[200:]
    default = FDPClassifier(**FAST).fit(X, y).predict_proba(queries)
    np.testing.assert_array_equal(FDPClassifier(dropout=0.0, **FAST).fit(X, y).predict_proba(
        queries), default)
    dropped = FDPClassifier(dropout=0.5, **FAST).fit(X, y)
    assert dropped.module_.dropout.p == 0.5 and not dropped.module_.training
    assert not np.allclose(dropped.predict_proba(queries), default)
    np.testing.assert_array_equal(dropped.predict_proba(queries),
                                  dropped.predict_proba(queries))  # no dropout in predict
