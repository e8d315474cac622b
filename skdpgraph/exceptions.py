"""The exceptions and warnings skdpgraph raises, in one public module.

Tracebacks name them here (``skdpgraph.exceptions.PrivacyBudgetError``) whatever module
raised them; each is also importable where it is used (``skdpgraph.PrivacyBudgetError``,
``skdpgraph.privacy.PrivacyBudgetError``, ``skdpgraph.preprocessing.NonPrivateStepWarning``).
"""

__all__ = ["EdgesDroppedWarning", "GraphDroppedWarning", "NonPrivateStepWarning",
           "PrivacyBudgetError"]


class PrivacyBudgetError(ValueError):
    """The requested privacy budget cannot be met, or could not be evaluated.

    Raised before any private data is read: by ``fit`` when the plan exceeds ``epsilon`` or
    the accountant cannot evaluate it, and by a :class:`~skdpgraph.PrivacyLedger` whose cap a
    fit or release would exceed.
    """


class NonPrivateStepWarning(UserWarning):
    """A pipeline step learned from private data without a privacy guarantee."""


class GraphDroppedWarning(UserWarning):
    """An estimator that uses edges received a plain array, so it sees a graph without edges.

    Something turned the :class:`~skdpgraph.Nodes` into a feature array on the way, and
    the edges were lost: a scikit-learn transformer (``StandardScaler``, ``PCA``...)
    before the estimator in a ``Pipeline`` (wrap it in
    :class:`~skdpgraph.preprocessing.NodeFeatureTransformer`, or build the pipeline with
    :func:`~skdpgraph.make_graph_pipeline`), a meta-estimator or tool that converts ``X``
    to an array (``BaggingClassifier``, ``permutation_importance``), or the caller.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from skdpgraph import GAPClassifier, GraphDroppedWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", GraphDroppedWarning)  # make the trap an error
    ...     GAPClassifier().fit(np.eye(4), [0, 1, 0, 1])
    Traceback (most recent call last):
    ...
    skdpgraph.exceptions.GraphDroppedWarning: GAPClassifier.fit received a plain ...
    """


class EdgesDroppedWarning(UserWarning):
    """A :class:`~skdpgraph.Graph` was given self-loops or the same edge more than once.

    A graph holds at most one edge per ordered pair of nodes and no self-loops, so these
    are dropped; the warning says how many. An undirected graph given both directions of
    an edge (as PyG stores it) holds one edge, and nothing is dropped.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from skdpgraph import EdgesDroppedWarning, Graph
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     graph = Graph([[0, 0, 1], [0, 1, 0]], np.eye(2))  # a self-loop, and 0-1 both ways
    >>> [str(w.message) for w in caught]  # doctest: +ELLIPSIS
    ['Graph: dropped 1 self-loop(s) of the 3 edges given; ...']
    """
