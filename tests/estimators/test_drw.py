"""DRWClassifier: accounting (against an independent computation), sampling, budget, API."""

import math
import pickle

import mpmath
import numpy as np
import pytest
import torch
from sklearn import config_context
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

import skdpgraph.estimators._drw as drw_module
from skdpgraph import DRWClassifier, Graph, PrivacyBudgetError
from skdpgraph._random import keyed_generator
from skdpgraph.datasets import make_csbm
from skdpgraph.nn import DenseSubgraphGNN
from skdpgraph.privacy import (REPLACE_ONE, UntilBudgetPlan, compute_epsilon, compute_rdp,
                               without_replacement_dpsgd_event)
from skdpgraph.sampling import (SubgraphExamples, disjoint_random_walks, pad_subgraphs,
                                rooted_random_walks)
from tests._replay import Replay, kept_integers


def _wbk_rdp(lam, num_examples, batch_size, alpha):
    """RDP of one step, written from Wang, Balle, Kasiviswanathan 2019 in exact arithmetic.

    Subsampling without replacement (ratio q) of a Gaussian whose RDP is
    eps(j) = j / (2 lam^2) under replace-one (noise std lam * 2C, sensitivity 2C):
    Theorem 27's bound with forward differences of j -> exp((j - 1) eps(j)) at 0.
    """
    mpmath.mp.dps = 50
    q = mpmath.mpf(batch_size) / num_examples

    def moment(j):  # exp((j - 1) * eps(j))
        return mpmath.e ** (mpmath.mpf(j - 1) * j / (2 * lam ** 2))

    def diff(k):
        return abs(mpmath.fsum((-1) ** (k - i) * mpmath.binomial(k, i) * moment(i)
                               for i in range(k + 1)))

    eps2 = mpmath.mpf(2) / (2 * lam ** 2)
    total = 1 + q ** 2 * mpmath.binomial(alpha, 2) * min(4 * mpmath.expm1(eps2),
                                                         2 * mpmath.e ** eps2)
    for j in range(3, alpha + 1):
        term = min(4 * mpmath.sqrt(diff(2 * (j // 2)) * diff(2 * ((j + 1) // 2))),
                   2 * moment(j))
        total += q ** j * mpmath.binomial(alpha, j) * term
    return float(mpmath.log(total) / (alpha - 1))


def _epsilon_from_integer_orders(rdp_per_step, steps, delta):
    """Balle et al. 2020 conversion, minimised over the given integer orders."""
    return min(steps * r + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1)
               for a, r in rdp_per_step.items())


@pytest.mark.parametrize("lam", [1.0, 2.0, 4.0])
def test_accountant_matches_independent_wbk_bound(lam):
    orders = np.arange(2, 33)
    ours = compute_rdp(without_replacement_dpsgd_event(lam, 1350, 70, 1), relation=REPLACE_ONE,
                       orders=orders.astype(float))
    independent = np.array([_wbk_rdp(lam, 1350, 70, int(a)) for a in orders])
    np.testing.assert_allclose(ours, independent, rtol=1e-9)
    # the library's epsilon (more orders, fractional ones too) is at most the integer one
    for steps in (100, 500):
        library = compute_epsilon(without_replacement_dpsgd_event(lam, 1350, 70, steps), 1e-5,
                                  relation=REPLACE_ONE)
        mine = _epsilon_from_integer_orders(dict(zip(orders, independent)), steps, 1e-5)
        assert library <= mine + 1e-9 and library > 0.9 * mine


@pytest.mark.parametrize("lam, steps, expected", [(1, 100, 6.744), (1, 500, 16.87),
                                                  (2, 100, 2.593), (4, 500, 2.663)])
def test_methods_test_vectors(lam, steps, expected):
    epsilon = compute_epsilon(without_replacement_dpsgd_event(lam, 1350, 70, steps), 1e-5,
                              relation=REPLACE_ONE)
    assert epsilon == pytest.approx(expected, abs=6e-3)


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=300, n_classes=3, n_features=8, random_state=0)


def test_calibrated_epsilon_within_one_percent(data):
    clf = DRWClassifier(epsilon=3.0, epochs=2, batch_size=20, hidden_dim=8, random_state=0)
    clf.fit(data.nodes()[:100], data.y[:100])
    assert 0.99 * 3.0 <= clf.epsilon_spent_ <= 3.0
    assert clf.n_steps_ == 2 * 5
    assert "batches of 20 of 100 without replacement" in clf.privacy_.mechanism
    subgraphs = " ".join(clf.privacy_.assumptions)
    assert "100 disjoint subgraphs" in subgraphs and "m/M=0.2" in subgraphs
    assert clf.delta_ == pytest.approx(1 / 3000)
    event = clf.privacy_.dp_event
    assert event.count == 10 and event.event.source_dataset_size == 100
    assert event.event.event.noise_multiplier == clf.noise_multiplier_


def test_paper_mode_stops_at_the_budget(data):
    clf = DRWClassifier(epsilon=3.0, noise_multiplier=2.0, max_steps=10_000, batch_size=20,
                        hidden_dim=8, random_state=0).fit(data.nodes()[:100], data.y[:100])
    steps = clf.n_steps_
    assert 1 <= steps < 10_000
    event = lambda t: without_replacement_dpsgd_event(2.0, 100, 20, t)  # noqa: E731
    assert compute_epsilon(event(steps), clf.delta_, relation=REPLACE_ONE) <= 3.0
    assert compute_epsilon(event(steps + 1), clf.delta_, relation=REPLACE_ONE) > 3.0
    assert clf.epsilon_spent_ <= 3.0
    assert len(clf.history_) == math.ceil(steps / 5)
    assert f"run until the budget: {steps} of 10000 planned steps" in clf.privacy_.mechanism
    with pytest.raises(PrivacyBudgetError, match="in a single step"):
        DRWClassifier(epsilon=0.01, noise_multiplier=0.5, batch_size=50).fit(
            data.nodes()[:100], data.y[:100])


@pytest.mark.parametrize("sampler", ["drw", "drw-r", "drw-d"])
def test_batches_fixed_size_without_replacement(sampler, data, monkeypatch):
    seen = []

    class Recording(SubgraphExamples):
        def batch(self, index, step):
            seen.append((step, index.clone(), self.table.copy()))
            return super().batch(index, step)

    monkeypatch.setattr(drw_module, "SubgraphExamples", Recording)
    clf = DRWClassifier(subgraph_sampler=sampler, epochs=3, batch_size=16, hidden_dim=8,
                        resample_every=2, noise_multiplier=3.0, random_state=0)
    clf.fit(data.nodes()[:64], data.y[:64])
    assert len(seen) == clf.n_steps_ == 12
    for _, index, table in seen:
        assert len(index) == 16 and len(set(index.tolist())) == 16
        np.testing.assert_array_equal(table[:, 0], data.nodes()[:64].index)
        assert (table >= 0).sum(axis=1).max() <= (1 + 2 * 4 if sampler == "drw-r" else 5)
    assert len({tuple(map(tuple, index.view(-1, 1).tolist())) for _, index, _ in seen}) > 6
    changed = any(not np.array_equal(a[2], b[2]) for a, b in zip(seen, seen[1:]))
    assert changed == (sampler == "drw-d")


def test_default_subgraphs_are_stars_the_one_layer_gnn_sees_whole(data, monkeypatch):
    # One-step walks with restarts: every member is the root's neighbour, so the default
    # one-layer GNN reads all of them (a longer walk's later nodes never reach the root).
    tables = []

    class Recording(SubgraphExamples):
        def batch(self, index, step):
            tables.append(self.table.copy())
            return super().batch(index, step)

    monkeypatch.setattr(drw_module, "SubgraphExamples", Recording)
    clf = DRWClassifier(epsilon=np.inf, max_steps=1, random_state=0)
    clf.fit(data.nodes()[:64], data.y[:64])
    adjacency = data.graph.adjacency().tocsr()
    members = 0
    for row in tables[0]:
        root, others = row[0], row[1:][row[1:] >= 0]
        assert len(others) <= clf.restarts * clf.walk_length
        assert all(adjacency[root, other] or adjacency[other, root] for other in others)
        members += len(others)
    assert clf.num_layers == 1 and members > 2 * len(tables[0])


def test_one_node_changes_at_most_one_per_subgraph_gradient():
    rng = np.random.default_rng(0)
    n = 24
    upper = np.triu(rng.random((n, n)) < 0.2, 1)
    graph = Graph(np.vstack(np.nonzero(upper)), rng.normal(size=(n, 3)))
    roots = np.arange(0, n, 2)
    table = disjoint_random_walks(graph.indptr, graph.indices, 3, roots=roots,
                                  generator=rng).nodes
    torch.manual_seed(0)
    module = DenseSubgraphGNN(3, 6, 2, conv="gcn", num_layers=2)
    labels = torch.from_numpy(rng.integers(0, 2, len(roots)))

    def per_subgraph_gradients(g):
        x, adj, mask = pad_subgraphs(g, table)
        grads = []
        for k in range(len(roots)):
            module.zero_grad()
            loss = torch.nn.functional.cross_entropy(
                module(x[k:k + 1], adj[k:k + 1], mask[k:k + 1]), labels[k:k + 1])
            loss.backward()
            grads.append(torch.cat([p.grad.flatten() for p in module.parameters()]))
        return torch.stack(grads)

    base = per_subgraph_gradients(graph)
    members = set(table[table >= 0].tolist())
    for node in range(n):
        x = graph.features().copy()
        x[node] += 5.0
        changed = (per_subgraph_gradients(Graph(graph.edge_index, x)) - base).abs().sum(1) > 0
        assert int(changed.sum()) == (1 if node in members else 0)


def test_non_private_and_accuracy(data):
    nodes, y = data.nodes(), data.y
    clf = DRWClassifier(epsilon=np.inf, epochs=20, batch_size=32, hidden_dim=32,
                        random_state=0).fit(nodes[:200], y[:200])
    assert clf.noise_multiplier_ is None and clf.epsilon_spent_ == np.inf
    assert clf.privacy_.events == ()
    assert clf.score(nodes[200:], y[200:]) > 0.7
    # predictions of a subset equal those of the whole set (walks keyed by node id)
    np.testing.assert_allclose(clf.predict_proba(nodes[200:])[10:20],
                               clf.predict_proba(nodes[210:220]), rtol=1e-5)
    assert not hasattr(clf, "graph_") and all(
        not isinstance(v, Graph) for v in vars(clf).values())


def test_duplicate_training_nodes_rejected(data):
    nodes = data.nodes()  # the base class refuses them (the node is the unit)
    with pytest.raises(ValueError, match="more than once"):
        DRWClassifier(noise_multiplier=1.0).fit(nodes[[0, 0, *range(1, 30)]],
                                                data.y[[0, 0, *range(1, 30)]])


# ------------------------------------------------------------------ the privacy spine
FAST = dict(epsilon=np.inf, max_steps=6, batch_size=16, hidden_dim=8)


def _weights(est):
    return {k: v.detach().clone() for k, v in est.module_.state_dict().items()}


def _same(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


def _replays(make, X, y, seed, fitted):
    """Whether a refit rooted at ``seed`` (as an int, or through ``_Replay``) gives ``fitted``."""
    routes = [seed] + ([Replay(seed)] if seed < 2**63 else [])
    with config_context(skip_parameter_validation=True):  # accept 128-bit roots
        return any(_same(_weights(make(route).fit(X, y)), fitted) for route in routes)


def test_no_kept_integer_replays_training(data):
    X, y = data.nodes()[:64], data.y[:64]
    make = lambda random_state: DRWClassifier(random_state=random_state, **FAST)  # noqa: E731
    # the comparison detects a replay: one root, the same weights
    assert _replays(make, X, y, 2**20 + 7, _weights(make(Replay(2**20 + 7)).fit(X, y)))
    est = make(None).fit(X, y)
    est.predict_proba(data.nodes()[64:])
    found = set()
    kept_integers(est, found, set())
    assert est.prediction_key_ in found
    candidates = sorted(c for c in found if c >= 2**16)  # smaller ints are sizes and counts
    assert not [c for c in candidates if _replays(make, X, y, c, _weights(est))]


def test_predict_is_deterministic_and_walks_with_the_prediction_key(data):
    clf = DRWClassifier(random_state=None, **FAST).fit(data.nodes()[:64], data.y[:64])
    nodes = data.nodes()[64:]
    proba = clf.predict_proba(nodes)
    np.testing.assert_array_equal(proba, clf.predict_proba(nodes))
    np.testing.assert_array_equal(clf.predict(nodes), clf.classes_[proba.argmax(axis=1)])
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(clf)).predict_proba(nodes), proba)
    # independently: the average over the draws of the walks keyed by prediction_key_
    graph, expected = data.graph, 0.0
    for draw in range(drw_module.PREDICT_DRAWS):
        table = rooted_random_walks(graph.indptr, graph.indices, nodes.index, clf.walk_length,
                                    restarts=clf.restarts,  # the default sampler is "drw-r"
                                    generator=keyed_generator(clf.prediction_key_, draw)).nodes
        with torch.no_grad():
            expected = expected + torch.softmax(clf.module_(*pad_subgraphs(graph, table)), -1)
    np.testing.assert_allclose(proba, expected.numpy() / drw_module.PREDICT_DRAWS, rtol=1e-4)
    other = DRWClassifier(random_state=None, **FAST).fit(data.nodes()[:64], data.y[:64])
    assert other.prediction_key_ != clf.prediction_key_


def test_plan_checked_before_any_walk_and_failed_refit_is_unfitted(data, monkeypatch):
    X, y = data.nodes()[:64], data.y[:64]
    clf = DRWClassifier(random_state=0, **FAST).fit(X, y)

    def walks(*args, **kwargs):
        raise AssertionError("walks drawn before the budget check")

    monkeypatch.setattr(drw_module, "disjoint_random_walks", walks)
    with pytest.raises(PrivacyBudgetError, match="in a single step"):
        clf.set_params(epsilon=0.01, noise_multiplier=0.5).fit(X, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)
    assert not hasattr(clf, "module_") and not hasattr(clf, "classes_")


def test_paper_mode_plan_is_cut_before_training(data, monkeypatch):
    plans = []
    original = drw_module.train_dpsgd
    monkeypatch.setattr(drw_module, "train_dpsgd",
                        lambda module, examples, loss, plan, **kw: plans.append(plan)
                        or original(module, examples, loss, plan, **kw))
    clf = DRWClassifier(epsilon=2.0, noise_multiplier=1.5, max_steps=500, batch_size=32,
                        hidden_dim=8, random_state=0).fit(data.nodes()[:64], data.y[:64])
    assert isinstance(plans[0], UntilBudgetPlan) and plans[0].steps == clf.n_steps_ < 500
    assert plans[0].planned_steps == 500


def test_dropout_changes_training_and_its_default_changes_nothing(data):
    X, y, queries = data.nodes()[:150], data.y[:150], data.nodes()[150:]
    kw = dict(epsilon=4.0, epochs=3, hidden_dim=8, batch_size=64, random_state=0)
    default = DRWClassifier(**kw).fit(X, y).predict_proba(queries)
    np.testing.assert_array_equal(DRWClassifier(dropout=0.0, **kw).fit(X, y).predict_proba(
        queries), default)
    dropped = DRWClassifier(dropout=0.5, **kw).fit(X, y)
    assert dropped.module_.dropout.p == 0.5 and not dropped.module_.training
    assert not np.allclose(dropped.predict_proba(queries), default)
    np.testing.assert_array_equal(dropped.predict_proba(queries),
                                  dropped.predict_proba(queries))  # no dropout in predict


@pytest.mark.parametrize("estimator", ["DRWClassifier", "FDPClassifier"])
def test_dropout_keeps_each_subgraphs_clipped_gradient_exact(estimator, data):
    """With dropout, the one-pass clipped sum of DP-SGD is still the sum over subgraphs of
    each one's own gradient (under the masks drawn for it) clipped to C: the masks are drawn
    per entry, so no subgraph's output depends on another's."""
    import skdpgraph
    from skdpgraph.training import ClippedSumModule

    module = getattr(skdpgraph, estimator)(dropout=0.5, epochs=1, hidden_dim=8, batch_size=64,
                                           epsilon=4.0, random_state=0).fit(
        data.nodes()[:100], data.y[:100]).module_.train()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 4, 8, generator=g)
    adj = (torch.rand(6, 4, 4, generator=g) < 0.5).float() * (1 - torch.eye(4))
    mask, y = torch.ones(6, 4), torch.randint(0, 3, (6,), generator=g)
    assert module.dropout.p == 0.5
    params = [p for p in module.parameters() if p.requires_grad]
    torch.manual_seed(1)  # the dropout masks
    losses = torch.nn.functional.cross_entropy(module(x, adj, mask), y, reduction="none")
    expected = [torch.zeros_like(p) for p in params]
    for i in range(6):
        grads = torch.autograd.grad(losses[i], params, retain_graph=True, allow_unused=True)
        grads = [torch.zeros_like(p) if d is None else d for d, p in zip(grads, params)]
        factor = min(1.0, 0.05 / (float(torch.cat([d.flatten() for d in grads]).norm()) + 1e-6))
        expected = [e + factor * d for e, d in zip(expected, grads)]
    wrapped = ClippedSumModule(module, 0.05)
    torch.manual_seed(1)  # the same masks
    wrapped.clipped_sum(torch.nn.functional.cross_entropy(wrapped(x, adj, mask), y,
                                                          reduction="none"))
    for got, want in zip((p.grad for p in params), expected):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    torch.manual_seed(2)  # other masks: another gradient, so dropout is active
    other = torch.nn.functional.cross_entropy(module(x, adj, mask), y, reduction="none")
    assert not torch.allclose(other, losses)
