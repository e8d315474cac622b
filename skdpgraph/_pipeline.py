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


def _resolve_public_features(public_features: bool | str, steps: tuple) -> bool:
    """``public_features``, with ``"auto"`` read from the final estimator's guarantee."""
    if isinstance(public_features, str):
        if public_features != "auto":
            raise ValueError(f"make_graph_pipeline: public_features must be True, False or "
                             f"'auto'; got {public_features!r}.")
        final = steps[-1] if steps else None
        return bool(getattr(final, "_features_public", False))
    return bool(public_features)


def make_graph_pipeline(*steps: Any, public_features: bool | str = "auto", memory: Any = None,
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
    public_features : bool or "auto", default="auto"
        Passed to every ``NodeFeatureTransformer``: whether the node features are public.
        ``"auto"`` follows the final estimator's guarantee: public where it states them
        public (``GAPClassifier`` and ``ProGAPClassifier`` at ``privacy_level="edge"``,
        ``DPNodeClassifier`` at ``unit="edge"``, where only the edges are protected),
        private everywhere else. It is read from the final estimator's parameters when the
        pipeline is built.
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
    transformer declares a DP budget of its own or the features are public, and
    :func:`~skdpgraph.model_selection.privacy_spent` counts such a step as ``inf``.

    ``"auto"`` is resolved once, from the final estimator as passed here. A search that
    changes the privacy unit (``gapclassifier__privacy_level``, ``dpnodeclassifier__unit``)
    does not re-resolve it: for such a search pass ``public_features=False``, which is
    right for every unit.

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdpgraph import GAPClassifier, make_graph_pipeline
    >>> pipe = make_graph_pipeline(StandardScaler(), GAPClassifier(epsilon=4.0))
    >>> [name for name, _ in pipe.steps]
    ['standardscaler', 'gapclassifier']
    >>> pipe.named_steps["standardscaler"]  # edge level (the default): features are public
    NodeFeatureTransformer(public_features=True, transformer=StandardScaler())
    >>> node_level = make_graph_pipeline(StandardScaler(),
    ...                                  GAPClassifier(privacy_level="node", epsilon=4.0))
    >>> node_level.named_steps["standardscaler"].public_features
    False
    """
    public = _resolve_public_features(public_features, steps)
    wrapped = [_graph_step(step, public) for step in steps]
    return Pipeline(list(zip(_step_names(steps), wrapped)), memory=memory, verbose=verbose)
