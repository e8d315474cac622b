"""Loaders for graph-classification collections on disk: TUDataset text files, Reddit threads.

Each returns ``(X, y)``: a :class:`~skdpgraph.GraphCollection` and one label per graph.
They read local files only and never download; a missing file raises
:class:`FileNotFoundError` naming it, a malformed line raises :class:`ValueError` naming the
file and the line (1-based, as an editor shows it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from skdpgraph.graph import Graph
from skdpgraph.graph_collection import GraphCollection

__all__ = ["load_reddit_threads", "load_tu_dataset"]


def _required(folder: Path, file: str) -> Path:
    path = folder / file
    if not path.is_file():
        raise FileNotFoundError(f"file {file!r} not found in {folder}.")
    return path


def _bad_line(path: Path, row: int, rule: str) -> ValueError:
    with open(path, encoding="utf-8", errors="replace") as handle:
        text = next((line for i, line in enumerate(handle) if i == row), "").rstrip("\n")
    return ValueError(f"{path}, line {row + 1}: {rule} (the line reads {text!r}).")


def _read_numbers(path: Path, columns: int | None, integer: bool) -> np.ndarray:
    """The comma-separated numbers of ``path``, one row per line, as a 2-D array."""
    try:
        table = pd.read_csv(path, header=None, skip_blank_lines=False, skipinitialspace=True,
                            names=None if columns is None else range(columns))
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path}: the file is empty.") from None
    except pd.errors.ParserError as error:
        raise ValueError(f"{path}: {error}") from None
    while len(table) and table.iloc[-1].isna().all():  # blank lines at the end of the file
        table = table.iloc[:-1]
    values = table.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if integer:
        bad |= values != np.round(values)
    if bad.any():
        kind = "integer" if integer else "number"
        expected = f"{values.shape[1]} comma-separated {kind}(s)"
        raise _bad_line(path, int(np.argwhere(bad)[0][0]), f"expected {expected}")
    return values.astype(np.int64) if integer else values


def _node_features(folder: Path, name: str, n_nodes: int, use_attributes: bool) -> np.ndarray:
    """One-hot node labels beside the node attributes; a column of ones if there are none."""
    parts = []
    for suffix, use in (("node_labels", True), ("node_attributes", use_attributes)):
        path = folder / f"{name}_{suffix}.txt"
        if not (use and path.is_file()):
            continue
        values = _read_numbers(path, None, integer=suffix == "node_labels")
        if values.shape[0] != n_nodes:
            raise ValueError(f"{path} has {values.shape[0]} lines but {name}_graph_indicator.txt "
                             f"has {n_nodes}; both have one line per node.")
        if suffix == "node_labels":
            codes = np.unique(values[:, 0], return_inverse=True)[1].ravel()
            values = np.eye(codes.max() + 1, dtype=np.float32)[codes]
        parts.append(values.astype(np.float32))
    return np.hstack(parts) if parts else np.ones((n_nodes, 1), dtype=np.float32)


def _graph_of_nodes(folder: Path, name: str, n_graphs: int) -> np.ndarray:
    """The 0-based graph of every node, checked against the number of graphs."""
    path = folder / f"{name}_graph_indicator.txt"
    graph = _read_numbers(path, 1, integer=True)[:, 0] - 1
    outside = np.flatnonzero((graph < 0) | (graph >= n_graphs))
    if outside.size:
        raise _bad_line(path, int(outside[0]), f"graph id outside 1..{n_graphs} (the "
                        f"{name}_graph_labels.txt file has {n_graphs} lines)")
    empty = np.flatnonzero(np.bincount(graph, minlength=n_graphs) == 0)
    if empty.size:
        raise ValueError(f"{path}: graph {int(empty[0]) + 1} has no nodes ({empty.size} "
                         "graph(s) without); every graph needs at least one node.")
    return graph


def _edges(folder: Path, name: str, graph: np.ndarray) -> np.ndarray:
    """The 0-based global ``(num_edges, 2)`` edges, each inside one graph."""
    path = _required(folder, f"{name}_A.txt")
    edges = _read_numbers(path, 2, integer=True) - 1
    outside = np.flatnonzero(((edges < 0) | (edges >= graph.shape[0])).any(axis=1))
    if outside.size:
        raise _bad_line(path, int(outside[0]), f"node id outside 1..{graph.shape[0]} (the "
                        f"number of lines of {name}_graph_indicator.txt)")
    across = np.flatnonzero(graph[edges[:, 0]] != graph[edges[:, 1]])
    if across.size:
        raise _bad_line(path, int(across[0]), "the edge joins nodes of two different graphs")
    return edges


def _split_graphs(graph: np.ndarray, edges: np.ndarray, x: np.ndarray,
                  n_graphs: int) -> list[Graph]:
    """One :class:`Graph` per graph id, nodes numbered in file order within their graph."""
    order = np.argsort(graph, kind="stable")
    start = np.concatenate([[0], np.cumsum(np.bincount(graph, minlength=n_graphs))])
    local = np.empty(graph.shape[0], dtype=np.int64)
    local[order] = np.arange(graph.shape[0]) - start[graph[order]]
    edge_graph = graph[edges[:, 0]]
    edge_order = np.argsort(edge_graph, kind="stable")
    edge_start = np.concatenate([[0], np.cumsum(np.bincount(edge_graph, minlength=n_graphs))])
    local_edges = local[edges[edge_order]].T
    x = x[order]
    return [Graph(local_edges[:, edge_start[g]:edge_start[g + 1]], x[start[g]:start[g + 1]])
            for g in range(n_graphs)]


def load_tu_dataset(name: str, root: str | Path, *,
                    use_node_attributes: bool = True) -> tuple[GraphCollection, np.ndarray]:
    """Read a TUDataset collection from its text files (``{name}_A.txt`` and the rest).

    Parameters
    ----------
    name : str
        The dataset's name and file prefix, such as ``"NCI1"`` or ``"ENZYMES"``.
    root : str or Path
        The folder that holds the ``{name}/`` folder (or the dataset's files themselves).
    use_node_attributes : bool, default=True
        Append ``{name}_node_attributes.txt`` (when present) to the node features.

    Returns
    -------
    X : GraphCollection
        One undirected graph per line of ``{name}_graph_labels.txt``, in file order. Node
        features: the node labels of ``{name}_node_labels.txt`` one-hot encoded (one column
        per distinct label, in increasing order), then the node attributes; a single column
        of ones when the dataset has neither. Edge labels and attributes are not read.
    y : ndarray of int64 of shape (n_graphs,)
        The graph labels as written in the file (ENZYMES' are 1..6, for example).

    Notes
    -----
    The format uses 1-based ids throughout: line ``i`` of ``_graph_indicator.txt`` is the
    graph of node ``i``, each line of ``_A.txt`` an edge ``row, col`` between global node
    ids, given in both directions.

    Examples
    --------
    >>> X, y = load_tu_dataset("ENZYMES", "../shared/datasets/tu")  # doctest: +SKIP
    >>> len(X), X.num_features, len(set(y))  # doctest: +SKIP
    (600, 21, 6)
    """
    folder = Path(root) / name
    if not folder.is_dir() and (Path(root) / f"{name}_A.txt").is_file():
        folder = Path(root)
    if not folder.is_dir():
        raise FileNotFoundError(f"load_tu_dataset: no folder {folder} for dataset {name!r}.")
    labels_path = _required(folder, f"{name}_graph_labels.txt")
    _required(folder, f"{name}_graph_indicator.txt")
    y = _read_numbers(labels_path, 1, integer=True)[:, 0]
    graph = _graph_of_nodes(folder, name, y.shape[0])
    x = _node_features(folder, name, graph.shape[0], use_node_attributes)
    edges = _edges(folder, name, graph)
    return GraphCollection(_split_graphs(graph, edges, x, y.shape[0])), y


def _degree_one_hot(edges: np.ndarray, n_nodes: int, max_degree: int) -> np.ndarray:
    """One-hot ``min(degree, max_degree)`` of every node; ``edges`` hold no self-loops."""
    low, high = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    pairs = np.unique(low * n_nodes + high)  # each undirected edge once
    degree = np.bincount(np.concatenate([pairs // n_nodes, pairs % n_nodes]),
                         minlength=n_nodes)
    return np.eye(max_degree + 1, dtype=np.float32)[np.minimum(degree, max_degree)]


def load_reddit_threads(root: str | Path, *,
                        max_degree: int = 10) -> tuple[GraphCollection, np.ndarray]:
    """Read the Reddit threads collection (``graphs.json`` and ``target.csv``).

    Each graph is a discussion thread: users are nodes, replies are undirected edges, and
    the label says whether the thread is a discussion. The data carry no node features, so
    each node gets the one-hot code of its degree, capped at ``max_degree`` (a node of
    degree ``max_degree`` or more falls in the last column). Degree is what a GNN cannot
    compute from constant features in one layer, and a capped one-hot keeps the width
    fixed across graphs (threads have 11 to 97 nodes, most of degree 1 or 2). Self-loops
    in the edge lists (1,365 in 1,324 of the 10,000 threads) are dropped without a
    warning: a user answering their own post adds no edge between two users.

    Parameters
    ----------
    root : str or Path
        The ``reddit_threads`` folder, or the folder that holds it.
    max_degree : int, default=10
        The last degree with a column of its own: node features have
        ``max_degree + 1`` columns.

    Returns
    -------
    X : GraphCollection
        10,000 undirected graphs for the files in ``../shared/datasets/reddit_threads``,
        in the order of their ids in ``target.csv``.
    y : ndarray of int64 of shape (n_graphs,)
        The ``target`` column (1: a discussion thread).
    """
    if not isinstance(max_degree, int) or isinstance(max_degree, bool) or max_degree < 1:
        raise ValueError(f"load_reddit_threads: max_degree must be an int >= 1; got "
                         f"{max_degree!r}.")
    folder = Path(root)
    if not (folder / "graphs.json").is_file() and (folder / "reddit_threads").is_dir():
        folder = folder / "reddit_threads"
    with open(_required(folder, "graphs.json"), encoding="utf-8") as handle:
        edge_lists: dict[str, Any] = json.load(handle)
    target = pd.read_csv(_required(folder, "target.csv"))
    missing = [str(i) for i in target["id"].tolist() if str(i) not in edge_lists]
    if missing:
        raise ValueError(f"{folder / 'target.csv'}: graph id {missing[0]} has no edge list in "
                         "graphs.json.")
    graphs = []
    for graph_id in target["id"].tolist():
        edges = np.asarray(edge_lists[str(graph_id)], dtype=np.int64).reshape(-1, 2)
        n_nodes = int(edges.max()) + 1 if edges.size else 1
        edges = edges[edges[:, 0] != edges[:, 1]]
        graphs.append(Graph(edges.T, _degree_one_hot(edges, n_nodes, max_degree)))
    return GraphCollection(graphs), target["target"].to_numpy(dtype=np.int64)
