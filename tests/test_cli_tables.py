import re

import joblib
import numpy as np
import pandas as pd
import pytest

import skdpgraph.estimators
from skdpgraph import DPMLPClassifier, Graph
from skdpgraph.cli import main
from skdpgraph.cli._main import _build_parser
from tests._cli_data import fit_args, write_tables


@pytest.fixture
def tables(tmp_path):
    return write_tables(tmp_path)


def _fit_args(paths, *extra):
    return fit_args(paths, *extra)


def test_fit_predict_evaluate_round_trip(tables, capsys):
    paths, nodes, _ = tables
    first = paths["dir"] / "fit_predictions.csv"
    assert main(_fit_args(paths, "--predictions", str(first))) == 0
    out = capsys.readouterr().out
    assert "trained DPMLPClassifier on 100 labelled of 120 nodes" in out
    assert "DPMLPClassifier: (" in out and "unit: node" in out
    model = joblib.load(paths["model"])["estimator"]
    assert model.epsilon_spent_ <= 3.0 and model.get_params()["epochs"] == 2

    second = paths["dir"] / "predictions.csv"
    table_args = ["--nodes", str(paths["nodes"]), "--edges", str(paths["edges"]),
                  "--model", str(paths["model"])]
    assert main(["predict", *table_args, "--output", str(second)]) == 0
    predicted = pd.read_csv(second)
    assert predicted["id"].tolist() == nodes["id"].tolist()[100:]
    pd.testing.assert_frame_equal(predicted, pd.read_csv(first))
    assert np.allclose(predicted.filter(like="proba_").sum(axis=1), 1.0)

    assert main(["evaluate", *table_args, "--all-labelled"]) == 0
    out = capsys.readouterr().out
    accuracy = float(out.split("accuracy: ")[1].split()[0])
    labelled = nodes.iloc[:100]
    g = Graph.from_pandas(nodes, tables[2], feature_columns=["a", "b", "c", "d"])
    expected = model.score(g.nodes(np.arange(100)), labelled["label"].astype(str))
    assert accuracy == pytest.approx(expected, abs=1e-4)


def _write(paths, nodes=None, edges=None):
    if nodes is not None:
        nodes.to_csv(paths["nodes"], index=False)
    if edges is not None:
        edges.to_csv(paths["edges"], index=False)


@pytest.mark.parametrize("corrupt, message", [
    (lambda n, e: (n.drop(columns="id"), e), r"nodes.csv: node table has no id column 'id'"),
    (lambda n, e: (n.astype({"b": object}).assign(b=lambda t: t["b"].where(t.index != 7, "x")), e),
     r"nodes.csv: feature column 'b' is not numeric \(row 7 holds 'x'\)"),
    (lambda n, e: (n.assign(c=lambda t: t["c"].where(t.index != 5)), e),
     r"nodes.csv: feature column 'c' is empty in row 5"),
    (lambda n, e: (n, e.assign(target=lambda t: t["target"].where(t.index != 3, "zz"))),
     r"edges.csv: edge row 3 has target 'zz', which is not an id in the node table"),
    (lambda n, e: (n, e.rename(columns={"source": "src"})),
     r"edges.csv: edge table has no column 'source'"),
    (lambda n, e: (n.assign(label=None), e),
     r"fit selects no rows: there are no labelled rows in column 'label'"),
    (lambda n, e: (pd.concat([n, n.iloc[:1]]), e), r"column 'id' has duplicate node ids"),
])
def test_table_errors_name_the_problem(tables, capsys, corrupt, message):
    paths, nodes, edges = tables
    _write(paths, *corrupt(nodes.copy(), edges.copy()))
    assert main(_fit_args(paths)) == 2
    err = capsys.readouterr().err
    assert err.startswith("skdpgraph fit: error: ")
    assert re.search(message, err), err


def test_missing_feature_column_and_bad_options(tables, capsys):
    paths, _, _ = tables
    assert main(_fit_args(paths, "--feature-columns", "a,zz")) == 2
    assert "node table has no feature column 'zz'" in capsys.readouterr().err
    args = _fit_args(paths)
    args[args.index("dpmlp")] = "nope"
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "argument --estimator: invalid choice: 'nope' (choose from" in err
    assert all(name in err.splitlines()[-1] for name in ("dpmlp", "drw", "fdp", "gap", "rgnn"))
    assert main(_fit_args(paths, "--param", "no_such=1")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--param no_such: DPMLPClassifier has no parameter 'no_such'; its parameters are " in err
    assert main(["evaluate", "--nodes", str(paths["nodes"]), "--model",
                 str(paths["dir"] / "missing.joblib")]) == 2
    assert "missing.joblib: no such model file" in capsys.readouterr().err


class NoisyAtPredictClassifier(DPMLPClassifier):
    """Makes a recorded release on every graph content it has not released on.

    Like an estimator whose predictions on a new graph need fresh noise (inductive GAP,
    private inference): the CLI's handling of such releases is tested without depending on
    any one estimator.
    """

    def _predict_logits(self, nodes):
        shift = self._release(nodes.graph, "test-noise",
                              lambda streams: float(streams.numpy("release").normal()),
                              lambda: {"epsilon": 0.25, "delta": 1e-7})
        return super()._predict_logits(nodes) + 0.0 * shift


def _register_noisy(monkeypatch):
    """Register :class:`NoisyAtPredictClassifier`: ``--estimator noisyatpredict`` trains it."""
    name = NoisyAtPredictClassifier.__name__
    monkeypatch.setattr(skdpgraph, "__all__", [*skdpgraph.__all__, name])
    monkeypatch.setattr(skdpgraph.estimators, "__all__", [*skdpgraph.estimators.__all__, name])
    monkeypatch.setattr(skdpgraph.estimators, name, NoisyAtPredictClassifier, raising=False)


def _noisy_fit_args(paths, *extra):
    args = _fit_args(paths, *extra)
    args[args.index("dpmlp")] = "noisyatpredict"
    return args


def _saved_releases(paths):
    return joblib.load(paths["model"])["estimator"].privacy_.releases


def test_every_release_is_saved_in_the_model_file(tables, capsys, monkeypatch):
    _register_noisy(monkeypatch)
    paths, nodes, _ = tables
    first = paths["dir"] / "fit_predictions.csv"
    # fit --predictions: the release its predictions make is in the saved model
    assert main(_noisy_fit_args(paths, "--predictions", str(first))) == 0
    out = capsys.readouterr().out
    assert len(_saved_releases(paths)) == 1  # predict and predict_proba: one release
    assert "new release recorded in privacy_.releases: test-noise on 120 nodes" in out

    table_args = ["--nodes", str(paths["nodes"]), "--edges", str(paths["edges"]),
                  "--model", str(paths["model"])]
    for k, command in enumerate([["predict", *table_args, "--output",
                                  str(paths["dir"] / "p.csv")],
                                 ["evaluate", *table_args, "--all-labelled"]], start=2):
        # the tables are a new graph object: after loading, a new release with fresh noise
        assert main(command) == 0
        out = capsys.readouterr().out
        releases = _saved_releases(paths)
        assert len(releases) == k, command[0]
        assert releases[-1]["kind"] == "test-noise" and releases[-1]["epsilon"] == 0.25
        report = joblib.load(paths["model"])["estimator"].privacy_
        assert f"saved in {paths['model']}" in out
        assert (f"total so far, training and {k} releases: epsilon={report.total_epsilon:.4g}, "
                f"delta={report.total_delta:.3g}") in out
        assert report.total_epsilon == pytest.approx(report.epsilon + 0.25 * k)


def test_a_release_that_cannot_be_saved_is_not_given_out(tables, capsys, monkeypatch):
    _register_noisy(monkeypatch)
    paths, _, _ = tables
    assert main(_noisy_fit_args(paths)) == 0
    capsys.readouterr()

    def unwritable(value, path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(joblib, "dump", unwritable)
    output = paths["dir"] / "p.csv"
    assert main(["predict", "--nodes", str(paths["nodes"]), "--edges", str(paths["edges"]),
                 "--model", str(paths["model"]), "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert "recorded a new release but the model file could not be updated" in err
    assert not output.exists()
    assert len(_saved_releases(paths)) == 0  # the previous model file is intact
    assert sorted(p.name for p in paths["dir"].iterdir()) == ["edges.csv", "model.joblib",
                                                              "nodes.csv"]


def test_no_release_leaves_the_model_file_alone(tables, capsys):
    paths, _, _ = tables
    assert main(_fit_args(paths)) == 0
    before = paths["model"].stat().st_mtime_ns
    capsys.readouterr()
    assert main(["evaluate", "--nodes", str(paths["nodes"]), "--edges", str(paths["edges"]),
                 "--model", str(paths["model"]), "--all-labelled"]) == 0
    assert "new release" not in capsys.readouterr().out
    assert paths["model"].stat().st_mtime_ns == before


def test_gap_edge_level_release_on_the_rebuilt_graph_is_saved(tables, capsys):
    paths, _, _ = tables
    args = _fit_args(paths)
    args[args.index("dpmlp")] = "gap"
    args[args.index("hidden_dim=8")] = "unit='edge'"
    args += ["--param", "encoder_epochs=2"]
    assert main(args) == 0
    assert len(_saved_releases(paths)) == 0  # fitted graph: the aggregations of fit, no cost
    capsys.readouterr()
    assert main(["predict", "--nodes", str(paths["nodes"]), "--edges", str(paths["edges"]),
                 "--model", str(paths["model"]), "--output", str(paths["dir"] / "p.csv")]) == 0
    releases = _saved_releases(paths)
    assert len(releases) == 1 and releases[0]["num_nodes"] == 120
    assert "new release recorded in privacy_.releases" in capsys.readouterr().out


# ----------------------------------------------------------------------------- the fitted graph
_REUSING = {"gap edge": ("gap", "unit='edge'"),
            "gap node": ("gap", "unit='node'"),
            "progap edge": ("progap", "unit='edge'")}


def _fit_reusing(paths, name, *extra):
    """``fit`` (with --predictions) of an estimator that keeps the release it paid for in fit."""
    estimator, level = _REUSING[name]
    args = _fit_args(paths, "--param", "encoder_epochs=2", *extra)
    args[args.index("dpmlp")] = estimator
    args[args.index("hidden_dim=8")] = level
    return args


def _total(paths):
    return joblib.load(paths["model"])["estimator"].privacy_.total_epsilon


@pytest.mark.parametrize("name", _REUSING)
def test_the_training_tables_reuse_the_fit_release_at_no_cost(tables, capsys, name):
    paths, nodes, _ = tables
    fitted = paths["dir"] / "fit.csv"
    assert main(_fit_reusing(paths, name, "--predictions", str(fitted))) == 0
    total, stamp = _total(paths), paths["model"].stat().st_mtime_ns
    capsys.readouterr()
    outputs = []
    for k in range(2):
        outputs.append(paths["dir"] / f"p{k}.csv")
        assert main(["predict", *table_args_of(paths), "--output", str(outputs[-1]),
                     "--fitted-graph"]) == 0
        assert main(["evaluate", *table_args_of(paths), "--all-labelled",
                     "--fitted-graph"]) == 0
        out = capsys.readouterr().out
        assert "new release" not in out and "note:" not in out
    assert _total(paths) == total and _saved_releases(paths) == ()
    assert paths["model"].stat().st_mtime_ns == stamp  # nothing to save
    expected = pd.read_csv(fitted)
    for output in outputs:  # the fit-time predictions, every time
        pd.testing.assert_frame_equal(pd.read_csv(output), expected)


def test_a_front_door_model_file_predicts_and_reuses_its_release(tables, capsys):
    paths, _, _ = tables
    fitted = paths["dir"] / "fit.csv"
    assert main(["fit", *table_args_of(paths), "--estimator", "dpnode", "--epsilon", "3",
                 "--random-state", "0", "--predictions", str(fitted)]) == 0
    total = _total(paths)
    output = paths["dir"] / "p.csv"
    assert main(["predict", *table_args_of(paths), "--output", str(output),
                 "--fitted-graph"]) == 0
    assert _total(paths) == total and _saved_releases(paths) == ()
    pd.testing.assert_frame_equal(pd.read_csv(output), pd.read_csv(fitted))


def test_tables_given_as_a_new_graph_are_a_recorded_release(tables, capsys):
    paths, nodes, edges = tables
    assert main(_fit_reusing(paths, "gap edge")) == 0
    total = _total(paths)
    edges.iloc[1:].to_csv(paths["edges"], index=False)  # one edge fewer: a new graph
    capsys.readouterr()
    assert main(["predict", *table_args_of(paths), "--output", str(paths["dir"] / "p.csv")]) == 0
    out = capsys.readouterr().out
    (release,) = _saved_releases(paths)
    assert _total(paths) == pytest.approx(total + release["epsilon"])
    assert "new release recorded in privacy_.releases: PMA aggregations on 120 nodes" in out
    # Same public sizes: the user is told which flag says "these are the training tables".
    assert ("has the fitted graph's public sizes (120 nodes, 4 features); if these are the "
            "training tables, --fitted-graph reuses the releases paid for in fit") in out


@pytest.mark.parametrize("change, message", [
    (lambda nodes, edges: (nodes.iloc[:-1], edges[edges["target"] != nodes["id"].iloc[-1]]
                           [lambda e: e["source"] != nodes["id"].iloc[-1]]),
     "it has 119 nodes, the fitted graph 120"),
    (lambda nodes, edges: (nodes, edges), "it is directed, the fitted graph undirected"),
], ids=["one node fewer", "directed"])
def test_fitted_graph_refuses_tables_of_other_public_sizes(tables, capsys, change, message):
    paths, nodes, edges = tables
    assert main(_fit_reusing(paths, "gap edge")) == 0
    nodes, edges = change(nodes, edges)
    nodes.to_csv(paths["nodes"], index=False)
    edges.to_csv(paths["edges"], index=False)
    directed = ["--directed"] if "directed" in message else []
    stamp = paths["model"].stat().st_mtime_ns
    capsys.readouterr()
    for command in (["predict", "--output", str(paths["dir"] / "p.csv")],
                    ["evaluate", "--all-labelled"]):
        assert main([*command, *table_args_of(paths), "--fitted-graph", *directed]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"skdpgraph {command[0]}: error: --fitted-graph: the tables ")
        assert f"cannot be the ones the model was trained on: {message}" in err
    assert paths["model"].stat().st_mtime_ns == stamp and _saved_releases(paths) == ()
    assert not (paths["dir"] / "p.csv").exists()


def test_a_model_file_read_with_the_fitted_graph_holds_no_hash_of_it(
        tables, capsys, monkeypatch):
    from skdpgraph.cli._tables import load_tables
    from skdpgraph.estimators._base import BaseDPClassifier

    paths, _, _ = tables
    predictions = paths["dir"] / "p.csv"
    assert main(_fit_reusing(paths, "gap node", "--predictions", str(predictions))) == 0
    assert main(["predict", *table_args_of(paths), "--output", str(predictions), "--fitted-graph",
                 "--all"]) == 0
    blob = paths["model"].read_bytes()
    args = _build_parser().parse_args(["predict", *table_args_of(paths), "--output", "x"])
    digest = load_tables(args, ["a", "b", "c", "d"]).graph.fingerprint()  # the tables' hash
    assert digest.encode() not in blob and bytes.fromhex(digest) not in blob
    # The broken variant, a model file that keeps the cache as it is in memory, is caught.
    monkeypatch.setattr(BaseDPClassifier, "__getstate__",
                        lambda self: dict(super(BaseDPClassifier, self).__getstate__()))
    assert main(_fit_reusing(paths, "gap node")) == 0
    assert digest.encode() in paths["model"].read_bytes()


def table_args_of(paths):
    return ["--nodes", str(paths["nodes"]), "--edges", str(paths["edges"]),
            "--model", str(paths["model"])]
