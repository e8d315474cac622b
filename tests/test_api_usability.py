"""What a new user meets first: probabilities, labels from tables, warnings, progress, messages."""

import io
import re
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.ensemble import BaggingClassifier
from sklearn.model_selection import cross_val_score
from sklearn.preprocessing import StandardScaler

from skdpgraph import DPNodeClassifier, Graph, GraphDroppedWarning, make_graph_pipeline
from skdpgraph.cli import main
from skdpgraph.datasets import GraphDataset, make_csbm
from skdpgraph.model_selection import privacy_spent
from tests._cli_data import write_tables
from tests._fast_estimators import make

DATA = make_csbm(n_nodes=60, n_classes=3, n_features=4, avg_degree=4, random_state=0)
Y = np.asarray(DATA.y)
TRAIN, TEST = np.arange(45), np.arange(45, 60)
SUM_TO_ONE = ".*y_prob values do not sum to one"  # a regex matched from the start


# ------------------------------------------------------------------ probabilities
@pytest.mark.parametrize("key", ["DPMLP", "GAP-edge", "DRW"])
def test_log_loss_scoring_sees_probabilities_that_sum_to_one(key):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=SUM_TO_ONE)
        scores = cross_val_score(make(key, random_state=0), DATA.graph.nodes(), Y, cv=2,
                                 scoring="neg_log_loss", error_score="raise")
    assert np.isfinite(scores).all()
    proba = make(key, random_state=0).fit(DATA.graph.nodes(TRAIN), Y[TRAIN]).predict_proba(
        DATA.graph.nodes(TEST))
    assert proba.dtype == np.float64
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)


# ------------------------------------------------------------------ labels from tables
NO_EDGES = pd.DataFrame({"source": [], "target": []})


def _node_table(labels):
    return pd.DataFrame({"id": [f"n{i}" for i in range(len(Y))],
                         **{f"f{j}": DATA.graph.features()[:, j] for j in range(4)},
                         "label": labels})


def test_integer_labels_with_empty_cells_keep_their_type():
    labels = Y.astype(float)
    labels[TEST] = np.nan  # the unlabelled nodes: pandas stores the column as floats
    graph, y = Graph.from_pandas(_node_table(labels), NO_EDGES, label_column="label")
    labelled = pd.notna(y)
    assert labelled.tolist() == [True] * len(TRAIN) + [False] * len(TEST)
    assert all(type(v) is int for v in y[labelled]) and all(v is None for v in y[~labelled])

    clf = make("DPMLP", random_state=0).fit(graph.nodes(labelled), y[labelled])
    assert clf.classes_.dtype.kind == "i" and clf.classes_.tolist() == [0, 1, 2]
    assert clf.predict(graph.nodes(~labelled)).dtype.kind == "i"
    assert 0.0 <= clf.score(graph.nodes(labelled), y[labelled]) <= 1.0

    text = np.array(["abc"[c] for c in Y], dtype=object)  # text labels stay text
    text[TEST] = None
    graph, y = Graph.from_pandas(_node_table(text), NO_EDGES, label_column="label")
    labelled = pd.notna(y)
    clf = make("DPMLP", random_state=0).fit(graph.nodes(labelled), y[labelled])
    assert clf.classes_.tolist() == ["a", "b", "c"]


@pytest.mark.parametrize("missing", [None, np.nan])
def test_missing_labels_are_refused_by_row(missing):
    y = Y.astype(object if missing is None else float)
    y[[3, 7]] = missing
    with pytest.raises(ValueError, match=r"DPMLPClassifier\.fit: y contains NaN .*labels in 2 "
                                         r"row\(s\) \(3, 7\)\. Use the labelled nodes only"):
        make("DPMLP").fit(DATA.graph.nodes(), y)


# ------------------------------------------------------------------ graphs from tables
def test_from_pandas_accepts_no_edge_table():
    graph = Graph.from_pandas(_node_table(Y), None, label_column="label")[0]
    assert graph.num_nodes == len(Y) and graph.num_edges == 0


def test_dropped_self_loops_and_repeated_edges_are_counted():
    from skdpgraph import EdgesDroppedWarning

    with pytest.warns(EdgesDroppedWarning, match=r"dropped 1 self-loop\(s\) and 2 repeated "
                                                 r"edge\(s\) of the 6 edges given") as caught:
        graph = Graph([[0, 0, 1, 1, 1, 2], [0, 1, 2, 2, 2, 1]], np.eye(3), directed=True)
    assert len(caught) == 1 and graph.num_edges == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", EdgesDroppedWarning)
        both_ways = Graph([[0, 1], [1, 0]], np.eye(2))  # one undirected edge, as PyG stores it
    assert both_ways.num_edges == 2


# ------------------------------------------------------------------ messages
def test_cli_error_shows_an_integer_node_id_as_written(tmp_path, capsys):
    paths, nodes, _ = write_tables(tmp_path)
    nodes["id"] = np.arange(len(nodes))  # integer ids: the unlabelled rows start at 100
    nodes["split"] = ["train"] * 70 + ["test"] * (len(nodes) - 70)
    nodes.to_csv(paths["nodes"], index=False)
    assert main(["fit", "--nodes", str(paths["nodes"]), "--estimator", "dpmlp",
                 "--model", str(paths["model"]), "--split-column", "split", "--split-value",
                 "test"]) == 2
    err = capsys.readouterr().err
    assert "have no label in column 'label', e.g. id 100." in err and "np." not in err


def test_mixed_label_types_are_shown_as_python_values():
    y = np.array([np.int64(c) for c in Y] + ["x"], dtype=object)[1:]
    with pytest.raises(ValueError, match=r"number \(e\.g\. \d\), str \(e\.g\. 'x'\)") as info:
        make("DPMLP").fit(DATA.graph.nodes(), y)
    assert "np." not in str(info.value)


# ------------------------------------------------------------------ progress
@pytest.mark.parametrize("key, stages", [("GAP-edge", 2), ("DPMLP", 1)])
def test_verbose_fit_into_a_file_writes_one_line_per_stage(key, stages, monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    make(key, epochs=30, verbose=True, random_state=0).fit(DATA.graph.nodes(TRAIN), Y[TRAIN])
    lines = [line for line in re.split(r"[\r\n]+", log.getvalue()) if line.strip()]
    assert len(lines) == stages and len(log.getvalue()) < 100 * stages
    assert re.fullmatch(r".*Classifier \w+: epoch 30/30, loss [\d.e-]+, eps [\d.]+", lines[-1])


# ------------------------------------------------------------------ warnings
def test_graph_dropped_warning_names_meta_estimators_as_a_cause():
    bagging = BaggingClassifier(make("GAP-edge", random_state=0), n_estimators=1,
                                bootstrap=False, max_samples=0.8, random_state=0)
    with pytest.warns(GraphDroppedWarning) as caught:
        bagging.fit(DATA.graph.nodes(TRAIN), Y[TRAIN])
    message = str(next(w.message for w in caught if w.category is GraphDroppedWarning))
    assert "meta-estimator" in message and "BaggingClassifier" in message
    assert "usual cause" not in message


# ------------------------------------------------------------------ fitted attributes
def test_front_door_exposes_the_chosen_estimators_history_and_device():
    clf = DPNodeClassifier(unit="node", epsilon=4.0, random_state=0)
    clf.fit(DATA.graph.nodes(TRAIN), Y[TRAIN])
    assert clf.history_ is clf.estimator_.history_ and len(clf.history_) > 0
    assert list(pd.DataFrame(clf.history_).columns)[:3] == ["stage", "epoch", "loss"]
    assert clf.device_ == clf.estimator_.device_
    assert not hasattr(DPNodeClassifier(), "history_")


# ------------------------------------------------------------------ datasets
def test_dataset_nodes_read_node_ids_as_graph_nodes_does():
    data = GraphDataset("toy", DATA.graph, Y, split={"train": TRAIN, "test": TEST})
    ids, mask = np.array([5, 0, 17]), np.arange(len(Y)) % 4 == 0
    for index in (ids, mask, slice(10, 20), 3):
        assert data.nodes(index).index.tolist() == DATA.graph.nodes(index).index.tolist()
        assert data.labels(index).tolist() == Y[DATA.graph.nodes(index).index].tolist()
    assert data.nodes("train").index.tolist() == TRAIN.tolist()


def test_dataset_part_keyword_still_works_with_a_future_warning():
    data = GraphDataset("toy", DATA.graph, Y, split={"train": TRAIN, "test": TEST})
    with pytest.warns(FutureWarning, match=r"part=\.\.\.\) is deprecated.*data\.nodes\('test'\)"):
        nodes = data.nodes(part="test")
    assert nodes.index.tolist() == TEST.tolist()


def test_dataset_errors_are_short():
    with pytest.raises(ValueError) as info:
        DATA.nodes("train")  # make_csbm has no standard split
    assert len(str(info.value)) < 200 and "array" not in str(info.value)
    with pytest.raises(IndexError, match=r"^Nodes: index 60 is out of range for 60 nodes\.$"):
        DATA.nodes(np.arange(61))


# ------------------------------------------------------------------ pipelines
def test_graph_pipeline_counts_scaled_features_as_public_only_at_edge_level():
    edge = make_graph_pipeline(StandardScaler(), make("GAP-edge", random_state=0))
    edge.fit(DATA.graph.nodes(TRAIN), Y[TRAIN])
    assert privacy_spent(edge).epsilon == edge[-1].epsilon_spent_ <= 4.0
    node = make_graph_pipeline(StandardScaler(), make("GAP-node", random_state=0))
    node.fit(DATA.graph.nodes(TRAIN), Y[TRAIN])
    assert privacy_spent(node).epsilon == np.inf
    assert any("private features without DP" in note for note in privacy_spent(node).notes)
    # decided from the fitted models: a search that changes the unit is counted right
    searched = clone(edge).set_params(gapclassifier__unit="node",
                                      gapclassifier__max_degree=4, gapclassifier__batch_size=64)
    searched.fit(DATA.graph.nodes(TRAIN), Y[TRAIN])
    assert privacy_spent(searched).epsilon == np.inf
    front_door = make_graph_pipeline(StandardScaler(), DPNodeClassifier(unit="edge"))
    assert front_door[0].public_features == "auto"
