"""What every skdpgraph classifier shares: the fit/predict plumbing and the privacy spine.

``fit`` always runs the same sequence, so that no estimator can reorder it:

1. validate the data (``classes_``, ``n_features_in_``; duplicate nodes refused where the
   unit is a node; labels outside a public ``classes`` refused);
2. resolve the default delta from the class's count of protected units;
3. build the privacy plan from public quantities only and check it against the budget
   (:func:`~skdpgraph.privacy.check_plan`) *before* any private data is read;
4. train with independent random streams (:class:`~skdpgraph._random.RandomStreams`);
5. build ``privacy_`` from the plan plus what the class declares (unit, relation,
   inference, assumptions, what is not covered).

Any exception leaves the estimator unfitted, whatever was fitted before. Noisy outputs
after ``fit`` go through :meth:`BaseDPClassifier._release`, which returns an
already-paid cached release of the same graph (or of the fitted graph, for a graph marked
with :meth:`BaseDPClassifier.mark_fitted_graph`) or makes a new release with fresh noise
and records it in ``privacy_.releases``.

One API across estimators (the rules every estimator follows):

- ``epsilon`` is the total budget of every estimator (RGNN splits it between features and
  labels); ``delta=None`` resolves to ``delta_``.
- Layer counts: ``num_layers`` counts the layers of the estimator's main network (linear
  layers of an MLP, message-passing layers of a GNN), as PyG's ``num_layers``;
  ``encoder_layers`` counts the linear layers of a feature encoder that runs before any
  message passing (GAP, FDP). The type of graph convolution is ``conv``.
- ``validation_fraction`` holds out that fraction of the training nodes and keeps the
  epoch with the best accuracy on them. The default ``"auto"`` holds out 10% exactly where
  that costs no privacy: where the labels are public (GAP's edge level) or the fit is not
  private (``epsilon=inf`` without a given ``noise_multiplier``), and only from 500
  training nodes on; elsewhere it holds out nothing. Where the labels are protected an
  explicit fraction is refused because it would read them without accounting. ``None``:
  no split.
- ``history_`` is a list of per-epoch records with the keys ``stage``, ``epoch``,
  ``loss``, ``train_accuracy``, ``validation_accuracy`` (None without a validation split)
  and ``epsilon`` (spent so far, from the plan's accountant: an upper bound; without a
  progress bar or a validation split, the accountant's cheaper bound on the integer RDP
  orders, capped by the fit's epsilon, so the fit's last epoch shows ``epsilon_spent_``),
  in training order over the stages: ``pandas.DataFrame(clf.history_)`` gives one table.
  It keeps only what the guarantee covers: ``loss`` and ``train_accuracy``, computed
  without noise on the training data, are None where that data is protected.
- ``private_diagnostics=True`` keeps them anyway (a diagnostic for data you may look at);
  ``privacy_.not_covered`` then states it. Where the history reads only public data or
  noisy releases (``epsilon=inf``, GAP's edge level, RGNN's randomised reports) it is kept
  whole either way.
- ``verbose=True`` shows one progress bar per stage with the loss and running epsilon.
- ``device`` is "auto", "cpu", "cuda" or "cuda:<index>" (or a ``torch.device``); the
  resolved device is ``device_``.
- Fitted state ends with ``_``; private fitted state is ``_name_`` (the plan is
  ``_plan_``), so that a new ``fit`` removes all of it.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from skdpgraph._random import RandomStreams, release_streams
from skdpgraph._validation import (
    check_distinct_nodes, check_fit_data, check_predict_nodes, default_delta, fit_context,
    object_labels,
)
from skdpgraph.estimators._holdout import ValidationSplit
from skdpgraph.estimators._privacy_record import (
    HISTORY_NOT_COVERED, PRIVATE_HISTORY_KEYS, VERBOSE_NOT_COVERED, PrivacyRecord,
)
from skdpgraph.estimators._releases import ReleaseCache
from skdpgraph.graph import Graph, Nodes
from skdpgraph.privacy import (
    DPSGDPlan, OrderHint, PrivacyPlan, Spend, check_plan, plan_dpsgd, release_event,
    reserve_spend, spend_of_report, steps_for_epochs,
)
from skdpgraph.training import (Callback, EpsilonTracker, Generators, OptimizerSettings,
                                ProgressBar, TrainingStage)

#: Noisy releases on graphs other than the fitted one kept in the cache, per kind.
_OTHER_RELEASES_KEPT = 2

__all__ = ["BaseDPClassifier", "resolve_device", "HISTORY_NOT_COVERED", "PRIVATE_HISTORY_KEYS",
           "VERBOSE_NOT_COVERED"]


def resolve_device(device: str | torch.device) -> torch.device:
    """The torch device an estimator's ``device`` parameter names.

    Parameters
    ----------
    device : str or torch.device
        ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"``,
        ``"cuda:<index>"`` or a ``torch.device``.

    Returns
    -------
    torch.device

    Raises
    ------
    ValueError
        If the string names no device, if it asks for CUDA on a machine without CUDA, or
        for a CUDA index the machine does not have.

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    """
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device={device!r} is not a device: use 'auto', 'cpu', 'cuda' or "
                         "'cuda:<index>'.") from exc
    if resolved.type != "cuda":
        return resolved
    if not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but CUDA is not available on this machine; use "
                         "device='cpu' or device='auto'.")
    count = torch.cuda.device_count()
    if resolved.index is not None and resolved.index >= count:
        raise ValueError(f"device={device!r} but this machine has {count} CUDA device(s), "
                         f"cuda:0 to cuda:{count - 1}.")
    return resolved


def plan_poisson_epochs(estimator: Any, num_examples: int, context: str, *,
                        epochs: int | None = None) -> DPSGDPlan:
    """The DP-SGD plan of ``epochs`` (by default ``estimator.epochs``) passes over
    ``num_examples`` training examples in Poisson batches of expected size
    ``estimator.batch_size``, calibrated to the estimator's budget, ``delta_``,
    ``max_grad_norm`` and ``noise_multiplier``."""
    epochs = estimator.epochs if epochs is None else epochs
    return plan_dpsgd(
        epsilon=estimator._budget(), delta=estimator.delta_, sampling="poisson",
        num_examples=num_examples, batch_size=estimator.batch_size,
        steps=steps_for_epochs(epochs, num_examples, estimator.batch_size),
        max_grad_norm=estimator.max_grad_norm, noise_multiplier=estimator.noise_multiplier,
        context=context)


class BaseDPClassifier(ValidationSplit, PrivacyRecord, ReleaseCache, ClassifierMixin,
                       BaseEstimator):
    """Base class: the fit sequence, probabilities, the privacy record and its releases.

    Subclasses implement

    - ``_plan(nodes, y) -> PrivacyPlan``: from public quantities only (sizes, parameters);
    - ``_train(nodes, y, plan, streams)``: sets the fitted model; draws every random
      number from ``streams``;
    - ``_predict_logits(nodes) -> Tensor``;
    - ``_unit_and_relation(graph) -> (unit, relation)`` and ``_inference(plan) -> str``;

    and may override ``_protected_units(nodes)`` (for the default delta),
    ``_assumptions(plan, nodes)``, ``_not_covered(plan)``, ``_budget()``,
    ``_check_data(nodes, y)``, and, where an example is not a node, ``_fit_data`` and
    ``_predict_data`` (``_unit_and_relation`` then receives None).
    """

    #: Bootstrap counts reach ``fit`` as ``sample_weight`` (checked there) also with
    #: metadata routing on: a meta-estimator that consumes no weights repeats array rows.
    __metadata_request__fit = {"sample_weight": True}
    #: What ``fit`` trains on: ``"nodes"`` (the node table of one graph) or ``"graphs"``
    #: (a collection of graphs); ``skdpgraph.all_estimators(data=...)`` filters on it.
    _data_kind: str = "nodes"
    #: Whether the privacy unit is a node: then one node may appear only once in ``fit``.
    _node_unit: bool = True
    #: Whether the model reads edges: then a plain array ``X`` (a graph without edges)
    #: raises a :class:`~skdpgraph.GraphDroppedWarning`.
    _uses_edges: bool = True
    #: Whether the plan's sampling rate, steps or noise depend on the number of training
    #: nodes (then that number is stated as public).
    _training_size_public: bool = True
    #: Whether ``history_``'s loss and accuracy read protected data without noise (then
    #: they are kept only with ``private_diagnostics=True``, stated as not covered).
    _history_on_private_data: bool = True

    # ------------------------------------------------------------------ fit
    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> BaseDPClassifier:
        """Fit on the labelled nodes ``X`` (a :class:`Nodes` or a 2-D array) and labels ``y``.

        ``sample_weight`` may only select rows: 0 drops a node, 1 keeps it; a larger
        weight (one node counted several times, as bootstrap resampling does) is
        refused. With metadata routing on, ``fit`` requests ``sample_weight`` by default,
        so that a meta-estimator that resamples (``BaggingClassifier``) passes its counts
        here rather than repeating rows of an array.

        Returns
        -------
        self

        Raises
        ------
        PrivacyBudgetError
            If the budget cannot be met; raised before any private data is read. On any
            error the estimator is left unfitted.
        """
        self._reset_fitted()
        reservation = None
        try:
            nodes, encoded, plan, epsilon = self._checked_plan(X, y, sample_weight)
            reservation = reserve_spend("fit", type(self).__name__,
                                        self._planned_spend(plan, epsilon, nodes))
            streams = RandomStreams(self.random_state)
            with streams.initialisation():
                self._train(nodes, encoded, plan, streams)
            self._check_finite_model()
            del self._planned_epsilon_  # history's cap; the report states it
            self._set_report(plan, epsilon, nodes)
            reservation.commit(spend_of_report(self.privacy_))
        except BaseException:
            if reservation is not None:
                reservation.cancel()
            self._reset_fitted()
            raise
        return self

    def _checked_plan(self, X: Any, y: Any, sample_weight: Any = None
                      ) -> tuple[Nodes, np.ndarray, PrivacyPlan, float]:
        """Steps 1-3 of ``fit``: ``(nodes, encoded labels, plan, epsilon)``, before any
        private data is read: the data checks, the default delta, the plan from public
        quantities and its check against the budget. Sets ``delta_``, ``device_``,
        ``_plan_`` and ``_planned_epsilon_``;
        :func:`~skdpgraph.model_selection.planned_privacy` stops here."""
        nodes, encoded = self._fit_data(X, y, sample_weight)
        self._check_data(nodes, encoded)
        self.device_ = resolve_device(self.device)
        self.delta_ = self._resolve_delta(nodes)
        self._plan_ = plan = self._plan(nodes, encoded)
        self._planned_epsilon_ = epsilon = check_plan(
            plan, self._budget(), self.delta_, context=type(self).__name__)
        return nodes, encoded, plan, epsilon

    def _fit_data(self, X: Any, y: Any, sample_weight: Any = None) -> tuple[Nodes, np.ndarray]:
        """Step 1: ``(training examples, encoded labels)``; sets ``classes_`` and
        ``n_features_in_``. Nodes here; an estimator whose examples are whole graphs
        overrides it."""
        nodes, encoded = check_fit_data(self, X, y, sample_weight)
        if self._node_unit:
            check_distinct_nodes(nodes, type(self).__name__)
        return nodes, encoded

    def _planned_spend(self, plan: PrivacyPlan, epsilon: float, nodes: Nodes) -> Spend:
        """The training release as the ledgers see it before training (public quantities)."""
        unit, relation = self._unit_and_relation(getattr(nodes, "graph", None))
        if not plan.private:
            return Spend(math.inf, 0.0, unit, relation)
        return Spend(float(epsilon), float(self.delta_), unit, relation, plan.dp_event())

    def _reset_fitted(self) -> None:
        """Remove every fitted attribute and cache (every name ending in ``_``).

        Fitted state, public or private, is named with a trailing underscore
        (``module_``, ``_release_cache_``), so this leaves the constructor's parameters and
        scikit-learn's own bookkeeping alone.
        """
        for name in list(vars(self)):
            if name.endswith("_") and not name.startswith("__"):
                delattr(self, name)

    def _check_finite_model(self) -> None:
        """Refuse a fitted torch model with non-finite parameters: training diverged."""
        for name, value in vars(self).items():
            if (name.endswith("_") and isinstance(value, torch.nn.Module)
                    and not all(bool(torch.isfinite(p).all()) for p in value.parameters())):
                raise FloatingPointError(
                    f"{type(self).__name__}: training diverged: {name} has non-finite "
                    f"parameters. Lower the learning rate (lr={getattr(self, 'lr', None)}) or "
                    "scale the features to a moderate range (e.g. StandardScaler).")

    def _budget(self) -> float:
        """The total budget as a Python float: the one conversion of ``epsilon``.

        Every plan reads the budget here, so that a NumPy scalar (``np.float32(4)``) is
        the same budget as ``4.0`` (its float32 arithmetic could otherwise plan a spend a
        rounding error above its own budget).
        """
        return float(self.epsilon)

    def _resolve_delta(self, nodes: Nodes) -> float:
        """``delta``, or the default rule below 1/N of the protected units (0 when none)."""
        if getattr(self, "delta", None) is not None:
            return float(self.delta)
        units = self._protected_units(nodes)
        return 0.0 if units == 0 else default_delta(units)

    def _protected_units(self, nodes: Nodes) -> int:
        """How many units the guarantee protects (the default delta is below 1/this)."""
        return len(nodes)

    def _check_data(self, nodes: Nodes, y: np.ndarray) -> None:
        """Estimator-specific checks of the training data."""

    def _plan(self, nodes: Nodes, y: np.ndarray) -> PrivacyPlan:
        raise NotImplementedError

    def _train(self, nodes: Nodes, y: np.ndarray, plan: PrivacyPlan,
               streams: RandomStreams) -> None:
        raise NotImplementedError

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        raise NotImplementedError

    # ------------------------------------------------------------------ training stages
    def _stage_options(self, plan: PrivacyPlan, stage: str, streams: RandomStreams,
                       *callbacks: Callback | None, name: str | None = None,
                       lr: float | None = None) -> dict:
        """The arguments of :func:`~skdpgraph.training.train_dpsgd` that every stage shares.

        Adam at ``lr`` (by default the estimator's ``lr``), fresh batch and noise streams,
        the stage's ``name`` in ``history_`` (``stage`` by default) and its callbacks: the
        running epsilon of the plan's run ``stage``
        (:meth:`~skdpgraph.privacy.PrivacyPlan.running_epsilon`; the cheaper bound on the
        integer orders and, as its cap, the fit's epsilon from the budget check), then
        ``callbacks`` (None ones skipped), then the progress bar where ``verbose``.
        """
        name = stage if name is None else name
        description = f"{type(self).__name__} {name}"
        running = functools.partial(plan.running_epsilon, self.delta_, stage)
        tracker = EpsilonTracker(
            functools.partial(running, hint=OrderHint()),
            bound_at=functools.partial(running, hint=OrderHint(), integer_orders=True),
            cap=getattr(self, "_planned_epsilon_", None))
        bar = (ProgressBar(description),) if self.verbose else ()
        return dict(optimizer=OptimizerSettings(lr=self.lr if lr is None else lr),
                    generators=Generators(streams.torch("batches"),
                                          streams.torch("noise", self.device_)),
                    callbacks=(tracker, *(c for c in callbacks if c), *bar),
                    stage=TrainingStage(name, description))

    # ------------------------------------------------------------------ releases
    def _release(self, graph: Graph, kind: str, make: Callable[[RandomStreams], Any],
                 cost: Callable[[], dict], *, keep_in_pickle: bool = True) -> Any:
        """The release ``kind`` on ``graph``: cached if it was released before (:meth:`_cached`).

        Otherwise ``make(streams)`` computes it with fresh, independent streams, and the
        release is appended to ``privacy_.releases`` with ``cost()`` (a dict with at least
        ``epsilon`` and ``delta``); it is cached, and pickled with the estimator unless
        ``keep_in_pickle=False`` (as for :meth:`_cache_release`).
        """
        cached = self._cached(graph, kind)
        if cached is not None:
            return cached
        record = {"kind": kind, "num_nodes": graph.num_nodes, **cost()}
        reservation = reserve_spend("release", type(self).__name__, Spend(
            float(record["epsilon"]), float(record["delta"]), self.privacy_.unit,
            self.privacy_.neighbouring_relation, release_event(record)), detail=kind)
        try:
            streams = release_streams(self.random_state, graph.fingerprint())
            value = make(streams)
        except BaseException:
            reservation.cancel()
            raise
        reservation.commit()
        self.privacy_ = self.privacy_.with_release(**record)
        cache = getattr(self, "_release_cache_", [])
        kept = [e for e in cache if e["paid_in_fit"] or e["kind"] != kind]
        earlier = [e for e in cache if not e["paid_in_fit"] and e["kind"] == kind]
        self._release_cache_ = kept + earlier[len(earlier) - _OTHER_RELEASES_KEPT + 1:] + [
            {"uid": graph.uid, "fingerprint": graph.fingerprint(), "kind": kind, "value": value,
             "paid_in_fit": False, "keep_in_pickle": keep_in_pickle}]
        return value

    def __getstate__(self) -> dict:
        # Fingerprints identify the private data exactly: never pickled. After loading, a
        # cached release serves its graph's random uid, and a release paid in fit serves a
        # graph the user marks as the fitted one (public sizes checked): no content is read.
        # A release the epsilon does not fully cover stays in memory.
        state = dict(super().__getstate__())  # a copy: never strip the live estimator
        if "_release_cache_" in state:
            state["_release_cache_"] = [
                {**entry, "fingerprint": None}
                for entry in state["_release_cache_"] if entry["keep_in_pickle"]]
        return state

    # ------------------------------------------------------------------ predict
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of the nodes ``X``, shape (n_nodes, n_classes)."""
        check_is_fitted(self)
        nodes = self._predict_data(X)
        with torch.no_grad():
            logits = self._predict_logits(nodes)
        # In float64: float32 rows sum to one only within ~1e-7, which scikit-learn's
        # log-loss check reports as "y_prob values do not sum to one".
        probabilities = torch.softmax(logits.detach().cpu().double(), dim=-1).numpy()
        bad = int((~np.isfinite(probabilities)).any(axis=1).sum())
        if bad:
            raise FloatingPointError(
                f"{type(self).__name__}.predict_proba: the model outputs non-finite values for "
                f"{bad} of {len(probabilities)} queried nodes: their features (or their "
                "neighbours') are far larger than in training; scale them as in training.")
        return probabilities

    def _predict_data(self, X: Any) -> Nodes:
        """The examples of ``X`` to predict, checked against the fit (nodes here)."""
        return check_predict_nodes(self, X)

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class of each node in ``X``."""
        probabilities = self.predict_proba(X)
        return self.classes_[np.argmax(probabilities, axis=1)]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Accuracy on ``(X, y)``; labels outside ``classes_`` raise a ``ValueError``."""
        check_is_fitted(self)
        y = np.asarray(y)
        if y.dtype == object:  # e.g. ints from a table with empty label cells
            y = object_labels(y, f"{type(self).__name__}.score")
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if len(unseen):
            raise ValueError(
                f"{type(self).__name__}.score: y has labels never seen in fit: "
                f"{unseen.tolist()[:10]} (outside classes_ = {self.classes_.tolist()[:10]})."
            )
        return super().score(X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.poor_score = True  # DP noise: no accuracy promise on toy data
        return tags
