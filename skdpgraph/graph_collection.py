"""Collections of graphs as ``X``: one :class:`~skdpgraph.Graph` per example.

For graph classification every example is a whole graph, and one graph is the privacy
unit. :class:`GraphCollection` is the ``X`` that scikit-learn's tools split: it has a
length and a ``shape``, and indexing it with an integer array, a boolean mask or a slice
returns a :class:`GraphCollection`, so ``train_test_split``, ``StratifiedKFold``,
``GridSearchCV`` and ``cross_validate`` keep the graphs whole. A plain list of graphs
would come back from scikit-learn's indexing as a list, and a numpy object array would
reach tabular estimators as an array of unconvertible objects; the class checks the
collection once (all graphs, one feature width) and keeps its type through every split.
"""

from __future__ import annotations

from collections import defaultdict
from numbers import Integral
from typing import Any, Iterable, Iterator

import numpy as np

from skdpgraph.graph import Graph

__all__ = ["GraphCollection", "check_graph_collection", "find_duplicate_graphs"]


def _check_widths(graphs: tuple[Graph, ...], where: str) -> None:
    widths = np.array([graph.num_features for graph in graphs], dtype=np.int64)
    if widths.size and (widths != widths[0]).any():
        other = int(np.argmax(widths != widths[0]))
        raise ValueError(
            f"{where}: every graph must have the same number of node features; graph 0 has "
            f"{int(widths[0])} and graph {other} has {int(widths[other])}.")


class GraphCollection:
    """An immutable sequence of :class:`~skdpgraph.Graph` objects, usable as ``X``.

    Parameters
    ----------
    graphs : iterable of Graph
        The graphs, in order. Each must be a :class:`~skdpgraph.Graph` (so each has at
        least one node and numeric, finite node features), and all must have the same
        number of node features. Graphs without edges are accepted. The same graph may
        appear more than once here; :func:`check_graph_collection` refuses that where one
        graph is the privacy unit.

    Attributes
    ----------
    num_features : int or None
        The node feature width shared by every graph; None for an empty collection.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph import Graph, GraphCollection
    >>> graphs = GraphCollection([Graph([[0], [1]], np.eye(2)),
    ...                           Graph([[0, 1], [1, 2]], np.eye(3)[:, :2])])
    >>> graphs
    GraphCollection(n_graphs=2, num_features=2)
    >>> graphs[np.array([True, False])]
    GraphCollection(n_graphs=1, num_features=2)
    >>> graphs[1]
    Graph(num_nodes=3, num_edges=4, num_features=2, directed=False)
    """

    def __init__(self, graphs: Iterable[Graph]) -> None:
        if isinstance(graphs, Graph):
            raise TypeError("GraphCollection: graphs must be an iterable of Graph objects; got "
                            "one Graph. Wrap it in a list, or use graph.nodes() as X to "
                            "classify its nodes.")
        graphs = tuple(graphs.tolist() if isinstance(graphs, np.ndarray) else graphs)
        for position, graph in enumerate(graphs):
            if not isinstance(graph, Graph):
                raise TypeError(f"GraphCollection: graphs[{position}] must be a skdpgraph.Graph; "
                                f"got {type(graph).__name__}.")
        _check_widths(graphs, "GraphCollection")
        self._graphs = graphs

    @classmethod
    def _subset(cls, graphs: tuple[Graph, ...]) -> GraphCollection:
        collection = cls.__new__(cls)  # a part of a checked collection needs no new check
        collection._graphs = graphs
        return collection

    # ----------------------------------------------------------- the sequence protocol
    def __len__(self) -> int:
        return len(self._graphs)

    def __iter__(self) -> Iterator[Graph]:
        return iter(self._graphs)

    def __getitem__(self, key: Any) -> Graph | GraphCollection:
        if isinstance(key, tuple):  # sklearn's _safe_indexing passes (index, Ellipsis)
            if [k for k in key[1:] if k is not Ellipsis and k != slice(None)]:
                raise IndexError("GraphCollection can only be indexed along the graph axis.")
            key = key[0]
        if isinstance(key, (Integral, np.integer)) and not isinstance(key, (bool, np.bool_)):
            return self._graphs[int(key)]
        if hasattr(key, "detach"):  # torch tensor
            key = key.detach().cpu().numpy()
        if not isinstance(key, slice):
            key = np.asarray(key)
            if key.dtype == bool and key.shape != (len(self),):
                raise IndexError(f"GraphCollection: boolean mask has shape {key.shape} but "
                                 f"there are {len(self)} graphs.")
            if key.dtype != bool and key.size and not np.issubdtype(key.dtype, np.integer):
                raise IndexError(f"GraphCollection: cannot index with dtype {key.dtype}; use "
                                 "ints, a boolean mask or a slice.")
            key = key.astype(np.int64) if key.dtype != bool else key
        positions = np.arange(len(self))[key]
        return GraphCollection._subset(tuple(self._graphs[i] for i in np.ravel(positions)))

    @property
    def shape(self) -> tuple[int]:
        """``(n_graphs,)``: scikit-learn counts examples with ``shape[0]``."""
        return (len(self),)

    @property
    def ndim(self) -> int:
        return 1

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if dtype is not None and np.dtype(dtype) != np.dtype(object):
            raise TypeError(f"GraphCollection holds graphs, not numbers: it cannot become an "
                            f"array of dtype {np.dtype(dtype)}. Use an estimator for graph "
                            "collections.")
        array = np.empty(len(self), dtype=object)
        array[:] = self._graphs
        return array

    # ------------------------------------------------------------------- properties
    @property
    def num_features(self) -> int | None:
        """The node feature width shared by every graph (None if there are no graphs)."""
        return self._graphs[0].num_features if self._graphs else None

    @property
    def num_nodes(self) -> np.ndarray:
        """The number of nodes of every graph, as an int64 array."""
        return np.array([graph.num_nodes for graph in self._graphs], dtype=np.int64)

    def __repr__(self) -> str:
        return f"GraphCollection(n_graphs={len(self)}, num_features={self.num_features})"

    # ------------------------------------------------------------------- converters
    @classmethod
    def from_pyg(cls, dataset: Iterable[Any]) -> tuple[GraphCollection, np.ndarray | None]:
        """Graphs and labels from a PyG dataset or a list of ``torch_geometric.data.Data``.

        Each ``Data`` needs ``x`` and ``edge_index`` (read as by :meth:`Graph.from_pyg`);
        its ``y``, if set, must hold one label.

        Returns
        -------
        X : GraphCollection
        y : ndarray of shape (n_graphs,) or None
            The graphs' labels; None when no ``Data`` has ``y``. Refused when only some do.
        """
        from skdpgraph import _collection_converters as converters

        return converters.from_pyg(cls, dataset)

    @classmethod
    def from_networkx(cls, graphs: Iterable[Any], *, feature_key: str = "x",
                      label_key: str = "label") -> tuple[GraphCollection, np.ndarray | None]:
        """Graphs and labels from networkx graphs (or objects with the same interface).

        Each graph is read as by :meth:`Graph.from_networkx` with ``feature_key``; its label
        is the graph attribute ``G.graph[label_key]``. networkx itself is not needed: only
        ``G.nodes``, ``G.edges()``, ``G.is_directed()`` and ``G.graph`` are used.

        Returns
        -------
        X : GraphCollection
        y : ndarray of shape (n_graphs,) or None
            The labels; None when no graph has ``label_key``. Refused when only some do.
        """
        from skdpgraph import _collection_converters as converters

        return converters.from_networkx(cls, graphs, feature_key, label_key)

    @classmethod
    def from_pandas(cls, nodes: Any, edges: Any, graphs: Any = None, *,
                    graph_column: str = "graph_id", node_column: str = "node_id",
                    feature_columns: list[str] | None = None, label_column: str = "label",
                    source_column: str = "source", target_column: str = "target",
                    directed: bool = False) -> tuple[GraphCollection, np.ndarray | None]:
        """Graphs and labels from a node table, an edge table and a graph table.

        Parameters
        ----------
        nodes : pandas.DataFrame
            One row per node: its graph (``graph_column``), its id within that graph
            (``node_column``) and its features.
        edges : pandas.DataFrame or None
            One row per edge: ``graph_column``, ``source_column``, ``target_column`` (node
            ids of that graph). None: graphs without edges.
        graphs : pandas.DataFrame, default=None
            One row per graph: ``graph_column`` and ``label_column``. It sets the order of
            the graphs; every graph needs a label and at least one node. None: the graphs in
            the order they first appear in the node table, and no labels.
        graph_column, node_column : str, default="graph_id", "node_id"
            The graph ids (in all three tables) and the node ids (unique within a graph).
        feature_columns : list of str, default=None
            As for :meth:`Graph.from_pandas`: by default every node column but the graph and
            node ids; a column named like labels is refused, text is refused by row.
        label_column : str, default="label"
            The graph table's label column.
        source_column, target_column : str, default="source", "target"
            The edge table's columns of node ids, read within the edge's graph.
        directed : bool, default=False
            Whether every graph is directed (see :class:`Graph`).

        Returns
        -------
        X : GraphCollection
        y : ndarray of shape (n_graphs,) or None
            The labels, None when ``graphs`` is None. A single class is accepted here;
            classifiers refuse it when they fit.

        Examples
        --------
        >>> import pandas as pd
        >>> nodes = pd.DataFrame({"graph_id": ["a", "a", "b"], "node_id": [0, 1, 0],
        ...                       "f": [1.0, 2.0, 3.0]})
        >>> edges = pd.DataFrame({"graph_id": ["a"], "source": [0], "target": [1]})
        >>> table = pd.DataFrame({"graph_id": ["b", "a"], "label": [1, 0]})
        >>> X, y = GraphCollection.from_pandas(nodes, edges, table)
        >>> X.num_nodes.tolist(), y.tolist()
        ([1, 2], [1, 0])
        """
        from skdpgraph import _collection_converters as converters

        return converters.from_pandas(
            cls, nodes, edges, graphs, columns=converters.TableColumns(
                graph_column, node_column, feature_columns, label_column, source_column,
                target_column), directed=directed)


def find_duplicate_graphs(graphs: Iterable[Graph]) -> list[list[int]]:
    """Positions of graphs that have the same content, in groups.

    Two graphs have the same content when they have the same number of nodes, direction,
    edges and node features in the same node order (:meth:`Graph.fingerprint`); the same
    object given twice is the simplest case. Relabelled copies (the same graph with its
    nodes numbered differently) are not found: that would need a graph-isomorphism test.
    Nothing is stored by this function; the digests live only while it runs (each
    :class:`Graph` caches its own).

    Returns
    -------
    list of list of int
        One sorted list of positions per repeated content, ordered by first position;
        empty when every graph is distinct.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph import Graph
    >>> a, b = Graph([[0], [1]], np.eye(2)), Graph([[0], [1]], np.ones((2, 2)))
    >>> find_duplicate_graphs([a, b, a, Graph([[1], [0]], np.eye(2))])
    [[0, 2, 3]]
    """
    groups: dict[str, list[int]] = defaultdict(list)
    for position, graph in enumerate(graphs):
        groups[graph.fingerprint()].append(position)
    return sorted((group for group in groups.values() if len(group) > 1), key=lambda g: g[0])


def check_graph_collection(X: Any, name: str = "X", *,
                           allow_equal_graphs: bool = False) -> GraphCollection:
    """``X`` as a :class:`GraphCollection` fit for graph-level learning, or a clear error.

    Accepts a :class:`GraphCollection`, or a list, tuple or object array of
    :class:`~skdpgraph.Graph`. Refuses: no graphs, an item that is not a Graph, feature
    widths that differ, the same Graph object twice and, unless ``allow_equal_graphs``,
    two graphs with the same content (see :func:`find_duplicate_graphs`). One graph is the
    privacy unit, so a graph given twice would count as two people's data while it is
    one's. Equal content can also come from two people (two threads of the same shape):
    where that is expected, pass ``allow_equal_graphs=True``; the same object twice is
    always refused.

    Parameters
    ----------
    X : GraphCollection or sequence of Graph
        The graphs.
    name : str, default="X"
        The parameter name used in error messages.
    allow_equal_graphs : bool, default=False
        Accept distinct Graph objects with the same content.

    Returns
    -------
    GraphCollection
        ``X`` itself when it is already a collection.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph import Graph
    >>> g = Graph([[0], [1]], np.eye(2))
    >>> check_graph_collection([g, g])
    Traceback (most recent call last):
    ...
    ValueError: X: graphs [0, 1] are the same Graph object. ...
    """
    if not isinstance(X, GraphCollection):
        if isinstance(X, (str, bytes)) or not hasattr(X, "__iter__"):
            raise TypeError(f"{name} must be a GraphCollection or a list of skdpgraph.Graph; "
                            f"got {type(X).__name__}.")
        try:
            X = GraphCollection(X)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{name}: {str(error).removeprefix('GraphCollection: ')}") from None
    if len(X) == 0:
        raise ValueError(f"{name} holds no graphs; at least one graph is required.")
    seen: dict[int, int] = {}
    for position, graph in enumerate(X):
        first = seen.setdefault(id(graph), position)
        if first != position:
            raise ValueError(
                f"{name}: graphs [{first}, {position}] are the same Graph object. One graph is "
                "the privacy unit: each must appear once.")
    duplicates = [] if allow_equal_graphs else find_duplicate_graphs(X)
    if duplicates:
        raise ValueError(
            f"{name}: graphs {duplicates[0]} have the same content ({len(duplicates)} repeated "
            "graph(s) in all; find_duplicate_graphs lists them). One graph is the privacy "
            "unit: remove copies of one person's graph, or pass allow_equal_graphs=True if "
            "equal graphs come from different people.")
    return X
