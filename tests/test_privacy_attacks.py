"""The adversary of issue 11, played against real fitted estimators.

Each privacy test attacks what a fitted estimator gives back (its attributes, its
pickle, its errors) and, next to it, a deliberately broken variant built in the test
with ``monkeypatch`` that the same attack must catch: a passing attack test means the
attack found nothing, not that it could not have found anything.

Every estimator is parametrised (GAP at both privacy levels); fits are tiny (60 training
nodes of a 300-node CSBM graph, 2 epochs) except the batch-membership attack, which needs
2000 training nodes for its accuracy bound to mean something. To prove that each test
fails on the code before issue 11, the seed replay also knows that code's seeding (the
legacy ``make_seeds``), as long as some module still uses it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import string
import sys

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn import config_context
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import resample
from sklearn.utils.validation import check_is_fitted
from torch import nn

import skdpgraph
import skdpgraph._random as random_module
import skdpgraph.sampling
from skdpgraph.datasets import make_csbm
from skdpgraph.privacy import PrivacyBudgetError

# ---------------------------------------------------------------------------- estimators
#: One tiny configuration per estimator (GAP once per privacy level). Batches hold every
#: training node (sampling rate 1), which keeps the accountants fast.
FAST = {
    "DPMLP": (skdpgraph.DPMLPClassifier,
              dict(epsilon=4.0, hidden_dim=8, epochs=2, batch_size=64)),
    "GAP-edge": (skdpgraph.GAPClassifier,
                 dict(epsilon=4.0, privacy_level="edge", hops=1, hidden_dim=8, epochs=2,
                      encoder_epochs=2)),
    "GAP-node": (skdpgraph.GAPClassifier,
                 dict(epsilon=4.0, privacy_level="node", hops=1, hidden_dim=8, epochs=2,
                      encoder_epochs=2, batch_size=64, max_degree=4)),
    "FDP": (skdpgraph.FDPClassifier,
            dict(epsilon=4.0, hidden_dim=8, epochs=2, batch_size=64, max_degree=2)),
    "DRW": (skdpgraph.DRWClassifier,
            dict(epsilon=4.0, hidden_dim=8, epochs=2, batch_size=64, noise_multiplier=2.0)),
    "RGNN": (skdpgraph.RGNNClassifier,
             dict(n_sampled_features=2, epochs=2, feature_hops=2, label_hops=2, n_clusters=4,
                  hidden_dim=8)),
}
ALL = list(FAST)
#: Estimators whose privacy unit is a node (duplicates must be refused).
NODE_UNIT = ["DPMLP", "GAP-node", "FDP", "DRW", "RGNN"]
#: Over-budget settings of the estimators that take a noise_multiplier.
OVER_BUDGET = {
    "DPMLP": dict(epsilon=1.0, noise_multiplier=0.3),
    "FDP": dict(epsilon=1.0, noise_multiplier=0.3),
    "DRW": dict(epsilon=0.01, noise_multiplier=0.5),
}


def make(name: str, **overrides):
    """A fresh estimator ``name`` in its tiny configuration, with ``overrides``."""
    cls, params = FAST[name]
    return cls(**{**params, **overrides})


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
    """Every parameter and buffer of every fitted torch module of ``est``."""
    return {f"{name}.{key}": value.detach().cpu().clone()
            for name, module in _modules(est).items()
            for key, value in module.state_dict().items()}


def _same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _unfitted(est) -> None:
    """Assert ``est`` holds nothing but its constructor parameters."""
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    for name in ("classes_", "module_", "privacy_", "epsilon_spent_"):
        assert not hasattr(est, name), f"a failed fit left {name}"
    left = set(vars(est)) - set(est.get_params(deep=False))
    assert not left, f"a failed fit left {sorted(left)}"


# ---------------------------------------------------------------------------- item 1
#: Estimators whose first layer is an nn.Linear on the node features, trained with
#: Poisson-sampled DP-SGD: the released weights could reveal the batches.
POISSON_LINEAR = {
    "DPMLP": dict(hidden_dim=64),
    "GAP-node": dict(hidden_dim=64, hops=1, encoder_epochs=1, max_degree=10),
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
    """Fit ``name`` at epsilon=2 with random_state=None; return (best accuracy, chance)."""
    batches = _record_first_poisson_batch(monkeypatch)
    est = make(name, epsilon=2.0, epochs=1, batch_size=_ATTACK_BATCH, random_state=None,
               **POISSON_LINEAR[name])
    est.fit(attack_data.graph.nodes(), attack_data.y)
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


# ---------------------------------------------------------------------------- item 2
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


def _legacy_seed_in_use() -> bool:
    """Whether some skdpgraph module still seeds a fit through the legacy ``make_seeds``."""
    return any(name.startswith("skdpgraph.") and name != "skdpgraph._random"
               and getattr(module, "make_seeds", None) is not None
               for name, module in list(sys.modules.items()))


@contextlib.contextmanager
def _legacy_root(seed: int):
    """Make the legacy ``make_seeds`` return ``Seeds(seed)``: the old code's replay."""
    with pytest.MonkeyPatch.context() as patch:
        for name, module in list(sys.modules.items()):
            if name.startswith("skdpgraph") and getattr(module, "make_seeds", None) is not None:
                patch.setattr(module, "make_seeds", lambda random_state: random_module.Seeds(seed))
        yield


def _replays(est, X, y, seed: int, fitted: dict) -> bool:
    """Whether refitting with ``seed`` as the root reproduces the weights ``fitted``.

    Tried as ``random_state=seed`` (validation skipped, so 128-bit roots are accepted)
    and, while any module still uses the legacy ``make_seeds``, as its seed.
    """
    routes = [(seed, contextlib.nullcontext())]
    if _legacy_seed_in_use() and 0 <= seed < 2 ** 63:
        routes.append((None, _legacy_root(seed)))
    for random_state, route in routes:
        try:
            with route, config_context(skip_parameter_validation=True):
                replay = clone(est).set_params(random_state=random_state).fit(X, y)
        except Exception:  # a value the fit refuses as a seed replays nothing
            continue
        if _same_weights(_weights(replay), fitted):
            return True
    return False


def _seed_replay_findings(est, X, y) -> list[str]:
    """Every kept value that, replayed as the root seed, reproduces ``est``'s weights."""
    fitted = _weights(est)
    candidates, _ = _kept_randomness(est)
    assert len(candidates) <= _MAX_CANDIDATES, (
        f"{type(est).__name__} keeps {len(candidates)} wide int-like values; too many to "
        f"replay them all: {sorted(candidates.values())[:20]}")
    return [f"{path} = {seed}" for seed, path in candidates.items()
            if _replays(est, X, y, seed, fitted)]


@pytest.mark.parametrize("name", ALL)
def test_no_kept_value_replays_training(name, data, train):
    # (test_seed_replay_catches_a_kept_root shows that a replayed root reproduces a fit)
    X, y = train
    est = make(name, random_state=None).fit(X, y)
    other = make(name, random_state=None).fit(X, y)
    assert not _same_weights(_weights(est), _weights(other)), (
        f"{name}: random_state=None gives the same weights twice (a constant seed)")
    est.predict_proba(data.graph.nodes())  # prediction-time state is kept too
    _, objects = _kept_randomness(est)
    assert not objects, f"{name} keeps random generators or seed sequences: {objects}"
    findings = _seed_replay_findings(est, X, y)
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

    estimator_cls = FAST[name][0]
    original_train = estimator_cls._train

    def train(self, *args, **kwargs):
        result = original_train(self, *args, **kwargs)
        self._seed_ = roots[0]
        return result

    monkeypatch.setattr(streams_cls, "__init__", init)
    monkeypatch.setattr(estimator_cls, "_train", train)


@pytest.mark.parametrize("name", ALL)
def test_seed_replay_catches_a_kept_root(name, train, monkeypatch):
    X, y = train
    _store_root_entropy(name, monkeypatch)
    est = make(name, random_state=None).fit(X, y)
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


# ---------------------------------------------------------------------------- item 3
def _failing_refits(name: str) -> list[str]:
    return ["one_class", "label_outside_classes", "error_in_training"] + (
        ["over_budget"] if name in OVER_BUDGET else [])


@pytest.mark.parametrize("name,failure", [(name, failure) for name in ALL
                                          for failure in _failing_refits(name)])
def test_failed_refit_leaves_estimator_unfitted(name, failure, train, monkeypatch):
    X, y = train
    est = make(name, random_state=0).fit(X, y)
    check_is_fitted(est)
    if failure == "one_class":
        with pytest.raises(ValueError):
            est.fit(X, np.zeros_like(y))
    elif failure == "label_outside_classes":
        est.set_params(classes=[0, 1])
        with pytest.raises(ValueError):
            est.fit(X, y)
    elif failure == "error_in_training":
        def broken_step(self, *args, **kwargs):
            raise RuntimeError("injected failure in an optimiser step")

        for optimizer in (torch.optim.Adam, torch.optim.SGD):
            monkeypatch.setattr(optimizer, "step", broken_step)
        with pytest.raises(RuntimeError, match="injected failure"):
            est.fit(X, y)
    else:
        est.set_params(**OVER_BUDGET[name])
        with pytest.raises(PrivacyBudgetError):
            est.fit(X, y)
    _unfitted(est)
    with pytest.raises(NotFittedError):
        est.predict(X)


def _forbid_training(monkeypatch) -> list[str]:
    """Make every DP-SGD loop entry point and optimiser step record the call and raise."""
    calls: list[str] = []

    def forbidden(what):
        def call(*args, **kwargs):
            calls.append(what)
            raise AssertionError(f"{what} ran before the budget check")
        return call

    import skdpgraph.training
    monkeypatch.setattr(skdpgraph.training, "train_dpsgd", forbidden("train_dpsgd"))
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("skdpgraph.estimators") and hasattr(module, "train_dpsgd"):
            monkeypatch.setattr(module, "train_dpsgd", forbidden(f"{module_name}.train_dpsgd"))
    for optimizer in (torch.optim.Adam, torch.optim.SGD):
        monkeypatch.setattr(optimizer, "step", forbidden(f"{optimizer.__name__}.step"))
    return calls


@pytest.mark.parametrize("name", list(OVER_BUDGET))
def test_over_budget_noise_multiplier_fails_before_training(name, train, monkeypatch):
    X, y = train
    calls = _forbid_training(monkeypatch)
    est = make(name, random_state=0, **OVER_BUDGET[name])
    with pytest.raises(PrivacyBudgetError):
        est.fit(X, y)
    assert calls == [], f"{name} trained before refusing the budget: {calls}"
    _unfitted(est)


def test_training_detector_catches_a_fit_that_trains():
    small = make_csbm(n_nodes=60, n_classes=2, n_features=4, random_state=0)
    with pytest.MonkeyPatch.context() as patch:
        calls = _forbid_training(patch)
        with pytest.raises(AssertionError, match="before the budget check"):
            make("DPMLP", random_state=0).fit(small.graph.nodes(), small.y)
    assert calls


# ---------------------------------------------------------------------------- item 5
@pytest.mark.parametrize("name", NODE_UNIT)
def test_duplicate_training_nodes_are_refused(name, data):
    index = resample(np.arange(0, 300, 5), replace=True, random_state=0)
    assert len(np.unique(index)) < len(index)
    with pytest.raises(ValueError, match=r"(?i)more than once|repeat|duplicat"):
        make(name, random_state=0).fit(data.graph.nodes(index), data.y[index])


# ---------------------------------------------------------------------------- item 6
@pytest.mark.parametrize("name", ALL)
def test_classes_parameter_is_the_public_label_set(name, data, train):
    X, y = train
    est = make(name, random_state=0)
    est.set_params(classes=[3, 0, 2, 1])  # unsorted; class 3 has no training node
    est.fit(X, y)
    np.testing.assert_array_equal(est.classes_, [0, 1, 2, 3])
    assert est.predict_proba(data.graph.nodes([1, 2, 3])).shape == (3, 4)

    est = make(name, random_state=0)
    est.set_params(classes=[0, 1])
    with pytest.raises(ValueError, match="classes"):
        est.fit(X, y)

    est = make(name, random_state=0).fit(X, y)
    assert any("label" in a and "public" in a for a in est.privacy_.assumptions), (
        f"{name}: with classes=None the report must say the label set is treated as "
        f"public; assumptions: {est.privacy_.assumptions}")


# ---------------------------------------------------------------------------- item 8
def _protected_units(name: str, graph, n_train: int) -> int:
    if name == "DPMLP":
        return n_train  # only the training nodes are used
    if name == "GAP-edge":
        return graph.num_edges // (1 if graph.directed else 2)
    return graph.num_nodes  # every node of the graph is protected


@pytest.mark.parametrize("name", ALL)
def test_default_delta_is_below_one_over_protected_units(name, data):
    index = np.arange(0, 300, 15)  # 20 training nodes of a 300-node graph
    est = make(name, random_state=0).fit(data.graph.nodes(index), data.y[index])
    units = _protected_units(name, data.graph, len(index))
    assert est.delta_ < 1.0 / units, f"{name}: delta_={est.delta_} >= 1/{units}"


# ---------------------------------------------------------------------------- item 10
@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("name", ALL)
def test_cuda_without_cuda_names_the_device_parameter(name, train):
    X, y = train
    with pytest.raises(ValueError, match="device"):
        make(name, random_state=0, device="cuda").fit(X, y)
