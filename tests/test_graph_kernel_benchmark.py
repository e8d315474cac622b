"""benchmarks/graph_kernel.py: the WL subtree kernel SVM reference on a small collection.

grakel is a benchmark extra (``pip install skdpgraph[bench]``); without it these tests skip.
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from skdpgraph import Graph
from skdpgraph.datasets import make_graph_classification

pytest.importorskip("grakel")

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("graph_kernel",
                                                  ROOT / "benchmarks" / "graph_kernel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def collection():
    return make_graph_classification(n_graphs=60, random_state=0)


def test_wl_kernel_svm_classifies_the_synthetic_collection(script, collection):
    X, y = collection
    result = script.evaluate(X, y, "degree", n_folds=2)
    assert [run["fold"] for run in result["runs"]] == [0, 1]
    for run in result["runs"]:
        assert run["h"] in script.H_GRID and run["C"] in script.C_GRID
        assert run["test_accuracy"] >= 0.8 and run["fit_seconds"] > 0
    assert sorted(result["kernel_seconds"]) == list(script.H_GRID)
    accuracies = [100 * run["test_accuracy"] for run in result["runs"]]
    assert result["mean_test_accuracy_percent"] == pytest.approx(np.mean(accuracies))
    assert result["std_test_accuracy_percent"] == pytest.approx(np.std(accuracies, ddof=1))


def test_wl_kernels_are_normalised_symmetric_and_grow_with_h(script, collection):
    X, _ = collection
    kernels, _ = script.wl_kernels(script.to_grakel(X, "degree"), heights=(1, 3))
    for kernel in kernels.values():
        assert kernel.shape == (len(X), len(X))
        np.testing.assert_allclose(np.diag(kernel), 1.0)
        np.testing.assert_allclose(kernel, kernel.T)
    # Deeper subtrees tell more graphs apart: off-diagonal similarities can only shrink.
    assert kernels[3].sum() < kernels[1].sum()


def test_selection_reads_no_label_of_the_test_fold(script, collection):
    X, y = collection
    kernels, _ = script.wl_kernels(script.to_grakel(X, "degree"), heights=(1, 2))
    train, test = np.arange(40), np.arange(40, 60)
    flipped = y.copy()
    flipped[test] = 1 - flipped[test]
    assert script.select(kernels, y, train) == script.select(kernels, flipped, train)


def test_node_labels_are_the_label_column_or_the_degree(script):
    path = Graph([[0, 1], [1, 2]], np.eye(3)[[2, 0, 1]])
    assert script.node_labels(path, "argmax").tolist() == [2, 0, 1]
    assert script.node_labels(path, "degree").tolist() == [1, 2, 1]
    with pytest.raises(ValueError, match="source must be 'argmax' or 'degree'; got 'size'"):
        script.node_labels(path, "size")


def test_isolated_nodes_count_in_the_kernel(script):
    edge = Graph([[0], [1]], np.eye(2)[[0, 0]])
    edge_and_isolated = Graph([[0], [1]], np.eye(2)[[0, 0, 1]])
    kernels, _ = script.wl_kernels(script.to_grakel([edge, edge_and_isolated], "argmax"),
                                   heights=(1,))
    assert kernels[1][0, 1] < 1.0


def test_subsample_is_stratified_and_seeded(script):
    y = np.repeat([0, 1], [300, 100])
    kept = script.subsample(y, 40)
    assert len(kept) == 40 and np.bincount(y[kept]).tolist() == [30, 10]
    np.testing.assert_array_equal(kept, script.subsample(y, 40))
    np.testing.assert_array_equal(script.subsample(y, None), np.arange(400))


def test_main_writes_the_record_of_a_subsample(script, collection, monkeypatch, tmp_path):
    monkeypatch.setattr(script, "load", lambda name, root: collection)
    out = tmp_path / "record.json"
    script.main(["--dataset", "synthetic", "--folds", "2", "--max-graphs", "40",
                 "--out", str(out)])
    record = json.loads(out.read_text())
    assert record["n_graphs"] == 40 and record["n_graphs_in_dataset"] == 60
    assert "train_size=40" in record["subsample"]
    assert len(record["runs"]) == 2 and record["folds"] == 2
    assert record["node_labels"] == "argmax of the one-hot node-label columns"
