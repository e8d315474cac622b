"""``history_`` holds only what the guarantee covers, unless diagnostics are asked for.

The attack reads the noise-free loss and training accuracy out of an unpickled private
estimator; the broken variant (``monkeypatch``) keeps them, and the attack must catch it.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pytest

from skdpgraph.datasets import make_csbm
from skdpgraph.estimators._base import HISTORY_NOT_COVERED, BaseDPClassifier
from tests._fast_estimators import make

#: Private fits whose loss and training accuracy read protected data without noise.
PRIVATE_HISTORY = ["DPMLP", "GAP-node", "ProGAP-node", "FDP", "FDP-private", "DRW"]
#: Fits whose history reads only public data or noisy releases.
COVERED_HISTORY = ["GAP-edge", "ProGAP-edge", "RGNN"]
#: The keys computed without noise from the training data.
PRIVATE_HISTORY_KEYS = ("loss", "train_accuracy")
COLUMNS = ["stage", "epoch", "loss", "train_accuracy", "validation_accuracy", "epsilon"]


@pytest.fixture(scope="module")
def data():
    graph = make_csbm(n_nodes=120, n_classes=3, n_features=6, random_state=0)
    return graph.nodes()[:80], graph.y[:80]


def _noise_free_values(est) -> list[float]:
    """What an attacker holding the unpickled estimator reads of the training data."""
    loaded = pickle.loads(pickle.dumps(est))
    return [record[key] for record in loaded.history_ for key in PRIVATE_HISTORY_KEYS
            if record[key] is not None]


def _keep_everything(monkeypatch) -> None:
    """Broken variant: the history rule keeps every value and states nothing."""
    monkeypatch.setattr(BaseDPClassifier, "_keep_covered_history", lambda self, plan: False)


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.parametrize("name", PRIVATE_HISTORY)
def test_pickled_private_history_holds_no_noise_free_statistics(name, broken, data,
                                                                monkeypatch):
    if broken:
        _keep_everything(monkeypatch)
    est = make(name, random_state=0).fit(*data)
    leaked = _noise_free_values(est)
    assert bool(leaked) == broken, f"{name}: history_ keeps {leaked[:4]}"
    if not broken:
        table = pd.DataFrame(est.history_)
        assert list(table.columns) == COLUMNS and len(table)
        assert table["epsilon"].map(math.isfinite).all()
        assert HISTORY_NOT_COVERED not in est.privacy_.not_covered


@pytest.mark.parametrize("name", ["DPMLP", "GAP-node"])
def test_private_diagnostics_keeps_them_and_states_them_not_covered(name, data):
    est = make(name, random_state=0, private_diagnostics=True).fit(*data)
    table = pd.DataFrame(est.history_)
    assert table["loss"].map(math.isfinite).all()
    assert table["train_accuracy"].between(0, 1).all()
    assert est.privacy_.not_covered[0] == HISTORY_NOT_COVERED


@pytest.mark.parametrize("name", COVERED_HISTORY)
def test_history_of_public_or_noisy_inputs_is_kept_whole(name, data):
    est = make(name, random_state=0).fit(*data)
    table = pd.DataFrame(est.history_)
    assert table["loss"].map(math.isfinite).all()
    assert HISTORY_NOT_COVERED not in est.privacy_.not_covered


def test_non_private_fit_keeps_its_history_whole(data):
    est = make("DPMLP", random_state=0, epsilon=np.inf).fit(*data)
    assert pd.DataFrame(est.history_)["train_accuracy"].between(0, 1).all()
    protected = make("DPMLP", random_state=0, epsilon=np.inf, noise_multiplier=1.0).fit(*data)
    assert not _noise_free_values(protected)  # a given noise multiplier: labels protected
