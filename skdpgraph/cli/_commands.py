"""``skdpgraph fit|predict|evaluate``: train and use an estimator from CSV tables.

``fit`` trains on the labelled rows of the node table (or the rows a split column or an id
list selects), saves the fitted estimator with the feature columns it was trained on, and
prints its privacy report. ``fit --predictions`` also predicts the unlabelled rows in the
same run, on the very graph the model was trained on.

With ``--graphs`` a row is a whole graph (:mod:`skdpgraph.cli._graph_tables`): the rows of
the graph table are selected, trained on, predicted and scored, by a graph-level estimator
(``all_estimators(data="graphs")``). A node-level estimator or model with ``--graphs``, or a
graph-level one without it, is refused. A graph-level model's predictions read only the
queried graphs, so there is no release to reuse and ``--fitted-graph`` is refused.

``predict`` and ``evaluate`` rebuild the graph from the tables. By default that is a new
graph to the estimator: an estimator whose outputs are noisy makes a new release with fresh
noise and records it in ``privacy_.releases``; the model file is rewritten with it before
any output is written (see :mod:`skdpgraph.cli._files`). With ``--fitted-graph`` the user
states that the tables are the training tables: after public checks (node count, feature
count, direction; a mismatch is an error) the releases paid in ``fit`` and kept in the model
serve the predictions, at no cost and with the fit-time noise, and the model file is left
alone. The default stays a new release because only the user knows that the tables did not
change: the model keeps nothing of their content to compare (no hash of private data). When
a new release was made on tables with the fitted graph's public sizes, a note names the
flag. ``evaluate`` scores only the rows the user names, never silently every labelled row
(which would include the training nodes).

Every file a command writes is checked before it trains or predicts.
"""

from __future__ import annotations

import ast
import sys
import time

from skdpgraph._discovery import all_estimators, command_name
from skdpgraph.cli._files import (
    announce_releases, check_outputs, keep_releases, load_model, release_count, save_model,
    write_report_json,
)
from skdpgraph.cli._tables import TableError, load_tables, selected_rows

__all__ = ["estimator_class", "read_tables", "run_evaluate", "run_fit", "run_predict"]


def estimator_class(name: str) -> type:
    """The estimator class of ``--estimator name``.

    Parameters
    ----------
    name : str
        A command name of a registered estimator (``"gap"``).

    Returns
    -------
    cls : type
        Its class, from ``skdpgraph.all_estimators()``: node-level (node tables) or
        graph-level (``--graphs``).
    """
    return {command_name(cls_name): cls for cls_name, cls in all_estimators()}[name]


def read_tables(args, feature_columns: list[str] | None = None, *, need_labels: bool):
    """The node tables of one graph, or with ``--graphs`` the tables of a collection of graphs.

    Returns
    -------
    tables : Tables
        Its rows are nodes, or graphs (see :mod:`skdpgraph.cli._graph_tables`).
    """
    if args.graphs is None:
        return load_tables(args, feature_columns, need_labels=need_labels)
    from skdpgraph.cli._graph_tables import load_graph_tables

    return load_graph_tables(args, feature_columns, need_labels=need_labels)


def _data_kind(args) -> str:
    return "nodes" if args.graphs is None else "graphs"


def _what_it_reads(kind: str) -> str:
    return {"nodes": "classifies the nodes of one graph (node tables, without --graphs)",
            "graphs": "classifies whole graphs (a graph table, --graphs CSV)"}[kind]


def _refuse_other_data(args, cls: type) -> None:
    """A node-level estimator trains on node tables, a graph-level one on graph tables."""
    if cls._data_kind == _data_kind(args):
        return
    names = ", ".join(sorted(command_name(n) for n, _ in all_estimators(data=_data_kind(args))))
    where = "without --graphs" if args.graphs is None else "with --graphs"
    raise ValueError(f"argument --estimator: invalid choice: {args.estimator!r} {where}: "
                     f"{cls.__name__} {_what_it_reads(cls._data_kind)}; {where} choose from "
                     f"{names}.")


def _refuse_other_model(args, estimator) -> None:
    """The model file's estimator reads the kind of tables given."""
    kind = _chosen(estimator)._data_kind
    if kind != _data_kind(args):
        raise ValueError(f"--model {args.model}: holds a {type(estimator).__name__}, which "
                         f"{_what_it_reads(kind)}; "
                         + ("drop --graphs." if kind == "nodes" else "add --graphs CSV."))
    if args.fitted_graph and kind == "graphs":
        raise ValueError(f"--fitted-graph: {type(estimator).__name__} keeps no release of the "
                         "training graphs (its predictions read only the queried graphs and "
                         "the model); drop --fitted-graph.")


def _guarded(run, command: str):
    """Turn table, parameter, file and estimator errors into one ``error:`` line, exit code 2.

    Estimators raise ``ValueError`` (including ``PrivacyBudgetError``) or ``TypeError``
    with a message naming the parameter and the fix; ``FloatingPointError`` when training
    diverged; ``OSError`` covers unreadable or unwritable files.
    """
    def guarded(args) -> int:
        args.started = time.perf_counter()
        try:
            return run(args)
        except (ValueError, TypeError, KeyError, OSError, FloatingPointError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            print(f"skdpgraph {command}: error: {message}", file=sys.stderr)
            return 2
    return guarded


def _progress(args, text: str) -> None:
    if args.verbose:
        elapsed = time.perf_counter() - args.started
        print(f"[skdpgraph {args.command} {elapsed:6.1f} s] {text}", file=sys.stderr, flush=True)


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


def _make_estimator(args):
    cls = estimator_class(args.estimator)
    _refuse_other_data(args, cls)
    estimator = cls()
    params = dict(_parse_param(p) for p in args.param)
    if args.epsilon is not None:
        params["epsilon"] = args.epsilon
    if args.random_state is not None:
        params["random_state"] = args.random_state
    valid = estimator.get_params(deep=False)
    for key in params:
        if key not in valid:
            option = f"--{key.replace('_', '-')}" if key in ("epsilon", "random_state") \
                else f"--param {key}"
            raise ValueError(f"{option}: {type(estimator).__name__} has no parameter {key!r}; "
                             f"its parameters are {', '.join(sorted(valid))}.")
    if args.verbose and "verbose" in valid:
        params["verbose"] = True
    return estimator.set_params(**params)


def _run_fit(args) -> int:
    import numpy as np

    estimator = _make_estimator(args)
    check_outputs({"--model": args.model, "--predictions": args.predictions,
                   "--report-json": args.report_json}, _inputs(args, "--ids"))
    _progress(args, f"reading {_input_files(args)}")
    tables = read_tables(args, need_labels=True)
    rows = selected_rows(args, tables, required=False, command="fit")
    if rows.size < 2:
        raise TableError(f"{tables.path}: fit needs at least 2 labelled rows in column "
                         f"{args.label_column!r}; found {rows.size}.")
    if tables.row == "graph":
        from skdpgraph.cli._graph_tables import refuse_equal_graphs

        refuse_equal_graphs(args, tables, rows, estimator)
    _progress(args, f"training {type(estimator).__name__} on {rows.size} of {tables.count()}")
    labels = np.array(tables.labels, dtype=object)
    estimator.fit(tables.examples(rows), labels[rows].astype(str))
    _progress(args, "trained")
    saved = {"estimator": estimator, "feature_columns": tables.feature_columns}
    try:  # predict before saving: a release these predictions make is in the saved record
        table = (_predictions(args, estimator, tables, ~tables.labelled)
                 if args.predictions else None)
    finally:
        _progress(args, f"saving {args.model}")
        save_model(saved, args.model)
    print(f"trained {type(estimator).__name__} on {rows.size} labelled of "
          f"{tables.describe()}; saved {args.model}")
    announce_releases(estimator, 0, args.model)
    if table is not None:
        _write_table(table, args.predictions)
    return _report(args, estimator)


def _inputs(args, *options: str) -> dict:
    """``{"--option": path}`` of the tables and the other files ``options`` a command reads."""
    return {"--nodes": args.nodes, "--edges": args.edges, "--graphs": args.graphs,
            **{option: getattr(args, option[2:]) for option in options}}


def _input_files(args) -> str:
    *first, last = [path for path in (args.nodes, args.edges, args.graphs) if path]
    return ", ".join(first) + (" and " if first else "") + last


def _predictions(args, estimator, tables, mask):
    import numpy as np
    import pandas as pd

    index = np.flatnonzero(mask)
    _progress(args, f"predicting {tables.count(index.size)}")
    examples = tables.examples(index)
    table = pd.DataFrame({"id": tables.ids[index], "prediction": estimator.predict(examples)})
    if len(index) and hasattr(estimator, "predict_proba"):
        proba = estimator.predict_proba(examples)
        for k, label in enumerate(estimator.classes_):
            table[f"proba_{label}"] = proba[:, k]
    return table


def _write_table(table, path: str) -> None:
    table.to_csv(path, index=False)
    print(f"wrote {len(table)} predictions to {path}")


def _load(args, *, need_labels: bool):
    _progress(args, f"loading {args.model}")
    saved = load_model(args.model)
    _refuse_other_model(args, saved["estimator"])
    _progress(args, f"reading {_input_files(args)}")
    tables = read_tables(args, saved["feature_columns"], need_labels=need_labels)
    if args.fitted_graph:
        _mark_fitted_graph(saved["estimator"], tables.graph, args.nodes)
    return saved, tables


def _chosen(estimator):
    """The estimator that holds the releases: the front door's choice, or itself."""
    return getattr(estimator, "estimator_", estimator)


def _mark_fitted_graph(estimator, graph, path: str) -> None:
    """``--fitted-graph``: the releases paid in fit serve the tables' graph, if its public
    sizes are the fitted graph's."""
    estimator = _chosen(estimator)
    differences = estimator._fitted_graph_differences(graph)
    if differences:
        raise ValueError(f"--fitted-graph: the tables ({path}) cannot be the ones the model "
                         f"was trained on: {'; '.join(differences)}. Check the tables, or drop "
                         "--fitted-graph to predict on them as a new graph (a new release).")
    estimator.mark_fitted_graph(graph)


def _suggest_fitted_graph(args, estimator, graph, before: int) -> None:
    """After a new release on tables with the fitted graph's public sizes, name the flag."""

    if (args.fitted_graph or args.graphs is not None or release_count(estimator) <= before
            or not _chosen(estimator)._keeps_fit_releases()
            or _chosen(estimator)._fitted_graph_differences(graph)):
        return
    print(f"note: {args.nodes} has the fitted graph's public sizes ({graph.num_nodes} nodes, "
          f"{graph.num_features} features); if these are the training tables, "
          "--fitted-graph reuses the releases paid for in fit at no cost.")


def _use_saved_model(args, saved, tables, use):
    """``use(estimator)``; a release it makes is saved in the model file, even if it fails."""
    estimator = saved["estimator"]
    before = release_count(estimator)
    try:
        result = use(estimator)
    finally:  # a release is saved before anything is written
        keep_releases(saved, before, args.model)
    _suggest_fitted_graph(args, estimator, tables.graph, before)
    return result


def _report(args, estimator) -> int:
    """Write the JSON privacy report if asked, print the report; exit code 0."""
    write_report_json(estimator, args.report_json)
    print(estimator.privacy_)
    return 0


def _run_predict(args) -> int:
    import numpy as np

    check_outputs({"--output": args.output, "--report-json": args.report_json},
                  _inputs(args, "--model"))
    saved, tables = _load(args, need_labels=False)
    mask = np.ones(len(tables.ids), bool) if args.all else ~tables.labelled
    table = _use_saved_model(args, saved, tables, lambda estimator: _predictions(
        args, estimator, tables, mask))
    _write_table(table, args.output)
    return _report(args, saved["estimator"])


def _run_evaluate(args) -> int:
    import numpy as np

    check_outputs({"--report-json": args.report_json}, _inputs(args, "--ids", "--model"))
    saved, tables = _load(args, need_labels=True)
    rows = selected_rows(args, tables, required=True, command="evaluate")
    labels = np.array(tables.labels, dtype=object)[rows].astype(str)
    _progress(args, f"scoring {tables.count(rows.size)}")
    accuracy = _use_saved_model(args, saved, tables, lambda estimator: estimator.score(
        tables.examples(rows), labels))
    print(f"accuracy: {accuracy:.4f} on {rows.size} labelled {tables.row}s")
    return _report(args, saved["estimator"])


#: The commands' ``func``: errors become one ``error:`` line and exit code 2.
run_fit = _guarded(_run_fit, "fit")
run_predict = _guarded(_run_predict, "predict")
run_evaluate = _guarded(_run_evaluate, "evaluate")
