"""Reading the graph tables of ``skdpgraph fit|predict|evaluate --graphs``.

Tables
------
* node table (``--nodes``): one row per node: its graph (``--graph-column``), its id within
  that graph (``--id-column``) and its features.
* edge table (``--edges``, optional): one row per edge: its graph and the ids of its two
  ends within that graph. Without it the graphs have no edges.
* graph table (``--graphs``): one row per graph: its id and its label (``--label-column``),
  and the split column if one is named. Its rows set the order of the graphs; every graph
  needs at least one node. A row whose label cell is **empty** is an unlabelled graph: it
  is predicted, never trained on.

The tables become a :class:`~skdpgraph.GraphCollection` through
:meth:`GraphCollection.from_pandas <skdpgraph.GraphCollection.from_pandas>`, the one reader
of graph tables; its errors come back naming the file. Graph ids are read as text in all
three tables, so that ``7`` in one and ``7`` in another are one graph.
"""

from __future__ import annotations

import ast
import re

import numpy as np

from skdpgraph.cli._tables import (
    TableError, Tables, canonical_label, feature_columns_of, read_csv, refuse_empty_cells,
    refuse_missing_columns, split_of,
)

__all__ = ["load_graph_tables", "refuse_equal_graphs"]


def _read(path: str, which: str, graph_column: str, text_columns=()):
    """A table with its graph id column read as text and without empty graph ids."""
    table = read_csv(path, dtype={column: str for column in (graph_column, *text_columns)
                                  if column is not None})
    refuse_missing_columns(path, table, which, [("graph id", graph_column, True)])
    refuse_empty_cells(path, table, graph_column, "graph id")
    return table


#: A graph id as the converter writes it: the repr of the text read from the tables.
_GRAPH_ID = r"'(?:[^'\\]|\\.)*'"


def _rows_in_file(text: str, table, graph_column: str) -> str:
    """A message about one graph (``graph 'g1': ... row 2``) counts rows within that graph's
    part of ``table``; count them in the file instead."""
    one_graph = re.match(rf"graph ({_GRAPH_ID}): ", text)
    if one_graph is None or table is None:
        return text
    rows = np.flatnonzero(table[graph_column].to_numpy(dtype=object)
                          == ast.literal_eval(one_graph.group(1)))
    return re.sub(r"\b(edge row|in rows?) (\d+|\[[\d, ]*\])", lambda match: (
        f"{match.group(1)} {rows[ast.literal_eval(match.group(2))].tolist()}"), text)


def _located(args, message: str, nodes, edges) -> str:
    """The converter's message, naming the file it is about and the graph id column."""
    text = message.replace("GraphCollection.from_pandas: ", "").replace("Graph.from_pandas: ",
                                                                        "")
    if "edge table" in text or "edge row" in text:
        path, table = args.edges, edges
    elif "graph table" in text:
        path, table = args.graphs, None
    else:
        path, table = args.nodes, nodes
    text = _rows_in_file(text, table, args.graph_column)
    text = re.sub(rf"\bgraph (id )?{_GRAPH_ID}", lambda match: (
        f"{match.group(0)} (column {args.graph_column!r})"), text, count=1)
    return f"{path}: {text}"


def load_graph_tables(args, feature_columns: list[str] | None = None, *,
                      need_labels: bool = False) -> Tables:
    """Read the node, edge and graph tables named in ``args`` as a collection of graphs.

    ``feature_columns`` (a model's saved columns) overrides ``--feature-columns``;
    ``need_labels`` refuses a graph table without the label column.

    Returns
    -------
    tables : Tables
        One row per graph of the graph table, in its order: ``graph`` is the
        :class:`~skdpgraph.GraphCollection`, ``ids`` the graph ids.
    """
    import pandas as pd

    from skdpgraph import GraphCollection

    split_column = getattr(args, "split_column", None)
    graphs = _read(args.graphs, "graph", args.graph_column, (args.label_column, split_column))
    refuse_missing_columns(args.graphs, graphs, "graph", (
        ("label", args.label_column, need_labels),
        ("split", split_column, split_column is not None)))
    nodes = _read(args.nodes, "node", args.graph_column)
    refuse_missing_columns(args.nodes, nodes, "node", [("id", args.id_column, True)])
    columns = feature_columns_of(args, nodes, feature_columns, (args.graph_column,))
    edges = None if args.edges is None else _read(args.edges, "edge", args.graph_column)
    labels = ([canonical_label(v) for v in graphs[args.label_column]]
              if args.label_column in graphs.columns else [None] * len(graphs))
    # An empty label marks a graph to predict (as an empty node label does), which the
    # converter, reading labelled collections, would refuse: it gets the order alone.
    key = f"{args.graph_column} label"
    order = pd.DataFrame({args.graph_column: graphs[args.graph_column], key: ""})
    try:
        collection, _ = GraphCollection.from_pandas(
            nodes, edges, order, graph_column=args.graph_column, node_column=args.id_column,
            feature_columns=columns, label_column=key, source_column=args.source_column,
            target_column=args.target_column, directed=args.directed)
    except (TypeError, ValueError) as exc:
        raise TableError(_located(args, str(exc), nodes, edges)) from None
    return Tables(collection, graphs[args.graph_column].to_numpy(), labels, columns,
                  split_of(graphs, split_column), args.graphs, "graph")


def refuse_equal_graphs(args, tables: Tables, rows, estimator) -> None:
    """Refuse training graphs of equal content by their ids, unless the estimator accepts
    them (``allow_equal_graphs=True``).

    The estimator refuses them too, by position among the training graphs; here the
    message names the graph table, the column and the ids.
    """
    from skdpgraph.graph_collection import find_duplicate_graphs

    if estimator.get_params(deep=False).get("allow_equal_graphs", True):
        return
    groups = find_duplicate_graphs(tables.examples(rows))
    if groups:
        ids = tables.ids[rows[groups[0]]].tolist()
        raise TableError(
            f"{tables.path}: the training graphs {ids} (column {args.graph_column!r}) have the "
            f"same nodes, edges and features ({len(groups)} repeated graph(s) in all). One "
            "graph is the privacy unit: remove copies of one person's graph, or add --param "
            "allow_equal_graphs=True if equal graphs come from different people.")
