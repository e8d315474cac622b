"""Released-object audits (issue 12): what an adversary holding a fitted estimator can do.

Every audit is played against real fitted estimators (GAP at both privacy levels, FDP
with and without private inference), live and after a pickle round-trip, and each has a
deliberately broken variant, built here with ``monkeypatch``, that the same audit must
catch: a passing audit means the attack found nothing, not that it could not have.

1. Batch membership from released weights: no better than chance.
2. Seed replay: no value kept in the fitted object reproduces the weights when refitted.
3. Noise reuse across releases: two releases of the same aggregation on graphs that
   differ in one edge (or one node) differ by more than the noise-free change: their
   difference is not confined to the rows the change can reach.
4. Repeated predictions: the same query (same graph, identical copy, after unpickling)
   gives either the same output with nothing new recorded, or a new entry in
   ``privacy_.releases``, counted in ``total_epsilon``.

Fits are tiny (2 epochs on a 300-node CSBM graph) except the batch-membership attack,
which needs 2000 training nodes for its accuracy bound to mean something.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import pickle
import string

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn import config_context
from sklearn.base import clone
from torch import nn

import skdpgraph
import skdpgraph._random as random_module
import skdpgraph.estimators._base as base_module
import skdpgraph.sampling
from skdpgraph import Graph
from skdpgraph.datasets import make_csbm
from tests._fast_estimators import FAST, make

# ---------------------------------------------------------------------------- estimators
#: The six estimators of issue 11 (FDP's private inference is audited in items 3 and 4).
ALL = [name for name in FAST if name != "FDP-private"]
#: Estimators that make noisy releases after fit (through ``BaseDPClassifier._release``).
RELEASING = ["GAP-edge", "GAP-node", "ProGAP-edge", "ProGAP-node", "FDP-private", "Votes",
             "RGNN"]
#: Configurations audited for kept seeds besides ALL: with ``label_hops="auto"`` RGNN
#: fits two more GNNs on a held-out split, which draws a split and an initialisation
#: stream of its own during fit.
VARIANTS = {"RGNN-auto": ("RGNN", dict(label_hops="auto"))}
SEEDED = ALL + list(VARIANTS)


def _make(name: str, **overrides):
    """``make`` for the names of ALL and of VARIANTS."""
    base, params = VARIANTS.get(name, (name, {}))
    return make(base, **{**params, **overrides})


#: A fixed seed (the dangerous case: every stream is a function of it) and None; the full
#: audits (``-m audit``) repeat the release audits with more seeds.
RANDOM_STATES = [pytest.param(0, id="seed0"), pytest.param(None, id="none")]
RANDOM_STATES_FULL = RANDOM_STATES + [
    pytest.param(seed, id=f"seed{seed}-full", marks=pytest.mark.audit)
    for seed in (1, 123456789, 2 ** 32 - 1)]


def _roundtrip(est):
    return pickle.loads(pickle.dumps(est))


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=300, n_classes=3, n_features=8, random_state=0)


@pytest.fixture(scope="module")
def train(data):
    """60 training nodes of the 300-node graph and their labels."""
    index = np.arange(0, 300, 5)
    return data.graph.nodes(index), data.y[index]


def _modules(est) -> dict[str, nn.Module]:
    return {name: value for name, value in vars(est).items() if isinstance(value, nn.Module)}


def _weights(est) -> dict[str, torch.Tensor]:
    """Every parameter and buffer of every fitted torch module of ``est``, and every array
    released in ``fit`` (an estimator without a network keeps only those)."""
    released = {f"release.{entry['kind']}": torch.as_tensor(entry["value"]).clone()
                for entry in getattr(est, "_release_cache_", [])
                if entry["paid_in_fit"] and isinstance(entry["value"], np.ndarray)}
    return released | {f"{name}.{key}": value.detach().cpu().clone()
                       for name, module in _modules(est).items()
                       for key, value in module.state_dict().items()}


def _same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# ---------------------------------------------------------------------------- 1. batches
#: Estimators whose first layer is an nn.Linear on the node features, trained with
#: Poisson-sampled DP-SGD: the released weights could reveal the batches.
POISSON_LINEAR = {
    "DPMLP": dict(hidden_dim=64),
    "GAP-node": dict(hidden_dim=64, hops=1, encoder_epochs=1, max_degree=10),
    "ProGAP-node": dict(hidden_dim=64, hops=1, encoder_epochs=1, max_degree=10),
}
_ATTACK_NODES, _ATTACK_FEATURES, _ATTACK_BATCH = 2000, 32, 640  # q = 0.32
#: Allowed excess accuracy over chance; the test checks it is >= 4 binomial standard errors.
_MARGIN = 0.05


@pytest.fixture(scope="module")
def attack_data():
    return make_csbm(n_nodes=_ATTACK_NODES, n_classes=4, n_features=_ATTACK_FEATURES,
                     random_state=1)


def _record_first_poisson_batch(monkeypatch) -> list:
    """Wrap PoissonSampler.sample: the list gets ``(n, q, indices)`` of every batch drawn."""
    batches: list = []
    original = skdpgraph.sampling.PoissonSampler.sample

    def sample(self):
        index = original(self)
        batches.append((self.num_examples, self.sample_rate, index.clone().numpy()))
        return index

    monkeypatch.setattr(skdpgraph.sampling.PoissonSampler, "sample", sample)
    return batches


def _membership_attack(est, n: int, q: float) -> np.ndarray:
    """Guess, from the released weights only, which examples were in the first batch.

    ``nn.Linear`` initialises its weight as ``b * (2u - 1)`` with u uniform and
    ``b = 1 / sqrt(fan_in)``; training moves it a little. If the sampler's uniforms were
    the initialisation's, ``u_j < q`` says that example j was in the first batch. Returns
    one guess vector per candidate layer (every linear layer with at least n weights).
    """
    guesses = []
    for module in _modules(est).values():
        for layer in module.modules():
            if isinstance(layer, nn.Linear) and layer.weight.numel() >= n:
                bound = 1.0 / math.sqrt(layer.in_features)
                w = layer.weight.detach().cpu().numpy().ravel()[:n]
                guesses.append((w + bound) / (2 * bound) < q)
    assert guesses, "no linear layer large enough to attack"
    return np.array(guesses)


def _attack_accuracy(name: str, attack_data, monkeypatch) -> tuple[float, float]:
    """Fit ``name`` at epsilon=2 with random_state=None; return (best accuracy, chance).

    The attack reads the weights of the unpickled estimator: what its holder sees.
    """
    batches = _record_first_poisson_batch(monkeypatch)
    est = make(name, epsilon=2.0, epochs=1, batch_size=_ATTACK_BATCH, random_state=None,
               **POISSON_LINEAR[name])
    est = _roundtrip(est.fit(attack_data.graph.nodes(), attack_data.y))
    assert batches, "no Poisson batch was drawn"
    n, q, first = batches[0]
    assert n == _ATTACK_NODES
    truth = np.zeros(n, dtype=bool)
    truth[first] = True
    accuracy = float(np.max(np.mean(_membership_attack(est, n, q) == truth, axis=1)))
    chance = max(q, 1 - q)
    assert _MARGIN >= 4 * math.sqrt(chance * (1 - chance) / n), "too few nodes for the bound"
    return accuracy, chance


@pytest.mark.parametrize("name", list(POISSON_LINEAR))
def test_released_weights_do_not_reveal_batch_membership(name, attack_data, monkeypatch):
    accuracy, chance = _attack_accuracy(name, attack_data, monkeypatch)
    assert accuracy <= chance + _MARGIN, (
        f"{name}: first-batch membership guessed from the weights with accuracy "
        f"{accuracy:.3f} (chance {chance:.3f})")


def _share_init_and_batch_streams(monkeypatch) -> None:
    """Broken RandomStreams: the "batches" generator replays the initialisation seed."""
    streams_cls = random_module.RandomStreams
    original_torch = streams_cls.torch
    init_seed: dict[int, int] = {}

    @contextlib.contextmanager
    def initialisation(self):
        seed = int(self.sequence("init").generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
        init_seed[id(self)] = seed
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            yield

    def shared_torch(self, purpose, device="cpu"):
        if purpose == "batches" and id(self) in init_seed:
            return torch.Generator(device=device).manual_seed(init_seed[id(self)])
        return original_torch(self, purpose, device)

    monkeypatch.setattr(streams_cls, "initialisation", initialisation)
    monkeypatch.setattr(streams_cls, "torch", shared_torch)


@pytest.mark.parametrize("name", list(POISSON_LINEAR))
def test_batch_membership_attack_catches_shared_streams(name, attack_data, monkeypatch):
    _share_init_and_batch_streams(monkeypatch)
    accuracy, chance = _attack_accuracy(name, attack_data, monkeypatch)
    assert accuracy > chance + 0.15, (
        f"{name}: the attack should succeed when batches reuse the init stream "
        f"(accuracy {accuracy:.3f}, chance {chance:.3f})")


# ---------------------------------------------------------------------------- 2. seeds
_RANDOM_OBJECTS = (np.random.Generator, np.random.RandomState, np.random.SeedSequence,
                   np.random.BitGenerator, torch.Generator)
#: Values below this are not tried as seeds: a seed derived from OS entropy is smaller
#: with probability < 2**-16 (a constant small seed is caught by the two-fits check).
_SMALLEST_SEED = 2 ** 16
_MAX_CANDIDATES = 50
_SMALL_ARRAY = 64


def _kept_randomness(est) -> tuple[dict[int, str], list[str]]:
    """Every int-like value (seed candidates) and every random object ``est`` holds.

    Walks ``vars(est)`` recursively through dicts, sequences, dataclasses, objects,
    closures and small integer arrays; reads ints from numbers, bytes, hex or decimal
    strings and small integer arrays (each element, and the words joined). Big float
    tensors and arrays are skipped. Returns ``({value: path}, [paths of random objects])``.
    """
    candidates: dict[int, str] = {}
    objects: list[str] = []
    seen: set[int] = set()

    def add(value, path: str) -> None:
        value = int(value)
        if abs(value) >= _SMALLEST_SEED:
            candidates.setdefault(value, path)

    def visit(obj, path: str, depth: int) -> None:
        if depth > 16 or obj is None or isinstance(obj, (bool, np.bool_, float, complex)):
            return
        if isinstance(obj, _RANDOM_OBJECTS):
            objects.append(f"{path}: {type(obj).__name__}")
            return
        if isinstance(obj, (int, np.integer)):
            add(obj, path)
            return
        if isinstance(obj, (bytes, bytearray)):
            if 0 < len(obj) <= 64:
                add(int.from_bytes(obj, "little"), path)
                add(int.from_bytes(obj, "big"), path)
            return
        if isinstance(obj, str):
            text = obj.strip()
            if 8 <= len(text) <= 128 and all(c in string.hexdigits for c in text):
                add(int(text, 16), path)
                if text.isdigit():
                    add(int(text), path)
            return
        if id(obj) in seen or isinstance(obj, type) or sp.issparse(obj):
            return
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            if not (obj.is_floating_point() or obj.is_complex()) and obj.numel() <= _SMALL_ARRAY:
                visit(obj.detach().cpu().numpy(), path, depth + 1)
            return
        if isinstance(obj, np.ndarray):
            if obj.dtype.kind in "iu" and obj.size <= _SMALL_ARRAY:
                for i, value in enumerate(obj.ravel()):
                    add(value, f"{path}[{i}]")
                if obj.dtype.kind == "u" and 1 < obj.size <= 8:  # words of one wide int
                    add(int.from_bytes(obj.astype(obj.dtype.newbyteorder("<")).tobytes(),
                                       "little"), path)
            elif obj.dtype == object:
                for i, value in enumerate(obj.ravel()):
                    visit(value, f"{path}[{i}]", depth + 1)
            return
        if isinstance(obj, dict):
            for key, value in list(obj.items()):
                visit(key, f"{path}<key>", depth + 1)
                visit(value, f"{path}[{key!r}]", depth + 1)
            return
        if isinstance(obj, (list, tuple, set, frozenset)):
            for i, value in enumerate(list(obj)):
                visit(value, f"{path}[{i}]", depth + 1)
            return
        if isinstance(obj, functools.partial):
            visit((obj.func, obj.args, obj.keywords), f"{path}<partial>", depth + 1)
            return
        if callable(obj) and hasattr(obj, "__code__"):
            cells = [c.cell_contents for c in (obj.__closure__ or ()) if c is not None]
            visit((cells, obj.__defaults__, obj.__kwdefaults__), f"{path}<closure>", depth + 1)
            return
        if hasattr(obj, "__self__") and callable(obj):  # bound method
            visit(obj.__self__, f"{path}<self>", depth + 1)
            return
        if dataclasses.is_dataclass(obj):
            for field in dataclasses.fields(obj):
                visit(getattr(obj, field.name, None), f"{path}.{field.name}", depth + 1)
        if hasattr(obj, "__dict__"):
            for key, value in list(vars(obj).items()):
                visit(value, f"{path}.{key}", depth + 1)
        for slot in getattr(type(obj), "__slots__", ()):
            if isinstance(slot, str) and hasattr(obj, slot):
                visit(getattr(obj, slot), f"{path}.{slot}", depth + 1)

    for name, value in vars(est).items():
        visit(value, name, 0)
    return candidates, objects


def _replays(est, X, y, seed: int, fitted: dict) -> bool:
    """Whether refitting with ``seed`` as ``random_state`` reproduces the weights ``fitted``.

    Parameter validation is skipped, so 128-bit roots are accepted.
    """
    try:
        with config_context(skip_parameter_validation=True):
            replay = clone(est).set_params(random_state=seed).fit(X, y)
    except Exception:  # a value the fit refuses as a seed replays nothing
        return False
    return _same_weights(_weights(replay), fitted)


def _seed_replay_findings(est, X, y) -> list[str]:
    """Every kept value that, replayed as the root seed, reproduces ``est``'s weights."""
    fitted = _weights(est)
    candidates, _ = _kept_randomness(est)
    assert len(candidates) <= _MAX_CANDIDATES, (
        f"{type(est).__name__} keeps {len(candidates)} wide int-like values; too many to "
        f"replay them all: {sorted(candidates.values())[:20]}")
    return [f"{path} = {seed}" for seed, path in candidates.items()
            if _replays(est, X, y, seed, fitted)]


@pytest.mark.parametrize("name", SEEDED)
def test_no_kept_value_replays_training(name, data, train):
    # (test_seed_replay_catches_a_kept_root shows that a replayed root reproduces a fit)
    X, y = train
    est = _make(name, random_state=None).fit(X, y)
    other = _make(name, random_state=None).fit(X, y)
    if name in VARIANTS:
        assert getattr(est, "label_hops_scores_", None), f"{name}: the choice did not run"
    assert not _same_weights(_weights(est), _weights(other)), (
        f"{name}: random_state=None gives the same weights twice (a constant seed)")
    est.predict_proba(data.graph.nodes())  # prediction-time state is kept too
    for holder in (est, _roundtrip(est)):  # live, and what a pickle gives away
        _, objects = _kept_randomness(holder)
        assert not objects, f"{name} keeps random generators or seed sequences: {objects}"
        findings = _seed_replay_findings(holder, X, y)
        assert not findings, f"{name} keeps values that replay its training: {findings}"


def _store_root_entropy(name: str, monkeypatch) -> None:
    """Broken estimator: ``_train`` stores the fit's root entropy as ``self._seed_``."""
    roots: list[int] = []
    streams_cls = random_module.RandomStreams
    original_init = streams_cls.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        roots.extend(v.entropy for v in vars(self).values()
                     if isinstance(v, np.random.SeedSequence))

    estimator_cls = FAST[VARIANTS.get(name, (name,))[0]][0]
    original_train = estimator_cls._train

    def train(self, *args, **kwargs):
        result = original_train(self, *args, **kwargs)
        self._seed_ = roots[0]
        return result

    monkeypatch.setattr(streams_cls, "__init__", init)
    monkeypatch.setattr(estimator_cls, "_train", train)


@pytest.mark.parametrize("name", SEEDED)
def test_seed_replay_catches_a_kept_root(name, train, monkeypatch):
    X, y = train
    _store_root_entropy(name, monkeypatch)
    est = _roundtrip(_make(name, random_state=None).fit(X, y))
    assert hasattr(est, "_seed_")
    findings = _seed_replay_findings(est, X, y)
    assert any(f.startswith("_seed_ =") for f in findings), findings


def test_seed_scan_finds_random_objects():
    holder = type("Holder", (), {})()
    holder.nested_ = {"a": [1, (2, torch.Generator())]}
    holder.rng_ = np.random.default_rng(0)
    holder.key_ = bytes(range(16))
    candidates, objects = _kept_randomness(holder)
    assert len(objects) == 2
    assert int.from_bytes(bytes(range(16)), "little") in candidates


# ---------------------------------------------------------------------------- shared
@pytest.fixture(scope="module")
def sparse():
    """A sparser 300-node graph (mean degree 4), so that one change reaches few rows."""
    return make_csbm(n_nodes=300, n_classes=3, n_features=8, avg_degree=4.0, random_state=2)


def _with_edge(graph: Graph, u: int, v: int) -> Graph:
    """``graph`` plus the edge ``(u, v)``."""
    edges = np.hstack([graph.edge_index, [[u], [v]]])
    return Graph(edges, graph.x, directed=graph.directed)


def _with_node_changed(graph: Graph, w: int) -> Graph:
    """``graph`` with node ``w``'s features replaced (each moves to the far end of its range)."""
    x = np.array(graph.features())
    x[w] = np.where(x[w] > 0, -1.4, 1.4)
    return Graph(graph.edge_index, x, directed=graph.directed)


def _copy(graph: Graph) -> Graph:
    """An identical copy of ``graph`` (same content, new uid)."""
    return Graph(graph.edge_index, graph.x, directed=graph.directed)


def _ball(graph: Graph, sites, radius: int) -> np.ndarray:
    """Mask of the nodes within ``radius`` hops of ``sites`` (edges in either direction)."""
    adjacency = graph.adjacency()
    reach = (adjacency + adjacency.T).tocsr()
    mask = np.zeros(graph.num_nodes, dtype=bool)
    mask[list(sites)] = True
    for _ in range(radius):
        mask |= np.asarray(reach @ mask.astype(np.float32)).ravel() > 0
    return mask


def _released_rows(est, graph: Graph) -> np.ndarray:
    """The latest release ``est`` holds for ``graph`` (found by uid), one row per node.

    The release cache is part of the fitted object: its holder reads it as we do here.
    """
    for entry in reversed(getattr(est, "_release_cache_", [])):
        if entry["uid"] == graph.uid:
            value = entry["value"]
            if isinstance(value, torch.Tensor):
                value = value.detach().cpu().numpy()
            elif isinstance(value, tuple):  # FDP's NeighbourSums: sums and counts per row
                value = np.hstack([np.asarray(v, dtype=np.float64).reshape(len(v), -1)
                                   for v in value])
            value = np.asarray(value, dtype=np.float64)
            return value.reshape(value.shape[0], -1)
    raise AssertionError(f"{type(est).__name__} holds no release for this graph")


# ---------------------------------------------------------------------------- 3. noise reuse
#: How one change is made for each releasing estimator, and how far (in hops, either
#: direction) its noise-free effect can reach in a release: PMA's ``hops`` (plus one for
#: the edge a degree bound may swap at node level), FDP's one-hop stars, RGNN's
#: ``feature_hops`` rounds of reconstruction; plus one hop of margin.
NOISE_REUSE = {
    "GAP-edge": dict(change="edge", reach=2, params={}),
    "GAP-node": dict(change="edge", reach=3, params={}),
    "ProGAP-edge": dict(change="edge", reach=2, params=dict(hops=1)),
    "ProGAP-node": dict(change="edge", reach=3, params=dict(hops=1)),
    "FDP-private": dict(change="node", reach=2, params={}),
    "Votes": dict(change="edge", reach=1, params={}),
    "RGNN": dict(change="node", reach=2, params=dict(feature_hops=1, label_hops=1)),
}
#: An audit fails when more than this fraction of the rows out of the change's reach are
#: unchanged between two releases (fresh noise moves every row; shared noise none).
_UNCHANGED_ALLOWED = 0.1
_MIN_FAR_ROWS = 100


def _sites(graph: Graph, change: str) -> list:
    """Three distinct change sites of ``graph``: nodes (``change="node"``) or pairs of
    nodes more than 3 hops apart (``"edge"``), picked by a public generator."""
    rng = np.random.default_rng(0)
    nodes = [int(v) for v in rng.choice(graph.num_nodes, size=3, replace=False)]
    if change == "node":
        return [(v,) for v in nodes]
    return [(v, int(rng.choice(np.flatnonzero(~_ball(graph, [v], 3))))) for v in nodes]


def _changed(graph: Graph, change: str, site: tuple) -> Graph:
    return _with_edge(graph, *site) if change == "edge" else _with_node_changed(graph, site[0])


def _unchanged_fraction(est_a, graph_a, est_b, graph_b, site, reach) -> float:
    """Release on ``graph_a`` (by ``est_a``) and its neighbour ``graph_b`` (by ``est_b``);
    the fraction of rows beyond ``reach`` of ``site`` whose released value is the same."""
    for est, graph in ((est_a, graph_a), (est_b, graph_b)):
        est.predict_proba(graph.nodes())
    far = ~_ball(graph_b, site, reach)
    assert far.sum() >= _MIN_FAR_ROWS, f"only {far.sum()} rows out of the change's reach"
    a, b = _released_rows(est_a, graph_a)[far], _released_rows(est_b, graph_b)[far]
    assert a.shape == b.shape
    return float(np.mean(np.all(np.isclose(a, b, rtol=0, atol=1e-6), axis=1)))


def _noise_reuse(name: str, random_state, train_nodes, labels) -> dict[str, float]:
    """The fraction of unchanged far rows in each of three pairs of neighbouring releases.

    - ``"fit vs release"``: the training graph D (its release made in fit, or a new one
      where the estimator keeps none) and D' = D plus one change;
    - ``"release vs release"``: G (a graph other than D) and G' = G plus one change;
    - ``"two unpickled copies"``: one pickle loaded twice, one copy releasing on G, the
      other on G' (two holders of the same state, e.g. two processes).
    """
    config = NOISE_REUSE[name]
    change, reach = config["change"], config["reach"]
    est = make(name, random_state=random_state, **config["params"]).fit(train_nodes, labels)
    blob = pickle.dumps(est)
    d = train_nodes.graph
    first, second, third = _sites(d, change)
    g = _changed(d, change, first)
    g_prime = _changed(g, change, second)
    d_prime = _changed(d, change, third)
    return {
        "fit vs release": _unchanged_fraction(est, d, est, d_prime, third, reach),
        "release vs release": _unchanged_fraction(est, g, est, g_prime, second, reach),
        "two unpickled copies": _unchanged_fraction(pickle.loads(blob), g, pickle.loads(blob),
                                                    g_prime, second, reach),
    }


@pytest.fixture(scope="module")
def sparse_train(sparse):
    index = np.arange(0, 300, 5)
    return sparse.graph.nodes(index), sparse.y[index]


@pytest.mark.parametrize("random_state", RANDOM_STATES_FULL)
@pytest.mark.parametrize("name", RELEASING)
def test_releases_on_neighbouring_graphs_have_fresh_noise(name, random_state, sparse_train):
    fractions = _noise_reuse(name, random_state, *sparse_train)
    reused = {pair: f for pair, f in fractions.items() if f > _UNCHANGED_ALLOWED}
    assert not reused, (
        f"{name}: the difference of two releases on graphs one change apart is noise-free "
        f"out of the change's reach (fraction of unchanged rows: {reused})")


def _shared_release_streams(variant: str):
    """Broken ``release_streams``: the streams every release draws its noise from.

    ``"training"``: ``RandomStreams(random_state)``, training's own streams (no release
    key); ``"constant"``: one constant stream; ``"not keyed by graph"``: one release key
    for every release, whatever the graph.
    """
    streams, release = random_module.RandomStreams, random_module.PURPOSES.index("release")
    return {
        "training": lambda random_state, *args: streams(random_state),
        "constant": lambda random_state, *args: streams(12345),
        "not keyed by graph": lambda random_state, *args: streams(random_state, key=(release,)),
    }[variant]


#: Each broken variant (seed 0; with None only the constant stream is broken: training's
#: streams then have fresh entropy too) must be caught by both pairs of releases on G, G'.
_BROKEN_STREAMS = [("training", 0), ("constant", 0), ("not keyed by graph", 0),
                   ("constant", None)]


def _caught_by(name: str, variant: str) -> set[str]:
    """The pairs that see a broken variant: always the releases on G and G'; and D, D'
    where D's release shares the broken streams: RGNN's fit drew its release of D first
    from the "clients" purpose, so training's streams replay it exactly (GAP and ProGAP
    keep the release made in fit from training's streams, at both levels)."""
    pairs = {"release vs release", "two unpickled copies"}
    if name == "RGNN" and variant == "training":
        pairs.add("fit vs release")
    return pairs


@pytest.mark.parametrize("variant,random_state", _BROKEN_STREAMS,
                         ids=[f"{v}-{'seed0' if s == 0 else 'none'}" for v, s in _BROKEN_STREAMS])
@pytest.mark.parametrize("name", RELEASING)
def test_noise_reuse_audit_catches_shared_release_streams(name, variant, random_state,
                                                          sparse_train, monkeypatch):
    monkeypatch.setattr(base_module, "release_streams", _shared_release_streams(variant))
    fractions = _noise_reuse(name, random_state, *sparse_train)
    missed = {pair: fractions[pair] for pair in _caught_by(name, variant)
              if fractions[pair] <= 1 - _UNCHANGED_ALLOWED}
    assert not missed, (
        f"{name}: release streams shared ({variant}) should leave the rows out of the "
        f"change's reach unchanged; fractions: {fractions}")


# ---------------------------------------------------------------------------- 4. repeats
class _Ledger:
    """Plays queries against one estimator and lists what breaks the release contract.

    After each query, either nothing was recorded and the output is the one the earlier
    release of the same graph content gave (cached), or exactly one release was recorded
    for this graph and ``total_epsilon`` grew by its epsilon (its noise is then fresh, or,
    with a seed, that of the earlier release of the same content, which reveals nothing
    new). A query on a content never released (other than the training graph, paid in
    fit) must be recorded by an estimator that makes noisy releases.
    """

    def __init__(self, releases: bool, training_graph: Graph) -> None:
        self.releases = releases
        self.training = training_graph.fingerprint()
        self.paid: set[str] = set()
        self.proba: dict[str, np.ndarray] = {}
        self.findings: list[str] = []
        self.unpickled = False

    def query(self, est, method: str, graph: Graph, index: np.ndarray, y: np.ndarray,
              where: str) -> None:
        key, nodes, before = graph.fingerprint(), graph.nodes(index), est.privacy_
        out = (est.score(nodes, y) if method == "score" else getattr(est, method)(nodes))
        after = est.privacy_
        new = len(after.releases) - len(before.releases)
        tag = f"{method} on {where}"
        if new == 1:
            record = after.releases[-1]
            if not math.isclose(after.total_epsilon, before.total_epsilon + record["epsilon"]):
                self.findings.append(f"{tag}: total_epsilon did not grow by the release's")
            if record.get("num_nodes") != graph.num_nodes:
                self.findings.append(f"{tag}: recorded num_nodes {record.get('num_nodes')}")
            _released_rows(est, graph)  # the release is held for this graph
            self.paid.add(key)
            self.proba.pop(key, None)
        elif new == 0:
            if self.releases and key not in self.paid and key != self.training:
                self.findings.append(f"{tag}: a release on a new graph was not recorded")
            if key in self.proba:
                proba = self.proba[key]
                expected = {"predict_proba": proba,
                            "predict": est.classes_[np.argmax(proba, axis=1)],
                            "score": float(np.mean(est.classes_[np.argmax(proba, axis=1)] == y))
                            }[method]
                if not np.array_equal(np.asarray(out), np.asarray(expected)):
                    self.findings.append(f"{tag}: output changed with nothing recorded")
        else:
            self.findings.append(f"{tag}: {new} releases recorded for one query")
        if method == "predict_proba":
            self.proba[key] = out


_METHODS = ("predict_proba", "predict", "score")


def _repeat_findings(name: str, random_state, data, train, *, first: bool = False
                     ) -> list[str]:
    """Repeat every query on the training graph D, an identical copy, a graph G one node
    away and its copy, live and after a pickle round-trip; return the ledger's findings
    (``first``: stop at the first)."""
    X, y = train
    est = make(name, random_state=random_state).fit(X, y)
    d = X.graph
    g = _with_node_changed(d, 7)
    graphs = {"D": d, "copy of D": _copy(d), "G": g, "copy of G": _copy(g)}
    index = np.arange(1, d.num_nodes, 4)  # mostly nodes outside the training set
    ledger = _Ledger(name in RELEASING, d)
    plays = ([(False, where) for where in ("D", "D", "copy of D", "G", "G", "copy of G")]
             + [(True, where) for where in ("D", "copy of D", "G", "copy of G", "G")])
    for unpickle, where in plays:
        if unpickle and not ledger.unpickled:
            est, ledger.unpickled = _roundtrip(est), True
        for method in _METHODS:
            ledger.query(est, method, graphs[where], index, data.y[index],
                         f"{where} after unpickling" if unpickle else where)
            if first and ledger.findings:
                return ledger.findings
    return ledger.findings


@pytest.mark.parametrize("random_state", RANDOM_STATES_FULL)
@pytest.mark.parametrize("name", list(FAST))
def test_repeated_predictions_are_cached_or_recorded(name, random_state, data, train):
    findings = _repeat_findings(name, random_state, data, train)
    assert not findings, f"{name}: {findings}"


def _release_without_record(monkeypatch) -> None:
    """Broken base: ``_release`` makes a new release (``make``) but neither appends it to
    ``privacy_.releases`` nor caches it."""
    original = base_module.BaseDPClassifier._release

    def release(self, *args, **kwargs):
        report, cache = self.privacy_, list(getattr(self, "_release_cache_", []))
        value = original(self, *args, **kwargs)
        self.privacy_, self._release_cache_ = report, cache
        return value

    monkeypatch.setattr(base_module.BaseDPClassifier, "_release", release)


@pytest.mark.parametrize("random_state", RANDOM_STATES)
@pytest.mark.parametrize("name", RELEASING)
def test_repeat_audit_catches_unrecorded_releases(name, random_state, data, train,
                                                  monkeypatch):
    _release_without_record(monkeypatch)
    findings = _repeat_findings(name, random_state, data, train, first=True)
    assert any("not recorded" in f or "nothing recorded" in f for f in findings), findings
