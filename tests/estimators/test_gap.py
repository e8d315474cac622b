"""GAPClassifier: accounting, releases after fit, what the pickle holds, the sklearn contract."""

import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from opacus.accountants.analysis.rdp import compute_rdp as opacus_rdp
from opacus.accountants.analysis.rdp import get_privacy_spent
from scipy.sparse.csgraph import shortest_path
from scipy.special import log_ndtr, ndtr
from sklearn.model_selection import GridSearchCV, train_test_split

from skdpgraph import GAPClassifier, Graph, PrivacyBudgetError, ProGAPClassifier
from skdpgraph._random import RandomStreams
from skdpgraph.datasets import make_csbm

FAST = dict(epochs=5, encoder_epochs=5, hidden_dim=8, random_state=0)
KIND = "PMA aggregations"


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=300, n_classes=3, n_features=8, random_state=0)


def _split(data):
    nodes = data.nodes()
    return nodes[:200], data.y[:200], nodes[200:], data.y[200:]


def _copy(graph, extra_edge=None):
    """The same content under a new uid, optionally with one more undirected edge."""
    edges = graph.edge_index
    if extra_edge is not None:
        edges = np.hstack([edges, np.array(extra_edge).reshape(2, 1)])
    return Graph(edges, graph.x, directed=graph.directed)


def _analytic_delta(multiplier, epsilon):
    """Balle & Wang 2018, Theorem 8, in log space (finite for any epsilon)."""
    a = 1.0 / (2.0 * multiplier)
    return ndtr(a - epsilon * multiplier) - np.exp(epsilon + log_ndtr(-a - epsilon * multiplier))


def _tensors(obj, seen=None):
    """Every tensor or array reachable from ``obj`` (attributes, containers, modules)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, (torch.Tensor, np.ndarray)):
        yield obj
    elif isinstance(obj, torch.nn.Module):
        yield from obj.state_dict().values()
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _tensors(value, seen)
    elif isinstance(obj, (list, tuple, set)):
        for value in obj:
            yield from _tensors(value, seen)
    elif hasattr(obj, "__dict__"):
        yield from _tensors(vars(obj), seen)


# ------------------------------------------------------------------ accounting
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0, 8.0])
@pytest.mark.parametrize("hops", [1, 3])
def test_edge_level_epsilon_is_the_analytic_gaussian_bound(data, epsilon, hops):
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=epsilon, hops=hops, **FAST).fit(X, y)
    graph = data.graph
    n = graph.num_nodes  # the default: 1/10 over the possible undirected edges
    assert clf.delta_ == pytest.approx(1 / (10 * n * (n - 1) / 2))
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
    n = graph.num_nodes  # the default: 1/10 over the possible directed edges
    assert clf.delta_ == pytest.approx(1 / (10 * n * (n - 1)))


@pytest.mark.parametrize("epsilon", [2.0, 8.0, 16.0])
def test_node_level_epsilon_is_the_by_hand_rdp_sum(data, epsilon):
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=epsilon, unit="node", head="trained", hops=2,
                        max_degree=20, max_in_degree=None, batch_size=50, epochs=3,
                        encoder_epochs=2, hidden_dim=8, random_state=0).fit(X, y)
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
    assert any("out-degree" in a and "data-dependent" in a for a in clf.privacy_.assumptions)
    assert not any("data-independent" in a for a in clf.privacy_.assumptions)


def test_node_level_progress_shows_the_running_epsilon(data, capsys):
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=4.0, unit="node", head="trained", batch_size=50,
                        verbose=True, **FAST).fit(X, y)
    encoder = [r["epsilon"] for r in clf.history_ if r["stage"] == "encoder"]
    classifier = [r["epsilon"] for r in clf.history_ if r["stage"] == "classifier"]
    running = encoder + classifier
    assert all(math.isfinite(e) for e in running) and running == sorted(running)
    assert classifier[-1] == pytest.approx(clf.epsilon_spent_, rel=1e-9)
    assert 0 < encoder[-1] < classifier[0]  # the PMA is charged between the two runs
    progress = capsys.readouterr().err
    assert "eps " in progress and "eps inf" not in progress  # plain lines: not a terminal
    assert any("verbose" in text for text in clf.privacy_.not_covered)


@pytest.mark.parametrize("verbose", [True, False])
def test_node_level_history_bounds_the_running_epsilon(data, verbose):
    """Live (with a bar) each epoch shows the plan's running epsilon; without one, every
    epoch shows the cheaper bound on the integer orders capped by the fit's epsilon, the
    budget check's. Either way every record is an upper bound on the epsilon spent by then,
    within a few percent, never decreasing, and the last is the fit's epsilon."""
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=4.0, unit="node", head="trained", batch_size=50,
                        verbose=verbose, **FAST).fit(X, y)
    plan = clf._plan_
    per_epoch = math.ceil(plan.encoder.num_examples / plan.encoder.batch_size)
    shown, exact = [], []
    for record in clf.history_:
        run = getattr(plan, record["stage"])
        steps = min(record["epoch"] * per_epoch, run.steps)
        shown.append(record["epsilon"])
        exact.append(plan.running_epsilon(clf.delta_, record["stage"], steps))
    assert all(x <= s <= 1.05 * x for s, x in zip(shown, exact)) and shown == sorted(shown)
    assert shown[-1] == exact[-1] == pytest.approx(clf.epsilon_spent_, rel=1e-12)
    if verbose:
        assert shown == exact
    else:
        bound = [plan.running_epsilon(clf.delta_, r["stage"],
                                      min(r["epoch"] * per_epoch, getattr(plan, r["stage"]).steps),
                                      integer_orders=True) for r in clf.history_]
        assert shown == [min(b, clf.epsilon_spent_) for b in bound] and shown != exact


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=1e-7, delta=1e-10), "cannot reach epsilon=1e-07"),
    (dict(epsilon=1e-7, delta=1e-12, unit="node", head="trained"),
     "cannot reach epsilon=1e-07"),
    (dict(epsilon=1e-7, delta=1e-12, unit="node"),  # the encoder's share, 5/8
     "vote-head encoder cannot reach epsilon=6.25e-08"),
])
def test_impossible_budgets_raise(data, kwargs, match):
    X, y, _, _ = _split(data)
    with pytest.raises(PrivacyBudgetError, match=match):
        GAPClassifier(**{**FAST, **kwargs}).fit(X, y)


@pytest.mark.parametrize("epsilon", [1e5, 1e6, 1e7])
def test_very_large_epsilon_is_calibrated(data, epsilon):
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=epsilon, epochs=1, encoder_epochs=1, hidden_dim=8,
                        random_state=0).fit(X, y)
    assert 0.999 * epsilon <= clf.epsilon_spent_ <= epsilon
    assert _analytic_delta(clf.noise_multiplier_ / np.sqrt(2), clf.epsilon_spent_) <= clf.delta_


def test_epsilon_beyond_the_gaussian_calibration_names_the_parameter(data):
    X, y, _, _ = _split(data)
    with pytest.raises(PrivacyBudgetError, match=r"GAPClassifier: epsilon=1e\+30 is beyond what "
                       r"the Gaussian calibration supports \(max 1e\+12\); use epsilon=np.inf"):
        GAPClassifier(epsilon=1e30, **FAST).fit(X, y)
    node = GAPClassifier(epsilon=1e30, unit="node", **FAST).fit(X, y)
    assert node.epsilon_spent_ < 1e30  # the smallest multiplier (0.01) is already enough


# ------------------------------------------------------------------ assumptions
def test_edge_level_states_that_features_and_labels_are_public(data):
    X, y, _, _ = _split(data)
    edge = GAPClassifier(epsilon=4.0, **FAST).fit(X, y)
    assert any("features and labels are public" in a for a in edge.privacy_.assumptions)
    node = GAPClassifier(epsilon=4.0, unit="node", **FAST).fit(X, y)
    assert not any("features and labels are public" in a for a in node.privacy_.assumptions)
    assert not any("the number of training nodes" in a for a in edge.privacy_.assumptions)


def test_node_level_refuses_duplicate_nodes_edge_level_does_not(data):
    X, y, _, _ = _split(data)
    twice = data.graph.nodes(np.r_[np.arange(100), np.arange(100)])
    with pytest.raises(ValueError, match="[Dd]uplicate|more than once"):
        GAPClassifier(unit="node", **FAST).fit(twice, np.r_[y[:100], y[:100]])
    GAPClassifier(**FAST).fit(twice, np.r_[y[:100], y[:100]])


# ------------------------------------------------------------------ releases after fit
@pytest.mark.parametrize("aggregate, width", [("auto", 3), ("embeddings", 8)])
def test_predict_on_the_fitted_graph_reuses_the_cached_release(data, aggregate, width):
    X, y, X_test, _ = _split(data)
    clf = GAPClassifier(epsilon=4.0, aggregate=aggregate, **FAST).fit(X, y)
    report = clf.privacy_
    first = clf.predict_proba(X_test)
    np.testing.assert_array_equal(first, clf.predict_proba(X_test))
    assert clf.privacy_ is report and report.releases == ()
    cached = clf._cached(data.graph, KIND)
    # Edge level aggregates the 3 classes' probabilities by default, else the 8-wide embeddings.
    assert cached.shape == (data.graph.num_nodes, 2, width)
    torch.testing.assert_close(cached.norm(dim=-1), torch.ones(300, 2))


def test_an_identical_copy_gets_the_cached_release(data):
    # random_state=None: a second release would draw other noise and change predictions.
    X, y, X_test, _ = _split(data)
    clf = GAPClassifier(epsilon=1.0, **{**FAST, "random_state": None}).fit(X, y)
    fitted = clf.predict_proba(X_test)
    first, second = _copy(data.graph), _copy(data.graph)
    proba = clf.predict_proba(first.nodes(np.arange(200, 300)))
    labels = clf.predict(second.nodes(np.arange(200, 300)))
    np.testing.assert_array_equal(proba, fitted)
    np.testing.assert_array_equal(labels, clf.classes_[fitted.argmax(1)])
    assert clf.privacy_.releases == ()


def test_predict_on_a_new_graph_is_a_recorded_release(data):
    X, y, X_test, _ = _split(data)
    clf = GAPClassifier(epsilon=4.0, **FAST).fit(X, y)
    other = make_csbm(n_nodes=100, n_classes=3, n_features=8, random_state=1)
    proba = clf.predict_proba(other.nodes())
    (release,) = clf.privacy_.releases
    assert release["num_nodes"] == 100 and release["kind"] == KIND
    assert release["epsilon"] == pytest.approx(clf.epsilon_spent_)
    assert release["delta"] == clf.delta_
    assert clf.privacy_.total_epsilon == pytest.approx(2 * clf.epsilon_spent_)
    # One query set, one release: predict and predict_proba agree, nothing recorded twice.
    np.testing.assert_array_equal(clf.predict(other.nodes()), clf.classes_[proba.argmax(1)])
    np.testing.assert_array_equal(proba, clf.predict_proba(other.nodes()))
    assert len(clf.privacy_.releases) == 1
    clf.predict(X_test)  # the fitted graph is still served from its cache
    assert len(clf.privacy_.releases) == 1


def test_a_release_on_a_neighbouring_graph_draws_fresh_noise(data):
    # G' = G plus one edge (u, v), fixed random_state. Reusing the training noise would
    # make every node farther than K hops from u and v predict exactly as on G, so the
    # difference of the two outputs would reveal the edge with no noise at all.
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=4.0, **FAST).fit(X, y)
    adjacency = data.graph.adjacency()
    u, v = 0, next(w for w in range(1, 300) if adjacency[0, w] == 0)
    neighbour = _copy(data.graph, extra_edge=(u, v))
    distance = shortest_path(neighbour.adjacency(), unweighted=True, indices=[u, v]).min(0)
    far = np.flatnonzero(distance > clf._plan_.hops)
    assert len(far) >= 20
    on_g = clf.predict_proba(data.graph.nodes(far))
    on_neighbour = clf.predict_proba(neighbour.nodes(far))
    assert len(clf.privacy_.releases) == 1
    changed = np.abs(on_g - on_neighbour).max(axis=1) > 1e-6
    assert changed.mean() > 0.5
    # The aggregations differ on (almost) every row, not only on the two changed ones.
    difference = (clf._cached(neighbour, KIND) - clf._cached(data.graph, KIND))[:, 0]
    assert (difference.norm(dim=-1) > 1e-4).float().mean() > 0.9


def test_node_level_predict_on_another_graph_is_a_recorded_release(data):
    X, y, X_test, _ = _split(data)
    clf = GAPClassifier(epsilon=8.0, unit="node", head="trained", max_in_degree=None,
                        **FAST).fit(X, y)
    assert any("own aggregation rows" in text for text in clf.privacy_.not_covered)
    proba = clf.predict_proba(X_test)  # the fitted graph: the aggregations paid in fit
    np.testing.assert_array_equal(clf.predict(X_test), clf.classes_[proba.argmax(1)])
    assert clf.privacy_.releases == ()
    other = _copy(data.graph, extra_edge=(0, 299))
    clf.predict_proba(other.nodes()[200:])
    (release,) = clf.privacy_.releases
    # The cost of K Gaussians at sigma, checked on the analytic curve.
    multiplier = clf.noise_multiplier_ / np.sqrt(clf._plan_.hops)
    assert _analytic_delta(multiplier, release["epsilon"]) <= clf.delta_ * (1 + 1e-8)
    assert _analytic_delta(multiplier, release["epsilon"] * 0.999) > clf.delta_
    assert "own aggregation rows" in release["not_covered"]
    assert release["sensitivity"] == pytest.approx(np.sqrt(clf.max_degree))


def test_pickled_node_level_gap_keeps_the_aggregations_paid_in_fit(data):
    X, y, X_test, _ = _split(data)
    clf = GAPClassifier(epsilon=8.0, unit="node", head="trained", **FAST).fit(X, y)
    proba = clf.predict_proba(X_test)

    def per_node_tensors(obj):
        return [t for t in _tensors(obj) if t.ndim >= 2 and t.shape[0] == data.graph.num_nodes]

    restored = pickle.loads(pickle.dumps(clf))
    assert len(per_node_tensors(restored)) == 1  # the fit's release, and nothing else
    np.testing.assert_array_equal(restored.predict_proba(X_test), proba)
    assert restored.privacy_.releases == ()
    # A new graph is a new recorded release; with a seed, a release on the same content
    # reproduces the same noise (it reveals nothing new, and is still charged).
    other = _copy(data.graph, extra_edge=(0, 299))
    again = [pickle.loads(pickle.dumps(clf)).predict_proba(_copy(other).nodes()[200:])
             for _ in range(2)]
    np.testing.assert_array_equal(*again)
    # Without a seed the release draws fresh noise.
    unseeded = GAPClassifier(epsilon=8.0, unit="node", head="trained",
                             **{**FAST, "random_state": None}).fit(X, y)
    first, second = (pickle.loads(pickle.dumps(unseeded)).predict_proba(_copy(other).nodes())
                     for _ in range(2))
    assert not np.array_equal(first, second)


def test_bounding_in_degree_covers_own_rows_so_they_are_kept(data):
    X, y, X_test, _ = _split(data)
    clf = GAPClassifier(epsilon=8.0, unit="node", max_in_degree=5, max_degree=100,
                        **FAST).fit(X, y)
    assert clf.sensitivity_ == pytest.approx(math.sqrt(5**2 + 100))
    assert not any("own aggregation rows" in text for text in clf.privacy_.not_covered)
    assert any("in-degree at most max_in_degree=5" in a for a in clf.privacy_.assumptions)
    proba = clf.predict_proba(X_test)
    assert clf.privacy_.releases == ()
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict_proba(data.graph.nodes(np.arange(200, 300))),
                                  proba)
    assert restored.privacy_.releases == ()


# ------------------------------------------------------------------ data kept, API
def test_keeps_no_raw_graph_data(data):
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=4.0, **FAST).fit(X, y)
    for value in vars(clf).values():
        assert not isinstance(value, (Graph, np.ndarray)) or value is clf.classes_
        assert not sp.issparse(value)
    blob = pickle.dumps(clf)
    assert data.graph.fingerprint().encode() not in blob  # a content hash is never pickled
    restored = pickle.loads(blob)
    restored.predict(data.graph.nodes())  # still recognised by its random uid
    assert restored.privacy_.releases == ()
    restored.predict(_copy(data.graph).nodes())  # a copy is not, after loading
    assert len(restored.privacy_.releases) == 1


def test_same_seed_same_model_other_seed_other_noise(data):
    X, y, X_test, _ = _split(data)
    a, b, c = (GAPClassifier(epsilon=2.0, **{**FAST, "random_state": s}).fit(X, y)
               for s in (3, 3, 4))
    np.testing.assert_array_equal(a.predict_proba(X_test), b.predict_proba(X_test))
    assert not np.array_equal(a.predict_proba(X_test), c.predict_proba(X_test))


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
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=4.0, validation_fraction=0.25, **{**FAST, "epochs": 15}).fit(X, y)
    # The split comes from the "split" stream of the fit's random streams.
    _, held = train_test_split(np.arange(200), test_size=50, stratify=y,
                               random_state=RandomStreams(0).integer("split"))
    scores = [r["validation_accuracy"] for r in clf.history_ if r["stage"] == "classifier"]
    assert len(scores) == 15 and clf.score(X[held], y[held]) == pytest.approx(max(scores))
    with pytest.raises(ValueError, match="validation_fraction=0.1 would select epochs on "
                                         "training labels that this fit protects"):
        GAPClassifier(unit="node", validation_fraction=0.1, **FAST).fit(X, y)


@pytest.mark.parametrize("unit,epsilon,n_train,held", [
    ("edge", 4.0, 600, True), ("node", 8.0, 600, False), ("node", np.inf, 600, True),
    ("edge", 4.0, 200, False)])
def test_auto_validation_only_where_the_labels_are_public(unit, epsilon, n_train,
                                                          held):
    # Free where labels are public, and only from 500 training nodes on: on Cora's public
    # split (140 nodes) holding out 14 cost 6 points.
    data = make_csbm(n_nodes=n_train + 100, random_state=0)
    X, y = data.nodes()[:n_train], data.y[:n_train]
    params = {**FAST, "unit": unit, "epsilon": epsilon, "batch_size": 64,
              "epochs": 2, "encoder_epochs": 2}
    clf = GAPClassifier(**params).fit(X, y)
    scores = [r["validation_accuracy"] for r in clf.history_]
    assert all(s is not None for s in scores) if held else all(s is None for s in scores)
    expected = len(y) - int(np.ceil(0.1 * len(y))) if held else len(y)
    assert clf._plan_.encoder.num_examples == expected


def test_aggregate_labels_sums_the_fitted_labels_and_the_other_nodes_probabilities(data):
    """Without noise, each aggregation row is the normalised sum over in-neighbours of the
    fitted nodes' one-hot labels and every other node's encoder probabilities."""
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=math.inf, hops=1, validation_fraction=None, **FAST).fit(X, y)
    with torch.no_grad():
        rows = clf.encoder_(torch.from_numpy(data.graph.features())).softmax(-1).numpy()
    rows[np.asarray(X.index)] = np.eye(3)[np.searchsorted(clf.classes_, y)]
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    sums = data.graph.adjacency() @ rows
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    expected = np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)
    cached = clf._cached(data.graph, KIND)[:, 0].numpy()
    np.testing.assert_allclose(cached, expected, atol=1e-5)


def test_aggregate_labels_costs_what_embeddings_cost(data):
    X, y, _, _ = _split(data)
    fits = [GAPClassifier(epsilon=2.0, aggregate=a, **FAST).fit(X, y)
            for a in ("labels", "embeddings")]
    assert fits[0].noise_multiplier_ == fits[1].noise_multiplier_
    assert fits[0].epsilon_spent_ == fits[1].epsilon_spent_ <= 2.0


@pytest.mark.parametrize("cls", [GAPClassifier, ProGAPClassifier])
def test_node_level_aggregates_the_labels_by_default(data, cls, monkeypatch):
    """At node level "auto" sums the fitted nodes' one-hot labels and the other nodes'
    class probabilities (3 coordinates here) at the cost of embeddings, and says so: a
    node's row, label or prediction, leaves the sums with the node."""
    from skdpgraph.privacy import PMARelease

    rows_seen = []
    for name in ("aggregate", "aggregate_once"):
        original = getattr(PMARelease, name)

        def spy(plan, adjacency, rows, *args, _original=original):
            rows_seen.append(rows.clone())
            return _original(plan, adjacency, rows, *args)
        monkeypatch.setattr(PMARelease, name, spy)
    X, y, _, _ = _split(data)
    fits = {}
    for aggregate in ("embeddings", "auto"):
        rows_seen.clear()
        fits[aggregate] = cls(epsilon=8.0, unit="node", aggregate=aggregate,
                              head="trained", **FAST).fit(X, y)
        assert {rows.shape[-1] for rows in rows_seen} == {3 if aggregate == "auto" else 8}
    fitted_rows = rows_seen[0][torch.from_numpy(np.array(X.index))].numpy()
    np.testing.assert_array_equal(fitted_rows, np.eye(3)[np.searchsorted(fits["auto"].classes_, y)])
    assert fits["auto"].epsilon_spent_ == fits["embeddings"].epsilon_spent_
    assert fits["auto"].noise_multiplier_ == fits["embeddings"].noise_multiplier_
    stated = [a for a in fits["auto"].privacy_.assumptions if "aggregate='auto'" in a]
    assert len(stated) == 1 and "protected at this level" in stated[0]
    assert not any("aggregate=" in a for a in fits["embeddings"].privacy_.assumptions)


# ------------------------------------------------------------------ node level: the vote head
VOTES = "PMA neighbour votes"


def _vote_values(clf):
    return [entry["value"] for entry in getattr(clf, "_release_cache_", [])
            if entry["kind"] == VOTES]


def test_vote_head_counts_the_fitted_labels(data, monkeypatch):
    """The vote release in fit gets the fitted nodes' labels (they vote for them), at the
    cost of prediction votes; a release on another graph has no labels to use."""
    from skdpgraph.privacy import PMARelease

    passed = []
    original = PMARelease.votes

    def spy(plan, adjacency, own, weight, streams, labelled=None):
        passed.append(labelled)
        return original(plan, adjacency, own, weight, streams, labelled)
    monkeypatch.setattr(PMARelease, "votes", spy)
    X, y, _, _ = _split(data)
    fits = {a: GAPClassifier(epsilon=8.0, unit="node", aggregate=a, **FAST).fit(X, y)
            for a in ("auto", "predictions")}
    index, labels = passed[0]
    np.testing.assert_array_equal(index.numpy(), np.asarray(X.index))
    np.testing.assert_array_equal(labels.numpy(), np.searchsorted(fits["auto"].classes_, y))
    assert passed[1] is None  # aggregate="predictions"
    assert fits["auto"].epsilon_spent_ == fits["predictions"].epsilon_spent_
    other = make_csbm(n_nodes=120, n_classes=3, n_features=8, random_state=5)
    fits["auto"].predict(other.nodes())
    assert passed[2] is None


def test_vote_head_is_the_default_at_private_node_level_only(data):
    X, y, X_test, _ = _split(data)
    vote = GAPClassifier(epsilon=8.0, unit="node", **FAST).fit(X, y)
    assert vote.head_.name == "vote" and vote._plan_.classifier is None
    assert vote.module_ is None
    assert {record["stage"] for record in vote.history_} == {"encoder"}
    assert "no classifier training" in vote.privacy_.mechanism
    for other in (GAPClassifier(epsilon=8.0, **FAST),
                  GAPClassifier(epsilon=math.inf, unit="node", **FAST),
                  ProGAPClassifier(epsilon=8.0, unit="node", **FAST)):
        assert other.fit(X, y).head_.name != "vote" and other.module_ is not None


@pytest.mark.parametrize("epsilon, hops", [(2.0, 1), (8.0, 1), (8.0, 2)])
def test_vote_head_epsilon_is_the_by_hand_rdp_sum(data, epsilon, hops):
    """The encoder alone is calibrated to 5/8 of epsilon; with the K Gaussians at the PMA
    multiplier it composes to epsilon (opacus' RDP, an independent computation)."""
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=epsilon, unit="node", hops=hops, max_degree=20,
                        max_in_degree=None, batch_size=50, encoder_epochs=3, hidden_dim=8,
                        random_state=0).fit(X, y)
    sigma, encoder = clf.noise_multiplier_, clf._plan_.encoder.noise_multiplier
    assert encoder != sigma and clf.sensitivity_ == pytest.approx(np.sqrt(20))
    orders = np.arange(2, 128, dtype=float)
    training = opacus_rdp(q=50 / 200, noise_multiplier=encoder, steps=3 * 4, orders=orders)
    alone, _ = get_privacy_spent(orders=orders, rdp=training, delta=clf.delta_)
    assert alone == pytest.approx(0.625 * epsilon, rel=0.05)
    by_hand, _ = get_privacy_spent(orders=orders, rdp=training + hops * orders / (2 * sigma**2),
                                   delta=clf.delta_)
    assert clf.epsilon_spent_ <= epsilon and clf.epsilon_spent_ <= by_hand * (1 + 1e-6)
    assert clf.epsilon_spent_ == pytest.approx(by_hand, rel=0.05)


def test_vote_head_predicts_from_the_paid_fit_release_also_after_pickling(data):
    X, y, X_test, _ = _split(data)
    clf = GAPClassifier(epsilon=8.0, unit="node", **FAST).fit(X, y)
    (votes,) = _vote_values(clf)
    assert votes.shape == (300, 3)
    proba = clf.predict_proba(X_test)
    assert clf.privacy_.releases == () and np.isfinite(proba).all()  # paid in fit
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict_proba(X_test), proba)
    assert restored.privacy_.releases == ()
    restored.predict_proba(_copy(data.graph).nodes()[200:])  # a new graph after loading
    (release,) = restored.privacy_.releases  # a new release, at the PMA multiplier
    multiplier = clf.noise_multiplier_ / np.sqrt(clf._plan_.hops)
    assert release["kind"] == VOTES and "not_covered" not in release  # max_in_degree=10
    assert _analytic_delta(multiplier, release["epsilon"]) <= clf.delta_ * (1 + 1e-8)
    assert _analytic_delta(multiplier, release["epsilon"] * 0.999) > clf.delta_


@pytest.mark.parametrize("head", ["vote", "trained"])
def test_release_not_covered_by_epsilon_is_never_pickled(data, head):
    """Without max_in_degree each node's own rows are outside the reported epsilon: the
    fit's release serves the live estimator only; the pickle carries none of it, and the
    unpickled estimator makes a new recorded release on the same graph."""
    X, y, X_test, _ = _split(data)
    clf = GAPClassifier(epsilon=8.0, unit="node", head=head, max_in_degree=None,
                        **FAST).fit(X, y)
    clf.predict_proba(X_test)
    assert clf.privacy_.releases == ()
    restored = pickle.loads(pickle.dumps(clf))
    assert not [t for t in _tensors(restored) if t.ndim >= 2 and t.shape[0] == 300]
    restored.predict_proba(X_test)
    (release,) = restored.privacy_.releases
    assert "own aggregation rows" in release["not_covered"]


@pytest.mark.parametrize("in_degree", [1, 5, 10])
def test_own_rows_are_covered_by_in_degree_as_the_rdp_sum_states(data, in_degree):
    """Without max_in_degree a node of in-degree d moves its own rows by at most d: the
    same noise at sensitivity sqrt(d^2 + D). Its epsilon is the encoder's RDP plus the K
    Gaussians at that sensitivity (opacus' RDP, an independent computation), as the
    report states."""
    X, y, _, _ = _split(data)
    clf = GAPClassifier(epsilon=4.0, unit="node", max_degree=20, max_in_degree=None,
                        batch_size=50, encoder_epochs=3, hidden_dim=8, random_state=0).fit(X, y)
    plan = clf._plan_
    orders = np.arange(2, 256, dtype=float)
    training = opacus_rdp(q=50 / 200, noise_multiplier=plan.encoder.noise_multiplier,
                          steps=3 * 4, orders=orders)
    multiplier = plan.noise_std / np.sqrt(in_degree**2 + 20)
    by_hand, _ = get_privacy_spent(
        orders=orders, rdp=training + plan.hops * orders / (2 * multiplier**2), delta=clf.delta_)
    stated = plan.in_degree_epsilon(clf.delta_, in_degree)
    assert stated <= by_hand * (1 + 1e-6) and stated == pytest.approx(by_hand, rel=0.05)
    assert stated >= clf.epsilon_spent_ * (1 - 1e-6)
    assert f"d={in_degree}: {stated:.3g}" in clf.privacy_.not_covered[-1]
    covered = GAPClassifier(epsilon=4.0, unit="node", max_degree=20, max_in_degree=5,
                            batch_size=50, encoder_epochs=3, hidden_dim=8, random_state=0)
    assert covered.fit(X, y)._plan_.in_degree_epsilon(clf.delta_, in_degree) == pytest.approx(
        covered.epsilon_spent_)


def _fresh_noise(first, second, weight=2.0):
    """Two releases on the same graph differ by two independent noises: per-logit std
    weight * sqrt(2). A replayed noise gives 0."""
    return (first - second).std().item() == pytest.approx(weight * np.sqrt(2), rel=0.25)


def test_differencing_two_vote_releases_finds_fresh_noise(data, monkeypatch):
    """The adversary queries the unpickled estimator twice on a new graph and differences
    the votes: with fresh noise the difference is pure noise. A release that replays its
    stream (the broken variant) gives identical votes, which the check catches. One hop, so
    that the difference of two releases is exactly two noises (a second hop's counts follow
    the first hop's noisy argmax)."""
    X, y, X_test, _ = _split(data)
    clf = GAPClassifier(epsilon=8.0, unit="node", hops=1,
                        **{**FAST, "random_state": None}).fit(X, y)
    releases = []
    for _ in range(2):
        restored = pickle.loads(pickle.dumps(clf))
        restored.predict_proba(_copy(data.graph).nodes()[200:])
        releases += _vote_values(restored)[1:]  # the release after the fit's
    assert _fresh_noise(*releases)

    from skdpgraph.estimators import _base
    monkeypatch.setattr(_base, "release_streams", lambda *args: RandomStreams(0))
    broken = []
    for _ in range(2):
        restored = pickle.loads(pickle.dumps(clf))
        restored.predict_proba(_copy(data.graph).nodes()[200:])
        broken += _vote_values(restored)[1:]
    assert not _fresh_noise(*broken)


@pytest.mark.parametrize("kwargs, match", [
    (dict(head="vote"), "head='vote'.*unit='node' with a finite epsilon.*'edge'"),
    (dict(head="vote", unit="node", epsilon=math.inf), "epsilon=inf"),
    (dict(unit="node", aggregate="embeddings"), "aggregate='embeddings' is not"),
])
def test_vote_head_refusals_name_the_parameter(data, kwargs, match):
    X, y, _, _ = _split(data)
    clf = GAPClassifier(**{**FAST, **kwargs})
    with pytest.raises(ValueError, match=match):
        clf.fit(X, y)
    assert not hasattr(clf, "encoder_")
    with pytest.raises(ValueError, match="head='vote' is GAPClassifier's"):
        ProGAPClassifier(unit="node", head="vote", **FAST).fit(X, y)


# ------------------------------------------------------------------ the unit, and resolved defaults
def _outputs(clf, nodes):
    history = [(r["stage"], r["epoch"], r.get("loss"), r.get("epsilon")) for r in clf.history_]
    return clf.predict_proba(nodes), clf.epsilon_spent_, history, clf.privacy_


@pytest.mark.parametrize("cls", [GAPClassifier, ProGAPClassifier])
@pytest.mark.parametrize("unit", ["edge", "node"])
def test_privacy_level_still_sets_the_unit_with_a_future_warning(data, cls, unit):
    X, y, X_test, _ = _split(data)
    params = dict(FAST, epochs=2, encoder_epochs=2)
    new = cls(unit=unit, **params).fit(X, y)
    with pytest.warns(FutureWarning, match="'privacy_level' was renamed 'unit'"):
        old = cls(privacy_level=unit, **params).fit(X, y)
    assert old.unit_ == new.unit_ == unit
    (p_old, e_old, h_old, r_old), (p_new, e_new, h_new, r_new) = (
        _outputs(old, X_test), _outputs(new, X_test))
    np.testing.assert_array_equal(p_old, p_new)
    assert (e_old, h_old, r_old) == (e_new, h_new, r_new)


def test_unit_and_privacy_level_both_set_are_refused(data):
    X, y, _, _ = _split(data)
    clf = GAPClassifier(unit="node", privacy_level="node", **FAST)
    with pytest.raises(ValueError, match="privacy_level='node' and unit='node' are both set"):
        clf.fit(X, y)
    assert not hasattr(clf, "unit_")


def test_clone_get_params_and_grid_search_over_the_unit(data):
    from sklearn.base import clone

    clf = GAPClassifier(unit="node", **FAST)
    params = clone(clf).get_params()
    assert params["unit"] == "node" and params["privacy_level"] == "deprecated"
    nodes, y = data.nodes(), data.y
    search = GridSearchCV(GAPClassifier(epsilon=8.0, **dict(FAST, epochs=2, encoder_epochs=2)),
                          {"unit": ["edge", "node"]}, cv=2).fit(nodes, y)
    assert search.best_params_["unit"] in ("edge", "node")
    assert search.best_estimator_.unit_ == search.best_params_["unit"]
    with pytest.raises(ValueError, match="unit"):
        GAPClassifier(unit="graph").fit(nodes, y)


@pytest.mark.parametrize("cls, params, resolved", [
    (GAPClassifier, dict(), dict(head="trained", hops=2, hidden_dim=64, encoder_layers=2,
                                 dropout=0.5, epochs=100, encoder_epochs=100,
                                 aggregate="labels", batch_size=200)),
    (GAPClassifier, dict(unit="node"), dict(head="vote", hops=1, hidden_dim=64,
                                            encoder_layers=1, dropout=0.0, epochs=10,
                                            encoder_epochs=50, batch_size=1024)),
    (GAPClassifier, dict(unit="node", head="trained"), dict(
        head="trained", hidden_dim=16, encoder_layers=2, epochs=10, encoder_epochs=10,
        batch_size=256)),
    (ProGAPClassifier, dict(unit="node", aggregate="embeddings"), dict(
        head="progressive", hops=1, hidden_dim=64, encoder_layers=1, epochs=50,
        encoder_epochs=20, aggregate="embeddings", batch_size=1024)),
])
def test_defaults_are_resolved_once_into_fitted_attributes(data, cls, params, resolved):
    """Planning alone (no training) resolves every None and "auto" into a ``*_`` attribute,
    and the plan is built from those values."""
    X, y, _, _ = _split(data)
    clf = cls(epsilon=8.0, random_state=0, **params)
    clf._checked_plan(X, y)
    for name, value in resolved.items():
        got = clf.head_.name if name == "head" else getattr(clf, f"{name}_")
        assert got == value, name
    assert clf._plan_.hops == clf.hops_  # plan_dpsgd caps the batch at the 200 nodes
    assert clf._plan_.encoder.batch_size == min(clf.batch_size_, 200)
    assert clf.get_params()["hops"] is None  # the parameters stay as given


def test_the_front_door_builds_its_estimators_without_deprecated_names():
    import warnings

    from skdpgraph import DPNodeClassifier
    from skdpgraph.estimators._front_door import choose

    data = make_csbm(n_nodes=120, n_classes=3, n_features=8, random_state=1)
    for unit in ("edge", "node"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            clf = DPNodeClassifier(unit=unit, epsilon=4.0, random_state=0).fit(
                data.nodes()[:80], data.y[:80])
        params = clf.estimator_.get_params()
        assert all(params[name] == value for name, value in choose(unit, 4.0).params.items())
        assert params.get("privacy_level", "deprecated") == "deprecated"
