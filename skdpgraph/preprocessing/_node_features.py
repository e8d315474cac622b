"""Apply a tabular transformer to the node features of a graph, keeping the edges."""

from __future__ import annotations

import hashlib
import uuid
import warnings
from typing import Any

from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from skdpgraph._validation import check_nodes
from skdpgraph.exceptions import NonPrivateStepWarning
from skdpgraph.graph import Graph, Nodes

__all__ = ["NodeFeatureTransformer", "NonPrivateStepWarning", "declared_budget"]


def declared_budget(transformer: Any) -> tuple[float, float] | None:
    """The ``(epsilon, delta)`` a fitted transformer declares it spent, or None.

    A transformer declares a budget with ``epsilon_spent_`` (and ``delta_``), as skdpgraph
    estimators do, or, like diffprivlib's, with an ``epsilon`` parameter next to an
    ``accountant`` (and optionally ``delta``).

    Parameters
    ----------
    transformer : object
        A fitted transformer.

    Returns
    -------
    budget : tuple of (float, float) or None
        ``(epsilon, delta)``, or None when the transformer declares no budget.
    """
    if hasattr(transformer, "epsilon_spent_"):
        return float(transformer.epsilon_spent_), float(getattr(transformer, "delta_", 0.0))
    if hasattr(transformer, "epsilon") and hasattr(transformer, "accountant"):
        return float(transformer.epsilon), float(getattr(transformer, "delta", 0.0) or 0.0)
    return None


class NodeFeatureTransformer(TransformerMixin, BaseEstimator):
    """Apply a tabular transformer (``StandardScaler``, ``PCA``...) to a graph's node features.

    ``transform`` returns :class:`~skdpgraph.Nodes` of a new :class:`~skdpgraph.Graph` with
    the same edges and the transformed features of *all* its nodes, so graph estimators
    downstream in a ``Pipeline`` still see the neighbours of the nodes they classify.

    Parameters
    ----------
    transformer : transformer
        Any scikit-learn transformer; it is cloned and fitted on the feature rows of the
        nodes passed to ``fit``.
    public_features : bool or "auto", default=False
        Declare the node features public (e.g. with edge-level privacy, where only the edges
        are protected). ``False``: fitting a transformer that declares no DP budget of its
        own warns that this step is not private. ``"auto"``: public exactly where the
        fitted pipeline's guarantee leaves the features public (edge level), as
        :func:`~skdpgraph.model_selection.privacy_spent` decides from the fitted models;
        it does not warn.

    Attributes
    ----------
    transformer_ : transformer
        The fitted clone.
    privacy_budget_ : tuple of (float, float) or None
        ``(epsilon, delta)`` the fitted transformer declares (see :func:`declared_budget`);
        None if it declares none.
    n_features_in_ : int

    Notes
    -----
    The transformer is fitted on the nodes given to ``fit`` (the training nodes in a
    pipeline), as scikit-learn preprocessing is, so no statistic of the test nodes leaks
    into training; it is then applied to every node of the graph.

    Transductive use: all ``Nodes`` of one source graph are mapped to Nodes of *one*
    transformed graph, whose ``uid`` is derived from the source graph's ``uid`` and this
    fit. An estimator fitted on the transformed training nodes therefore recognises the
    transformed test nodes as its training graph. The transformed graph of the last source
    graph is cached (it is never pickled; after unpickling it is rebuilt with the same
    ``uid``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdpgraph import Graph
    >>> g = Graph([[0, 1], [1, 2]], np.array([[0.0], [1.0], [2.0]]))
    >>> step = NodeFeatureTransformer(StandardScaler(), public_features=True)
    >>> train = step.fit_transform(g.nodes([0, 1]))
    >>> test = step.transform(g.nodes([2]))
    >>> test.graph is train.graph, test.graph.num_edges
    (True, 4)
    >>> np.asarray(test).round(2).tolist()
    [[3.0]]
    """

    def __init__(self, transformer, *, public_features=False):
        self.transformer = transformer
        self.public_features = public_features

    def fit(self, X: Any, y: Any = None) -> NodeFeatureTransformer:
        """Fit the transformer on the feature rows of the nodes ``X``."""
        nodes = check_nodes(X, type(self).__name__)
        self.transformer_ = clone(self.transformer).fit(nodes.graph.x[nodes.index], y)
        self.privacy_budget_ = declared_budget(self.transformer_)
        self.n_features_in_ = nodes.graph.num_features
        self.fit_token_ = uuid.uuid4().hex
        self._cache = None
        if self.privacy_budget_ is None and self.public_features is False:
            warnings.warn(
                f"NodeFeatureTransformer fitted {type(self.transformer).__name__} on private node "
                "features without a privacy guarantee: this step is not differentially private. "
                "Use a DP transformer, or pass public_features=True if the features are public.",
                NonPrivateStepWarning, stacklevel=2,
            )
        return self

    def transform(self, X: Any) -> Nodes:
        """Nodes ``X`` as Nodes of the transformed graph (same edges, new features)."""
        check_is_fitted(self)
        nodes = check_nodes(X, type(self).__name__)
        if nodes.graph.num_features != self.n_features_in_:
            raise ValueError(
                f"X has {nodes.graph.num_features} features, but NodeFeatureTransformer is "
                f"expecting {self.n_features_in_} features as input."
            )
        return self._transformed_graph(nodes.graph).nodes(nodes.index)

    def _transformed_graph(self, graph: Graph) -> Graph:
        cache = getattr(self, "_cache", None)
        if cache is not None and cache[0] == graph.uid:
            return cache[1]
        features = self.transformer_.transform(graph.x)
        transformed = Graph(graph.edge_index, features, num_nodes=graph.num_nodes,
                            directed=graph.directed)
        transformed.uid = hashlib.sha256(f"{graph.uid}:{self.fit_token_}".encode()).hexdigest()[:32]
        self._cache = (graph.uid, transformed)
        return transformed

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state.pop("_cache", None)  # holds a whole graph's features: never pickled
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
