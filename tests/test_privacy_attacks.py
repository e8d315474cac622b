"""The adversary of issue 11, played against real fitted estimators.

Each privacy test attacks what a fitted estimator gives back (its attributes, its
errors) and, next to it, a deliberately broken variant built in the test with
``monkeypatch`` that the same attack must catch: a passing attack test means the attack
found nothing, not that it could not have found anything.

Every estimator is parametrised (GAP at both privacy levels); fits are tiny (60 training
nodes of a 300-node CSBM graph, 2 epochs). The attacks on what a holder of the fitted
(pickled) estimator can do (batch membership from the weights, seed replay, noise reuse
across releases, repeated predictions) are in ``tests/audits/test_released_objects.py``.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.utils import resample
from sklearn.utils.validation import check_is_fitted

from skdpgraph.datasets import make_csbm
from skdpgraph.privacy import PrivacyBudgetError
from tests._fast_estimators import FAST, make

# ---------------------------------------------------------------------------- estimators
#: Every estimator configuration (FDP with private inference is audited elsewhere).
ALL = [name for name in FAST if name != "FDP-private"]
#: Estimators whose privacy unit is a node (duplicates must be refused).
NODE_UNIT = ["DPMLP", "GAP-node", "ProGAP-node", "FDP", "DRW", "RGNN"]
#: Over-budget settings of the estimators that take a noise_multiplier.
OVER_BUDGET = {
    "DPMLP": dict(epsilon=1.0, noise_multiplier=0.3),
    "FDP": dict(epsilon=1.0, noise_multiplier=0.3),
    "DRW": dict(epsilon=0.01, noise_multiplier=0.5),
}


@pytest.fixture(scope="module")
def data():
    return make_csbm(n_nodes=300, n_classes=3, n_features=8, random_state=0)


@pytest.fixture(scope="module")
def train(data):
    """60 training nodes of the 300-node graph and their labels."""
    index = np.arange(0, 300, 5)
    return data.graph.nodes(index), data.y[index]


def _unfitted(est) -> None:
    """Assert ``est`` holds nothing but its constructor parameters."""
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    for name in ("classes_", "module_", "privacy_", "epsilon_spent_"):
        assert not hasattr(est, name), f"a failed fit left {name}"
    left = set(vars(est)) - set(est.get_params(deep=False))
    assert not left, f"a failed fit left {sorted(left)}"


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
        monkeypatch.setattr(LogisticRegression, "fit", broken_step)  # models without DP-SGD
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
    if name in ("GAP-edge", "ProGAP-edge"):
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


# ---------------------------------------------------------------------------- DP-SGD state
def _optimisers_held(obj, seen=None, depth=0) -> list:
    """Every ``torch.optim.Optimizer`` reachable from ``obj`` through attributes and
    containers (what an optimiser holds: its last noise buffer, moments, summed grads)."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 12 or isinstance(obj, (str, bytes, int, float, np.ndarray,
                                                         torch.Tensor)):
        return []
    seen.add(id(obj))
    if isinstance(obj, torch.optim.Optimizer):
        return [obj]
    children = (list(obj.values()) if isinstance(obj, dict) else
                list(obj) if isinstance(obj, (list, tuple, set)) else
                list(vars(obj).values()) if hasattr(obj, "__dict__") else [])
    return [found for child in children for found in _optimisers_held(child, seen, depth + 1)]


def _keep_the_optimiser(monkeypatch) -> None:
    """Broken training loop: the trained module keeps its DP optimiser (and noise buffer)."""
    from skdpgraph import training

    original = training.Stepper.unwrap

    def unwrap(self):
        module = original(self)
        module.__dict__["kept_optimiser"] = self.optimizer
        return module

    monkeypatch.setattr(training.Stepper, "unwrap", unwrap)


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.parametrize("name", ["DPMLP", "GAP-node", "ProGAP-node", "DRW", "FDP"])
def test_fitted_estimator_keeps_no_dp_optimiser(name, broken, train, monkeypatch):
    """The DP optimiser's state (the noise buffer of the last step, Adam's moments) stays
    inside ``fit``: neither the fitted nor the unpickled estimator reaches one. (The broken
    variant is not pickled: trying to pickle an Opacus optimiser patches its class.)"""
    import pickle

    if broken:
        _keep_the_optimiser(monkeypatch)
    est = make(name, epsilon=4.0).fit(*train)
    held = _optimisers_held(est)
    assert bool(held) == broken, f"{name} keeps {held}"
    if not broken:
        assert not _optimisers_held(pickle.loads(pickle.dumps(est)))
