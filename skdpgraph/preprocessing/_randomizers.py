"""Client-side local randomisers as scikit-learn transformers (GRR-FS and GRR).

They wrap the pure mechanisms of :mod:`skdpgraph.privacy._grr`. In a deployment each
user runs them on their own row; here one call randomises every row independently.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from skdpgraph._random import RandomStreams
from skdpgraph._validation import Interval, fit_context
from skdpgraph.preprocessing._encoder import CategoricalFeatureEncoder, check_binary
from skdpgraph.privacy import grr_fs_epsilon, grr_fs_randomize, grr_randomize

__all__ = ["GRRFeatureRandomizer", "GRRLabelRandomizer", "client_generators", "feature_schema",
           "feature_reports"]


def client_generators(streams: RandomStreams) -> tuple[np.random.Generator, np.random.Generator]:
    """The generators of the feature (GRR-FS) and label (GRR) randomisers, in this order.

    Two independent ``"clients"`` streams of ``streams``. :class:`GRRFeatureRandomizer`
    and :class:`GRRLabelRandomizer` take theirs from ``RandomStreams(random_state)``, and
    so does ``RGNNClassifier(randomize=True)`` in ``fit``: pre-randomising with the
    transformers and the estimator's own randomisation agree for one ``random_state``.

    Parameters
    ----------
    streams : RandomStreams
        The random streams of one ``random_state``.

    Returns
    -------
    features, labels : numpy.random.Generator
        The generators of the feature and of the label randomiser.
    """
    return streams.numpy("clients"), streams.numpy("clients")


def feature_schema(x: Any, *, randomize: bool, feature_type: str, group_size: int | None,
                   feature_range: tuple, name: str
                   ) -> tuple[CategoricalFeatureEncoder | None, np.ndarray]:
    """The public schema of the clients' features: ``(encoder, domain sizes)``.

    ``randomize=True``: a :class:`CategoricalFeatureEncoder` with the stated
    ``feature_type``, ``group_size`` and public ``feature_range``; nothing of it is read
    from ``x``, whose values are only checked against it (a value outside {0, 1} under
    ``feature_type="binary"`` is refused, by ``name``). False: ``x`` already holds GRR-FS
    codes; the encoder is None and the domain sizes are ``max(code) + 1`` per column (at
    least 2), post-processing of the reports.

    Parameters
    ----------
    x : array-like of shape (n_nodes, n_features)
        The clients' features, or their GRR-FS codes when ``randomize=False``.
    randomize : bool
        Whether the clients randomise ``x`` (else ``x`` holds their reports).
    feature_type : {"binary", "continuous"}
        How the features are encoded.
    group_size : int or None
        The number of features per group of the encoder.
    feature_range : tuple of (float, float)
        The public range of continuous features.
    name : str
        The parameter named in error messages.

    Returns
    -------
    encoder : CategoricalFeatureEncoder or None
        The public encoder, None when ``randomize=False``.
    domain_sizes : ndarray of int
        The number of codes of each reported column.
    """
    if randomize:
        if feature_type == "binary":
            check_binary(x, name)
        encoder = CategoricalFeatureEncoder(feature_type=feature_type, group_size=group_size,
                                            feature_range=feature_range)
        return encoder.fit(x), encoder.domain_sizes_
    codes = check_codes(x.toarray() if hasattr(x, "toarray") else x, name)
    return None, np.maximum(codes.max(axis=0) + 1, 2)


def feature_reports(x: Any, encoder: CategoricalFeatureEncoder | None, domain_sizes: np.ndarray,
                    epsilon_per_feature: float, n_sampled_features: int,
                    rng: np.random.Generator | None, *, name: str) -> np.ndarray:
    """Every row's GRR-FS report, shape (n_rows, d).

    With an ``encoder``: ``x`` encoded and randomised with ``rng``. With ``encoder=None``:
    ``x`` already holds reports; its codes are checked against ``domain_sizes``.
    """
    if encoder is not None:
        return grr_fs_randomize(encoder.transform(x), domain_sizes, epsilon_per_feature,
                                n_sampled_features, rng)
    codes = check_codes(x.toarray() if hasattr(x, "toarray") else x, name)
    if codes.shape[1] != len(domain_sizes) or np.any(codes >= domain_sizes):
        raise ValueError(f"{name}: feature codes exceed the domain sizes seen in fit "
                         f"({np.asarray(domain_sizes).tolist()[:10]}).")
    return codes


def check_codes(X: Any, name: str) -> np.ndarray:
    """``X`` as an int64 matrix of non-negative category codes, or raise."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D matrix of category codes; got shape {X.shape}.")
    if X.dtype.kind not in "biuf" or not np.all(np.mod(X, 1) == 0) or np.any(X < 0):
        raise ValueError(
            f"{name}: features must be non-negative integer category codes (e.g. the output "
            "of CategoricalFeatureEncoder); got non-integer or negative values."
        )
    return X.astype(np.int64)


class GRRFeatureRandomizer(TransformerMixin, BaseEstimator):
    r"""GRR with feature sampling (GRR-FS): each row is :math:`m\varepsilon_x`-LDP.

    For each row independently, sample ``n_sampled_features`` (:math:`m`) of the
    :math:`d` features, report each sampled one through generalized randomized response
    with budget ``epsilon_per_feature`` (:math:`\varepsilon_x`) and a uniformly random
    value for each of the others (see :func:`skdpgraph.privacy.grr_fs_randomize`).

    Parameters
    ----------
    epsilon_per_feature : float, default=1.0
        :math:`\varepsilon_x`, in ``(0, inf]``.
    n_sampled_features : int, default=10
        :math:`m`; capped at the number of features (``n_sampled_features_``).
    domain_sizes : array-like of int of shape (n_features,), default=None
        Number of categories of each column (the public schema). None takes
        ``max(code) + 1`` per column (at least 2) in ``fit``.
    random_state : int, RandomState or None, default=None
        Root of the randomisation's stream (see :func:`client_generators`). ``transform``
        is deterministic for a fixed int, so repeating it releases nothing new; with None
        every call draws fresh OS entropy and is a fresh release. Leave it None in a
        deployment.

    Attributes
    ----------
    domain_sizes_ : ndarray of shape (``n_features_in_``,)
    n_sampled_features_ : int
        :math:`\min(m, d)`.
    epsilon_ : float
        The per-row local budget, :math:`m\varepsilon_x` (tight; the paper's smaller
        amplified value is not a bound, see :func:`skdpgraph.privacy.grr_fs_paper_epsilon`).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph.preprocessing import GRRFeatureRandomizer
    >>> codes = np.array([[0, 1, 1], [1, 0, 1]])
    >>> rand = GRRFeatureRandomizer(epsilon_per_feature=1.0, n_sampled_features=2,
    ...                             random_state=0).fit(codes)
    >>> rand.epsilon_, rand.transform(codes).shape
    (2.0, (2, 3))
    """

    _parameter_constraints = {
        "epsilon_per_feature": [Interval(Real, 0, np.inf, closed="right")],
        "n_sampled_features": [Interval(Integral, 1, None, closed="left")],
        "domain_sizes": ["array-like", None],
        "random_state": ["random_state"],
    }

    def __init__(self, *, epsilon_per_feature=1.0, n_sampled_features=10, domain_sizes=None,
                 random_state=None):
        self.epsilon_per_feature = epsilon_per_feature
        self.n_sampled_features = n_sampled_features
        self.domain_sizes = domain_sizes
        self.random_state = random_state

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any = None) -> GRRFeatureRandomizer:
        """Record the domain sizes and the budget."""
        X = check_codes(validate_data(self, X, dtype=None), "GRRFeatureRandomizer.fit")
        if self.domain_sizes is None:
            self.domain_sizes_ = np.maximum(X.max(axis=0) + 1, 2)
        else:
            self.domain_sizes_ = np.asarray(self.domain_sizes, dtype=np.int64).copy()
            if self.domain_sizes_.shape != (X.shape[1],):
                raise ValueError(
                    f"GRRFeatureRandomizer: domain_sizes has shape {self.domain_sizes_.shape} "
                    f"but X has {X.shape[1]} features; give one domain size per column."
                )
        self.n_sampled_features_ = min(int(self.n_sampled_features), X.shape[1])
        self.epsilon_ = grr_fs_epsilon(self.n_sampled_features_, self.epsilon_per_feature)
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Randomised codes, shape (n_samples, n_features); ``X`` is not modified."""
        check_is_fitted(self)
        X = check_codes(validate_data(self, X, dtype=None, reset=False),
                        "GRRFeatureRandomizer.transform")
        rng = client_generators(RandomStreams(self.random_state))[0]
        return grr_fs_randomize(X, self.domain_sizes_, self.epsilon_per_feature,
                                self.n_sampled_features_, rng)


class GRRLabelRandomizer(TransformerMixin, BaseEstimator):
    r"""Generalized randomized response on labels: each label is :math:`\varepsilon`-LDP.

    Like :class:`sklearn.preprocessing.LabelEncoder`, it works on a label vector ``y``.
    Each label is kept with probability :math:`p = e^\varepsilon/(e^\varepsilon + c - 1)`
    and otherwise replaced by one of the :math:`c - 1` other classes uniformly.

    Parameters
    ----------
    epsilon : float, default=1.0
        Budget per label, in ``(0, inf]`` (``inf`` returns the labels unchanged).
    classes : array-like, default=None
        The public label domain. None takes the classes seen in ``fit``.
    random_state : int, RandomState or None, default=None
        As for :class:`GRRFeatureRandomizer` (an independent stream of the same root).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)

    Examples
    --------
    >>> from skdpgraph.preprocessing import GRRLabelRandomizer
    >>> GRRLabelRandomizer(epsilon=float("inf")).fit_transform(["a", "b", "a"]).tolist()
    ['a', 'b', 'a']
    """

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, np.inf, closed="right")],
        "classes": ["array-like", None],
        "random_state": ["random_state"],
    }

    def __init__(self, *, epsilon=1.0, classes=None, random_state=None):
        self.epsilon = epsilon
        self.classes = classes
        self.random_state = random_state

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, y: Any) -> GRRLabelRandomizer:
        """Record the label domain."""
        y = column_or_1d(y, warn=True)
        self.classes_ = np.unique(y if self.classes is None else np.asarray(self.classes))
        return self

    def transform(self, y: Any) -> np.ndarray:
        """Randomised labels, same length and label type as ``y``."""
        check_is_fitted(self)
        y = column_or_1d(y, warn=True)
        codes = np.searchsorted(self.classes_, y)
        unknown = (codes >= self.classes_.size) | (self.classes_[np.minimum(
            codes, self.classes_.size - 1)] != y)
        if np.any(unknown):
            raise ValueError(f"GRRLabelRandomizer: y contains labels outside classes_: "
                             f"{np.unique(y[unknown]).tolist()[:5]}.")
        rng = client_generators(RandomStreams(self.random_state))[1]
        return self.classes_[grr_randomize(codes, self.classes_.size, self.epsilon, rng)]

    def fit_transform(self, y: Any) -> np.ndarray:
        """``fit(y).transform(y)``."""
        return self.fit(y).transform(y)
