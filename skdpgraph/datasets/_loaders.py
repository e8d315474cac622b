"""The :class:`GraphDataset` container and loaders for node-classification graphs on disk.

Every loader reads local files only and never downloads: a missing file raises
:class:`FileNotFoundError` naming the file and the folder it was looked for in.
"""

from __future__ import annotations

import csv
import io
import json
import pickle
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from skdpgraph.exceptions import EdgesDroppedWarning
from skdpgraph.graph import Graph, Nodes

__all__ = [
    "GraphDataset",
    "load_planetoid",
    "load_musae",
    "load_npz",
    "load_npz_zip",
    "load_edge_list_csv",
    "load_dataset",
]


@dataclass(frozen=True, eq=False)
class GraphDataset:
    """A node-classification dataset: one graph, a label per node and an optional split.

    Parameters
    ----------
    name : str
        Short name, such as ``"cora"`` or ``"csbm"``.
    graph : Graph
        The graph with its node features.
    y : array-like of int of shape (num_nodes,)
        Class code of every node, stored as read-only int64; ``-1`` marks an unlabeled node
        (scikit-learn's semi-supervised convention).
    split : dict of str to array of int, default=None
        The dataset's standard split as node ids per part (``"train"``, ``"val"``,
        ``"test"``), e.g. Planetoid's public split; None if the dataset has none (use
        :func:`~skdpgraph.datasets.train_val_test_split`).
    description : str, default=""
        Where the data come from and how they were processed.
    class_names : tuple of str, default=None
        Name of each class code, when known.
    node_ids : ndarray of shape (num_nodes,), default=None
        The node identifiers used in the source files, when they are not ``0..num_nodes-1``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph.graph import Graph
    >>> from skdpgraph.datasets import GraphDataset
    >>> data = GraphDataset("toy", Graph([[0, 1], [1, 2]], np.eye(3)), [0, 1, 1],
    ...                     split={"train": [0, 1], "test": [2]})
    >>> data  # doctest: +NORMALIZE_WHITESPACE
    GraphDataset(name='toy', num_nodes=3, num_edges=4, num_features=3, num_classes=2,
                 split={'train': 2, 'test': 1})
    >>> len(data.nodes("train")), data.labels("test").tolist()  # a split part by name
    (2, [1])
    >>> len(data.nodes([0, 2])), data.labels([0, 2]).tolist()  # node ids, as Graph.nodes
    (2, [0, 1])
    """

    name: str
    graph: Graph
    y: np.ndarray
    split: dict[str, np.ndarray] | None = None
    description: str = ""
    class_names: tuple[str, ...] | None = field(default=None)
    node_ids: np.ndarray | None = field(default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.graph, Graph):
            raise TypeError(
                f"GraphDataset: graph must be a skdpgraph.Graph; got {type(self.graph).__name__}."
            )
        n = self.graph.num_nodes
        y = np.asarray(self.y)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(
                f"GraphDataset: y must have shape ({n},) to match the graph; got {y.shape}."
            )
        if y.size and not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"GraphDataset: y must hold integer class codes; got {y.dtype}.")
        object.__setattr__(self, "y", _read_only(y.astype(np.int64)))
        if self.split is not None:
            object.__setattr__(self, "split", {
                str(part): self._check_part(part, ids, n) for part, ids in self.split.items()
            })
        if self.class_names is not None:
            object.__setattr__(self, "class_names", tuple(str(c) for c in self.class_names))
        if self.node_ids is not None:
            object.__setattr__(self, "node_ids", _read_only(np.array(self.node_ids)))

    @staticmethod
    def _check_part(part: str, ids: Any, n: int) -> np.ndarray:
        ids = np.asarray(ids)
        if ids.dtype == bool:
            ids = np.flatnonzero(ids)
        if ids.size and (not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0
                         or ids.max() >= n):
            raise ValueError(
                f"GraphDataset: split[{part!r}] must hold node ids in 0..{n - 1}; got "
                f"dtype {ids.dtype}, range {ids.min()}..{ids.max()}."
            )
        return _read_only(ids.astype(np.int64).ravel())

    @property
    def num_classes(self) -> int:
        """Number of distinct labels, not counting the unlabeled marker ``-1``."""
        return int(np.unique(self.y[self.y >= 0]).size)

    def _ids(self, index: Any, part: str | None, method: str) -> np.ndarray | None:
        """Node ids of ``index`` (a part's name or what ``Graph.nodes`` takes); None: all."""
        if part is not None:
            warnings.warn(f"GraphDataset.{method}(part=...) is deprecated; pass the part's name "
                          f"as the first argument: data.{method}({part!r}).", FutureWarning,
                          stacklevel=3)
            index = part
        if index is None:
            return None
        if not isinstance(index, str):
            return self.graph.nodes(index).index
        if self.split is None:
            raise ValueError(
                f"GraphDataset {self.name!r} has no standard split, so part {index!r} is "
                "undefined. Build one with skdpgraph.datasets.train_val_test_split(data.y, ...)."
            )
        if index not in self.split:
            raise ValueError(
                f"GraphDataset {self.name!r} has no split part {index!r}; parts are "
                f"{sorted(self.split)}."
            )
        return self.split[index]

    def nodes(self, index: Any = None, *, part: str | None = None) -> Nodes:
        """The :class:`~skdpgraph.graph.Nodes` of ``index``, read as ``Graph.nodes`` reads it.

        Parameters
        ----------
        index : str, array-like of int or bool, slice or None, default=None
            The name of a split part (``"train"``, ``"val"``, ``"test"``), or node ids, a
            boolean mask or a slice as for :meth:`skdpgraph.Graph.nodes`; None selects every
            node.
        part : str, default=None
            Deprecated: pass the part's name as ``index``.
        """
        return self.graph.nodes(self._ids(index, part, "nodes"))

    def labels(self, index: Any = None, *, part: str | None = None) -> np.ndarray:
        """The labels of ``index`` (as for :meth:`nodes`), in the order of :meth:`nodes`."""
        ids = self._ids(index, part, "labels")
        return self.y if ids is None else self.y[ids]

    def __repr__(self) -> str:
        split = None if self.split is None else {k: len(v) for k, v in self.split.items()}
        return (
            f"GraphDataset(name={self.name!r}, num_nodes={self.graph.num_nodes}, "
            f"num_edges={self.graph.num_edges}, num_features={self.graph.num_features}, "
            f"num_classes={self.num_classes}, split={split})"
        )


def _benchmark_graph(build: Any, *args: Any, **kwargs: Any) -> Graph:
    """``build(*args, **kwargs)`` without the warning about self-loops and repeated edges:
    benchmark loaders drop them by design, as PyG does, and say so in their docstrings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EdgesDroppedWarning)
        return build(*args, **kwargs)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _require(folder: Path, filename: str, loader: str) -> Path:
    """Return ``folder / filename`` or raise FileNotFoundError naming both."""
    path = folder / filename
    if not path.is_file():
        raise FileNotFoundError(
            f"{loader}: file {filename!r} not found in folder '{folder}'. Place the dataset "
            "files there; skdpgraph never downloads data."
        )
    return path


def _require_file(path: str | Path, loader: str) -> Path:
    path = Path(path)
    return _require(path.parent, path.name, loader)


# --------------------------------------------------------------------------- Planetoid
def _read_planetoid_pickle(path: Path) -> Any:
    with open(path, "rb") as handle, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # old scipy module paths
        return pickle.load(handle, encoding="latin1")


def load_planetoid(root: str | Path, name: str = "cora") -> GraphDataset:
    """Load a Planetoid citation graph (Cora, CiteSeer, PubMed) from its raw ``ind.*`` files.

    Reads ``ind.{name}.x, y, tx, ty, allx, ally, graph, test.index`` from ``root`` and
    processes them as :class:`torch_geometric.datasets.Planetoid` does: the features are
    ``allx`` followed by ``tx``, with the rows of ``tx`` placed at the node ids listed in
    ``test.index``; labels are the argmax of the one-hot rows; the edges come from the
    ``graph`` adjacency lists (self-loops and duplicates removed, symmetrised). Test ids
    missing from ``test.index`` inside its range (CiteSeer's isolated nodes) get all-zero
    feature rows and label 0, as in PyG. NELL's extra processing is not supported.

    Parameters
    ----------
    root : str or Path
        Folder holding the raw files.
    name : str, default="cora"
        Dataset prefix of the files (lower-cased).

    Returns
    -------
    GraphDataset
        With the public split: ``train`` = the ``len(y)`` nodes of ``ind.{name}.y`` (20
        per class, 140 for Cora), ``val`` = the next 500 ids (fewer only if there are not
        that many non-test nodes), ``test`` = the sorted ids of ``test.index`` (1000).
        Features are a binary scipy CSR matrix.

    Examples
    --------
    >>> from skdpgraph.datasets import load_planetoid
    >>> data = load_planetoid("../shared/datasets/cora")  # doctest: +SKIP
    >>> data.graph.num_nodes, len(data.split["train"])  # doctest: +SKIP
    (2708, 140)
    """
    root, prefix = Path(root), name.lower()
    parts = {}
    for part in ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"):
        path = _require(root, f"ind.{prefix}.{part}", "load_planetoid")
        parts[part] = (np.loadtxt(path, dtype=np.int64, ndmin=1) if part == "test.index"
                       else _read_planetoid_pickle(path))
    allx, tx = sp.csr_matrix(parts["allx"]), sp.csr_matrix(parts["tx"])
    ally, ty = np.asarray(parts["ally"]), np.asarray(parts["ty"])
    test_index = parts["test.index"]
    n_known = allx.shape[0]
    if test_index.min() < n_known or tx.shape[0] != test_index.shape[0]:
        raise ValueError(
            f"load_planetoid: ind.{prefix}.test.index must list {tx.shape[0]} ids from "
            f"{n_known} on (one per row of tx); got {test_index.shape[0]} ids from "
            f"{test_index.min()}."
        )
    n = max(n_known + tx.shape[0], int(test_index.max()) + 1)
    rows = np.concatenate([np.arange(n_known), test_index])  # where each input row goes
    place = sp.csr_matrix((np.ones(rows.shape[0]), (rows, np.arange(rows.shape[0]))),
                          shape=(n, rows.shape[0]))
    x = (place @ sp.vstack([allx, tx]).tocsr()).tocsr()
    y = np.zeros(n, dtype=np.int64)
    y[rows] = np.argmax(np.vstack([ally, ty]), axis=1)
    adjacency = parts["graph"]
    sources = np.fromiter(adjacency.keys(), dtype=np.int64, count=len(adjacency))
    lengths = np.fromiter((len(v) for v in adjacency.values()), dtype=np.int64,
                          count=len(adjacency))
    targets = np.fromiter((t for v in adjacency.values() for t in v), dtype=np.int64,
                          count=int(lengths.sum()))
    graph = _benchmark_graph(Graph, np.vstack([np.repeat(sources, lengths), targets]), x,
                             num_nodes=n)
    n_train = np.asarray(parts["y"]).shape[0]
    split = {"train": np.arange(n_train), "val": np.arange(n_train, min(n_train + 500, n_known)),
             "test": np.sort(test_index)}
    return GraphDataset(
        name=prefix, graph=graph, y=y, split=split,
        description=(f"Planetoid {name} citation graph read from raw ind.{prefix}.* files in "
                     f"'{root}', processed as torch_geometric.datasets.Planetoid "
                     "(public split: 20 labels per class, 500 validation, 1000 test)."),
    )


# --------------------------------------------------------------------------- MUSAE
def load_musae(root: str | Path, name: str = "facebook",
               target_column: str | None = None) -> GraphDataset:
    """Load a MUSAE graph (e.g. the Facebook page-page network) from its CSV and JSON files.

    Reads ``{name}_edges.csv`` (columns ``id_1, id_2``), ``{name}_target.csv`` (column
    ``id`` and a label column) and ``{name}.json`` (node id -> list of active feature ids).
    Node ``i`` is the row with ``id == i``; features form a binary scipy CSR matrix with
    ``max feature id + 1`` columns; self-loops in the edge file are dropped by :class:`Graph`.

    Parameters
    ----------
    root : str or Path
        Folder holding the files.
    name : str, default="facebook"
        File prefix.
    target_column : str, default=None
        Label column of the target file; None takes the last column (``page_type`` for
        Facebook). Labels are coded by the sorted class names, kept in ``class_names``.

    Returns
    -------
    GraphDataset
        Without a standard split.

    Examples
    --------
    >>> from skdpgraph.datasets import load_musae
    >>> data = load_musae("../shared/datasets/facebook")  # doctest: +SKIP
    >>> data.class_names  # doctest: +SKIP
    ('company', 'government', 'politician', 'tvshow')
    """
    root = Path(root)
    edges_path = _require(root, f"{name}_edges.csv", "load_musae")
    target_path = _require(root, f"{name}_target.csv", "load_musae")
    features_path = _require(root, f"{name}.json", "load_musae")
    target = pd.read_csv(target_path)
    column = target.columns[-1] if target_column is None else target_column
    for needed in ("id", column):
        if needed not in target.columns:
            raise ValueError(f"load_musae: {target_path.name} has no column {needed!r} "
                             f"(columns: {list(target.columns)}).")
    ids = target["id"].to_numpy()
    n = ids.shape[0]
    if not np.array_equal(np.sort(ids), np.arange(n)):
        raise ValueError(f"load_musae: column 'id' of {target_path.name} must hold the ids "
                         f"0..{n - 1} once each.")
    class_names, codes = np.unique(target[column].astype(str).to_numpy(), return_inverse=True)
    y = np.empty(n, dtype=np.int64)
    y[ids] = codes.ravel()
    edges = pd.read_csv(edges_path).iloc[:, :2].to_numpy(dtype=np.int64)
    with open(features_path, encoding="utf-8") as handle:
        active = json.load(handle)
    rows = np.fromiter(active.keys(), dtype=np.int64, count=len(active))
    lengths = np.fromiter((len(v) for v in active.values()), dtype=np.int64, count=len(active))
    cols = np.fromiter((c for v in active.values() for c in v), dtype=np.int64,
                       count=int(lengths.sum()))
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        raise ValueError(f"load_musae: {features_path.name} has node id {rows.max()} but "
                         f"{target_path.name} lists {n} nodes.")
    n_features = int(cols.max()) + 1 if cols.size else 0
    x = sp.csr_matrix((np.ones(cols.shape[0], np.float32), (np.repeat(rows, lengths), cols)),
                      shape=(n, n_features))
    x.data[:] = 1.0  # repeated feature ids count once
    graph = _benchmark_graph(Graph, edges.T, x, num_nodes=n)
    return GraphDataset(
        name=name, graph=graph, y=y, class_names=tuple(class_names),
        description=(f"MUSAE {name} graph from '{root}': labels from column {column!r} "
                     f"(classes {', '.join(class_names)}), binary features from {name}.json."),
    )


# --------------------------------------------------------------------------- npz
def _dataset_from_npz(arrays: Any, name: str, source: str, binarize: bool) -> GraphDataset:
    """Build a dataset from the gnn-benchmark / CitationFull npz key layout."""
    missing = [key for key in ("adj_data", "adj_indices", "adj_indptr", "adj_shape",
                               "attr_data", "attr_indices", "attr_indptr", "attr_shape",
                               "labels") if key not in arrays.files]
    if missing:
        raise ValueError(f"load_npz: {source} lacks the keys {missing} (found "
                         f"{sorted(arrays.files)}); expected the gnn-benchmark npz layout.")
    adjacency = sp.csr_matrix((arrays["adj_data"], arrays["adj_indices"], arrays["adj_indptr"]),
                              shape=tuple(arrays["adj_shape"]))
    x = sp.csr_matrix((arrays["attr_data"], arrays["attr_indices"], arrays["attr_indptr"]),
                      shape=tuple(arrays["attr_shape"]), dtype=np.float32)
    x.eliminate_zeros()
    if binarize:
        x.data[:] = 1.0
    class_names = None
    if "class_names" in arrays.files:
        try:
            class_names = tuple(str(c) for c in arrays["class_names"])
        except ValueError:  # stored as a pickled object array, which we do not unpickle
            class_names = None
    graph = _benchmark_graph(Graph.from_scipy, adjacency, x)
    return GraphDataset(
        name=name, graph=graph, y=np.asarray(arrays["labels"]), class_names=class_names,
        description=(f"{name} from {source} (gnn-benchmark npz layout), symmetrised, "
                     f"self-loops removed{', features binarised' if binarize else ''}."),
    )


def load_npz(path: str | Path, name: str | None = None, *, binarize: bool = True) -> GraphDataset:
    """Load a graph stored as a gnn-benchmark / CitationFull ``.npz`` file.

    The file holds a CSR adjacency (``adj_data, adj_indices, adj_indptr, adj_shape``), CSR
    features (``attr_*``) and ``labels``. The graph is symmetrised and self-loops are removed,
    as in PyG's ``read_npz``. Object arrays are never unpickled.

    Parameters
    ----------
    path : str or Path
        The ``.npz`` file.
    name : str, default=None
        Dataset name; defaults to the file stem.
    binarize : bool, default=True
        Set every non-zero feature to 1, as PyG does for these files.

    Returns
    -------
    GraphDataset
        Features are a float32 scipy CSR matrix; no standard split.
    """
    path = _require_file(path, "load_npz")
    with np.load(path, allow_pickle=False) as arrays:
        return _dataset_from_npz(arrays, name or path.stem, f"'{path}'", binarize)


def load_npz_zip(path_or_root: str | Path, name: str | None = None, *,
                 member: str | None = None, binarize: bool = True) -> GraphDataset:
    """Load a gnn-benchmark ``.npz`` graph from inside a zip file, without unpacking it.

    Parameters
    ----------
    path_or_root : str or Path
        The zip file, or a folder holding ``{name}.zip`` or the same with ``_`` replaced by
        ``-`` (``amazon_computers`` -> ``amazon-computers.zip``).
    name : str, default=None
        Dataset name (required when a folder is given); defaults to the zip's stem.
    member : str, default=None
        The ``.npz`` member to read; needed only when the zip holds several.
    binarize : bool, default=True
        See :func:`load_npz`.

    Returns
    -------
    GraphDataset
        The graph and its labels, without a standard split.

    Examples
    --------
    >>> from skdpgraph.datasets import load_npz_zip
    >>> data = load_npz_zip("../shared/datasets/amazon_photo", "amazon_photo")  # doctest: +SKIP
    >>> data.graph.num_nodes  # doctest: +SKIP
    7650
    """
    path = Path(path_or_root)
    if path.is_dir():
        if name is None:
            raise ValueError("load_npz_zip: pass name= when path_or_root is a folder.")
        candidates = [f"{name}.zip", f"{name.replace('_', '-')}.zip"]
        found = [path / c for c in candidates if (path / c).is_file()]
        if not found:
            raise FileNotFoundError(
                f"load_npz_zip: file {' or '.join(repr(c) for c in dict.fromkeys(candidates))} "
                f"not found in folder '{path}'; skdpgraph never downloads data."
            )
        path = found[0]
    else:
        path = _require_file(path, "load_npz_zip")
    with zipfile.ZipFile(path) as archive:
        members = [m for m in archive.namelist() if m.endswith(".npz")]
        if member is None:
            if len(members) != 1:
                raise ValueError(f"load_npz_zip: '{path}' holds {len(members)} .npz members "
                                 f"{members}; choose one with member=.")
            member = members[0]
        elif member not in archive.namelist():
            raise FileNotFoundError(f"load_npz_zip: member {member!r} not found in zip "
                                    f"'{path}' (members: {archive.namelist()}).")
        payload = archive.read(member)
    with np.load(io.BytesIO(payload), allow_pickle=False) as arrays:
        return _dataset_from_npz(arrays, name or path.stem, f"'{path}' member {member!r}",
                                 binarize)


# --------------------------------------------------------------------------- CSV
def _read_table(path: Path, role: str, delimiter: str, header: bool) -> pd.DataFrame:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)  # rows longer than header
            table = pd.read_csv(path, sep=delimiter, header=0 if header else None, dtype=str,
                                keep_default_na=False, skipinitialspace=True, index_col=False)
    except (pd.errors.ParserError, pd.errors.ParserWarning, pd.errors.EmptyDataError) as error:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = [row for row in csv.reader(handle, delimiter=delimiter) if row]
        widths = [len(row) for row in rows] or [0]
        bad = next((i for i, w in enumerate(widths) if w != widths[0]), None)
        where = (f"row {bad + (0 if header else 1)} has {widths[bad]} fields, not "
                 f"{widths[0]}" if bad is not None else "the file is empty" if not rows
                 else str(error))
        raise ValueError(f"load_edge_list_csv: cannot parse the {role} file '{path.name}': "
                         f"{where}.") from error
    return table.fillna("").apply(lambda column: column.str.strip())


def _column(table: pd.DataFrame, spec: int | str, path: Path, role: str) -> Any:
    """The column label of ``table`` chosen by position or name."""
    columns = list(table.columns)
    if isinstance(spec, str):
        if spec not in columns:
            raise ValueError(f"load_edge_list_csv: the {role} file '{path.name}' has no column "
                             f"{spec!r} (columns: {columns}).")
        return spec
    if not -len(columns) <= spec < len(columns):
        raise ValueError(f"load_edge_list_csv: the {role} file '{path.name}' has "
                         f"{len(columns)} columns; column position {spec} is out of range.")
    return columns[spec]


def _cells(table: pd.DataFrame, column: Any, path: Path, role: str) -> np.ndarray:
    """The non-empty string cells of one column; an empty cell raises naming its row."""
    values = table[column].to_numpy(dtype=str)
    empty = np.flatnonzero(values == "")
    if empty.size:
        raise ValueError(f"load_edge_list_csv: row {empty[0] + 1} of the {role} file "
                         f"'{path.name}' has an empty cell in column {column!r} (rows count from 1 "
                         "after the header).")
    return values


def _as_int_keys(values: list[np.ndarray]) -> list[np.ndarray]:
    """Parse every id as an int when all of them are integers; otherwise keep strings."""
    try:
        return [v.astype(np.int64) for v in values]
    except (ValueError, OverflowError):
        return [v.astype(str) for v in values]


def _first_duplicate(keys: np.ndarray, path: Path, role: str) -> None:
    unique, first, counts = np.unique(keys, return_index=True, return_counts=True)
    if np.any(counts > 1):
        repeated = unique[counts > 1][0].item()
        rows = np.flatnonzero(keys == repeated)[:2] + 1
        raise ValueError(f"load_edge_list_csv: node id {repeated!r} appears twice in the {role} "
                         f"file '{path.name}' (rows {rows[0]} and {rows[1]}).")


def _positions(node_ids: np.ndarray, keys: np.ndarray, path: Path, role: str,
               column: Any) -> np.ndarray:
    """Map ids to node positions; an id outside ``node_ids`` raises naming its row."""
    pos = np.minimum(np.searchsorted(node_ids, keys), node_ids.shape[0] - 1)
    unknown = np.flatnonzero(node_ids[pos] != keys)
    if unknown.size:
        raise ValueError(f"load_edge_list_csv: row {unknown[0] + 1} of the {role} file "
                         f"'{path.name}' has {column} {keys[unknown[0]].item()!r}, which is not "
                         "a node id of the features file.")
    return pos


def _feature_matrix(table: pd.DataFrame, columns: list, path: Path) -> np.ndarray:
    values = table[columns].to_numpy(dtype=str)
    try:
        x = values.astype(np.float32)
    except ValueError:
        x = None
    if x is None or not np.all(np.isfinite(x)):
        for j, column in enumerate(columns):
            parsed = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float)
            bad = np.flatnonzero(~np.isfinite(parsed))
            if bad.size:
                raise ValueError(f"load_edge_list_csv: row {bad[0] + 1}, column {column!r} of "
                                 f"the features file '{path.name}' holds "
                                 f"{values[bad[0], j].item()!r}, not a finite number.")
    return x


def load_edge_list_csv(edges_path: str | Path, features_path: str | Path | None = None,
                       labels_path: str | Path | None = None, *,
                       source_column: int | str = 0, target_column: int | str = 1,
                       id_column: int | str = 0, label_column: int | str = -1,
                       delimiter: str = ",", header: bool = True, directed: bool = False,
                       name: str | None = None) -> GraphDataset:
    """Load a graph from a CSV edge list with optional feature and label CSV files.

    Node ids may be integers or strings; nodes are numbered in sorted id order (numeric
    when every id is an integer) and the original ids are kept in ``node_ids``.

    Parameters
    ----------
    edges_path : str or Path
        One edge per row in ``source_column`` and ``target_column``.
    features_path : str or Path, default=None
        One node per row: ``id_column`` plus numeric feature columns (all other columns).
        When given, it defines the node set and every edge or label must refer to one of its
        ids. When None, the nodes are the ids seen in the other files and every node gets the
        single constant feature 1.
    labels_path : str or Path, default=None
        ``id_column`` and ``label_column`` per labeled node. Labels are coded by their sorted
        distinct values (numeric order for integers), kept in ``class_names``; nodes without
        a row get ``-1`` (unlabeled). When None, every node is unlabeled.
    source_column, target_column, id_column, label_column : int or str
        Columns by position or, with ``header=True``, by name.
    delimiter : str, default=","
        The field separator of every file.
    header : bool, default=True
        Whether the first line of each file names the columns.
    directed : bool, default=False
        Passed to :class:`Graph`; undirected graphs are symmetrised.
    name : str, default=None
        Dataset name; defaults to the stem of ``edges_path``.

    Returns
    -------
    GraphDataset
        Without a standard split.

    Raises
    ------
    FileNotFoundError
        If a file is missing.
    ValueError
        For a malformed row, naming the file, the row (counted from 1 after the header) and
        the column.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from skdpgraph.datasets import load_edge_list_csv
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "edges.csv").write_text("src,dst\\na,b\\nb,c\\n")
    >>> _ = (folder / "labels.csv").write_text("id,kind\\na,x\\nc,y\\n")
    >>> data = load_edge_list_csv(folder / "edges.csv", labels_path=folder / "labels.csv")
    >>> data.node_ids.tolist(), data.y.tolist(), data.class_names
    (['a', 'b', 'c'], [0, -1, 1], ('x', 'y'))
    """
    edges_path = _require_file(edges_path, "load_edge_list_csv")
    edges = _read_table(edges_path, "edges", delimiter, header)
    ends = [_cells(edges, _column(edges, spec, edges_path, "edges"), edges_path, "edges")
            for spec in (source_column, target_column)]
    tables, keys = {}, {}
    for role, path in (("features", features_path), ("labels", labels_path)):
        if path is not None:
            path = _require_file(path, "load_edge_list_csv")
            table = _read_table(path, role, delimiter, header)
            id_label = _column(table, id_column, path, role)
            tables[role] = (path, table, id_label)
            keys[role] = _cells(table, id_label, path, role)
    parsed = _as_int_keys([*ends, *keys.values()])
    ends, keys = parsed[:2], dict(zip(keys, parsed[2:]))
    for role, (path, _, _) in tables.items():
        _first_duplicate(keys[role], path, role)
    if "features" in tables:
        path, table, id_label = tables["features"]
        order = np.argsort(keys["features"], kind="stable")
        node_ids = keys["features"][order]
        feature_columns = [c for c in table.columns if c != id_label]
        x = _feature_matrix(table, feature_columns, path)[order]
    else:
        node_ids = np.unique(np.concatenate([*ends, *keys.values()]))
        x = np.ones((node_ids.shape[0], 1), dtype=np.float32)
    if node_ids.shape[0] == 0:
        raise ValueError(f"load_edge_list_csv: no node ids found in '{edges_path.name}'"
                         + (" or the features file." if "features" in tables else "."))
    edge_index = np.vstack([
        _positions(node_ids, end, edges_path, "edges", column)
        for end, column in zip(ends, ("source", "target"))
    ])
    y, class_names = np.full(node_ids.shape[0], -1, dtype=np.int64), None
    if "labels" in tables:
        path, table, _ = tables["labels"]
        values = _cells(table, _column(table, label_column, path, "labels"), path, "labels")
        values = _as_int_keys([values])[0]
        classes, codes = np.unique(values, return_inverse=True)
        y[_positions(node_ids, keys["labels"], path, "labels", "id")] = codes.ravel()
        class_names = tuple(str(c) for c in classes)
    graph = Graph(edge_index, x, num_nodes=node_ids.shape[0], directed=directed)
    return GraphDataset(
        name=name or edges_path.stem, graph=graph, y=y, class_names=class_names,
        node_ids=node_ids,
        description=f"Graph read from the CSV edge list '{edges_path}'"
                    + (f", features '{tables['features'][0]}'" if "features" in tables else
                       " (no feature file: one constant feature)")
                    + (f", labels '{tables['labels'][0]}'." if "labels" in tables else "."),
    )


# --------------------------------------------------------------------------- dispatch
_KNOWN_DATASETS: dict[str, tuple[str, Any]] = {
    "cora": ("cora", lambda folder: load_planetoid(folder, "cora")),
    "facebook": ("facebook", lambda folder: load_musae(folder, "facebook")),
    "amazon_computers": ("amazon_computers",
                         lambda folder: load_npz_zip(folder / "amazon-computers.zip",
                                                     "amazon_computers")),
    "amazon_photo": ("amazon_photo",
                     lambda folder: load_npz_zip(folder / "amazon-photo.zip", "amazon_photo")),
    "coauthor_cs": ("coauthor_cs",
                    lambda folder: load_npz_zip(folder / "coauthor-cs.zip", "coauthor_cs")),
}


def load_dataset(name: str, root: str | Path = "../shared/datasets") -> GraphDataset:
    """Load one of the benchmark graphs shipped in ``root`` by name.

    Parameters
    ----------
    name : {"cora", "facebook", "amazon_computers", "amazon_photo", "coauthor_cs"}
        Case-insensitive; ``-`` may stand for ``_``.
    root : str or Path, default="../shared/datasets"
        The folder holding one sub-folder per dataset (relative paths are relative to the
        current working directory).

    Returns
    -------
    GraphDataset
        The graph, its labels, class names and the dataset's standard split, if any.

    Raises
    ------
    ValueError
        If ``name`` is not a known dataset.
    FileNotFoundError
        If its files are not in ``root``.

    Examples
    --------
    >>> from skdpgraph.datasets import load_dataset
    >>> load_dataset("cora", root="../shared/datasets")  # doctest: +SKIP
    GraphDataset(name='cora', num_nodes=2708, num_edges=10556, num_features=1433, num_classes=7,
                 split={'train': 140, 'val': 500, 'test': 1000})
    """
    key = str(name).lower().replace("-", "_")
    if key not in _KNOWN_DATASETS:
        raise ValueError(f"load_dataset: unknown dataset {name!r}; known datasets are "
                         f"{sorted(_KNOWN_DATASETS)}.")
    folder, loader = _KNOWN_DATASETS[key]
    return loader(Path(root) / folder)
