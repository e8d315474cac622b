"""Validation: parameter constraints and the checks on data where it enters.

This is the only module that imports scikit-learn's private validation helpers.
"""

from __future__ import annotations

import re
import warnings
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval as _Interval
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (_check_sample_weight, check_consistent_length,
                                      column_or_1d, validate_data)

from skdpgraph.exceptions import GraphDroppedWarning
from skdpgraph.graph import Graph, Nodes

__all__ = [
    "DP_CONSTRAINTS",
    "DPSGD_CONSTRAINTS",
    "MAX_LR",
    "Interval",
    "StrOptions",
    "fit_context",
    "check_fit_data",
    "check_predict_nodes",
    "check_nodes",
    "check_distinct_nodes",
    "check_sample_weight",
    "default_delta",
    "object_labels",
    "possible_edges",
]

fit_context = _fit_context


class Interval(_Interval):
    """scikit-learn's numeric interval constraint, refusing booleans.

    ``True`` is an ``int`` to Python, so ``epsilon=True`` would silently mean a budget of
    1; every numeric parameter of skdpgraph refuses it by name instead.

    Examples
    --------
    >>> from numbers import Real
    >>> Interval(Real, 0, None, closed="neither").is_satisfied_by(True)
    False
    """

    def is_satisfied_by(self, val: Any) -> bool:
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


class _DeviceOptions(StrOptions):
    """``StrOptions`` that also accepts ``"cuda:<index>"`` (one CUDA device by number)."""

    def is_satisfied_by(self, val: Any) -> bool:
        return super().is_satisfied_by(val) or (
            isinstance(val, str) and re.fullmatch(r"cuda:\d+", val) is not None)

    def __str__(self) -> str:
        return f"{super().__str__()} or 'cuda:<index>'"


#: Constraints every private estimator shares.
DP_CONSTRAINTS: dict[str, list] = {
    "epsilon": [Interval(Real, 0, np.inf, closed="right")],
    "classes": ["array-like", None],
    "delta": [Interval(Real, 0, 1, closed="neither"), None],
    "random_state": ["random_state"],
    "device": [_DeviceOptions({"auto", "cpu", "cuda"}), torch.device],
    "verbose": ["verbose"],
    "private_diagnostics": ["boolean"],
}

#: Largest learning rate: Adam's first step is ``lr / (1 - 0.9)``, which overflows float32
#: (3.4e38) from about 3.4e37 and crashes inside torch; up to 1e30 a diverging run is
#: reported by name instead.
MAX_LR = 1e30

#: Constraints of estimators trained with the shared DP-SGD loop.
DPSGD_CONSTRAINTS: dict[str, list] = {
    **DP_CONSTRAINTS,
    "epochs": [Interval(Integral, 1, None, closed="left")],
    "lr": [Interval(Real, 0, MAX_LR, closed="right")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "max_grad_norm": [Interval(Real, 0, None, closed="neither")],
    "validation_fraction": [Interval(Real, 0, 1, closed="neither"), StrOptions({"auto"}), None],
}


def default_delta(num_units: int) -> float:
    """The one default-delta rule: ``1 / (10 * N)`` for a public bound N on the protected units.

    ``N`` must be a public quantity that is at least the number of units the guarantee
    protects, so that the default stays below 1/(units) on every input and reveals nothing
    the guarantee protects. Each estimator names its N (``_protected_units``) and states it
    in ``privacy_.assumptions``: the training nodes when only they are used (DP-MLP), every
    node of the graph where the node set is public (node-level GAP, FDP, DRW), and at edge
    level the number of possible edges, :func:`possible_edges` (the number of edges itself
    is what edge-level privacy protects).

    Examples
    --------
    >>> default_delta(1000)
    0.0001
    """
    return 1.0 / (10.0 * max(int(num_units), 1))


def possible_edges(num_nodes: int, directed: bool) -> int:
    """How many edges a graph on ``num_nodes`` nodes can have: at least its edge count.

    ``N (N - 1)`` directed edges, ``N (N - 1) / 2`` undirected ones (a
    :class:`~skdpgraph.Graph` has no self-loops or duplicate edges). At edge level the node
    set is public, so this bound is too, while the number of edges is not.

    Examples
    --------
    >>> possible_edges(4, directed=False), possible_edges(4, directed=True)
    (6, 12)
    """
    n = int(num_nodes)
    return n * (n - 1) // (1 if directed else 2)


def _reject_pyg(X: Any, name: str) -> None:
    if type(X).__module__.startswith("torch_geometric"):
        raise TypeError(
            f"{name} got a torch_geometric {type(X).__name__} object; pass "
            "Graph.from_pyg(data).nodes(mask) instead."
        )


def check_nodes(X: Any, name: str) -> Nodes:
    """``X`` as :class:`Nodes`; a 2-D array or sparse matrix becomes an edgeless graph."""
    if isinstance(X, Nodes):
        return X
    if isinstance(X, Graph):
        return X.nodes()
    _reject_pyg(X, name)
    if not sp.issparse(X):
        X = np.asarray(X)
    return Graph(np.zeros((2, 0), dtype=np.int64), X).nodes()


def _warn_graph_dropped(estimator: Any, X: Any, method: str, stacklevel: int) -> None:
    """Warn when an estimator that uses edges (class flag ``_uses_edges``) gets a plain array.

    The array becomes a graph without edges. Whatever turned the Nodes into an array is
    out of sight here, so the message names the usual culprits without blaming one.
    """
    if not getattr(estimator, "_uses_edges", False):
        return
    name = type(estimator).__name__
    warnings.warn(
        f"{name}.{method} received a plain {type(X).__name__}, not skdpgraph Nodes: it is read "
        f"as a graph without edges, so {name} cannot use any neighbour. Something converted "
        "the Nodes to a feature array on the way: a scikit-learn transformer before it in a "
        "Pipeline (wrap it in skdpgraph.preprocessing.NodeFeatureTransformer, or build the "
        "pipeline with skdpgraph.make_graph_pipeline), or a meta-estimator or tool that "
        "converts X to an array (e.g. BaggingClassifier, permutation_importance), or the "
        "caller. To train on the features alone, pass Graph(np.zeros((2, 0)), X).nodes() or "
        "use DPMLPClassifier.",
        GraphDroppedWarning, stacklevel=stacklevel)


def _refuse_text(X: Any, name: str) -> None:
    """Name the first text entry of ``X`` that is not a number (scikit-learn's messages
    name neither the input nor where the value is)."""
    if sp.issparse(X) or isinstance(X, torch.Tensor):
        return
    dtypes = getattr(X, "dtypes", None)  # a DataFrame: look at its columns before copying it
    if dtypes is not None and all(getattr(d, "kind", "O") not in "USO"
                                  for d in np.atleast_1d(dtypes)):
        return
    try:
        values = np.asarray(X)
    except Exception:  # ragged or exotic input: scikit-learn's checks report it
        return
    if values.dtype.kind not in "USO" or values.size == 0:
        return

    def is_text(value: Any) -> bool:
        if not isinstance(value, (str, bytes)):
            return False
        try:
            float(value)
        except ValueError:
            return True
        return False

    text = np.vectorize(is_text, otypes=[bool])(values)
    if text.any():
        where = tuple(int(i) for i in np.argwhere(text)[0])
        value = values[where].item() if isinstance(values[where], np.generic) else values[where]
        raise ValueError(
            f"{name}: X holds strings (e.g. {value!r} at index {where}); features "
            "must be numeric: encode categorical columns as numbers first (e.g. with "
            "sklearn.preprocessing.OneHotEncoder).")


def _check_array_input(estimator: Any, X: Any, y: Any = None, *, reset: bool):
    """Run scikit-learn's own checks on a plain array (standard messages)."""
    _refuse_text(X, type(estimator).__name__)
    if y is None and reset:
        return validate_data(estimator, X, y, accept_sparse="csr", reset=reset), None
    if y is None:
        return validate_data(estimator, X, accept_sparse="csr", reset=reset), None
    return validate_data(estimator, X, y, accept_sparse="csr", reset=reset)


def check_fit_data(estimator: Any, X: Any, y: Any,
                   sample_weight: Any = None) -> tuple[Nodes, np.ndarray]:
    """Validate training data; set ``classes_`` and ``n_features_in_``.

    Returns the training nodes and the labels encoded as ``0..n_classes-1``, of the rows
    that ``sample_weight`` selects (:func:`check_sample_weight`). Never modifies the
    caller's arrays.
    """
    name = type(estimator).__name__
    _reject_pyg(X, name)
    if isinstance(X, (Nodes, Graph)):
        if y is None:
            raise ValueError(f"{name} requires y to be passed, but the target y is None.")
        nodes = check_nodes(X, name)
        estimator.n_features_in_ = nodes.graph.num_features
        if len(nodes) == 0:
            raise ValueError(f"{name}.fit got 0 nodes; at least 2 labelled nodes are required.")
        if nodes.graph.num_features == 0:
            raise ValueError(f"{name}.fit: X has 0 feature columns (shape {nodes.graph.x.shape}); "
                             "at least 1 is required.")
    else:
        given = X
        X, y = _check_array_input(estimator, X, y, reset=True)
        _warn_graph_dropped(estimator, given, "fit", stacklevel=5)  # the caller of fit
        kept = check_sample_weight(sample_weight, len(y), name)
        if kept is not None:  # before the graph is built: unselected rows never enter it
            X, y, sample_weight = X[kept], y[kept], None
        nodes = check_nodes(X, name)
    y = column_or_1d(y, warn=True)
    check_consistent_length(nodes, y)
    kept = check_sample_weight(sample_weight, len(y), name)
    if kept is not None:
        nodes, y = nodes[kept], y[kept]
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        _refuse_missing_labels(np.flatnonzero(~np.isfinite(y)), f"{name}.fit", "NaN or infinite")
    if y.dtype == object:
        y = object_labels(y, f"{name}.fit")
    check_classification_targets(y)
    classes, encoded = _encode_labels(getattr(estimator, "classes", None), y, name)
    if len(classes) < 2:
        raise ValueError(
            f"{name} needs samples of at least 2 classes in the data, but the data contains "
            f"only one class: {classes.tolist()[0]!r}."
        )
    estimator.classes_ = classes
    return nodes, encoded.astype(np.int64)


def _is_missing(value: Any) -> bool:
    """Whether a label cell is empty: None, NaN, or pandas' ``NA``/``NaT``."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return True
    return isinstance(value, (float, np.floating)) and value != value


def _refuse_missing_labels(rows: np.ndarray, where: str, what: str) -> None:
    """Refuse labels missing in ``rows``, naming them: unlabelled nodes are not training
    nodes (they stay in the graph as neighbours, and are the nodes to predict)."""
    shown = ", ".join(str(int(i)) for i in rows[:5]) + (", ..." if len(rows) > 5 else "")
    raise ValueError(
        f"{where}: y contains {what} labels in {len(rows)} row(s) ({shown}). Use the labelled "
        "nodes only, e.g. fit(graph.nodes(labelled), y[labelled]) with labelled = "
        "pandas.notna(y): the unlabelled nodes stay in the graph and are the ones to predict.")


def object_labels(y: np.ndarray, where: str) -> np.ndarray:
    """Labels of an object array: refuse missing and mixed types; numbers become numeric.

    ``where`` (``"GAPClassifier.fit"``) starts the error messages.
    """
    missing = [i for i, v in enumerate(y) if _is_missing(v)]
    if missing:
        _refuse_missing_labels(np.array(missing), where, "NaN or None")
    first: dict[str, Any] = {}
    for value in y:
        kind = "str" if isinstance(value, (str, bytes)) else (
            "number" if isinstance(value, (Real, np.bool_)) else type(value).__name__)
        first.setdefault(kind, value.item() if isinstance(value, np.generic) else value)
    if len(first) > 1:
        shown = ", ".join(f"{kind} (e.g. {value!r})" for kind, value in first.items())
        raise ValueError(f"{where}: y mixes label types: {shown}; all labels must be of one "
                         "type (all strings or all numbers).")
    return np.array(y.tolist()) if "number" in first else y


def _encode_labels(public: Any, y: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, y encoded)``: from the public ``classes`` when given, else from ``y``."""
    if public is None:
        return np.unique(y, return_inverse=True)
    classes = np.asarray(public)
    if classes.ndim != 1 or len(np.unique(classes)) != len(classes):
        raise ValueError(f"{name}: classes must be a 1-D list of distinct labels; got "
                         f"{classes.tolist()!r}.")
    classes = np.sort(classes)
    try:
        outside = np.setdiff1d(np.unique(y), classes)
    except TypeError as exc:
        raise ValueError(f"{name}.fit: y and classes={classes.tolist()!r} have incomparable "
                         "types.") from exc
    if len(outside):
        raise ValueError(f"{name}.fit: y has labels outside classes={classes.tolist()[:10]}: "
                         f"{outside.tolist()[:10]}.")
    return classes, np.searchsorted(classes, y)


def check_sample_weight(sample_weight: Any, n: int, name: str) -> np.ndarray | None:
    """The positions of the rows that ``sample_weight`` selects, or None (every row).

    Every node counts once: a weight of 0 drops a row, 1 keeps it, and anything else is
    refused. A weight k > 1 would count one node k times (k times its influence on the
    model, which the guarantee does not cover); scikit-learn's ``BaggingClassifier``
    passes its bootstrap counts this way. The counts are drawn independently of the
    data, so refusing them reveals nothing about it.

    Examples
    --------
    >>> check_sample_weight([1, 0, 1], 3, "example")
    array([0, 2])
    """
    if sample_weight is None:
        return None
    weights = _check_sample_weight(sample_weight, np.empty((n, 0)), dtype=np.float64,
                                   ensure_non_negative=True)
    bad = np.flatnonzero((weights != 0) & (weights != 1))
    if len(bad):
        i = int(bad[0])
        raise ValueError(
            f"{name}.fit: sample_weight[{i}] = {weights[i]:g}; each training node counts once, "
            "so sample_weight may only select rows (0 or 1). A weight of k counts a node k "
            "times, which the privacy guarantee does not cover: resampling with replacement "
            "(e.g. BaggingClassifier(bootstrap=True)) is not allowed; use bootstrap=False.")
    return np.flatnonzero(weights)


def check_distinct_nodes(nodes: Nodes, name: str) -> None:
    """Refuse a node listed more than once: where the unit is a node, a node counted twice
    is two people's worth of influence (e.g. after ``sklearn.utils.resample``)."""
    index = np.asarray(nodes.index)
    unique, counts = np.unique(index, return_counts=True)
    if len(unique) != len(index):
        repeated = unique[counts > 1]
        raise ValueError(
            f"{name}.fit: X lists {len(repeated)} node(s) more than once (e.g. node "
            f"{int(repeated[0])}, {int(counts.max())} times). The privacy unit is one node, so "
            "each training node must appear once; resampling with replacement is not allowed.")


def check_predict_nodes(estimator: Any, X: Any) -> Nodes:
    """Validate prediction input against the fitted feature count."""
    name = type(estimator).__name__
    _reject_pyg(X, name)
    if not isinstance(X, (Nodes, Graph)):
        given, X = X, _check_array_input(estimator, X, reset=False)[0]
        _warn_graph_dropped(estimator, given, "predict", stacklevel=4)
    nodes = check_nodes(X, name)
    if nodes.graph.num_features != estimator.n_features_in_:
        raise ValueError(
            f"X has {nodes.graph.num_features} features, but {name} is expecting "
            f"{estimator.n_features_in_} features as input."
        )
    return nodes
