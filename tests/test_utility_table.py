"""benchmarks/utility_table.py: the docs' privacy-utility tables from run.py's files."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("utility_table",
                                                  ROOT / "benchmarks" / "utility_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _result(estimator, seeds, accuracies, epsilons=(4.0, "inf")):
    records = [{"estimator": estimator, "epsilon": eps, "seed": seed, "test_accuracy": acc,
                "fit_seconds": 1.0, "epsilon_spent": eps, "privacy_unit": "node"}
               for seed, acc in zip(seeds, accuracies) for eps in epsilons]
    config = {"dataset": "toy", "split": "75/10/15", "seeds": len(seeds),
              "first_seed": seeds[0]}
    return {"config": config, "summary": [], "records": records}


def test_more_seeds_of_a_run_join_it_and_the_cells_are_recomputed(tmp_path):
    table = _module()
    files = {"toy-a.json": _result("a", [0], [0.5]),
             "toy-a-seeds1-2.json": _result("a", [1, 2], [0.6, 0.8]),
             "toy-b.json": _result("b", [0, 1, 2], [0.1, 0.2, 0.3])}
    (names, merged), = table.merge(list(files.items()))
    assert sorted(names) == sorted(files) and merged["config"]["seeds"] == 3
    cell = next(r for r in merged["summary"] if r["estimator"] == "a" and r["epsilon"] == 4.0)
    assert cell["test_accuracy_mean"] == pytest.approx(np.mean([0.5, 0.6, 0.8]))
    assert cell["test_accuracy_std"] == pytest.approx(np.std([0.5, 0.6, 0.8], ddof=1))
    assert "3 seeds" in table.table(merged) and "63.3\u00a0±\u00a015.3" in table.table(merged)
    path = tmp_path / "toy-b.json"
    path.write_text(json.dumps(files["toy-b.json"]))
    assert table.merge([(path.name, json.loads(path.read_text()))])[0][1]["summary"]


@pytest.mark.parametrize("files, match", [
    ({"x.json": _result("a", [0, 1], [0.5, 0.6]), "y.json": _result("a", [1], [0.7])},
     "seed 1 is also in x.json"),
    ({"x.json": _result("a", [0, 1], [0.5, 0.6]), "y.json": _result("b", [0], [0.7])},
     "different numbers of seeds"),
])
def test_a_seed_run_twice_or_unequal_seed_counts_are_refused(files, match):
    with pytest.raises(SystemExit, match=match):
        _module().merge(list(files.items()))


def test_a_one_seed_table_says_one_seed():
    table = _module()
    (_, merged), = table.merge([("toy-a.json", _result("a", [0], [0.5]))])
    assert "1 seed: test accuracy" in table.table(merged)
