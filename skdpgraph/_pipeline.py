"""``make_graph_pipeline``: scikit-learn's ``make_pipeline`` that keeps the graph."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sklearn.pipeline import Pipeline

from skdpgraph.preprocessing import NodeFeatureTransformer

__all__ = ["make_graph_pipeline"]


def _graph_step(step: Any, public_features: bool) -> Any:
    """``step`` wrapped in a NodeFeatureTransformer if it is a plain tabular transformer."""
    if step is None or isinstance(step, (str, NodeFeatureTransformer)):
        return step  # "passthrough", or already graph-aware
    if not hasattr(step, "transform"):
        return step  # the final estimator
    return NodeFeatureTransformer(step, public_features=public_features)


def _step_names(steps: tuple) -> list[str]:
    """Lower-case class names, numbered when repeated (as ``make_pipeline`` names them)."""
    names = [type(step).__name__.lower() if not isinstance(step, str) else step
             for step in steps]
    repeated = {name for name, count in Counter(names).items() if count > 1}
    seen: Counter = Counter()
    out = []
    for name in names:
        seen[name] += 1
        out.append(f"{name}-{seen[name]}" if name in repeated else name)
    return out


def make_graph_pipeline(*steps: Any, public_features: bool = False, memory: Any = None,
                        verbose: bool = False) -> Pipeline:
    """A ``Pipeline`` of ``steps`` in which tabular transformers keep the graph.

    In ``sklearn.pipeline.make_pipeline(StandardScaler(), GAPClassifier())`` the scaler turns
    the :class:`~skdpgraph.Nodes` into a feature array, and the estimator then sees a graph
    without edges (it warns with :class:`~skdpgraph.GraphDroppedWarning`). Here every step
    with a ``transform`` method is wrapped in
    :class:`~skdpgraph.preprocessing.NodeFeatureTransformer`, which transforms the node
    features and keeps the edges; the final estimator and steps already wrapped are left
    as they are.

    Parameters
    ----------
    *steps : estimators
        Transformers followed by a final estimator, as for ``make_pipeline``; ``None`` and
        ``"passthrough"`` are kept.
    public_features : bool, default=False
        Passed to every ``NodeFeatureTransformer``: declare the node features public (e.g.
        with edge-level privacy, where only the edges are protected).
    memory : str or object with the joblib.Memory interface, default=None
        As for ``sklearn.pipeline.Pipeline``.
    verbose : bool, default=False
        As for ``sklearn.pipeline.Pipeline``.

    Returns
    -------
    pipeline : sklearn.pipeline.Pipeline
        An ordinary pipeline: it can be cloned, pickled and searched with ``GridSearchCV``.
        Steps are named after the lower-cased class of what the caller passed
        (``"standardscaler"``), so the scaler's own parameters are
        ``standardscaler__transformer__<name>``.

    Notes
    -----
    Privacy: a transformer fitted on private node features (a ``StandardScaler`` learns
    their mean and variance) is a step *without* a privacy guarantee, outside the
    estimator's budget. ``NodeFeatureTransformer`` warns about it with
    :class:`~skdpgraph.preprocessing.NonPrivateStepWarning` when it is fitted, unless the
    transformer declares a DP budget of its own or ``public_features=True``.

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdpgraph import GAPClassifier, make_graph_pipeline
    >>> pipe = make_graph_pipeline(StandardScaler(), GAPClassifier(epsilon=4.0),
    ...                            public_features=True)
    >>> [name for name, _ in pipe.steps]
    ['standardscaler', 'gapclassifier']
    >>> pipe.named_steps["standardscaler"]
    NodeFeatureTransformer(public_features=True, transformer=StandardScaler())
    """
    wrapped = [_graph_step(step, public_features) for step in steps]
    return Pipeline(list(zip(_step_names(steps), wrapped)), memory=memory, verbose=verbose)
