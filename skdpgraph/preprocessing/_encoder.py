"""Client-side encoding of node features into a small categorical domain."""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from skdpgraph._validation import Interval, StrOptions, fit_context

__all__ = ["CategoricalFeatureEncoder", "check_binary"]


def check_binary(X: Any, name: str) -> None:
    """Refuse a value of ``X`` outside {0, 1} (the schema ``feature_type="binary"``).

    The schema is stated by the user, never read from the data; a value that does not
    conform is refused, naming the first one.
    """
    values = X.data if sp.issparse(X) else np.asarray(X)
    bad = (values != 0) & (values != 1)
    if not bad.any():
        return
    if sp.issparse(X):
        coo = sp.coo_matrix(X)
        rows, cols, data = coo.row, coo.col, coo.data
        k = int(np.flatnonzero((data != 0) & (data != 1))[0])
        where, value = (int(rows[k]), int(cols[k])), data[k]
    else:
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        value = values[where]
    raise ValueError(
        f"{name}: feature_type='binary' needs every feature value in {{0, 1}}; X{list(where)} "
        f"= {float(value):g}. Binarise the features, or pass feature_type='continuous' to cut "
        "each column into bins over the public feature_range.")


class CategoricalFeatureEncoder(TransformerMixin, BaseEstimator):
    """Encode node features as small categorical codes for GRR-FS.

    GRR-FS randomises categorical features, and its utility collapses on thousands of
    sparse binary columns. This encoder maps a feature matrix to integer codes, as the
    public schema ``feature_type`` says (never as the data look):

    - ``"binary"``: every value is 0 or 1 (other values are refused); blocks of
      ``group_size`` consecutive columns are OR-ed into one binary feature
      (``ceil(d / group_size)`` features; the last block may be shorter), or kept as they
      are when ``group_size`` is None;
    - ``"continuous"``: each column is cut into ``n_bins`` equal-width bins over
      ``feature_range`` (or over the column's range seen in ``fit``), with values outside
      clipped.

    Parameters
    ----------
    feature_type : {"binary", "continuous"}, default="binary"
        The public feature schema. ``"binary"`` (bag-of-words features, as in the shared
        datasets) refuses any value outside {0, 1} in ``fit`` and ``transform``.
    group_size : int, default=None
        Number of consecutive binary columns per OR-group (RGNN: 25 for Cora, 100 for
        Facebook). Only with ``feature_type="binary"``.
    n_bins : int, default=4
        Number of bins for non-binary inputs.
    feature_range : tuple (min, max), default=None
        Public range the bins cover (``min < max``, finite). None reads each column's min
        and max in ``fit``, which keeps them in ``bin_edges_``: pass a public range when
        the data are private.

    Attributes
    ----------
    domain_sizes_ : ndarray of shape (n_features_out,)
        Number of categories of each output feature (2 for binary groups, ``n_bins``
        otherwise).
    bin_edges_ : ndarray of shape (``n_features_in_``, n_bins + 1) or None
        Bin edges of non-binary inputs.
    n_features_in_ : int

    Notes
    -----
    In a deployment the schema is public: the server sends it to the clients. Binary
    versus binned is the ``feature_type`` parameter; with ``feature_range=None`` the bin
    range is read from the data, so pass ``feature_range`` for continuous features whose
    range is not public.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph.preprocessing import CategoricalFeatureEncoder
    >>> x = np.array([[1, 0, 0, 0, 0], [0, 0, 0, 0, 1]])
    >>> CategoricalFeatureEncoder(group_size=2).fit_transform(x)
    array([[1, 0, 0],
           [0, 0, 1]])
    """

    _parameter_constraints = {
        "feature_type": [StrOptions({"binary", "continuous"})],
        "group_size": [Interval(Integral, 1, None, closed="left"), None],
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "feature_range": [tuple, None],
    }

    def __init__(self, *, feature_type="binary", group_size=None, n_bins=4, feature_range=None):
        self.feature_type = feature_type
        self.group_size = group_size
        self.n_bins = n_bins
        self.feature_range = feature_range

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any = None) -> CategoricalFeatureEncoder:
        """Check the features against the schema and compute the domain sizes (and bins)."""
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64)
        binary = self.feature_type == "binary"
        if not binary and self.group_size is not None:
            raise ValueError(
                f"CategoricalFeatureEncoder: group_size={self.group_size} OR-groups binary "
                "columns, but feature_type='continuous'; use group_size=None to bin them.")
        if binary:
            check_binary(X, "CategoricalFeatureEncoder")
        d = X.shape[1]
        if binary:
            g = self.group_size or 1
            self.bin_edges_ = None
            self.domain_sizes_ = np.full(-(-d // g), 2, dtype=np.int64)
            return self
        dense = X.toarray() if sp.issparse(X) else X
        if self.feature_range is None:
            low, high = dense.min(axis=0), dense.max(axis=0)
            high = np.where(high > low, high, low + 1.0)
        else:
            low, high = (np.full(d, v) for v in _check_range(self.feature_range))
        steps = np.linspace(0.0, 1.0, self.n_bins + 1)
        self.bin_edges_ = low[:, None] + (high - low)[:, None] * steps[None, :]
        self.domain_sizes_ = np.full(d, self.n_bins, dtype=np.int64)
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Integer codes of shape (n_samples, n_features_out)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if self.feature_type == "binary":
            check_binary(X, "CategoricalFeatureEncoder")
            return _or_groups(X, self.group_size or 1)
        dense = X.toarray() if sp.issparse(X) else X
        codes = np.zeros(dense.shape, dtype=np.int64)
        for edge in self.bin_edges_[:, 1:-1].T:  # interior edges, one (d,) row per bin
            codes += dense >= edge
        return codes

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names ``categoricalfeatureencoder0``, ``...1``, one per output feature."""
        check_is_fitted(self)
        return np.array([f"categoricalfeatureencoder{i}" for i in range(self.domain_sizes_.size)],
                        dtype=object)


def _check_range(feature_range: Any) -> tuple[float, float]:
    """``feature_range`` as two finite floats ``low < high``, or raise."""
    try:
        low, high = (float(v) for v in feature_range)
    except (TypeError, ValueError):
        low = high = float("nan")
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError("CategoricalFeatureEncoder: feature_range must be a (low, high) pair of "
                         f"finite numbers with low < high; got {feature_range!r}.")
    return low, high


def _or_groups(X: Any, group_size: int) -> np.ndarray:
    """OR of each block of ``group_size`` consecutive binary columns, as int64 codes."""
    d = X.shape[1]
    block = np.arange(d) // group_size
    membership = sp.csr_matrix((np.ones(d), (np.arange(d), block)), shape=(d, block[-1] + 1))
    counts = X @ membership
    counts = counts.toarray() if sp.issparse(counts) else np.asarray(counts)
    return (counts > 0).astype(np.int64)
