"""The training package loads its names on first use, and every listed name resolves."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import skdpgraph

ROOT = Path(skdpgraph.__file__).parents[1]  # the checkout under test


def test_importing_the_training_package_loads_no_torch():
    probe = "import json, sys, skdpgraph.training; print(json.dumps('torch' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) is False


def test_every_public_training_name_resolves_and_is_listed():
    training = importlib.import_module("skdpgraph.training")
    assert {"train_dpsgd", "train_llp_gnn", "Callback", "EpsilonTracker", "ProgressBar",
            "BestEpoch", "History", "Stepper", "ClippedSumModule"} <= set(training.__all__)
    for name in training.__all__:
        assert getattr(training, name) is not None and name in dir(training)
