"""The ``skdpgraph`` command line: help, progress, JSON report, labels, node selection,
output paths and model files (issue 14)."""

import argparse
import json
import pickle
import subprocess
import sys

import joblib
import numpy as np
import pandas as pd
import pytest

import skdpgraph
from skdpgraph import DPMLPClassifier, Graph
from skdpgraph._discovery import command_name
from skdpgraph.cli import main
from skdpgraph.cli._main import _build_parser
from skdpgraph.estimators._base import VERBOSE_NOT_COVERED
from tests._cli_data import N_LABELLED, add_split, fit_args, table_args, write_tables


@pytest.fixture
def tables(tmp_path):
    return write_tables(tmp_path)


@pytest.fixture
def fitted(tables, capsys):
    paths, nodes, edges = tables
    assert main(fit_args(paths)) == 0
    capsys.readouterr()
    return paths, nodes, edges


def _subparsers(parser):
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices


def _error_line(capsys, command):
    """The whole of stderr, checked to be one ``skdpgraph <command>: error:`` line."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"skdpgraph {command}: error: "), err
    assert "Traceback" not in err
    return err


# ----------------------------------------------------------------------------- help
def test_help_describes_every_subcommand_and_option():
    parser = _build_parser()
    for name, subparser in _subparsers(parser).items():
        assert subparser.description, f"{name} has no description"
        for action in subparser._actions:
            assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)
    for action in parser._actions:
        assert action.help, action.dest
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert all(choice.help for choice in commands._choices_actions)


def test_fit_help_lists_the_estimator_choices(capsys):
    assert main(["fit", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for cls, _ in skdpgraph.all_estimators(data="nodes"):
        assert f"{command_name(cls)} ({cls})" in out


def test_estimator_choices_are_the_registered_estimators():
    import skdpgraph.estimators as estimators
    from skdpgraph.cli._commands import estimator_class
    from skdpgraph.cli._parsers import _estimator_choices

    classifiers = {n for n in estimators.__all__ if n.endswith("Classifier")
                   and not n.startswith("Base") and getattr(estimators, n)._data_kind == "nodes"}
    choices = _estimator_choices()
    assert set(choices.values()) == classifiers == {
        name for name, _ in skdpgraph.all_estimators(data="nodes")}
    assert all(estimator_class(name).__name__ == cls for name, cls in choices.items())


#: The configuration of ``tests._fast_estimators.FAST`` that trains each registered estimator.
_FAST_KEY = {"DPMLPClassifier": "DPMLP", "DRWClassifier": "DRW", "FDPClassifier": "FDP",
             "GAPClassifier": "GAP-edge", "NeighbourVoteClassifier": "Votes",
             "ProGAPClassifier": "ProGAP-edge", "RGNNClassifier": "RGNN"}
#: Registered estimators the epsilon test leaves out, with the reason.
_NOT_IN_EPSILON_TEST = {
    "DPNodeClassifier": "fits a chosen estimator with its defaults (seconds); its epsilon "
                        "reaching the choice is tested in tests/estimators/test_front_door.py",
}


def test_every_node_level_estimator_has_a_cli_configuration_or_a_reason():
    registered = {name for name, _ in skdpgraph.all_estimators(data="nodes")}
    assert registered == set(_FAST_KEY) | set(_NOT_IN_EPSILON_TEST)


@pytest.mark.parametrize("name", sorted(command_name(cls) for cls in _FAST_KEY))
def test_epsilon_is_passed_as_epsilon_to_every_estimator(tables, capsys, name):
    from tests._fast_estimators import FAST

    paths, _, _ = tables
    cls, params = FAST[{command_name(c): key for c, key in _FAST_KEY.items()}[name]]
    args = ["fit", "--nodes", str(paths["nodes"]), "--edges", str(paths["edges"]),
            "--estimator", name, "--epsilon", "2.5", "--random-state", "0",
            "--model", str(paths["model"])]
    for key, value in params.items():
        if key != "epsilon":
            args += ["--param", f"{key}={value!r}"]
    assert main(args) == 0, capsys.readouterr().err
    model = joblib.load(paths["model"])["estimator"]
    assert type(model) is cls and model.get_params()["epsilon"] == 2.5
    assert model.epsilon_spent_ <= 2.5 + 1e-9


_HEAVY = ("torch", "sklearn", "pandas", "scipy", "joblib", "skdpgraph.estimators")


def _modules_loaded_by(code):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                            text=True, check=True)
    assert result.stdout.split()[-1:] == ["END"], result  # the code ran to the end
    return set(result.stdout.split()[:-1])


def test_help_adds_no_heavy_import_to_the_package():
    """Whatever ``import skdpgraph`` loads, the CLI and its help load nothing heavy on top."""
    new = _modules_loaded_by(
        "import sys, contextlib, io; import skdpgraph; before = set(sys.modules)\n"
        "from skdpgraph.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    [main([*c, '--help']) for c in ([], ['fit'], ['predict'], ['evaluate'])]\n"
        "print(*(set(sys.modules) - before), 'END')")
    assert not [m for m in new if m.startswith(_HEAVY)], sorted(new)


def test_help_does_not_import_torch():
    loaded = _modules_loaded_by(
        "import sys, contextlib, io\nfrom skdpgraph.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    main(['fit', '--help'])\n"
        "print(*sys.modules, 'END')")
    assert not [m for m in loaded if m.startswith(_HEAVY)]


# ----------------------------------------------------------------------------- --verbose
def test_verbose_shows_progress_on_stderr(tables, capsys):
    paths, _, _ = tables
    assert main(fit_args(paths)) == 0
    assert capsys.readouterr().err == ""
    assert main(fit_args(paths, "--verbose")) == 0
    err = capsys.readouterr().err
    for step in ("reading", "training DPMLPClassifier on 100 of 120 nodes", "trained", "saving"):
        assert f"] {step}" in err, err
    assert "eps " in err  # the estimator's own progress, as plain lines (not a terminal)
    model = joblib.load(paths["model"])["estimator"]
    assert model.verbose is True and VERBOSE_NOT_COVERED in model.privacy_.not_covered
    assert main(["evaluate", *table_args(paths), "--all-labelled", "-v"]) == 0
    assert "] scoring 100 nodes" in capsys.readouterr().err


# ----------------------------------------------------------------------------- JSON report
def _strict_json(path):
    def refuse(constant):
        raise AssertionError(f"{path} is not strict JSON: {constant}")
    return json.loads(path.read_text(), parse_constant=refuse)


def test_fit_and_evaluate_write_the_privacy_report_as_json(tables, capsys):
    paths, _, _ = tables
    report = paths["dir"] / "report.json"
    assert main(fit_args(paths, "--report-json", str(report))) == 0
    model = joblib.load(paths["model"])["estimator"]
    assert _strict_json(report) == json.loads(json.dumps(model.privacy_.to_dict()))
    assert _strict_json(report)["epsilon"] == pytest.approx(model.epsilon_spent_)

    evaluated = paths["dir"] / "evaluated.json"
    assert main(["evaluate", *table_args(paths), "--all-labelled",
                 "--report-json", str(evaluated)]) == 0
    assert f"wrote the privacy report to {evaluated}" in capsys.readouterr().out
    assert _strict_json(evaluated)["total_epsilon"] == pytest.approx(model.privacy_.total_epsilon)


def test_json_report_of_a_non_private_fit_is_strict_json(tables):
    paths, _, _ = tables
    report = paths["dir"] / "report.json"
    args = fit_args(paths, "--report-json", str(report))
    args[args.index("--epsilon") + 1] = "inf"
    assert main(args) == 0
    written = _strict_json(report)
    assert written["epsilon"] == "inf" and written["private"] is False


def test_privacy_report_to_dict():
    from skdpgraph.privacy import PrivacyReport

    report = PrivacyReport(estimator="E", unit="edge", neighbouring_relation="add one edge",
                           epsilon=1.5, delta=1e-6, accountant="RDP", mechanism="Gaussian",
                           events=("a", "b"), dp_event=object()).with_release(
        kind="features", num_nodes=np.int64(7), epsilon=np.float64(0.5), delta=0.0)
    out = report.to_dict()
    assert "dp_event" not in out and out["events"] == ["a", "b"]
    assert out["releases"] == [{"kind": "features", "num_nodes": 7, "epsilon": 0.5,
                                "delta": 0.0}]
    assert type(out["releases"][0]["num_nodes"]) is int
    assert out["total_epsilon"] == 2.0 and out["private"] is True
    json.dumps(out, allow_nan=False)  # raises if anything is not plain JSON


# ----------------------------------------------------------------------------- labels
def test_one_and_one_point_zero_are_one_class(tables, capsys):
    paths, nodes, _ = tables
    spelled = [None if pd.isna(v) else (f"{v}.0" if i % 2 else f" {v} ")
               for i, v in enumerate(nodes["label"])]
    nodes.assign(label=spelled).to_csv(paths["nodes"], index=False)
    assert main(fit_args(paths)) == 0
    model = joblib.load(paths["model"])["estimator"]
    assert model.classes_.tolist() == ["0", "1", "2", "3"]
    assert main(["evaluate", *table_args(paths), "--all-labelled"]) == 0
    accuracy = float(capsys.readouterr().out.split("accuracy: ")[1].split()[0])
    graph = Graph.from_pandas(nodes, pd.read_csv(paths["edges"]),
                              feature_columns=["a", "b", "c", "d"])
    expected = model.score(graph.nodes(np.arange(N_LABELLED)),
                           nodes["label"][:N_LABELLED].astype(int).astype(str))
    assert accuracy == pytest.approx(expected, abs=1e-4)


# ----------------------------------------------------------------------------- evaluate
def _accuracy(out):
    return float(out.split("accuracy: ")[1].split()[0])


def test_evaluate_scores_only_the_nodes_named(tables, capsys):
    paths, nodes, edges = tables
    nodes = add_split(paths, nodes)
    assert main(fit_args(paths, "--split-column", "split")) == 0
    assert "trained DPMLPClassifier on 70 labelled of 120 nodes" in capsys.readouterr().out

    assert main(["evaluate", *table_args(paths)]) == 2
    assert "evaluate needs the nodes to score: --split-column" in _error_line(capsys, "evaluate")

    model = joblib.load(paths["model"])["estimator"]
    graph = Graph.from_pandas(nodes, edges, feature_columns=["a", "b", "c", "d"])
    test_rows = np.arange(70, N_LABELLED)
    expected = model.score(graph.nodes(test_rows), nodes["label"][test_rows].astype(str))
    assert main(["evaluate", *table_args(paths), "--split-column", "split"]) == 0
    out = capsys.readouterr().out
    assert "on 30 labelled nodes" in out and _accuracy(out) == pytest.approx(expected, abs=1e-4)

    ids = paths["dir"] / "ids.txt"
    ids.write_text("\n".join(nodes["id"][test_rows]) + "\n")
    assert main(["evaluate", *table_args(paths), "--ids", str(ids)]) == 0
    out = capsys.readouterr().out
    assert "on 30 labelled nodes" in out and _accuracy(out) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("selection, message", [
    (["--ids", "IDS"], "1 id(s) are not in the node table"),
    (["--split-column", "split", "--split-value", "validation"],
     "evaluate selects no rows: there are no rows with split='validation'"),
    (["--split-column", "split", "--split-value", ""],
     "20 of the 20 rows with split='' have no label in column 'label', e.g. id 'n100'"),
    (["--split-column", "nope"], "node table has no split column 'nope'"),
    (["--split-column", "split", "--ids", "IDS"], "give --split-column or --ids, not both"),
])
def test_evaluate_selection_errors(fitted, capsys, selection, message):
    paths, nodes, _ = fitted
    add_split(paths, nodes)
    ids = paths["dir"] / "ids.txt"
    ids.write_text("n1\nzz\n")
    selection = [str(ids) if part == "IDS" else part for part in selection]
    assert main(["evaluate", *table_args(paths), *selection]) == 2
    assert message in _error_line(capsys, "evaluate")


# ----------------------------------------------------------------------------- output paths
def _refuse_to_train(monkeypatch):
    def fit(self, X, y):
        raise AssertionError("trained although an output path is unusable")
    monkeypatch.setattr(DPMLPClassifier, "fit", fit)


@pytest.mark.parametrize("option, target, message", [
    ("--model", "missing/model.joblib", "--model {p}: directory {d}/missing does not exist."),
    ("--predictions", "missing/p.csv", "--predictions {p}: directory {d}/missing does not exist"),
    ("--predictions", ".", "--predictions {p} is a directory; give a file name."),
    ("--report-json", "nodes.csv", "--report-json {p} is also --nodes: an output may not "
                                   "overwrite another file of the command."),
    ("--predictions", "model.joblib", "--predictions {p} is also --model"),
])
def test_fit_checks_output_paths_before_training(tables, capsys, monkeypatch, option, target,
                                                 message):
    paths, _, _ = tables
    _refuse_to_train(monkeypatch)
    path = str(paths["dir"] / target)
    args = fit_args(paths)
    if option == "--model":
        args[args.index("--model") + 1] = path
    else:
        args += [option, path]
    assert main(args) == 2
    assert message.format(p=path, d=paths["dir"]) in _error_line(capsys, "fit")
    assert not paths["model"].exists()


def test_predict_checks_its_output_before_predicting(fitted, capsys, monkeypatch):
    paths, _, _ = fitted

    def predict(self, X):
        raise AssertionError("predicted although --output cannot be written")
    monkeypatch.setattr(DPMLPClassifier, "predict", predict)
    output = paths["dir"] / "missing" / "p.csv"
    assert main(["predict", *table_args(paths), "--output", str(output)]) == 2
    assert f"--output {output}: directory" in _error_line(capsys, "predict")
    assert main(["predict", *table_args(paths), "--output", str(paths["model"])]) == 2
    assert "is also --model" in _error_line(capsys, "predict")


# ----------------------------------------------------------------------------- model files
def _write_model_file(kind, path, source):
    from sklearn.linear_model import LogisticRegression

    if kind == "text":
        path.write_text("id,label\nn1,0\n")
    elif kind == "truncated":
        path.write_bytes(source.read_bytes()[:300])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "missing class":  # a pickle naming a module this machine does not have
        path.write_bytes(b"cno_such_module\nThing\n)R.")
    elif kind == "list":
        joblib.dump([1, 2], path)
    elif kind == "other estimator":
        joblib.dump({"estimator": LogisticRegression(), "feature_columns": ["a"]}, path)
    elif kind == "bare estimator":
        joblib.dump(joblib.load(source)["estimator"], path)
    elif kind == "unfitted":
        joblib.dump({"estimator": DPMLPClassifier(), "feature_columns": ["a"]}, path)
    elif kind == "plain pickle of a dict":
        path.write_bytes(pickle.dumps({"weights": [1.0]}))


@pytest.mark.parametrize("kind, message", [
    ("text", "not a model file written by skdpgraph fit (it cannot be read: "),
    ("truncated", "not a model file written by skdpgraph fit (it cannot be read: "),
    ("empty", "not a model file written by skdpgraph fit (it cannot be read"),
    ("missing class", "it cannot be read: ModuleNotFoundError"),
    ("list", "not a model file written by skdpgraph fit (it holds a list)"),
    ("plain pickle of a dict", "(it holds a dict with keys ['weights'])"),
    ("other estimator", "holds a LogisticRegression, not an skdpgraph estimator"),
    ("bare estimator", "holds a bare DPMLPClassifier, not a model file written by skdpgraph fit"),
    ("unfitted", "holds an unfitted DPMLPClassifier"),
])
@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_bad_model_file_is_a_one_line_error(fitted, capsys, kind, message, command):
    paths, _, _ = fitted
    bad = paths["dir"] / "bad.joblib"
    _write_model_file(kind, bad, paths["model"])
    args = [command, "--nodes", str(paths["nodes"]), "--model", str(bad)]
    if command == "predict":
        args += ["--output", str(paths["dir"] / "p.csv")]
    else:
        args += ["--all-labelled"]
    assert main(args) == 2
    err = _error_line(capsys, command)
    assert f"{bad}: " in err and message in err


def test_the_installed_command_prints_no_traceback(fitted):
    paths, _, _ = fitted
    bad = paths["dir"] / "bad.joblib"
    _write_model_file("truncated", bad, paths["model"])
    result = subprocess.run([sys.executable, "-m", "skdpgraph.cli", "evaluate", "--nodes",
                             str(paths["nodes"]), "--model", str(bad), "--all-labelled"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"skdpgraph evaluate: error: {bad}: not a model file "
                                    "written by skdpgraph fit (it cannot be read: ")
    assert result.stderr.endswith("; a truncated or foreign file?)\n")
    assert result.stderr.count("\n") == 1


def test_the_demo_trains_every_node_level_estimator():
    from skdpgraph.cli._demo_estimators import DEMO_SETTINGS, demo_estimators

    registered = [name for name, _ in skdpgraph.all_estimators(data="nodes")]
    assert sorted(DEMO_SETTINGS) == registered
    trained = {name.split(" (")[0] for name in demo_estimators()}
    assert sorted(trained) == registered


@pytest.mark.parametrize("data", ["nodes", "graphs"])
def test_the_light_name_table_filters_as_the_class_attributes(data):
    """The help's names (read without imports) and the classes' ``_data_kind`` agree."""
    from skdpgraph._discovery import estimator_names

    found = skdpgraph.all_estimators(data=data)
    assert found and all(cls._data_kind == data for _, cls in found)
    assert estimator_names(data=data) == [name for name, _ in found]


def test_the_data_filters_split_the_registry():
    everyone = skdpgraph.all_estimators()
    split = skdpgraph.all_estimators(data="nodes") + skdpgraph.all_estimators(data="graphs")
    assert sorted(split) == everyone
    assert ("DPGraphClassifier", skdpgraph.DPGraphClassifier) in everyone
    with pytest.raises(ValueError, match=r"data must be one of \('nodes', 'graphs'\) or None; "
                                         r"got 'edges'"):
        skdpgraph.all_estimators(data="edges")


def test_fit_refuses_a_graph_level_estimator_name(capsys):
    assert main(["fit", "--nodes", "x.csv", "--estimator", "dpgraph", "--model", "m.joblib"]) == 2
    assert "invalid choice: 'dpgraph'" in capsys.readouterr().err
