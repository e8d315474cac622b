"""Warnings of skdpgraph that are not tied to one module."""

__all__ = ["GraphDroppedWarning"]


class GraphDroppedWarning(UserWarning):
    """An estimator that uses edges received a plain array, so it sees a graph without edges.

    The usual cause is a scikit-learn transformer (``StandardScaler``, ``PCA``...) placed
    before the estimator in a ``Pipeline``: it turns the :class:`~skdpgraph.Nodes` into a
    feature array and the edges are lost. Wrap such transformers in
    :class:`~skdpgraph.preprocessing.NodeFeatureTransformer`, or build the pipeline with
    :func:`~skdpgraph.make_graph_pipeline`.

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
    skdpgraph._exceptions.GraphDroppedWarning: GAPClassifier.fit received a plain ...
    """
