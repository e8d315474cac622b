"""Graph inputs: an immutable attributed :class:`Graph` and the :class:`Nodes` view.

scikit-learn splits ``X`` by rows, but a graph is not a table of rows. A :class:`Nodes`
object is a set of node ids of one :class:`Graph` that still carries the whole graph, so
``train_test_split``, ``StratifiedKFold`` and ``GridSearchCV`` can split nodes while the
estimators keep access to the edges.
"""

from __future__ import annotations

import hashlib
import uuid
import warnings
from numbers import Integral
from typing import Any

import numpy as np
import scipy.sparse as sp

from skdpgraph._graph_converters import networkx_arrays, scipy_arrays
from skdpgraph.exceptions import EdgesDroppedWarning

__all__ = ["Graph", "Nodes"]


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _as_edge_index(edge_index: Any) -> np.ndarray:
    if hasattr(edge_index, "detach"):  # torch tensor
        edge_index = edge_index.detach().cpu().numpy()
    edge_index = np.asarray(edge_index)
    if edge_index.size == 0:
        return np.zeros((2, 0), dtype=np.int64)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(
            f"Graph: edge_index must have shape (2, num_edges); got shape {edge_index.shape}. "
            "Pass a transposed array if your edges are stored one per row."
        )
    if not np.issubdtype(edge_index.dtype, np.integer):
        whole = np.zeros(edge_index.shape, dtype=bool)
        if np.issubdtype(edge_index.dtype, np.floating):
            with np.errstate(invalid="ignore"):
                whole = np.isfinite(edge_index) & (edge_index == np.round(edge_index))
        if not whole.all():
            example = edge_index[tuple(np.argwhere(~whole)[0])]
            example = example.item() if isinstance(example, np.generic) else example
            raise ValueError(
                f"Graph: edge_index must hold integer node ids; got dtype {edge_index.dtype} "
                f"(e.g. {example!r})."
            )
    return edge_index.astype(np.int64, copy=True)


def _entry(x: Any, row: int, column: int) -> float | None:
    """``x[row, column]`` as a float, or None if it cannot be read."""
    try:
        return float((x.tocsr() if sp.issparse(x) else np.asarray(x))[row, column])
    except Exception:
        return None


def _as_features(x: Any) -> np.ndarray | sp.csr_matrix:
    if x is None:
        raise ValueError("Graph: node features x are required (shape (num_nodes, num_features)).")
    if hasattr(x, "detach"):  # torch tensor
        x = x.detach().cpu().numpy()
    source = x
    try:
        with np.errstate(over="ignore"):  # values beyond float32 are reported below
            if sp.issparse(x):
                x = sp.csr_matrix(x, dtype=np.float32, copy=True)
            else:
                x = np.array(x, dtype=np.float32, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"Graph: x must hold numbers (num_nodes, num_features); {exc}.") from exc
    if sp.issparse(x):
        values = x.data
    else:
        values = x
        if x.ndim == 1:
            raise ValueError(
                f"Graph: x must be 2-D (num_nodes, num_features); got a 1-D array of length "
                f"{x.shape[0]}. Use x.reshape(-1, 1) for a single feature."
            )
    if x.ndim != 2:
        raise ValueError(f"Graph: x must be 2-D (num_nodes, num_features); got shape {x.shape}.")
    if not np.all(np.isfinite(values)):
        row, column = (int(i) for i in np.argwhere(
            ~np.isfinite(np.asarray(x.todense() if sp.issparse(x) else x)))[0])
        original = _entry(source, row, column)
        if original is not None and np.isfinite(original):
            raise ValueError(
                f"Graph: x has values beyond the float32 range (|x| > "
                f"{np.finfo(np.float32).max:.3g}), e.g. {original:g} in row {row}, column "
                f"{column}. Features are stored as float32: rescale them.")
        bad = row
        raise ValueError(
            f"Graph: x contains NaN or infinite values (first in row {bad}). "
            "Impute or drop them before building the graph."
        )
    return x


def _warn_dropped(given: int, loops: int, repeats: int) -> None:
    """One :class:`EdgesDroppedWarning` counting the dropped self-loops and repeated edges."""
    if not loops and not repeats:
        return
    dropped = " and ".join(part for part in (
        f"{loops} self-loop(s)" if loops else "",
        f"{repeats} repeated edge(s)" if repeats else "") if part)
    warnings.warn(f"Graph: dropped {dropped} of the {given} edges given; a graph holds at most "
                  "one edge per ordered pair of nodes and no self-loops.",
                  EdgesDroppedWarning, stacklevel=4)  # the caller of Graph(...)


class Graph:
    """An immutable graph with node features.

    Parameters
    ----------
    edge_index : array-like of shape (2, num_edges)
        Source ids in row 0, target ids in row 1 (PyG's convention). A torch tensor is
        accepted. Self-loops and repeats of an edge are dropped with an
        :class:`~skdpgraph.EdgesDroppedWarning` that counts them (an undirected edge given
        in both directions is one edge, not a repeat).
    x : array-like or scipy sparse matrix of shape (num_nodes, num_features)
        Node features, stored as float32 (dense stays dense, sparse becomes CSR). They must
        be finite.
    num_nodes : int, default=None
        Number of nodes; defaults to ``x.shape[0]`` and must agree with it.
    directed : bool, default=False
        If False (the default) the graph is undirected: every edge is stored in both
        directions. Edge-level privacy then protects one undirected edge.

    Attributes
    ----------
    edge_index : ndarray of shape (2, num_edges)
        Read-only, sorted by target then source.
    x : ndarray or scipy.sparse.csr_matrix of shape (num_nodes, num_features)
        Read-only features.
    uid : str
        A random identifier of this graph, kept through pickling. Estimators use it to
        recognise the training graph at predict time without storing any of its data.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph import Graph
    >>> g = Graph([[0, 1, 2], [1, 2, 0]], np.eye(3))
    >>> g
    Graph(num_nodes=3, num_edges=6, num_features=3, directed=False)
    >>> g.in_degree().tolist()
    [2, 2, 2]
    >>> len(g.nodes([0, 2]))
    2
    """

    def __init__(self, edge_index: Any, x: Any, *, num_nodes: int | None = None,
                 directed: bool = False) -> None:
        x = _as_features(x)
        if num_nodes is None:
            num_nodes = x.shape[0]
        elif num_nodes != x.shape[0]:
            raise ValueError(
                f"Graph: num_nodes={num_nodes} but x has {x.shape[0]} rows; they must agree."
            )
        if num_nodes == 0:
            raise ValueError("Graph: the graph is empty (0 nodes); at least one node is required.")
        edge_index = _as_edge_index(edge_index)
        if edge_index.size and (edge_index.min() < 0 or edge_index.max() >= num_nodes):
            bad = edge_index.max() if edge_index.max() >= num_nodes else edge_index.min()
            raise ValueError(
                f"Graph: edge_index has node id {bad} but num_nodes is {num_nodes} "
                f"(valid ids are 0..{num_nodes - 1})."
            )
        self._x = x
        if sp.issparse(x):
            for part in (x.data, x.indices, x.indptr):
                _read_only(part)
        else:
            _read_only(x)
        self._num_nodes = int(num_nodes)
        self._directed = bool(directed)
        self._adjacency = self._build_adjacency(edge_index)  # may warn: stacklevel 3
        self._edge_index = _read_only(
            np.vstack([self._adjacency.indices, self._target_of_entries()]).astype(np.int64)
        )
        self.uid = uuid.uuid4().hex

    def _build_adjacency(self, edge_index: np.ndarray) -> sp.csr_matrix:
        source, target = edge_index
        keep = source != target
        source, target = source[keep], target[keep]
        n = self._num_nodes
        adjacency = sp.csr_matrix(
            (np.ones(source.shape[0], dtype=np.float32), (target, source)), shape=(n, n)
        )
        adjacency.sum_duplicates()
        _warn_dropped(edge_index.shape[1], int((~keep).sum()), source.shape[0] - adjacency.nnz)
        if not self._directed:
            adjacency = (adjacency + adjacency.T).tocsr()
        adjacency.data[:] = 1.0
        adjacency.sort_indices()
        for part in (adjacency.data, adjacency.indices, adjacency.indptr):
            _read_only(part)
        return adjacency

    def _target_of_entries(self) -> np.ndarray:
        return np.repeat(np.arange(self._num_nodes), np.diff(self._adjacency.indptr))

    # ------------------------------------------------------------------ properties
    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return self._num_nodes

    @property
    def num_edges(self) -> int:
        """Number of directed edge entries (an undirected edge counts twice)."""
        return int(self._adjacency.nnz)

    @property
    def num_features(self) -> int:
        """Number of feature columns."""
        return int(self._x.shape[1])

    @property
    def directed(self) -> bool:
        """Whether edges are directed."""
        return self._directed

    @property
    def edge_index(self) -> np.ndarray:
        """Edges as a read-only (2, num_edges) array, sources in row 0."""
        return self._edge_index

    @property
    def x(self) -> np.ndarray | sp.csr_matrix:
        """Node features (read-only)."""
        return self._x

    @property
    def indptr(self) -> np.ndarray:
        """CSR row pointer of the in-adjacency (row = target node)."""
        return self._adjacency.indptr

    @property
    def indices(self) -> np.ndarray:
        """CSR column indices of the in-adjacency: the in-neighbours of each node."""
        return self._adjacency.indices

    def adjacency(self) -> sp.csr_matrix:
        """The in-adjacency ``A`` with ``A[target, source] = 1``, so ``A @ X`` sums neighbours.

        Returns
        -------
        scipy.sparse.csr_matrix of shape (num_nodes, num_nodes)
            A read-only float32 matrix without self-loops.
        """
        return self._adjacency

    def in_degree(self) -> np.ndarray:
        """Number of in-neighbours of every node (the degree on an undirected graph)."""
        return np.diff(self._adjacency.indptr)

    def features(self, index: Any = None) -> np.ndarray:
        """Dense float32 feature rows of ``index`` (all nodes if None)."""
        rows = self._x if index is None else self._x[np.asarray(index)]
        return np.asarray(rows.todense() if sp.issparse(rows) else rows, dtype=np.float32)

    def fingerprint(self) -> str:
        """A SHA-256 digest of the graph's content: node count, direction, edges, features.

        Two graphs with the same content have the same fingerprint, whatever their ``uid``.
        Estimators use it to recognise a graph they already released noisy outputs for.
        It identifies the data exactly, so estimators never keep it in a pickle.

        Examples
        --------
        >>> import numpy as np
        >>> a = Graph([[0], [1]], np.eye(2))
        >>> b = Graph([[1], [0]], np.eye(2))  # the same undirected graph
        >>> a.uid == b.uid, a.fingerprint() == b.fingerprint()
        (False, True)
        """
        if getattr(self, "_fingerprint", None) is None:
            digest = hashlib.sha256(f"{self._num_nodes},{self._directed};".encode())
            digest.update(np.ascontiguousarray(self._edge_index).tobytes())
            x = self._x
            digest.update(f"{x.shape}{x.dtype}{sp.issparse(x)};".encode())
            for part in ((x.data, x.indices, x.indptr) if sp.issparse(x) else (x,)):
                digest.update(np.ascontiguousarray(part).tobytes())
            self._fingerprint = digest.hexdigest()
        return self._fingerprint

    def nodes(self, index: Any = None) -> Nodes:
        """The :class:`Nodes` view of ``index`` (a mask, ids, slice; all nodes if None)."""
        return Nodes(self, index)

    def __repr__(self) -> str:
        return (
            f"Graph(num_nodes={self.num_nodes}, num_edges={self.num_edges}, "
            f"num_features={self.num_features}, directed={self.directed})"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "uid" and not name.startswith("_"):
            raise AttributeError(f"Graph is immutable; cannot set {name!r}.")
        object.__setattr__(self, name, value)

    # ---------------------------------------------------------------- converters
    @classmethod
    def from_pyg(cls, data: Any, *, directed: bool | None = None) -> Graph:
        """Build a graph from a ``torch_geometric.data.Data`` with ``x`` and ``edge_index``.

        ``directed=None`` reads ``data.is_directed()``: a PyG graph that stores both
        directions of every edge is undirected.
        """
        if getattr(data, "x", None) is None:
            raise ValueError("Graph.from_pyg: data.x is missing; node features are required.")
        if directed is None:
            directed = bool(data.is_directed()) if data.edge_index is not None else False
        edge_index = data.edge_index if data.edge_index is not None else np.zeros((2, 0))
        return cls(edge_index, data.x, num_nodes=data.num_nodes, directed=directed)

    @classmethod
    def from_scipy(cls, adjacency: Any, x: Any, *, directed: bool = False) -> Graph:
        """Build a graph from a sparse adjacency with ``adjacency[source, target] != 0``."""
        edge_index, num_nodes = scipy_arrays(adjacency)
        return cls(edge_index, x, num_nodes=num_nodes, directed=directed)

    @classmethod
    def from_networkx(cls, G: Any, x: Any = None, *, feature_key: str = "x") -> Graph:
        """Build a graph from a networkx (Di)Graph.

        Nodes are numbered in ``G.nodes`` order. Features come from ``x`` (rows in that
        order) or, if None, from the node attribute ``feature_key``. Only ``G.nodes``,
        ``G.edges()`` and ``G.is_directed()`` are used, so skdpgraph does not depend on
        networkx (``pip install skdpgraph[networkx]`` installs it).
        """
        edge_index, x, num_nodes = networkx_arrays(G, x, feature_key)
        return cls(edge_index, x, num_nodes=num_nodes, directed=G.is_directed())

    @classmethod
    def from_pandas(cls, nodes: Any, edges: Any, *, id_column: str = "id",
                    feature_columns: list[str] | None = None, label_column: str | None = None,
                    source_column: str = "source", target_column: str = "target",
                    directed: bool = False) -> Graph | tuple[Graph, np.ndarray]:
        """Build a graph from a node table and an edge table.

        Parameters
        ----------
        nodes : pandas.DataFrame
            One row per node, in the order the graph numbers them. ``id_column`` holds the
            ids that the edge table refers to.
        edges : pandas.DataFrame or None
            One row per edge with ``source_column`` and ``target_column``; it may have no
            rows. None: a graph without edges.
        id_column : str, default="id"
            The node ids; never a feature.
        feature_columns : list of str, default=None
            The feature columns. By default every column but the id and the label; a column
            named like labels (``label``, ``y``, ``target``, ``class``...) is then refused
            rather than silently taken as a feature. Text that is not a number is refused
            with its row.
        label_column : str, default=None
            The label column, never a feature. When given, the labels are returned too.
            Rows with an empty label are unlabelled nodes: they stay in the graph (as
            neighbours, and as the nodes to predict) but are not training nodes; select
            the labelled ones for ``fit`` (``fit`` refuses missing labels by row).
        source_column, target_column : str, default="source", "target"
            The edge table's endpoint columns.
        directed : bool, default=False
            As for :class:`Graph`.

        Returns
        -------
        graph : Graph
            The graph, alone when ``label_column`` is None.
        labels : ndarray of shape (num_nodes,)
            Only when ``label_column`` is given: a copy of that column. With empty cells,
            an object array holding None in them and each label in its own type elsewhere
            (whole numbers as ``int``, although pandas reads such a column as floats):
            ``labelled = pandas.notna(labels)`` selects the training rows.

        Examples
        --------
        >>> import pandas as pd
        >>> nodes = pd.DataFrame({"id": ["a", "b", "c"], "f": [0.5, 1.0, 2.0],
        ...                       "label": [0, 1, 0]})
        >>> edges = pd.DataFrame({"source": ["a", "b"], "target": ["b", "c"]})
        >>> graph, y = Graph.from_pandas(nodes, edges, label_column="label")
        >>> graph.num_features, y.tolist()
        (1, [0, 1, 0])
        >>> nodes.loc[2, "label"] = None  # an unlabelled node: one to predict
        >>> graph, y = Graph.from_pandas(nodes, None, label_column="label")  # no edges
        >>> graph.num_edges, y.tolist(), pd.notna(y).tolist()
        (0, [0, 1, None], [True, True, False])
        >>> Graph.from_pandas(nodes, edges)
        Traceback (most recent call last):
        ...
        ValueError: Graph.from_pandas: column 'label' looks like labels, ...
        """
        from skdpgraph import _graph_tables as tables

        ids = tables.node_ids(nodes, id_column)
        labels = None if label_column is None else tables.labels_of(nodes, label_column)
        x = tables.feature_matrix(nodes, feature_columns, id_column, label_column)
        edge_index = (np.zeros((2, 0), dtype=np.int64) if edges is None else
                      tables.edge_index_from_table(edges, ids, source_column, target_column))
        graph = cls(edge_index, x, num_nodes=len(ids), directed=directed)
        return graph if labels is None else (graph, labels)


class Nodes:
    """A set of nodes of one :class:`Graph`, usable as ``X`` in scikit-learn.

    Indexing returns ``Nodes`` of the same graph, so splitters and searches that slice
    ``X`` keep the graph. ``np.asarray(nodes)`` gives the dense feature rows, so tabular
    estimators also accept it.

    Parameters
    ----------
    graph : Graph
        The graph the nodes belong to.
    index : array-like of int or bool, slice, or None
        Node ids, a boolean mask of length ``graph.num_nodes``, or a slice. None selects
        every node.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph import Graph
    >>> nodes = Graph([[0, 1], [1, 2]], np.eye(3)).nodes()
    >>> nodes[[2, 0]].index.tolist()
    [2, 0]
    >>> np.asarray(nodes[1:]).shape
    (2, 3)
    """

    def __init__(self, graph: Graph, index: Any = None) -> None:
        if not isinstance(graph, Graph):
            raise TypeError(f"Nodes: graph must be a skdpgraph.Graph; got {type(graph).__name__}.")
        self.graph = graph
        self.index = _read_only(self._resolve(index, np.arange(graph.num_nodes)))

    @staticmethod
    def _resolve(key: Any, base: np.ndarray) -> np.ndarray:
        if key is None:
            return base.copy()
        if isinstance(key, slice):
            return base[key].copy()
        if isinstance(key, Integral):
            return base[[int(key)]].copy()
        if hasattr(key, "detach"):
            key = key.detach().cpu().numpy()
        key = np.asarray(key)
        if key.dtype == bool:
            if key.shape != base.shape:
                raise ValueError(
                    f"Nodes: boolean mask has length {key.shape[0] if key.ndim else 0} "
                    f"but there are {base.shape[0]} nodes."
                )
            return base[key].copy()
        if key.size == 0:
            return np.zeros(0, dtype=np.int64)
        if not np.issubdtype(key.dtype, np.integer):
            raise TypeError(f"Nodes: cannot index with dtype {key.dtype}; use ints or a bool mask.")
        if key.min() < -base.shape[0] or key.max() >= base.shape[0]:
            bad = key.max() if key.max() >= base.shape[0] else key.min()
            raise IndexError(f"Nodes: index {bad} is out of range for {base.shape[0]} nodes.")
        return base[key.ravel()].astype(np.int64)

    def __getitem__(self, key: Any) -> Nodes:
        if isinstance(key, tuple):  # sklearn's _safe_indexing passes (index, Ellipsis)
            rest = [k for k in key[1:] if k is not Ellipsis and k != slice(None)]
            if rest:
                raise IndexError("Nodes can only be indexed along the node axis.")
            key = key[0]
        return Nodes(self.graph, self._resolve(key, self.index))

    def __len__(self) -> int:
        return int(self.index.shape[0])

    @property
    def shape(self) -> tuple[int, int]:
        """``(number of nodes, number of features)``, like the feature table."""
        return (len(self), self.graph.num_features)

    @property
    def ndim(self) -> int:
        return 2

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        rows = self.graph.features(self.index)
        return rows if dtype is None else rows.astype(dtype)

    def __repr__(self) -> str:
        return f"Nodes({len(self)} of {self.graph!r})"
