"""The command line on graph tables: a node table and an edge table with a graph id column, and
a graph table with one label per graph (``--graphs``); and the demo's graph-level rows."""

import json
import re

import joblib
import numpy as np
import pandas as pd
import pytest

import skdpgraph
from skdpgraph import DPGraphClassifier, GraphCollection
from skdpgraph.cli import main
from skdpgraph.datasets import make_graph_classification

N_GRAPHS, N_LABELLED, N_TRAIN = 24, 20, 14
UNIT = "one graph: its nodes, edges, features and label"


def _write_graph_tables(directory):
    """``nodes.csv``, ``edges.csv`` and ``graphs.csv`` of a tiny synthetic collection.

    Graphs ``g0``-``g13`` have ``split=train``, ``g14``-``g19`` ``split=test``, and the last
    four have no label (and an empty split cell). Node ids restart at 0 in every graph.
    """
    X, y = make_graph_classification(n_graphs=N_GRAPHS, n_nodes=(3, 5), random_state=0)
    nodes, edges = [], []
    for k, graph in enumerate(X):
        features = graph.features()
        nodes += [{"graph_id": f"g{k}", "id": i, **{f"f{j}": v for j, v in enumerate(row)}}
                  for i, row in enumerate(features)]
        edges += [{"graph_id": f"g{k}", "source": int(s), "target": int(t)}
                  for s, t in np.asarray(graph.edge_index).T if s < t]
    labels = y.astype(object)
    labels[N_LABELLED:] = None
    split = ["train"] * N_TRAIN + ["test"] * (N_LABELLED - N_TRAIN) + [""] * (N_GRAPHS - N_LABELLED)
    tables = {"nodes": pd.DataFrame(nodes), "edges": pd.DataFrame(edges),
              "graphs": pd.DataFrame({"graph_id": [f"g{k}" for k in range(N_GRAPHS)],
                                      "label": labels, "split": split})}
    paths = {name: directory / f"{name}.csv" for name in tables}
    for name, table in tables.items():
        table.to_csv(paths[name], index=False)
    paths.update(model=directory / "model.joblib", dir=directory)
    return paths, tables


@pytest.fixture
def graph_tables(tmp_path):
    return _write_graph_tables(tmp_path)


def _table_args(paths):
    return ["--nodes", str(paths["nodes"]), "--edges", str(paths["edges"]),
            "--graphs", str(paths["graphs"])]


def _fit_args(paths, *extra):
    return ["fit", *_table_args(paths), "--estimator", "dpgraph", "--epsilon", "4",
            "--param", "epochs=2", "--param", "batch_size=8", "--param", "hidden_dim=8",
            "--random-state", "0", "--model", str(paths["model"]), *extra]


def _error(capsys, command):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"skdpgraph {command}: error: "), err
    return err


def test_fit_predict_evaluate_on_graph_tables(graph_tables, capsys):
    paths, tables = graph_tables
    at_fit = paths["dir"] / "fit_predictions.csv"
    report = paths["dir"] / "report.json"
    assert main(_fit_args(paths, "--split-column", "split", "--predictions", str(at_fit),
                          "--report-json", str(report))) == 0
    out = capsys.readouterr().out
    assert f"trained DPGraphClassifier on {N_TRAIN} labelled of {N_GRAPHS} graphs (" in out
    assert "DPGraphClassifier: (" in out and f"unit: {UNIT}" in out
    model = joblib.load(paths["model"])["estimator"]
    assert type(model) is DPGraphClassifier and model.epsilon_spent_ <= 4.0
    assert json.loads(report.read_text())["unit"] == UNIT

    unlabelled = [f"g{k}" for k in range(N_LABELLED, N_GRAPHS)]
    predicted = paths["dir"] / "predictions.csv"
    args = [*_table_args(paths), "--model", str(paths["model"])]
    assert main(["predict", *args, "--output", str(predicted)]) == 0
    table = pd.read_csv(predicted)
    assert table["id"].tolist() == unlabelled
    pd.testing.assert_frame_equal(table, pd.read_csv(at_fit))
    assert np.allclose(table.filter(like="proba_").sum(axis=1), 1.0)
    assert main(["predict", *args, "--output", str(predicted), "--all"]) == 0
    assert len(pd.read_csv(predicted)) == N_GRAPHS

    ids = paths["dir"] / "test_ids.txt"
    ids.write_text("\n".join(f"g{k}" for k in range(N_TRAIN, N_LABELLED)))
    labelled = tables["graphs"].iloc[:N_LABELLED]
    X, y = GraphCollection.from_pandas(
        *(t[t["graph_id"].isin(labelled["graph_id"])] for t in (tables["nodes"], tables["edges"])),
        labelled, node_column="id", feature_columns=["f0", "f1", "f2", "f3"])
    expected = model.score(X[N_TRAIN:], y[N_TRAIN:].astype(int).astype(str))
    for selection in (["--split-column", "split"], ["--ids", str(ids)]):
        capsys.readouterr()
        assert main(["evaluate", *args, *selection]) == 0
        out = capsys.readouterr().out
        assert f"on {N_LABELLED - N_TRAIN} labelled graphs" in out and f"unit: {UNIT}" in out
        assert float(out.split("accuracy: ")[1].split()[0]) == pytest.approx(expected, abs=1e-4)


def _drop_graph(name):
    return lambda table: table[table["graph_id"] != name]


@pytest.mark.parametrize("table, corrupt, message", [
    ("graphs", lambda t: t.drop(columns="label"),
     r"graphs\.csv: graph table has no label column 'label' \(columns: \['graph_id', 'split'\]\)"),
    ("graphs", lambda t: t.rename(columns={"graph_id": "gid"}),
     r"graphs\.csv: graph table has no graph id column 'graph_id'"),
    ("edges", lambda t: pd.concat([t, pd.DataFrame(
        {"graph_id": ["g99"], "source": [0], "target": [1]})]),
     r"edges\.csv: the edge table has edges of graph 'g99' \(column 'graph_id'\), which has no "
     r"nodes in the node table"),
    ("graphs", _drop_graph("g3"),
     r"graphs\.csv: graph 'g3' \(column 'graph_id'\) has nodes but no row in the graph table"),
    ("nodes", _drop_graph("g3"),
     r"nodes\.csv: graph 'g3' \(column 'graph_id'\) has no nodes in the node table"),
    ("graphs", lambda t: pd.concat([t, t.iloc[:1]]),
     r"graphs\.csv: graph id 'g0' \(column 'graph_id'\) appears twice in the graph table"),
    ("edges", lambda t: t.assign(target=t["target"].where(t.index != 5, 77)),
     r"edges\.csv: graph 'g1' \(column 'graph_id'\): edge row 5 has target 77, which is not an "
     r"id in the node table"),
    ("nodes", lambda t: t.assign(id=t["id"].where(t.index != 6, 0)),
     r"nodes\.csv: graph 'g1' \(column 'graph_id'\): column 'id' has duplicate node ids "
     r"\(e\.g\. 0 in rows \[4, 6\]\)"),
    ("graphs", lambda t: t.assign(graph_id=t["graph_id"].where(t.index != 2)),
     r"graphs\.csv: graph id column 'graph_id' is empty in row 2"),
    ("nodes", lambda t: t.astype({"f1": object}).assign(
        f1=lambda u: u["f1"].where(u.index != 4, "x")),
     r"nodes\.csv: feature column 'f1' is not numeric \(row 4 holds 'x'\)"),
    ("graphs", lambda t: t.assign(label=None),
     r"graphs\.csv: fit selects no rows: there are no labelled rows in column 'label'"),
])
def test_graph_table_errors_name_the_file_column_and_value(graph_tables, capsys, table, corrupt,
                                                           message):
    paths, tables = graph_tables
    corrupt(tables[table].copy()).to_csv(paths[table], index=False)
    assert main(_fit_args(paths)) == 2
    assert re.search(message, _error(capsys, "fit"))
    assert not paths["model"].exists()


def test_the_tables_and_the_estimator_must_read_the_same_data(graph_tables, capsys):
    paths, _ = graph_tables
    args = _fit_args(paths)
    args[args.index("dpgraph")] = "dpmlp"
    assert main(args) == 2
    assert ("invalid choice: 'dpmlp' with --graphs: DPMLPClassifier classifies the nodes of one "
            "graph (node tables, without --graphs); with --graphs choose from dpgraph."
            ) in _error(capsys, "fit")
    assert main([a for a in _fit_args(paths) if a not in ("--graphs", str(paths["graphs"]))]) == 2
    assert "invalid choice: 'dpgraph' without --graphs: DPGraphClassifier classifies whole " \
           "graphs" in _error(capsys, "fit")

    assert main(_fit_args(paths)) == 0
    capsys.readouterr()
    node_args = ["--nodes", str(paths["nodes"]), "--model", str(paths["model"])]
    assert main(["evaluate", *node_args, "--all-labelled"]) == 2
    assert (f"--model {paths['model']}: holds a DPGraphClassifier, which classifies whole "
            "graphs (a graph table, --graphs CSV); add --graphs CSV."
            ) in _error(capsys, "evaluate")
    graph_args = [*_table_args(paths), "--model", str(paths["model"])]
    assert main(["predict", *graph_args, "--output", str(paths["dir"] / "p.csv"),
                 "--fitted-graph"]) == 2
    assert "--fitted-graph: DPGraphClassifier keeps no release of the training graphs" in \
        _error(capsys, "predict")
    assert main(["predict", *graph_args, "--output", str(paths["graphs"])]) == 2
    assert "is also --graphs: an output may not overwrite" in _error(capsys, "predict")


def test_graph_level_estimators_come_from_the_registry(capsys):
    from skdpgraph._discovery import command_name
    from skdpgraph.cli._commands import estimator_class

    registered = skdpgraph.all_estimators(data="graphs")
    assert main(["fit", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    (listed,) = re.findall(r"estimator to train: on node tables [^;]*; with --graphs ([^-]*)", out)
    for name, cls in registered:
        assert f"{command_name(name)} ({name})" in listed
        assert estimator_class(command_name(name)) is cls


def test_the_demo_shows_graph_level_rows(capsys, monkeypatch):
    from skdpgraph.cli import _demo_estimators

    assert sorted(_demo_estimators.GRAPH_DEMO_SETTINGS) == [
        name for name, _ in skdpgraph.all_estimators(data="graphs")]
    every = _demo_estimators.demo_estimators
    monkeypatch.setattr(_demo_estimators, "demo_estimators", lambda data="nodes": {
        name: factory for name, factory in every(data).items()
        if data == "graphs" or name == "DPMLPClassifier (eps=inf)"})
    assert main(["demo", "--n-nodes", "60", "--n-graphs", "40"]) == 0
    out = capsys.readouterr().out
    assert "make_graph_classification collection: 40 graphs" in out
    assert "28 training and 12 test graphs (stratified)" in out
    rows = [line for line in out.splitlines() if line.startswith("DPGraphClassifier (eps=8)")]
    assert len(rows) == 1 and UNIT in rows[0]
    cells = rows[0].split()
    accuracy, spent = float(cells[3]), float(cells[4])
    assert 0.0 <= accuracy <= 1.0 and 0 < spent <= 8.0


def test_equal_training_graphs_are_refused_by_their_ids(graph_tables, capsys):
    paths, tables = graph_tables
    for name in ("nodes", "edges"):  # graph g5 becomes a copy of g2
        table = tables[name]
        copy = table[table["graph_id"] == "g2"].assign(graph_id="g5")
        pd.concat([table[table["graph_id"] != "g5"], copy]).to_csv(paths[name], index=False)
    assert main(_fit_args(paths)) == 2
    assert ("graphs.csv: the training graphs ['g2', 'g5'] (column 'graph_id') have the same "
            "nodes, edges and features") in _error(capsys, "fit")
    assert main(_fit_args(paths, "--param", "allow_equal_graphs=True")) == 0
    assert joblib.load(paths["model"])["estimator"].allow_equal_graphs is True
