"""The parsers of ``skdpgraph fit|predict|evaluate``: their options and help text.

Each ``add_<command>_parser(subparsers)`` registers one command and sets ``func`` (a
callable ``args -> exit code`` from :mod:`skdpgraph.cli._commands`) as its default. The
``--estimator`` choices are the registered estimators (:mod:`skdpgraph._discovery`), read
without importing them, so that ``--help`` does not load torch.
"""

from __future__ import annotations

import importlib

from skdpgraph._discovery import command_name, estimator_names

__all__ = ["add_evaluate_parser", "add_fit_parser", "add_predict_parser"]


#: Each command's one-line help and description.
_TEXTS = {
    "fit": (
        "train an estimator on CSV node and edge tables",
        "Train on the labelled rows of the node table (or those a split column "
        "or an id list selects), save the model with joblib and print its privacy "
        "report. Rows with an empty label are unlabelled nodes: part of the graph, "
        "never trained on. With --graphs a row of the graph table is one graph, "
        "trained on if it has a label. Output paths are checked before training."),
    "predict": (
        "predict the unlabelled nodes (or graphs) of CSV tables with a saved model",
        "Predict the unlabelled rows (or, with --all, every row) of the tables "
        "with a model saved by skdpgraph fit, and write id, prediction and class "
        "probabilities to a CSV. A release the prediction makes is saved in the "
        "model file before the CSV is written; on the training tables, "
        "--fitted-graph reuses the releases paid for in fit instead."),
    "evaluate": (
        "accuracy of a saved model on the nodes (or graphs) you name",
        "Accuracy of a model saved by skdpgraph fit on the labelled rows that "
        "--split-column or --ids selects. It never scores every labelled row "
        "unless told to (--all-labelled): those include the training nodes. A "
        "release the scoring makes is saved in the model file; on the training "
        "tables, --fitted-graph reuses the releases paid for in fit instead."),
}


def _command(name: str):
    """The ``func`` of a command: ``skdpgraph.cli._commands.<name>``, imported when it runs."""
    def run(args) -> int:
        return getattr(importlib.import_module("skdpgraph.cli._commands"), name)(args)
    return run


def _estimator_choices(data: str = "nodes") -> dict[str, str]:
    """``--estimator`` choices: command name -> estimator class name, of the estimators
    that train on ``data`` (``"nodes"``: node tables; ``"graphs"``: with ``--graphs``)."""
    return {command_name(name): name for name in estimator_names(data=data)}


def _add_command(subparsers, name: str):
    """The parser of command ``name`` with the ``tables`` options, and its ``func``."""
    help, description = _TEXTS[name]
    parser = subparsers.add_parser(name, help=help, description=description)
    add_table_arguments(parser)
    parser.set_defaults(func=_command(f"run_{name}"))
    return parser


def _add_model_file_arguments(parser, *, report_for: str) -> None:
    """``--model`` (a saved model), ``--fitted-graph`` and the common options."""
    parser.add_argument("--model", required=True, metavar="FILE",
                        help="model saved by skdpgraph fit (rewritten if a release is made)")
    parser.add_argument("--fitted-graph", action="store_true",
                        help="the tables are the ones the model was trained on (same rows and "
                             "edges): reuse the noisy releases paid for in fit, at no cost and "
                             "with the fit-time predictions, instead of a new release. Only "
                             "public sizes are checked (node count, feature columns, "
                             "direction); a mismatch is an error")
    _add_common_arguments(parser, report_for=report_for)


def _add_common_arguments(parser, *, report_for: str) -> None:
    parser.add_argument("--report-json", default=None, metavar="FILE",
                        help=f"also write the model's privacy report, {report_for}, to this "
                             "file as JSON (privacy_.to_dict(); inf written as \"inf\")")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show progress on stderr (fit: the estimator's progress bar too, "
                             "whose training loss the privacy report then lists as not "
                             "covered)")


def add_fit_parser(subparsers) -> None:
    """Register ``skdpgraph fit``."""
    parser = _add_command(subparsers, "fit")
    add_selection_arguments(parser, default_value="train", purpose="train on (default: all)")
    nodes, graphs = _estimator_choices("nodes"), _estimator_choices("graphs")
    parser.add_argument("--estimator", required=True, type=str.lower,
                        choices=sorted({**nodes, **graphs}), metavar="NAME",
                        help="estimator to train: on node tables " + _listed(nodes)
                             + "; with --graphs " + _listed(graphs))
    parser.add_argument("--epsilon", type=float, default=None,
                        help="privacy budget, passed as epsilon= to the estimator (default: "
                             "the estimator's); inf trains without privacy")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="an estimator parameter, e.g. --param epochs=20 (repeatable; "
                             "values are Python literals, else text)")
    parser.add_argument("--random-state", type=int, default=None, metavar="SEED",
                        help="seed of the estimator's random_state (default: unseeded)")
    parser.add_argument("--model", required=True, metavar="FILE",
                        help="where to save the fitted model (joblib)")
    parser.add_argument("--predictions", default=None, metavar="CSV",
                        help="also write predictions of the unlabelled rows to this CSV")
    _add_common_arguments(parser, report_for="after training")


def add_predict_parser(subparsers) -> None:
    """Register ``skdpgraph predict``."""
    parser = _add_command(subparsers, "predict")
    parser.add_argument("--output", required=True, metavar="CSV", help="predictions CSV to write")
    parser.add_argument("--all", action="store_true", help="predict every row, labelled or not")
    _add_model_file_arguments(parser, report_for="with any release this prediction makes")


def add_evaluate_parser(subparsers) -> None:
    """Register ``skdpgraph evaluate``."""
    parser = _add_command(subparsers, "evaluate")
    add_selection_arguments(parser, default_value="test", purpose="score (required)")
    parser.add_argument("--all-labelled", action="store_true",
                        help="score every labelled row (only for tables without training "
                             "nodes)")
    _add_model_file_arguments(parser, report_for="with any release this scoring makes")


def add_table_arguments(parser) -> None:
    """The ``tables`` option group, shared by every command that reads the tables."""
    tables = parser.add_argument_group(
        "tables", "a node table and an edge table of one graph; with --graphs, of a "
                  "collection of graphs, one example per graph")
    tables.add_argument("--nodes", required=True, metavar="CSV",
                        help="node table: one row per node with an id, features and a label "
                             "(with --graphs: its graph id, an id and features)")
    tables.add_argument("--edges", default=None, metavar="CSV",
                        help="edge table: one row per edge, source and target ids, and with "
                             "--graphs the graph id (default: graphs without edges)")
    tables.add_argument("--graphs", default=None, metavar="CSV",
                        help="graph table: one row per graph with its id and label; the rows "
                             "are then whole graphs, classified by a graph-level estimator")
    tables.add_argument("--graph-column", default="graph_id", metavar="NAME",
                        help="graph id column of the three tables, with --graphs (default: "
                             "graph_id)")
    tables.add_argument("--id-column", default="id", metavar="NAME",
                        help="node id column of the node table, unique within a graph "
                             "(default: id)")
    tables.add_argument("--label-column", default="label", metavar="NAME",
                        help="label column (of the graph table with --graphs); empty cells mark "
                             "unlabelled rows; 1 and 1.0 are one class (default: label)")
    tables.add_argument("--feature-columns", default=None, type=_comma_list, metavar="A,B,...",
                        help="comma-separated feature columns (default: every column other "
                             "than the id, label and split columns; predict and evaluate use "
                             "the columns saved in the model)")
    tables.add_argument("--source-column", default="source", metavar="NAME",
                        help="source id column of the edge table (default: source)")
    tables.add_argument("--target-column", default="target", metavar="NAME",
                        help="target id column of the edge table (default: target)")
    tables.add_argument("--directed", action="store_true",
                        help="treat edges as directed (default: each edge goes both ways)")


def add_selection_arguments(parser, *, default_value: str, purpose: str) -> None:
    """The ``node selection`` option group: which rows a command trains on or scores."""
    group = parser.add_argument_group(
        "node selection", f"the labelled rows to {purpose}: a split column or an id list "
                          "(rows of the graph table with --graphs)")
    group.add_argument("--split-column", default=None, metavar="NAME",
                       help="select the rows whose cell in this column equals --split-value "
                            "(the column is not a feature)")
    group.add_argument("--split-value", default=default_value, metavar="VALUE",
                       help=f"value of --split-column that selects a row (default: "
                            f"{default_value})")
    group.add_argument("--ids", default=None, metavar="FILE",
                       help="select the rows whose id is listed in this text file, one id "
                            "per line")


def _listed(choices: dict[str, str]) -> str:
    return ", ".join(f"{name} ({cls})" for name, cls in sorted(choices.items()))


def _comma_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]
