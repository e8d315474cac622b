"""Early stopping where it is free, and nowhere else.

A non-private fit holds out 10% of its training nodes and keeps its best epoch on them.
A fit whose epsilon is reported (``epsilon=inf`` with a given ``noise_multiplier``) must
hold out nothing: selecting epochs on its labels is not in the reported epsilon.
"""

import math

import numpy as np
import pytest
import torch

from skdpgraph.datasets import make_csbm
from tests._fast_estimators import make

N_TRAIN = 600  # "auto" holds out 10% from 500 training nodes on


@pytest.fixture(scope="module")
def data():
    graph = make_csbm(n_nodes=N_TRAIN + 100, n_classes=3, n_features=8, random_state=0)
    return graph.nodes()[:N_TRAIN], graph.y[:N_TRAIN]


def _num_examples(est) -> int:
    plan = est._plan_
    return getattr(plan, "training", plan).num_examples  # FDPPlan wraps its DP-SGD plan


@pytest.mark.parametrize("name", ["DPMLP", "DRW", "FDP"])
def test_a_non_private_fit_keeps_its_best_epoch_on_held_out_nodes(name, data):
    X, y = data
    params = dict(epsilon=np.inf, random_state=0, lr=0.1)  # a large step: epochs differ
    est = make(name, epochs=8, **params).fit(X, y)
    scores = [r["validation_accuracy"] for r in est.history_]
    assert None not in scores and len(scores) == 8
    assert _num_examples(est) == N_TRAIN - math.ceil(0.1 * N_TRAIN)
    best = int(np.argmax(scores))  # the first best: later ties do not replace it
    assert best < len(scores) - 1, "this configuration should not peak at its last epoch"
    # The same fit stopped after the best epoch ends with exactly the kept weights.
    stopped = make(name, epochs=best + 1, **params).fit(X, y)
    kept, reference = est.module_.state_dict(), stopped.module_.state_dict()
    assert kept.keys() == reference.keys()
    for key in kept:
        torch.testing.assert_close(kept[key], reference[key], rtol=0, atol=0)


def _selected_on_protected_labels(est) -> bool:
    """Whether a fit that reports a finite epsilon read held-out labels to pick an epoch."""
    return (math.isfinite(est.epsilon_spent_)
            and any(r["validation_accuracy"] is not None for r in est.history_))


class _LabelsPublicAtInfiniteEpsilon:
    """The broken rule: labels public whenever epsilon=inf, even with noise."""

    def _labels_public(self) -> bool:
        return math.isinf(self.epsilon)


@pytest.mark.parametrize("name", ["DPMLP", "FDP"])
def test_a_given_noise_multiplier_keeps_the_labels_protected_at_infinite_epsilon(name, data):
    X, y = data
    params = dict(epsilon=np.inf, noise_multiplier=1.0, epochs=2, random_state=0)
    est = make(name, **params).fit(X, y)
    assert not _selected_on_protected_labels(est)
    assert _num_examples(est) == N_TRAIN
    broken_class = type(f"Broken{type(est).__name__}",
                        (_LabelsPublicAtInfiniteEpsilon, type(est)), {})
    broken = broken_class(**est.get_params()).fit(X, y)
    assert _selected_on_protected_labels(broken), "the check must catch the broken rule"
    with pytest.raises(ValueError, match=r"validation_fraction=0\.1 would select epochs"):
        make(name, validation_fraction=0.1, **params).fit(X, y)


def test_drw_ignores_its_noise_multiplier_at_infinite_epsilon_and_stops_early(data):
    X, y = data
    est = make("DRW", epsilon=np.inf, noise_multiplier=1.0, epochs=2, random_state=0).fit(X, y)
    assert math.isinf(est.epsilon_spent_) and est.noise_multiplier_ is None
    assert None not in [r["validation_accuracy"] for r in est.history_]
