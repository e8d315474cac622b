"""``make_graph_pipeline``: scikit-learn's ``make_pipeline`` that keeps the graph."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sklearn.pipeline import Pipeline

from skdpgraph.preprocessing import NodeFeatureTransformer

__all__ = ["make_graph_pipeline"]


def _graph_step(step: Any, public_features: bool | str) -> Any:
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


def _check_public_features(public_features: bool | str) -> bool | str:
    if isinstance(public_features, str) and public_features != "auto":
        raise ValueError(f"make_graph_pipeline: public_features must be True, False or "
                         f"'auto'; got {public_features!r}.")
    return public_features if isinstance(public_features, str) else bool(public_features)


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
        ``"auto"`` follows the guarantee of the fitted pipeline:
        :func:`~skdpgraph.model_selection.privacy_spent` counts the step as free where the
        fitted estimator's unit leaves the features public (edge level, where only the edges
        are protected) and as not private everywhere else. It is decided from the fitted
        models, so a search over the privacy unit is counted right for every candidate.
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
    estimator's budget; :func:`~skdpgraph.model_selection.privacy_spent` counts such a step
    as ``inf``. With ``public_features=False`` ``NodeFeatureTransformer`` also warns about it
    with :class:`~skdpgraph.preprocessing.NonPrivateStepWarning` when it is fitted, unless
    the transformer declares a DP budget of its own.

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdpgraph import GAPClassifier, make_graph_pipeline
    >>> pipe = make_graph_pipeline(StandardScaler(), GAPClassifier(epsilon=4.0))
    >>> [name for name, _ in pipe.steps]
    ['standardscaler', 'gapclassifier']
    >>> pipe.named_steps["standardscaler"]
    NodeFeatureTransformer(public_features='auto', transformer=StandardScaler())
    """
    public = _check_public_features(public_features)
    wrapped = [_graph_step(step, public) for step in steps]
    return Pipeline(list(zip(_step_names(steps), wrapped)), memory=memory, verbose=verbose)
