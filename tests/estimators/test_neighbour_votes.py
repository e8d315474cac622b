"""NeighbourVoteClassifier: the Laplace release's accounting, sensitivity, reuse and leaks.

Each check is a function that returns what it finds wrong; every test runs it on the real
estimator (nothing found) and on a deliberately broken variant (something found), so each
test is shown able to fail.
"""

import dataclasses
import math
import pickle

import numpy as np
import pytest
import torch
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from sklearn.preprocessing import normalize

from skdpgraph import Graph, NeighbourVoteClassifier, PrivacyLedger
from skdpgraph.datasets import make_csbm
from skdpgraph.estimators import _neighbour_votes
from skdpgraph.estimators._vote_stages import VOTE_SHARPNESS
from skdpgraph.estimators._releases import ReleaseCache
from skdpgraph.privacy import (
    neighbour_vote_sums, plan_neighbour_votes, pure_epsilon, release_neighbour_votes, vote_weights,
)

EPSILON = 4.0


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=300, n_classes=4, n_features=8, random_state=0)


def _fit(data, **params):
    train = np.arange(0, 300, 2)
    settings = dict(epsilon=EPSILON, random_state=0)
    return NeighbourVoteClassifier(**{**settings, **params}).fit(
        data.graph.nodes(train), data.y[train])


def _edge_weights(graph, receivers=None) -> np.ndarray:
    """Dense ``W[v, u]``, computed here edge by edge: an edge into a receiver ``v`` carries
    all of ``u``'s row, or half of it when ``u`` receives too (undirected graphs)."""
    n = graph.num_nodes
    receivers = np.ones(n, bool) if receivers is None else receivers
    weights = np.zeros((n, n))
    for u, v in graph.edge_index.T:  # an edge entry u -> v feeds v's sum
        if receivers[v]:
            weights[v, u] = 1.0 if graph.directed or not receivers[u] else 0.5
    return weights


def _clean_sums(est, graph, train=None, labels=None, receivers=None) -> np.ndarray:
    """The noise-free release, computed here: ``W @ rows`` with the public rows (stage 1's
    probabilities raised to ``VOTE_SHARPNESS`` and renormalised, labels on ``train``)."""
    x = normalize(graph.features().astype(np.float64))
    if est.stage1_input_ == "propagated":  # SGC's two hops, only when the graph is public
        a_hat = graph.adjacency().toarray() + np.eye(graph.num_nodes)
        scale = 1.0 / np.sqrt(a_hat.sum(axis=1))
        step = scale[:, None] * a_hat * scale[None, :]
        x = normalize(step @ (step @ x))
    rows = est._stage1_.predict_proba(x)
    rows = rows ** VOTE_SHARPNESS
    rows /= rows.sum(axis=1, keepdims=True)
    if train is not None:
        rows[train] = np.eye(rows.shape[1])[labels]
    return _edge_weights(graph, receivers) @ rows


def _fit_release(est) -> np.ndarray:
    return next(e["value"] for e in est._release_cache_ if e["paid_in_fit"])


def _broken_scale(monkeypatch, factor: float) -> None:
    """Broken estimator: its release draws noise ``factor`` x the planned scale."""
    def release(graph, rows, plan, generator, receivers=None):
        return release_neighbour_votes(
            graph, rows, dataclasses.replace(plan, scale=plan.scale * factor), generator,
            receivers)

    monkeypatch.setattr(_neighbour_votes, "release_neighbour_votes", release)


# ---------------------------------------------------------------- the accountant
def _accounting_findings(plan) -> list[str]:
    """How the plan's epsilon disagrees with sensitivity / scale and with dp-accounting's PLD."""
    out = []
    expected = plan.sensitivity / plan.scale
    for delta in (0.0, 1e-5, 1e-9):
        if not math.isclose(plan.epsilon(delta), expected, rel_tol=1e-12):
            out.append(f"epsilon({delta}) = {plan.epsilon(delta)} != {expected}")
    for delta in (1e-3, 1e-6, 1e-9):
        accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
        accountant.compose(dp_event.LaplaceDpEvent(plan.scale / plan.sensitivity))
        pld = accountant.get_epsilon(delta)
        if not expected * (1 - 1e-2) <= pld <= plan.epsilon(delta) * (1 + 1e-9):
            out.append(f"PLD epsilon at {delta} = {pld}, plan {plan.epsilon(delta)}")
    return out


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("epsilon", [0.5, 4.0, 8.0])
def test_plan_epsilon_is_sensitivity_over_scale_and_bounds_the_pld(epsilon, directed):
    plan = plan_neighbour_votes(epsilon, 3, directed)
    assert plan.sensitivity == 1.0  # each edge's two contributions carry one row at most
    assert plan.scale == pytest.approx(plan.sensitivity / epsilon)
    assert plan.epsilon(1e-5) == pytest.approx(epsilon, rel=1e-12)
    assert pure_epsilon(plan.dp_event()) == pytest.approx(epsilon, rel=1e-12)
    assert _accounting_findings(plan) == []
    # a plan whose noise is ten times smaller than its scale says
    broken = dataclasses.replace(plan, scale=plan.scale / 10)
    object.__setattr__(broken, "epsilon", lambda delta=0.0: epsilon)
    assert _accounting_findings(broken)


def _noise_findings(est, data) -> list[str]:
    """The Laplace scale measured on the fit's release against the reported epsilon."""
    train = np.arange(0, 300, 2)
    noise = _fit_release(est) - _clean_sums(est, data.graph, train, data.y[train])
    measured = float(np.mean(np.abs(noise)))  # E|Lap(b)| = b
    implied = 1.0 / measured  # L1 sensitivity 1
    if not math.isclose(implied, est.epsilon_spent_, rel_tol=0.15):
        return [f"noise scale {measured:.4g} means epsilon {implied:.4g}; reported "
                f"{est.epsilon_spent_:g}"]
    return []


def test_released_noise_matches_the_reported_epsilon(data, monkeypatch):
    est = _fit(data)
    assert est.epsilon_spent_ == pytest.approx(EPSILON) and est.delta_ == 0.0
    assert _noise_findings(est, data) == []
    _broken_scale(monkeypatch, 0.1)
    assert _noise_findings(_fit(data), data)


def _holdout_findings(est, data) -> list[str]:
    """What is wrong with a fit whose hold-out receives the release: the label voters (the
    training nodes outside it) must not receive, the release must be the edge-split sums
    plus noise at the reported epsilon, and stage 3 must fit on the hold-out alone."""
    train = np.arange(0, 300, 2)
    voters = train[~est._receivers_[train]]
    out = []
    if not 0 < len(voters) < len(train) or est.n_stage3_nodes_ != len(train) - len(voters):
        out.append(f"{len(voters)} label voters, stage 3 on {est.n_stage3_nodes_} nodes")
    if (~est._receivers_[np.setdiff1d(np.arange(300), train)]).any():
        out.append("a node outside the training set does not receive")
    noise = _fit_release(est) - _clean_sums(est, data.graph, voters, data.y[voters],
                                            est._receivers_)
    # the hold-out votes with cross-fitted probabilities: compare the sums it does not feed
    held = np.setdiff1d(train, voters)
    fed = np.asarray(data.graph.adjacency()[:, held].sum(axis=1)).ravel() > 0
    measured = float(np.mean(np.abs(noise[est._receivers_ & ~fed])))
    if not math.isclose(1.0 / measured, est.epsilon_spent_, rel_tol=0.15):
        out.append(f"noise scale {measured:.4g} against epsilon {est.epsilon_spent_:g}")
    return out


def test_a_holdout_receives_the_release_and_voters_feed_only_the_other_end(data, monkeypatch):
    est = _fit(data, validation_fraction=0.25)
    assert _holdout_findings(est, data) == []
    real = _neighbour_votes.release_neighbour_votes

    def both_ways(graph, rows, plan, generator, receivers=None):  # broken: receivers ignored
        return real(graph, rows, plan, generator)

    monkeypatch.setattr(_neighbour_votes, "release_neighbour_votes", both_ways)
    assert _holdout_findings(_fit(data, validation_fraction=0.25), data)


# ---------------------------------------------------------------- per-edge sensitivity
def _toggled(edges: set, n: int, x: np.ndarray, pair: tuple, directed: bool) -> Graph:
    changed = edges ^ {pair}
    index = np.array(sorted(changed)).T if changed else np.zeros((2, 0), dtype=int)
    return Graph(index, x, num_nodes=n, directed=directed)


def _largest_edge_change(sums, directed: bool, seed: int, scale: float = 1.0) -> float:
    """The largest L1 change of ``sums(graph, rows, receivers)`` over every single-edge add
    or remove on a small random graph, with probability and one-hot rows times ``scale``
    and a random set of receivers."""
    rng = np.random.default_rng(seed)
    n, k = 10, 3
    x = np.eye(n)
    pairs = [(u, v) for u in range(n) for v in range(n) if u != v and (directed or u < v)]
    edges = {pairs[i] for i in rng.choice(len(pairs), size=12, replace=False)}
    rows = rng.dirichlet(np.ones(k), size=n)
    rows[:3] = np.eye(k)[rng.integers(k, size=3)]
    rows = rows * scale
    receivers = rng.random(n) < 0.6
    base = sums(Graph(np.array(sorted(edges)).T, x, directed=directed), rows, receivers)
    return max(float(np.abs(sums(_toggled(edges, n, x, pair, directed), rows, receivers)
                            - base).sum()) for pair in pairs)


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_one_edge_moves_the_noise_free_release_by_at_most_the_sensitivity(directed, seed):
    sensitivity = plan_neighbour_votes(1.0, 3, directed).sensitivity
    assert _largest_edge_change(neighbour_vote_sums, directed, seed) <= sensitivity + 1e-9

    def unchecked(graph, rows, receivers):  # broken: rows of L1 norm above 1 are summed
        return vote_weights(graph, receivers) @ rows

    assert _largest_edge_change(unchecked, directed, seed, scale=3.0) > sensitivity
    with pytest.raises(ValueError, match="L1 norm"):
        _largest_edge_change(neighbour_vote_sums, directed, seed, scale=3.0)


@pytest.mark.parametrize("seed", range(3))
def test_edge_weights_match_an_edge_by_edge_computation_and_split_each_edge(seed):
    rng = np.random.default_rng(seed)
    n = 12
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    graph = Graph(np.array([pairs[i] for i in rng.choice(len(pairs), 20, replace=False)]).T,
                  np.eye(n), num_nodes=n)
    receivers = rng.random(n) < 0.5
    weights = vote_weights(graph, receivers).toarray()
    assert np.allclose(weights, _edge_weights(graph, receivers))
    assert (weights + weights.T <= 1 + 1e-12).all()

    def full_both_ways(graph, rows, receivers):  # broken: each edge feeds both sums in full
        return graph.adjacency().astype(np.float64) @ rows

    assert _largest_edge_change(full_both_ways, False, seed) > 1.0


# ---------------------------------------------------------------- releases at predict time
def _reuse_findings(est, data) -> list[str]:
    """What predict on the fitted graph charges or changes (it must reuse the paid release)."""
    with PrivacyLedger() as ledger:
        first = est.predict_proba(data.graph.nodes())
        second = est.predict_proba(data.graph.nodes())
    out = []
    if est.privacy_.releases or ledger.entries:
        out.append(f"{len(est.privacy_.releases)} new releases, {len(ledger.entries)} charges")
    if not np.array_equal(first, second):
        out.append("two predictions on the fitted graph differ")
    return out


def test_predict_on_the_fitted_graph_reuses_the_paid_release(data, monkeypatch):
    assert _reuse_findings(_fit(data), data) == []
    monkeypatch.setattr(ReleaseCache, "_cached", lambda self, graph, kind: None)
    assert _reuse_findings(_fit(data), data)


def _other_graph_findings(est, data) -> list[str]:
    """What is wrong with predict on another graph: one new charged release, fresh noise."""
    other = Graph(data.graph.edge_index[:, ::2], data.graph.x)  # half the edge entries
    with PrivacyLedger() as ledger:
        est.predict_proba(other.nodes())
        est.predict_proba(other.nodes())  # the same graph again: no second charge
    out = []
    releases = est.privacy_.releases
    if len(releases) != 1 or len(ledger.entries) != 1:
        out.append(f"{len(releases)} releases, {len(ledger.entries)} ledger entries, not 1")
    elif releases[0]["epsilon"] != pytest.approx(EPSILON) or releases[0]["noise"] != "laplace":
        out.append(f"release recorded as {releases[0]}")
    if not math.isclose(ledger.total().epsilon, EPSILON * len(ledger.entries)):
        out.append(f"ledger total {ledger.total().epsilon}")
    if not math.isclose(est.privacy_.total_epsilon, EPSILON * (1 + len(releases))):
        out.append(f"privacy_.total_epsilon {est.privacy_.total_epsilon}")
    value = next(e["value"] for e in est._release_cache_ if e["uid"] == other.uid)
    noise, fit_noise = value - _clean_sums(est, other), _fit_release(est) - _clean_sums(
        est, data.graph, np.arange(0, 300, 2), data.y[::2])
    if np.mean(np.isclose(noise, fit_noise, rtol=0, atol=1e-9)) > 0.01:
        out.append("the new release reuses the fit's noise")
    return out


def test_predict_on_another_graph_pays_a_new_release_with_fresh_noise(data, monkeypatch):
    assert _other_graph_findings(_fit(data), data) == []
    fit_streams = []
    real = _neighbour_votes.release_neighbour_votes

    def shared_noise(graph, rows, plan, generator, receivers=None):  # broken: same noise
        fit_streams.append(np.random.default_rng(7))
        return real(graph, rows, plan, fit_streams[-1], receivers)

    monkeypatch.setattr(_neighbour_votes, "release_neighbour_votes", shared_noise)
    assert _other_graph_findings(_fit(data), data)


# ---------------------------------------------------------------- the fitted object
def _kept_randomness(obj, path="est", seen=None) -> list[str]:
    """Paths of random generators, seed sequences or RandomStates held by ``obj``."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, (np.random.Generator, np.random.SeedSequence, np.random.RandomState,
                        torch.Generator)):
        return [path]
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        items = vars(obj).items()
    else:
        return []
    return [found for key, value in items
            for found in _kept_randomness(value, f"{path}.{key}", seen)]


def _pickle_findings(est, data) -> list[str]:
    """Randomness kept by a pickled fitted estimator, and released values that are not noisy."""
    loaded = pickle.loads(pickle.dumps(est))
    out = _kept_randomness(loaded)
    train = np.arange(0, 300, 2)
    clean = _clean_sums(est, data.graph, train, data.y[train])
    for entry in loaded._release_cache_:
        if entry["fingerprint"] is not None:
            out.append("a content fingerprint is pickled")
        if np.isclose(entry["value"], clean, rtol=0, atol=1e-9).mean() > 0.01:
            out.append(f"the pickled release {entry['kind']} holds noise-free sums")
    arrays = [v for v in vars(loaded).values() if isinstance(v, np.ndarray) and v.ndim == 2]
    if any(v.shape == clean.shape and np.allclose(v, clean) for v in arrays):
        out.append("an attribute holds the noise-free sums")
    return out


def test_a_pickled_estimator_keeps_no_randomness_and_only_noisy_sums(data, monkeypatch):
    assert _pickle_findings(_fit(data, random_state=None), data) == []
    _broken_scale(monkeypatch, 0.0)  # broken: the release is the noise-free sums
    assert _pickle_findings(_fit(data), data)


# ---------------------------------------------------------------- epsilon=inf
def _non_private_findings(est, data) -> list[str]:
    """What differs from the non-private model: no guarantee and the noise-free sums."""
    train = np.arange(0, 300, 2)
    out = []
    if est.privacy_.private or not math.isinf(est.epsilon_spent_) or est.noise_scale_ is not None:
        out.append(f"reported {est.privacy_.epsilon}, scale {est.noise_scale_}")
    if not np.allclose(_fit_release(est), _clean_sums(est, data.graph, train, data.y[train]),
                       rtol=0, atol=1e-9):
        out.append("the release is not the noise-free sums")
    return out


def test_infinite_epsilon_fits_the_non_private_model(data, monkeypatch):
    est = _fit(data, epsilon=np.inf)
    assert _non_private_findings(est, data) == []
    assert est.score(data.graph.nodes(np.arange(1, 300, 2)), data.y[1::2]) > 0.5
    real = _neighbour_votes.plan_neighbour_votes

    def noisy(epsilon, num_classes, directed):  # broken: noise at epsilon=inf
        plan = real(epsilon, num_classes, directed)
        return dataclasses.replace(plan, scale=1.0) if plan.scale is None else plan

    monkeypatch.setattr(_neighbour_votes, "plan_neighbour_votes", noisy)
    assert _non_private_findings(_fit(data, epsilon=np.inf), data)


# ---------------------------------------------------------------- report and API
def test_report_states_the_unit_relation_mechanism_and_inference(data):
    report = _fit(data).privacy_
    assert report.unit == "one undirected edge; node features and labels are public"
    assert report.neighbouring_relation == "add or remove one undirected edge"
    assert report.mechanism.startswith("Laplace, scale 0.25 per coordinate (L1 sensitivity 1")
    assert "reuses the release paid in fit" in report.inference
    assert any("node set are public" in a for a in report.assumptions)
    assert report.delta == 0.0


def test_directed_graph_states_its_unit_at_the_same_scale(data):
    directed = Graph(data.graph.edge_index, data.graph.x, directed=True)
    est = NeighbourVoteClassifier(epsilon=EPSILON, random_state=0).fit(
        directed.nodes(np.arange(0, 300, 2)), data.y[::2])
    assert est.noise_scale_ == pytest.approx(1.0 / EPSILON)
    assert est.privacy_.unit.startswith("one directed edge")


def test_graph_beats_its_own_stage_one_on_a_homophilous_graph():
    data = make_csbm(n_nodes=600, n_classes=4, n_features=8, random_state=3)
    train, test = np.arange(0, 600, 3), np.setdiff1d(np.arange(600), np.arange(0, 600, 3))
    est = NeighbourVoteClassifier(epsilon=8.0, random_state=0).fit(
        data.graph.nodes(train), data.y[train])
    stage1 = np.mean(est._stage1_.predict_proba(
        normalize(data.graph.features(test).astype(np.float64))).argmax(1) == data.y[test])
    assert est.score(data.graph.nodes(test), data.y[test]) > stage1


def test_sparse_features_give_the_dense_features_model(data):
    import scipy.sparse as sp

    sparse = Graph(data.graph.edge_index, sp.csr_matrix(data.graph.x))
    assert sp.issparse(sparse.x) and not sp.issparse(data.graph.x)
    train = np.arange(0, 300, 2)
    dense_fit = NeighbourVoteClassifier(epsilon=np.inf, random_state=0).fit(
        data.graph.nodes(train), data.y[train])
    sparse_fit = NeighbourVoteClassifier(epsilon=np.inf, random_state=0).fit(
        sparse.nodes(train), data.y[train])
    # the rows the regressions read are the same, kept sparse
    rows = _neighbour_votes.row_normalised_features(sparse, train)
    assert sp.issparse(rows)
    np.testing.assert_allclose(rows.toarray(), normalize(data.graph.features(train).astype(
        np.float64)))
    np.testing.assert_allclose(sparse_fit.predict_proba(sparse.nodes()),
                               dense_fit.predict_proba(data.graph.nodes()), atol=1e-6)
