"""The readers behind :class:`~skdpgraph.GraphCollection`'s ``from_*`` constructors.

Every problem names the graph (its position, or its id in the tables) and the rule; the
per-graph checks themselves are :class:`~skdpgraph.Graph`'s and
:mod:`skdpgraph._graph_tables`'.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple

import numpy as np

from skdpgraph.graph import Graph

__all__ = ["TableColumns", "from_networkx", "from_pandas", "from_pyg"]


class TableColumns(NamedTuple):
    """The column names :meth:`GraphCollection.from_pandas` reads."""

    graph: str
    node: str
    features: Any
    label: str
    source: str
    target: str


def _graph_or_error(build: Callable[[], Graph], where: str) -> Graph:
    try:
        return build()
    except (TypeError, ValueError) as error:
        raise type(error)(f"{where}: {error}") from None


def _labels(labels: list, where: str, key: str) -> np.ndarray | None:
    """The labels as an array, None when no graph has one; refused when only some have."""
    missing = [i for i, label in enumerate(labels) if label is None]
    if len(missing) == len(labels):
        return None
    if missing:
        raise ValueError(f"{where}: graph {missing[0]} has no label {key} while others have "
                         f"one ({len(missing)} graph(s) without); label every graph or none.")
    return np.asarray(labels)


def _pyg_label(data: Any, where: str) -> Any:
    y = getattr(data, "y", None)
    if y is None:
        return None
    values = np.asarray(y.detach().cpu().numpy() if hasattr(y, "detach") else y).ravel()
    if values.size != 1:
        raise ValueError(f"{where}: y holds {values.size} values; a graph has one label "
                         "(node labels belong to node classification).")
    return values[0].item()


def from_pyg(cls: type, dataset: Iterable[Any]) -> tuple[Any, np.ndarray | None]:
    graphs, labels = [], []
    for position, data in enumerate(dataset):
        where = f"GraphCollection.from_pyg: graph {position}"
        if not getattr(data, "num_nodes", None):
            raise ValueError(f"{where} has no nodes; every graph needs at least one node.")
        graphs.append(_graph_or_error(lambda: Graph.from_pyg(data), where))
        labels.append(_pyg_label(data, where))
    return cls(graphs), _labels(labels, "GraphCollection.from_pyg", "(data.y)")


def from_networkx(cls: type, graphs: Iterable[Any], feature_key: str,
                  label_key: str) -> tuple[Any, np.ndarray | None]:
    converted, labels = [], []
    for position, G in enumerate(graphs):
        where = f"GraphCollection.from_networkx: graph {position}"
        if len(G.nodes) == 0:
            raise ValueError(f"{where} has no nodes; every graph needs at least one node.")
        try:
            converted.append(Graph.from_networkx(G, feature_key=feature_key))
        except ValueError as error:
            rule = ("" if str(error).startswith("Graph") else f"node attribute {feature_key!r} "
                    "must hold numbers, one row of the same width per node; ")
            raise ValueError(f"{where}: {rule}{error}") from None
        labels.append(getattr(G, "graph", {}).get(label_key))
    return cls(converted), _labels(labels, "GraphCollection.from_networkx", repr(label_key))


# ---------------------------------------------------------------------------- tables
_PREFIX = "GraphCollection.from_pandas: "


def _require(table: Any, column: str, which: str) -> None:
    if column not in table.columns:
        raise ValueError(f"{_PREFIX}the {which} table has no column {column!r} (columns: "
                         f"{list(table.columns)}).")


def _node_features(nodes: Any, columns: TableColumns) -> np.ndarray:
    from skdpgraph import _graph_tables as tables

    features = columns.features
    if features is None:
        features = [c for c in nodes.columns if c not in (columns.graph, columns.node)]
        leaking = [c for c in features if tables.is_label_like(c)]
        if leaking:
            raise ValueError(
                f"{_PREFIX}node column {leaking[0]!r} looks like labels, so it is not used as "
                "a feature without being asked; graph labels belong in the graph table. Pass "
                "feature_columns=[...] to choose the features yourself.")
    elif columns.graph in features or columns.node in features:
        raise ValueError(f"{_PREFIX}feature_columns {list(features)} include the graph or node "
                         f"id column ({columns.graph!r}, {columns.node!r}).")
    return tables.feature_matrix(nodes, features, columns.node, None)


def _graph_order(nodes: Any, graphs: Any, columns: TableColumns) -> tuple[list, Any]:
    """The graph ids in order, and their labels (None without a graph table)."""
    present = list(dict.fromkeys(nodes[columns.graph].tolist()))
    if graphs is None:
        return present, None
    for column in (columns.graph, columns.label):
        _require(graphs, column, "graph")
    order = graphs[columns.graph].tolist()
    repeated = graphs[columns.graph].duplicated().to_numpy()
    if repeated.any():
        raise ValueError(f"{_PREFIX}graph id {order[int(np.argmax(repeated))]!r} appears twice "
                         "in the graph table; one row per graph.")
    known = set(order)
    unlisted = [graph for graph in present if graph not in known]
    if unlisted:
        raise ValueError(f"{_PREFIX}graph {unlisted[0]!r} has nodes but no row in the graph "
                         f"table (labels missing for {len(unlisted)} graph(s)).")
    empty = sorted(known - set(present), key=order.index)
    if empty:
        raise ValueError(f"{_PREFIX}graph {empty[0]!r} has no nodes in the node table; every "
                         "graph needs at least one node.")
    labels = graphs[columns.label]
    missing = np.flatnonzero(labels.isna().to_numpy())
    if missing.size:
        raise ValueError(f"{_PREFIX}graph {order[int(missing[0])]!r} has no label in column "
                         f"{columns.label!r} ({missing.size} graph(s) without).")
    return order, labels.to_numpy(copy=True)


def from_pandas(cls: type, nodes: Any, edges: Any, graphs: Any, *, columns: TableColumns,
                directed: bool) -> tuple[Any, np.ndarray | None]:
    from skdpgraph import _graph_tables as tables

    for column in (columns.graph, columns.node):
        _require(nodes, column, "node")
    if len(nodes) == 0:
        raise ValueError(f"{_PREFIX}the node table has no rows; at least one node is required.")
    if edges is not None:
        for column in (columns.graph, columns.source, columns.target):
            _require(edges, column, "edge")
    x = _node_features(nodes, columns)
    order, labels = _graph_order(nodes, graphs, columns)
    node_rows = nodes.groupby(columns.graph, sort=False).indices
    edge_rows = {} if edges is None else edges.groupby(columns.graph, sort=False).indices
    stray = set(edge_rows) - set(node_rows)
    if stray:
        raise ValueError(f"{_PREFIX}the edge table has edges of graph {sorted(stray, key=str)[0]!r}"
                         ", which has no nodes in the node table.")
    built = []
    for graph_id in order:
        rows = node_rows[graph_id]
        where = f"{_PREFIX}graph {graph_id!r}"
        ids = _graph_or_error(lambda: tables.node_ids(nodes.iloc[rows], columns.node), where)
        part = edges.iloc[edge_rows[graph_id]] if graph_id in edge_rows else None
        edge_index = (np.zeros((2, 0), dtype=np.int64) if part is None else _graph_or_error(
            lambda: tables.edge_index_from_table(part, ids, columns.source, columns.target),
            where))
        built.append(_graph_or_error(lambda: Graph(edge_index, x[rows], directed=directed),
                                     where))
    return cls(built), labels
