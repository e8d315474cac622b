"""Reading the CSV tables of ``skdpgraph fit|predict|evaluate``.

Tables
------
* node table (``--nodes``): one row per node: an id column, a label column and feature
  columns (by default every other column except the split column). A row whose label cell
  is **empty** is an unlabelled node: it takes part in the graph and is never trained on.
* edge table (``--edges``, optional): one row per edge with a source and a target id
  column. Without it the graph has no edges.

With ``--graphs`` the tables hold a collection of graphs, one example per graph (see
:mod:`skdpgraph.cli._graph_tables`): the node and edge tables carry a graph id column, and
the graph table has one row per graph with its label.

Labels are read as text and put in one canonical form, so that one class is one class
whatever way a spreadsheet wrote it: numbers that are whole (``1``, ``1.0``, ``01``,
``1e0``) become ``"1"``, other finite numbers their shortest decimal form (``2.50`` ->
``"2.5"``), and any other text is kept with surrounding spaces removed.

A *selection* names the rows a command trains on or scores: ``--split-column`` with
``--split-value`` (rows whose cell equals the value), or ``--ids`` (a file with one id per
line): rows of the node table, or of the graph table with ``--graphs``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["TableError", "Tables", "canonical_label", "load_tables", "refuse_missing_columns",
           "refuse_empty_cells", "selected_rows"]


class TableError(ValueError):
    """A problem in an input table, named by file, column and row."""


@dataclass
class Tables:
    """The data and the per-row columns read from the tables.

    A row is a node of one graph (node tables), or a whole graph (``--graphs``).
    """

    graph: Any  #: the Graph of the node table, or the GraphCollection of the graph table
    ids: Any  #: the rows' ids (node ids, or graph ids), in data order
    labels: Any  #: canonical label text per row, ``None`` for unlabelled rows
    feature_columns: list
    split: Any  #: the split column as text (``None`` when no ``--split-column``)
    path: str = ""  #: the table whose rows these are
    row: str = "node"  #: what one row is: ``"node"`` or ``"graph"``

    @property
    def labelled(self):
        """Boolean mask of the rows that have a label."""
        import numpy as np

        return np.array([label is not None for label in self.labels], dtype=bool)

    def examples(self, rows):
        """The ``X`` of the rows ``rows``: nodes of the graph, or graphs of the collection."""
        return self.graph.nodes(rows) if self.row == "node" else self.graph[rows]

    def count(self, n: int | None = None) -> str:
        """``n`` rows (all of them by default) in words, e.g. ``"120 nodes"``."""
        n = len(self.ids) if n is None else n
        return f"{n} {self.row}s"

    def describe(self) -> str:
        """The data's public sizes, e.g. ``"120 nodes (640 directed edge entries)"``."""
        if self.row == "node":
            return f"{self.count()} ({self.graph.num_edges} directed edge entries)"
        return f"{self.count()} ({int(self.graph.num_nodes.sum())} nodes)"


def canonical_label(value: Any) -> str | None:
    """One text per class: ``"1"``, ``"1.0"`` and ``" 01 "`` all give ``"1"``.

    Parameters
    ----------
    value : str, float or None
        A label cell; ``None``, NaN and blank text mean "no label".

    Returns
    -------
    label : str or None

    Examples
    --------
    >>> [canonical_label(v) for v in ["1", "1.0", " 01 ", "2.50", "cat ", "", None]]
    ['1', '1', '1', '2.5', 'cat', None, None]
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        return text
    if not math.isfinite(number):
        return text
    if number.is_integer():
        return str(int(number))
    return repr(number)


def read_csv(path: str, **kwargs):
    """``pandas.read_csv`` whose errors name the file."""
    import pandas as pd

    try:
        return pd.read_csv(path, **kwargs)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"{path}: is a directory, not a CSV file") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise TableError(f"{path}: cannot read CSV ({exc})") from None


def refuse_missing_columns(path: str, table, which: str, roles) -> None:
    """Refuse a table without a column it needs, naming the file, the role and the column.

    ``roles`` holds ``(role, column, needed)`` triples, e.g. ``("label", "label", True)``.
    """
    for role, column, needed in roles:
        if needed and column not in table.columns:
            raise TableError(f"{path}: {which} table has no {role} column {column!r} "
                             f"(columns: {list(table.columns)}).")


def refuse_empty_cells(path: str, table, column: str, role: str) -> None:
    """Refuse an empty cell in ``column``, naming the file, the column and the row."""
    import numpy as np

    empty = np.flatnonzero(table[column].isna().to_numpy())
    if empty.size:
        raise TableError(f"{path}: {role} column {column!r} is empty in row "
                         f"{int(empty[0])} (rows counted from 0 after the header).")


def feature_columns_of(args, nodes, saved: list[str] | None, not_features=()) -> list[str]:
    """The node table's feature columns: the model's saved ones, ``--feature-columns``, or
    every column but the id, label and split columns and ``not_features``."""
    not_features = (args.id_column, args.label_column, getattr(args, "split_column", None),
                    *not_features)
    columns = saved or args.feature_columns or [c for c in nodes.columns
                                                if c not in not_features]
    if not columns:
        raise TableError(f"{args.nodes}: node table has no feature columns.")
    for column in columns:
        refuse_missing_columns(args.nodes, nodes, "node", [("feature", column, True)])
        refuse_empty_cells(args.nodes, nodes, column, "feature")
    return columns


def load_tables(args, feature_columns: list[str] | None = None, *,
                need_labels: bool = False) -> Tables:
    """Read the node and edge tables named in ``args``.

    ``feature_columns`` (a model's saved columns) overrides ``--feature-columns``;
    ``need_labels`` refuses a node table without the label column.
    """
    import pandas as pd

    from skdpgraph.graph import Graph

    split_column = getattr(args, "split_column", None)
    text_columns = {c: str for c in (args.label_column, split_column) if c is not None}
    nodes = read_csv(args.nodes, dtype=text_columns)
    refuse_missing_columns(args.nodes, nodes, "node", (
        ("id", args.id_column, True), ("label", args.label_column, need_labels),
        ("split", split_column, split_column is not None)))
    columns = feature_columns_of(args, nodes, feature_columns)
    edges = (read_csv(args.edges) if args.edges is not None
             else pd.DataFrame({args.source_column: [], args.target_column: []}))
    try:
        graph = Graph.from_pandas(nodes, edges, id_column=args.id_column, feature_columns=columns,
                                  source_column=args.source_column,
                                  target_column=args.target_column, directed=args.directed)
    except ValueError as exc:
        text = str(exc).replace("Graph.from_pandas: ", "")
        where = args.edges if text.startswith(("edge", "the edge")) else args.nodes
        raise TableError(f"{where}: {text}") from None
    labels = ([canonical_label(v) for v in nodes[args.label_column]]
              if args.label_column in nodes.columns else [None] * len(nodes))
    return Tables(graph, nodes[args.id_column].to_numpy(), labels, columns,
                  split_of(nodes, split_column), args.nodes)


def split_of(table, split_column: str | None):
    """The split column as stripped text (empty cells ``""``); None without one."""
    return (None if split_column is None
            else table[split_column].fillna("").str.strip().to_numpy(dtype=object))


def _read_ids(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            ids = [line.strip() for line in handle if line.strip()]
    except FileNotFoundError:
        raise FileNotFoundError(f"--ids {path}: no such file") from None
    except UnicodeDecodeError:
        raise TableError(f"--ids {path}: not a text file of ids") from None
    if not ids:
        raise TableError(f"--ids {path}: lists no ids.")
    return ids


def selected_rows(args, tables: Tables, *, required: bool, command: str):
    """Indices of the rows ``args`` selects, all labelled; every labelled row if none is named.

    ``required``: a selection must be named (``evaluate`` never scores every labelled row
    unless told to with ``--all-labelled``).
    """
    import numpy as np

    by_split, by_ids = args.split_column is not None, args.ids is not None
    if by_split and by_ids:
        raise ValueError(f"{command}: give --split-column or --ids, not both.")
    if by_split:
        mask = tables.split == str(args.split_value).strip()
        what = f"rows with {args.split_column}={args.split_value!r}"
    elif by_ids:
        wanted = _read_ids(args.ids)
        present = {str(i) for i in tables.ids}
        missing = [i for i in wanted if i not in present]
        if missing:
            raise TableError(f"--ids {args.ids}: {len(missing)} id(s) are not in the "
                             f"{tables.row} table {tables.path}, e.g. {missing[0]!r}.")
        mask = np.isin(np.array([str(i) for i in tables.ids], dtype=object), wanted)
        what = f"rows listed in {args.ids}"
    elif required and not getattr(args, "all_labelled", False):
        raise ValueError(f"{command} needs the nodes to score: --split-column NAME (rows whose "
                         f"value is --split-value, default {args.split_value!r}) or --ids "
                         "FILE; --all-labelled scores every labelled row, training nodes "
                         "included.")
    else:
        mask, what = tables.labelled, f"labelled rows in column {args.label_column!r}"
    rows = np.flatnonzero(mask)
    if rows.size == 0:
        raise TableError(f"{tables.path}: {command} selects no rows: there are no {what}.")
    unlabelled = rows[~tables.labelled[rows]]
    if unlabelled.size:
        raise TableError(f"{tables.path}: {unlabelled.size} of the {rows.size} {what} have no "
                         f"label in column {args.label_column!r}, e.g. id "
                         f"{tables.ids[unlabelled[:1]].tolist()[0]!r}.")  # a Python value
    return rows
