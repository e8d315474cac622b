"""One-run canary audit of DPGraphClassifier, where one graph is the privacy unit.

As in :mod:`tests.audits.test_canaries` (Steinke, Nasr, Jagielski 2023): ``m`` canary
graphs, each put among the training graphs independently with probability 1/2 (the
add/remove-one-graph relation the estimator states: an excluded canary is simply absent),
one fit of the real estimator, then guesses from the fitted and pickled model alone.
Canary ``i`` is a small path graph whose nodes carry ``CANARY_SCALE`` in a feature column
of its own (zero elsewhere) and a uniformly random label: only the canary moves that
column, so the model can learn its label from the canary alone. Its score is the log-odds
of its label in ``predict_proba`` on the canary graph (the auditor's own input). The
lower bound must stay below ``epsilon_spent_``; the same audit on a broken variant (noise
multiplier divided where the loop hands it to Opacus, or clipping off, the plan and so
the reported epsilon unchanged) must exceed it.
"""

from __future__ import annotations

import contextlib
import pickle

import numpy as np
import pytest

from skdpgraph import DPGraphClassifier, Graph, GraphCollection
from skdpgraph._random import RandomStreams
from skdpgraph.datasets import make_graph_classification
from tests.audits._lower_bounds import one_run_audit
from tests.audits.test_canaries import (ALPHA, DELTA, EPSILON, CanaryRow, _check_row,
                                        clipping_off, noise_divided_by)

CLASSES = 4
BASE_GRAPHS, BASE_FEATURES = 100, 4
CANARY_SCALE = 5.0
#: The clipping-off variant needs canary gradients well above C to matter.
CLIPPING_CANARY_SCALE = 30.0


def _estimator() -> DPGraphClassifier:
    return DPGraphClassifier(epsilon=EPSILON, delta=DELTA, classes=np.arange(CLASSES),
                             num_layers=1, hidden_dim=32, epochs=20, lr=0.02, batch_size=64,
                             random_state=0, device="cpu")


def _canary_graph(index: int, canaries: int, scale: float) -> Graph:
    x = np.zeros((3, BASE_FEATURES + canaries), np.float32)
    x[:, BASE_FEATURES + index] = scale
    return Graph([[0, 1], [1, 2]], x)


def draw_graph_canaries(canaries: int, seed: int, scale: float = CANARY_SCALE):
    """``(X, y, queries, labels, included)``: the training graphs with the included
    canaries, the canary graphs the auditor queries, their labels and the coin flips."""
    base, base_y = make_graph_classification(n_graphs=BASE_GRAPHS, n_classes=CLASSES,
                                             n_nodes=(4, 8), n_features=BASE_FEATURES,
                                             random_state=seed)
    rng = RandomStreams(seed).numpy("split")
    labels = rng.integers(0, CLASSES, canaries)
    included = rng.random(canaries) < 0.5
    padding = np.zeros((1, canaries), np.float32)
    widened = [Graph(g.edge_index, np.hstack([g.features(), np.repeat(padding, g.num_nodes, 0)]))
               for g in base]
    queries = [_canary_graph(i, canaries, scale) for i in range(canaries)]
    X = GraphCollection(widened + [q for q, keep in zip(queries, included) if keep])
    y = np.concatenate([base_y, labels[included]])
    return X, y, GraphCollection(queries), labels, included


def _scores(estimator, queries, labels) -> np.ndarray:
    probability = np.clip(estimator.predict_proba(queries), 1e-12, 1 - 1e-12)
    p = probability[np.arange(len(labels)), labels]
    return np.log(p) - np.log1p(-p)


def run_graph_audit(canaries: int, variant, variant_name: str, *,
                    scale: float = CANARY_SCALE, seed: int = 0) -> CanaryRow:
    """Fit honestly and broken on the same draw; score both from their pickles."""
    X, y, queries, labels, included = draw_graph_canaries(canaries, seed, scale)
    guesses = tuple(canaries // d for d in (40, 20, 10, 5))
    results = []
    for context in (contextlib.nullcontext, variant):
        with context():
            fitted = _estimator().fit(X, y)
        assert fitted.privacy_.neighbouring_relation == "add or remove one training graph"
        released = pickle.loads(pickle.dumps(fitted))  # what the adversary holds
        results.append((released, one_run_audit(_scores(released, queries, labels), included,
                                                guesses_per_side=guesses, delta=DELTA,
                                                alpha=ALPHA)))
    (honest, fair), (broken, unfair) = results
    assert broken.epsilon_spent_ == honest.epsilon_spent_  # the broken fit claims as much
    return CanaryRow(
        mechanism="DPGraphClassifier training (one run)", unit=honest.privacy_.unit,
        reported=honest.epsilon_spent_, lower_bound=fair.epsilon, trials=canaries,
        broken=variant_name, broken_claim=broken.epsilon_spent_,
        broken_lower_bound=unfair.epsilon, broken_trials=canaries,
        size="full" if canaries > 400 else "fast", guesses=fair.guesses, correct=fair.correct,
        broken_guesses=unfair.guesses, broken_correct=unfair.correct)


@pytest.mark.parametrize("canaries", [
    pytest.param(400, id="fast"), pytest.param(1000, id="full", marks=pytest.mark.audit)])
def test_graph_canary_audit_catches_less_noise(canaries, audit_table):
    row = run_graph_audit(canaries, lambda: noise_divided_by(10.0), "noise multiplier / 10")
    audit_table.append(row)
    _check_row(row)


@pytest.mark.audit
def test_graph_canary_audit_catches_clipping_off(audit_table):
    row = run_graph_audit(1000, clipping_off,
                          f"clipping off (canaries x{CLIPPING_CANARY_SCALE:g})",
                          scale=CLIPPING_CANARY_SCALE)
    audit_table.append(row)
    _check_row(row)
