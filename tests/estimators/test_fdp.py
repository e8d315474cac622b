"""FDPClassifier: sampling, accounting, inference and the no-graph-kept rule."""

import pickle

import numpy as np
import pytest
import torch
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from scipy.stats import hypergeom

import skdpgraph.estimators._fdp as fdp_module
from skdpgraph import FDPClassifier, Graph, PrivacyBudgetError
from skdpgraph.datasets import make_csbm
from skdpgraph.estimators._fdp_inference import inference_sensitivity, root_logits
from skdpgraph.nn import DenseSubgraphGNN
from skdpgraph.privacy import FINE_ORDERS
from skdpgraph.sampling import star_tensors

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
                     for i in range(0, min(kp, b) + 1))
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
    clf = FDPClassifier(epsilon=6.0, max_degree=2, **FAST).fit(data.graph.nodes(train), data.y[train])
    plan = seen["plan"]
    assert plan.sampling == "without_replacement" and plan.batch_size == 64
    assert plan.sensitivity == 2 * 3 and plan.noise_std == pytest.approx(
        clf.noise_multiplier_ * 6 * clf.max_grad_norm)
    rdp = _direct_rdp(clf.noise_multiplier_, 200, 64, 2, plan.steps)
    expected = compute_epsilon(FINE_ORDERS, rdp, 1 / 2000)[0]
    assert clf.epsilon_spent_ == pytest.approx(expected, rel=1e-6)
    assert 0.98 * 6.0 <= clf.epsilon_spent_ <= 6.0
    assert clf.delta_ == pytest.approx(1 / 2000)
    assert clf.privacy_.assumptions and "data-dependent" in clf.privacy_.assumptions[0]
    assert "not covered" in clf.privacy_.inference


def test_private_inference_adds_exactly_the_test_time_gaussian(data):
    train, sigma = np.arange(200), 3.0
    fits = {pi: FDPClassifier(epsilon=50.0, noise_multiplier=sigma, private_inference=pi,
                              max_degree=2, **FAST).fit(data.graph.nodes(train), data.y[train])
            for pi in (False, True)}
    steps = 2 * int(np.ceil(200 / 64))
    rdp_train = _direct_rdp(sigma, 200, 64, 2, steps)
    gaussian = FINE_ORDERS / (2 * sigma**2)  # one release, sensitivity-normalised
    eps_train = compute_epsilon(FINE_ORDERS, rdp_train, 1 / 2000)[0]
    eps_both = compute_epsilon(FINE_ORDERS, rdp_train + gaussian, 1 / 2000)[0]
    assert fits[False].epsilon_spent_ == pytest.approx(eps_train, rel=1e-6)
    assert fits[True].epsilon_spent_ == pytest.approx(eps_both, rel=1e-6)
    assert fits[True].epsilon_spent_ > fits[False].epsilon_spent_


def test_private_inference_perturbs_predictions_reproducibly(data):
    train, test = np.arange(200), np.arange(200, 300)
    clf = FDPClassifier(epsilon=8.0, private_inference=True, **FAST).fit(data.graph.nodes(train),
                                                                        data.y[train])
    assert clf.epsilon_spent_ <= 8.0
    noisy = clf.predict_proba(data.graph.nodes(test))
    np.testing.assert_array_equal(noisy, clf.predict_proba(data.graph.nodes(test)))  # seeded
    exact = clf.set_params(private_inference=False).predict_proba(data.graph.nodes(test))
    assert not np.allclose(noisy, exact)


def test_noise_multiplier_over_budget_fails_closed(data):
    with pytest.raises(PrivacyBudgetError, match="noise_multiplier=0.3"):
        FDPClassifier(epsilon=1.0, noise_multiplier=0.3, **FAST).fit(data.graph.nodes(np.arange(200)),
                                                                    data.y[:200])


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


def test_inference_sensitivity():
    assert inference_sensitivity(4, 100) == pytest.approx(np.sqrt(4 * 101))


def test_duplicate_training_nodes_rejected(data):
    with pytest.raises(ValueError, match="distinct"):
        FDPClassifier(**FAST).fit(data.graph.nodes([0, 0, 1, 2]), data.y[[0, 0, 1, 2]])
