"""``skdpgraph fit|predict|evaluate``: train and use an estimator from CSV tables.

Tables
------
* node table (``--nodes``): one row per node: an id column, a label column and feature
  columns (by default every other column). A row whose label cell is **empty** is an
  unlabelled node: it takes part in the graph, is not trained on, and is what ``predict``
  predicts (``--all`` predicts every row).
* edge table (``--edges``, optional): one row per edge with a source and a target id
  column. Without it the graph has no edges.

``fit`` saves the fitted estimator with joblib, together with the column names it was
trained on, and prints its privacy report. ``fit --predictions`` also predicts the
unlabelled rows in the same run, on the very graph the model was trained on (for estimators
that reuse training-time computations, this costs nothing more).

``predict`` and ``evaluate`` rebuild the graph from the tables. To an estimator that is a
new graph object: a content fingerprint is never saved in the model file (it identifies the
private data), so an estimator whose outputs are noisy makes a new release with fresh noise
and records it in ``privacy_.releases``. Whenever a command adds a release, the model file
is rewritten with the updated record *before* any output is written, and a line states the
release and the new total (``privacy_.total_epsilon``, ``privacy_.total_delta``): a release
is never given out without being saved.
"""

from __future__ import annotations

import argparse
import ast
import sys

__all__ = ["add_fit_parser", "add_predict_parser", "add_evaluate_parser", "estimator_registry"]


class TableError(ValueError):
    """A problem in an input table, named by file, column and row."""


def estimator_registry() -> dict:
    """``{"dpmlp": DPMLPClassifier, ...}``: every ``*Classifier`` in ``skdpgraph.estimators``."""
    import skdpgraph.estimators as estimators

    return {name[: -len("Classifier")].lower(): getattr(estimators, name)
            for name in estimators.__all__ if name.endswith("Classifier")}


# ----------------------------------------------------------------------------- parsers
def _add_table_arguments(parser: argparse.ArgumentParser) -> None:
    tables = parser.add_argument_group("tables")
    tables.add_argument("--nodes", required=True, help="node table CSV (id, features, label)")
    tables.add_argument("--edges", default=None, help="edge table CSV (source, target)")
    tables.add_argument("--id-column", default="id")
    tables.add_argument("--label-column", default="label",
                        help="label column; empty cells mark unlabelled nodes (default: label)")
    tables.add_argument("--feature-columns", default=None, type=_comma_list,
                        help="comma-separated feature columns (default: all other columns)")
    tables.add_argument("--source-column", default="source")
    tables.add_argument("--target-column", default="target")
    tables.add_argument("--directed", action="store_true", help="treat edges as directed")


def add_fit_parser(subparsers) -> None:
    """Register ``skdpgraph fit``."""
    parser = subparsers.add_parser(
        "fit", help="train an estimator on CSV node and edge tables",
        description="Train on the labelled rows of the node table, save the model with "
                    "joblib and print its privacy report. Rows with an empty label are "
                    "unlabelled nodes (part of the graph, not trained on).")
    _add_table_arguments(parser)
    parser.add_argument("--estimator", required=True,
                        help="estimator to train: the class name without 'Classifier', "
                             "lower case (dpmlp for DPMLPClassifier, ...)")
    parser.add_argument("--epsilon", type=float, default=None,
                        help="privacy budget (default: the estimator's); 'inf' for non-private")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="an estimator parameter, e.g. --param epochs=20 (repeatable)")
    parser.add_argument("--random-state", type=int, default=None)
    parser.add_argument("--model", required=True, help="where to save the fitted model (joblib)")
    parser.add_argument("--predictions", default=None,
                        help="also write predictions of the unlabelled rows to this CSV")
    parser.set_defaults(func=_guarded(_run_fit, "fit"))


def add_predict_parser(subparsers) -> None:
    """Register ``skdpgraph predict``."""
    parser = subparsers.add_parser(
        "predict", help="predict the unlabelled nodes of CSV tables with a saved model")
    _add_table_arguments(parser)
    parser.add_argument("--model", required=True, help="model saved by skdpgraph fit")
    parser.add_argument("--output", required=True, help="predictions CSV to write")
    parser.add_argument("--all", action="store_true", help="predict every row, labelled or not")
    parser.set_defaults(func=_guarded(_run_predict, "predict"))


def add_evaluate_parser(subparsers) -> None:
    """Register ``skdpgraph evaluate``."""
    parser = subparsers.add_parser(
        "evaluate", help="accuracy of a saved model on the labelled rows of CSV tables")
    _add_table_arguments(parser)
    parser.add_argument("--model", required=True, help="model saved by skdpgraph fit")
    parser.set_defaults(func=_guarded(_run_evaluate, "evaluate"))


def _comma_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _guarded(run, command: str):
    """Turn table, parameter, file and estimator errors into one ``error:`` line, exit code 2.

    Estimators raise ``ValueError`` (including ``PrivacyBudgetError``) or ``TypeError``
    with a message naming the parameter and the fix; ``FloatingPointError`` when training
    diverged; ``OSError`` covers unreadable or unwritable files.
    """
    def guarded(args) -> int:
        try:
            return run(args)
        except (ValueError, TypeError, KeyError, OSError, FloatingPointError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            print(f"skdpgraph {command}: error: {message}", file=sys.stderr)
            return 2
    return guarded


# ----------------------------------------------------------------------------- tables
def _read_csv(path: str, **kwargs):
    import pandas as pd

    try:
        return pd.read_csv(path, **kwargs)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise TableError(f"{path}: cannot read CSV ({exc})") from None


def load_tables(args, feature_columns: list[str] | None = None):
    """Read the tables; return ``(graph, ids, labels)`` (labels: str or NaN per row)."""
    import numpy as np
    import pandas as pd

    from skdpgraph.graph import Graph

    nodes = _read_csv(args.nodes, dtype={args.label_column: str})
    has_labels = args.label_column in nodes.columns
    if args.id_column not in nodes.columns:
        raise TableError(f"{args.nodes}: node table has no id column {args.id_column!r} "
                         f"(columns: {list(nodes.columns)}).")
    columns = feature_columns or args.feature_columns or [
        c for c in nodes.columns if c not in (args.id_column, args.label_column)]
    for column in columns:
        if column not in nodes.columns:
            raise TableError(f"{args.nodes}: node table has no feature column {column!r} "
                             f"(columns: {list(nodes.columns)}).")
        empty = np.flatnonzero(nodes[column].isna().to_numpy())
        if empty.size:
            raise TableError(f"{args.nodes}: feature column {column!r} is empty in row "
                             f"{int(empty[0])} (rows counted from 0 after the header).")
    if not columns:
        raise TableError(f"{args.nodes}: node table has no feature columns.")
    if args.edges is not None:
        edges = _read_csv(args.edges)
    else:
        edges = pd.DataFrame({args.source_column: [], args.target_column: []})
    try:
        graph = Graph.from_pandas(nodes, edges, id_column=args.id_column, feature_columns=columns,
                                  source_column=args.source_column,
                                  target_column=args.target_column, directed=args.directed)
    except ValueError as exc:
        text = str(exc).replace("Graph.from_pandas: ", "")
        where = args.edges if text.startswith(("edge", "the edge")) else args.nodes
        raise TableError(f"{where}: {text}") from None
    labels = nodes[args.label_column].to_numpy(dtype=object) if has_labels else None
    return graph, nodes[args.id_column].to_numpy(), labels, columns


def _labelled(labels):
    import numpy as np
    import pandas as pd

    if labels is None:
        return np.zeros(0, dtype=bool)
    return ~pd.isna(labels)


def _parse_param(text: str):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ValueError(f"--param {text!r} is not KEY=VALUE.")
    if value.lower() in ("inf", "+inf"):
        return key, float("inf")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


# ----------------------------------------------------------------------------- commands
def _run_fit(args) -> int:
    import numpy as np

    graph, ids, labels, columns = load_tables(args)
    labelled = _labelled(labels)
    if labelled.sum() < 2:
        raise TableError(f"{args.nodes}: fit needs labelled rows in column "
                         f"{args.label_column!r}; found {int(labelled.sum())}.")
    registry = estimator_registry()
    if args.estimator.lower() not in registry:
        raise ValueError(f"unknown --estimator {args.estimator!r}; choose from "
                         f"{', '.join(sorted(registry))}.")
    estimator = registry[args.estimator.lower()]()
    params = dict(_parse_param(p) for p in args.param)
    if args.epsilon is not None:
        params["epsilon"] = args.epsilon
    if args.random_state is not None:
        params["random_state"] = args.random_state
    estimator.set_params(**params)
    estimator.fit(graph.nodes(np.flatnonzero(labelled)), labels[labelled].astype(str))
    saved = {"estimator": estimator, "feature_columns": columns}
    try:  # predict before saving: a release these predictions make is in the saved record
        table = _predictions(estimator, graph, ids, ~labelled) if args.predictions else None
    finally:
        _save_model(saved, args.model)
    print(f"trained {type(estimator).__name__} on {int(labelled.sum())} labelled of "
          f"{graph.num_nodes} nodes ({graph.num_edges} directed edge entries); saved {args.model}")
    _announce_releases(estimator, 0, args.model)
    if table is not None:
        _write_table(table, args.predictions)
    print(estimator.privacy_)
    return 0


def _load_model(path: str):
    import joblib

    try:
        saved = joblib.load(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such model file") from None
    if not isinstance(saved, dict) or "estimator" not in saved:
        raise ValueError(f"{path} was not written by skdpgraph fit.")
    return saved


def _save_model(saved: dict, path: str) -> None:
    """Write the model file atomically: a failed write leaves the previous file intact."""
    import os
    import tempfile

    import joblib

    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".skdpgraph-", suffix=".joblib", dir=directory)
    os.close(handle)
    try:
        joblib.dump(saved, temporary)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def _releases(estimator) -> int:
    report = getattr(estimator, "privacy_", None)
    return len(getattr(report, "releases", ()))


def _announce_releases(estimator, before: int, path: str) -> None:
    """One line per release made since ``before``, then the total with every release."""
    report = estimator.privacy_
    for release in report.releases[before:]:
        print(f"new release recorded in privacy_.releases: {release.get('kind', '?')} on "
              f"{release.get('num_nodes', '?')} nodes, epsilon={float(release['epsilon']):.4g}, "
              f"delta={float(release['delta']):.3g}; saved in {path}")
    count = len(report.releases)
    if count > before:
        print(f"total so far, training and {count} release{'s' if count > 1 else ''}: "
              f"epsilon={report.total_epsilon:.4g}, delta={report.total_delta:.3g} "
              "(basic composition)")


def _keep_releases(saved: dict, before: int, path: str) -> None:
    """Rewrite the model file if the estimator recorded a release; say so.

    Called before any output of the command is written: if the file cannot be written, the
    command fails and gives nothing out.
    """
    estimator = saved["estimator"]
    if _releases(estimator) <= before:
        return
    try:
        _save_model(saved, path)
    except OSError as exc:
        raise OSError(f"{path}: the estimator recorded a new release but the model file could "
                      f"not be updated ({exc}); no output was written.") from None
    _announce_releases(estimator, before, path)


def _predictions(estimator, graph, ids, mask):
    import numpy as np
    import pandas as pd

    index = np.flatnonzero(mask)
    nodes = graph.nodes(index)
    table = pd.DataFrame({"id": ids[index], "prediction": estimator.predict(nodes)})
    if len(index) and hasattr(estimator, "predict_proba"):
        proba = estimator.predict_proba(nodes)
        for k, label in enumerate(estimator.classes_):
            table[f"proba_{label}"] = proba[:, k]
    return table


def _write_table(table, path: str) -> None:
    table.to_csv(path, index=False)
    print(f"wrote {len(table)} predictions to {path}")


def _run_predict(args) -> int:
    import numpy as np

    saved = _load_model(args.model)
    estimator = saved["estimator"]
    graph, ids, labels, _ = load_tables(args, saved["feature_columns"])
    mask = ~_labelled(labels) if labels is not None and not args.all else None
    before = _releases(estimator)
    try:
        table = _predictions(estimator, graph, ids,
                             np.ones(graph.num_nodes, bool) if mask is None else mask)
    finally:  # a release is saved before anything is written, even if predicting failed
        _keep_releases(saved, before, args.model)
    _write_table(table, args.output)
    print(estimator.privacy_)
    return 0


def _run_evaluate(args) -> int:
    import numpy as np

    saved = _load_model(args.model)
    graph, _, labels, _ = load_tables(args, saved["feature_columns"])
    labelled = _labelled(labels)
    if not labelled.any():
        raise TableError(f"{args.nodes}: evaluate needs labelled rows in column "
                         f"{args.label_column!r}; found none.")
    estimator = saved["estimator"]
    before = _releases(estimator)
    try:
        accuracy = estimator.score(graph.nodes(np.flatnonzero(labelled)),
                                   labels[labelled].astype(str))
    finally:
        _keep_releases(saved, before, args.model)
    print(f"accuracy: {accuracy:.4f} on {int(labelled.sum())} labelled nodes")
    print(estimator.privacy_)
    return 0
