"""The checks behind :meth:`skdpgraph.Graph.from_pandas`: node and edge tables to arrays.

Every problem is reported with the table, the column and the row, and no column is used
as a feature without being asked for unless it is unmistakably one: a column named like
labels (``label``, ``y``, ``class``...) is never taken as a feature by default, because a
label among the features leaks the answer into training.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["edge_index_from_table", "feature_matrix", "is_label_like", "node_ids", "labels_of"]

_PREFIX = "Graph.from_pandas: "
#: Column names read as labels (compared in lower case).
_LABEL_NAMES = frozenset({"y", "target", "targets", "class", "classes", "category", "outcome"})
#: Words that make a column label-like anywhere in its name (``node_label``, ``Label``).
_LABEL_WORDS = frozenset({"label", "labels"})


def is_label_like(column: Any) -> bool:
    """Whether a column name reads as labels rather than as a feature.

    Examples
    --------
    >>> [is_label_like(c) for c in ["label", "Class", "node_label", "y", "degree", "f_y"]]
    [True, True, True, True, False, False]
    """
    name = str(column).strip().lower()
    return name in _LABEL_NAMES or bool(_LABEL_WORDS & set(re.split(r"[^a-z0-9]+", name)))


def _require_column(table: pd.DataFrame, column: Any, role: str, which: str) -> None:
    if column not in table.columns:
        raise ValueError(f"{_PREFIX}{which} table has no {role}column {column!r} "
                         f"(columns: {list(table.columns)}).")


def node_ids(nodes: pd.DataFrame, id_column: Any) -> np.ndarray:
    """The ids of the node table: present, distinct, at least one row."""
    _require_column(nodes, id_column, "", "node")
    if len(nodes) == 0:
        raise ValueError(f"{_PREFIX}the node table has no rows (columns: "
                         f"{list(nodes.columns)}); at least one node is required.")
    column = nodes[id_column]
    missing = np.flatnonzero(column.isna().to_numpy())
    if missing.size:
        raise ValueError(f"{_PREFIX}column {id_column!r} has no node id in row "
                         f"{int(missing[0])} ({missing.size} row(s) in all).")
    ids = column.to_numpy()
    repeated = column.duplicated(keep=False).to_numpy()
    if repeated.any():
        first = column.iloc[int(np.argmax(repeated))]
        first = first.item() if isinstance(first, np.generic) else first
        raise ValueError(f"{_PREFIX}column {id_column!r} has duplicate node ids (e.g. {first!r} "
                         f"in rows {np.flatnonzero((column == first).to_numpy()).tolist()[:5]}).")
    return ids


def labels_of(nodes: pd.DataFrame, label_column: Any) -> np.ndarray:
    """A copy of the label column; empty cells become None in an object array.

    pandas reads whole-number labels with empty cells as floats (only a float holds NaN);
    they come back as ints, so that ``classes_`` and predictions are ``3``, not ``3.0``.
    """
    _require_column(nodes, label_column, "label ", "node")
    column = nodes[label_column]
    missing = column.isna().to_numpy()
    if not missing.any():
        return column.to_numpy(copy=True)
    present = column[~missing]
    if pd.api.types.is_float_dtype(present.dtype) and (present == np.round(present)).all():
        present = present.astype(np.int64)
    labels = np.full(len(column), None, dtype=object)
    labels[np.flatnonzero(~missing)] = present.tolist()
    return labels


def _default_features(nodes: pd.DataFrame, id_column: Any, label_column: Any) -> list:
    columns = [c for c in nodes.columns if c not in (id_column, label_column)]
    leaking = [c for c in columns if is_label_like(c)]
    if leaking:
        raise ValueError(
            f"{_PREFIX}column {leaking[0]!r} looks like labels, so it is not used as a feature "
            f"without being asked. Pass label_column={leaking[0]!r} to get it back as labels, "
            "or feature_columns=[...] to choose the features yourself.")
    return columns


def _numeric_column(nodes: pd.DataFrame, column: Any) -> np.ndarray:
    """One feature column as float64; text that is not a number is refused by row."""
    values = nodes[column]
    if pd.api.types.is_numeric_dtype(values.dtype):
        return values.to_numpy(dtype=np.float64)
    out = np.empty(len(values), dtype=np.float64)
    for row, value in enumerate(values.tolist()):
        if value is None or (isinstance(value, float) and value != value):
            raise ValueError(f"{_PREFIX}feature column {column!r} is empty in row {row}.")
        try:
            out[row] = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{_PREFIX}feature column {column!r} is not numeric (row {row} "
                             f"holds {value!r}).") from None
    return out


def feature_matrix(nodes: pd.DataFrame, feature_columns: Any, id_column: Any,
                   label_column: Any) -> np.ndarray:
    """The node features: the named columns, or every column but the id and the label."""
    if feature_columns is None:
        feature_columns = _default_features(nodes, id_column, label_column)
    elif isinstance(feature_columns, (str, bytes)) or not hasattr(feature_columns, "__iter__"):
        raise ValueError(f"{_PREFIX}feature_columns must be a list of column names; got "
                         f"{type(feature_columns).__name__} {feature_columns!r}.")
    feature_columns = list(feature_columns)
    for column in feature_columns:
        _require_column(nodes, column, "feature ", "node")
    if label_column is not None and label_column in feature_columns:
        raise ValueError(f"{_PREFIX}column {label_column!r} is both the label_column and in "
                         "feature_columns; a label must not be a feature.")
    if not feature_columns:
        raise ValueError(f"{_PREFIX}no feature columns: the node table has only "
                         f"{list(nodes.columns)}; at least one feature column is required.")
    return np.column_stack([_numeric_column(nodes, c) for c in feature_columns])


def edge_index_from_table(edges: pd.DataFrame, ids: np.ndarray, source_column: Any,
                          target_column: Any) -> np.ndarray:
    """``(2, num_edges)`` node positions of the edge table's endpoints."""
    for column in (source_column, target_column):
        _require_column(edges, column, "", "edge")
    position = {node_id: i for i, node_id in enumerate(ids.tolist())}
    rows = []
    for column in (source_column, target_column):
        values = edges[column].tolist()
        unknown = [i for i, value in enumerate(values) if value not in position]
        if unknown:
            raise ValueError(
                f"{_PREFIX}edge row {unknown[0]} has {column} {values[unknown[0]]!r}, which "
                "is not an id in the node table.")
        rows.append([position[value] for value in values])
    return np.array(rows, dtype=np.int64).reshape(2, -1)
