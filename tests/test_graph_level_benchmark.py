"""benchmarks/graph_level.py: per-epoch test curves and Xu et al.'s epoch rule."""

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from skdpgraph.datasets import make_graph_classification

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def script():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("graph_level",
                                                  ROOT / "benchmarks" / "graph_level.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_test_curve_holds_each_epochs_test_accuracy(script):
    X, y = make_graph_classification(n_graphs=60, random_state=0)
    train, test = np.arange(40), np.arange(40, 60)
    params = {"epochs": 3, "batch_size": 16, "validation_fraction": None}
    run = script.one_run(X, y, train, test, math.inf, 0, params, test_curve=True)
    curve = run["test_accuracy_by_epoch"]
    assert len(curve) == len(run["train_accuracy_by_epoch"]) == 3
    # The last epoch's model is the fitted one: its score is the curve's last point.
    assert curve[-1] == pytest.approx(run["test_accuracy"])
    # each point is an accuracy over the 20 test graphs
    assert all(a * 20 == pytest.approx(round(a * 20)) for a in curve)


def test_xu_rule_takes_the_best_epoch_of_the_fold_mean_curve(script, tmp_path):
    runs = [{"epsilon": math.inf, "test_accuracy_by_epoch": [0.5, 0.7, 0.6]},
            {"epsilon": math.inf, "test_accuracy_by_epoch": [0.6, 0.6, 0.9]}]
    paths = []
    for k, run in enumerate(runs):
        path = tmp_path / f"fold{k}.json"
        path.write_text(json.dumps({"dataset": "NCI1", "runs": [run]}))
        paths.append(str(path))
    result = script.xu_accuracy(paths)[math.inf]
    # fold means 0.55, 0.65, 0.75: the last epoch, although fold 0 peaks at the second
    assert result["best_epoch"] == 3 and result["accuracy"] == pytest.approx(0.75)
    assert result["std_at_best_epoch"] == pytest.approx(np.std([0.6, 0.9], ddof=1))
    row = [line for line in script.rst_xu_table(paths).splitlines() if line.startswith("NCI1")]
    assert row[0].split()[:4] == ["NCI1", "2", "3", "75.0"] and row[0].endswith("82.7")


def test_tuning_split_scores_training_graphs_only(script):
    y = np.repeat([0, 1], 50)
    train = np.arange(0, 100, 2)  # a fold's training graphs: the even ones
    fit, scored = script.tuning_split(train, y)
    assert len(scored) == 5 and len(fit) == 45
    # every graph it fits on or scores is a training graph, none of them twice
    assert sorted(np.concatenate([fit, scored]).tolist()) == train.tolist()
    # stratified: both classes are scored
    assert set(y[scored]) == {0, 1}
