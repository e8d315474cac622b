"""Neighbour votes: public stacked logistic regressions around one Laplace release (edge level)."""

from __future__ import annotations

from numbers import Real

import numpy as np
import torch

from skdpgraph._random import RandomStreams
from skdpgraph._validation import DP_CONSTRAINTS, Interval, StrOptions
from skdpgraph.estimators._base import BaseDPClassifier
from skdpgraph.estimators._parameter_docs import fill_doc
from skdpgraph.estimators._vote_stages import (
    SELECTION_FOLDS, STAGE1_C_GRID, TiedVoteModel, cross_fit, feature_projection,
    fit_class_model, kfold, propagated_features, row_normalised_features, select,
    stage3_candidates, stage3_inputs, vote_rows,
)
from skdpgraph.graph import Graph, Nodes
from skdpgraph.privacy import NeighbourVotePlan, plan_neighbour_votes, release_neighbour_votes

__all__ = ["NeighbourVoteClassifier"]

#: The kind of the one release in ``privacy_.releases`` and the release cache.
_KIND = "neighbour_votes"
#: Smallest probability whose log stage 3 reads (log 0 would be -inf).
_FLOOR = 1e-6


@fill_doc
class NeighbourVoteClassifier(BaseDPClassifier):
    """Edge-level DP node classifier: stacked logistic regressions around one Laplace release.

    At edge level one edge is the unit and the node features and labels are public, so
    only what reads the edges costs budget. Three stages:

    1. a graph-free logistic regression on the row-normalised features (public);
    2. one private release, for every node of the graph at once, of the weighted sum
       over its neighbours of a class row (training nodes whose labels vote: their
       one-hot label; other nodes: stage 1's class probabilities squared and
       renormalised, so that more of each row's unit mass lands on one class), with
       Laplace noise of scale ``1 / epsilon`` per coordinate: each edge's contributions
       to its two end points' sums carry one row at most (half each, or all to one end,
       below), so adding or removing one edge moves the sums by at most 1 in L1 norm;
    3. a combination of each node's stage-1 log-probabilities (cross-fitted on the
       training nodes) and its noisy sum (raw and/or divided by its own total, never the
       true degree): post-processing of the release and public data. By default two
       weights shared by every class, which a few hundred training nodes fit without
       overfitting the noise; a logistic regression on the same inputs where held-out
       training nodes prefer it.

    With a hold-out (see ``validation_fraction``) and a finite ``epsilon``, the held-out
    training nodes do not vote with their labels: they receive the release as unlabelled
    nodes do and stage 3 is fitted on them alone. An edge between a label voter and
    another node then feeds only the other's sum, in full: each edge's two contributions
    together carry at most one row, so the noise scale is ``1 / epsilon`` and a voter's
    label arrives at twice the signal of an even split (the privacy-units guide has the
    weights).

    At ``epsilon=inf`` the graph is public, so stage 1 may also read the features
    propagated over two hops of the graph (SGC's ``D^{-1/2}(A+I)D^{-1/2}``, squared; on
    more than 256 features, their projection on the top 256 right singular vectors),
    where held-out training nodes prefer them.

    Stacked models on Laplace-noised neighbour class counts follow LPGNet (Kolluri et
    al., CCS 2022). The regularisation of both regressions and stage 3's input form are
    chosen on held-out training nodes (free: the labels are public), or by 3-fold
    cross-validation on the training nodes without a hold-out. Relation, unit, conditions
    and the cost of ``predict``: the neighbour-vote section of the privacy-units guide,
    repeated in ``privacy_``.

    Parameters
    ----------
    epsilon : float, default=8.0
        {{epsilon}}
        It is spent by the one release (pure DP: it holds at every delta). ``np.inf``
        releases the sums without noise.
    delta : float, default=None
        The delta stated in ``privacy_``, in ``(0, 1)``; the Laplace release is pure DP,
        so it changes no noise. None: 0.
    classes : array-like, default=None
        {{classes}}
    validation_fraction : float, "auto" or None, default="auto"
        Hold out this fraction (in ``(0, 1)``, rounded up, stratified where every class
        fits in both parts) of the training nodes to choose both regressions'
        regularisation, stage 1's input and stage 3's form; then refit on every training
        node.
        Free: the labels are public at this level. ``"auto"``: 10% from 500 training
        nodes on. Without a hold-out (None, or ``"auto"`` below 500 nodes) the choice is
        made by 3-fold cross-validation on the training nodes.
    random_state : int, RandomState instance or None, default=None
        {{random_state}}
    device : {"auto", "cpu", "cuda", "cuda:<index>"} or torch.device, default="auto"
        Resolved into ``device_`` as for the other estimators; the regressions run in
        scikit-learn on the CPU whatever the device. It does not change the guarantee.
    verbose : bool, default=False
        Print the choices of the regularisation and of stage 3's input form (read from
        public labels and the noisy release).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    epsilon_spent_ : float
        Epsilon of the release (``epsilon``; inf without noise).
    delta_ : float
    noise_scale_ : float or None
        The Laplace scale per coordinate; None for ``epsilon=inf``.
    stage1_input_ : str
        What stage 1 reads: ``"features"``, or ``"propagated"`` (only at ``epsilon=inf``).
    stage1_C_ : float
        Stage 1's chosen inverse regularisation.
    stage3_form_ : str
        Stage 3's chosen form: ``"tied"`` (two shared weights), or a logistic regression
        on ``"own"``, ``"raw"``, ``"normalised"`` or ``"both"`` inputs.
    stage3_C_ : float or None
        Stage 3's chosen inverse regularisation; None for ``"tied"``.
    stage3_weights_ : tuple of float or None
        The tied form's weights of the raw and the normalised sum; None otherwise.
    n_stage3_nodes_ : int
        Training nodes stage 3 is fitted on: the hold-out where there is one (their labels
        then do not vote), else every training node.
    privacy_ : PrivacyReport
    device_ : torch.device

    Examples
    --------
    >>> from skdpgraph import NeighbourVoteClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=300, random_state=0)
    >>> clf = NeighbourVoteClassifier(epsilon=4.0, random_state=0)
    >>> clf = clf.fit(data.nodes()[:200], data.y[:200])
    >>> clf.epsilon_spent_, clf.predict(data.nodes()[200:]).shape
    (4.0, (100,))
    """

    _parameter_constraints = {
        **{name: DP_CONSTRAINTS[name]
           for name in ("epsilon", "delta", "classes", "random_state", "device", "verbose")},
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), StrOptions({"auto"}),
                                None],
    }
    _node_unit = False  # one edge is the unit: a node may be listed twice
    _training_size_public = False  # the noise does not depend on the number of nodes
    _history_on_private_data = False  # no history: the regressions read public data

    def __init__(self, *, epsilon=8.0, delta=None, classes=None, validation_fraction="auto",
                 random_state=None, device="auto", verbose=False):
        self.epsilon = epsilon
        self.delta = delta
        self.classes = classes
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    # ------------------------------------------------------------------ the unit
    def _labels_public(self) -> bool:  # features and labels are public at edge level
        return True

    def _resolve_delta(self, nodes: Nodes) -> float:
        """``delta``, or 0: the Laplace release is pure DP."""
        return 0.0 if self.delta is None else float(self.delta)

    # ------------------------------------------------------------------ plan and training
    def _plan(self, nodes: Nodes, y: np.ndarray) -> NeighbourVotePlan:
        return plan_neighbour_votes(self._budget(), len(self.classes_), nodes.graph.directed)

    def _train(self, nodes: Nodes, y: np.ndarray, plan: NeighbourVotePlan,
               streams: RandomStreams) -> None:
        graph = nodes.graph
        self.noise_scale_ = plan.scale
        splits = self._selection_splits(y, streams)
        self._projection_ = None if plan.private else feature_projection(
            graph, streams.integer("init"))
        # without noise the split edges gain nothing: every training node votes and fits
        voters, fitted = self._vote_roles(
            nodes.index, splits, plan.private and bool(self._validation_size(len(y))))
        # a private fit makes its one release from the features; without noise each
        # stage-1 input is stacked and the held-out training nodes choose
        stacks = [self._stack(name, nodes, y, plan, streams, splits, voters, fitted)
                  for name in (("features",) if plan.private else ("features", "propagated"))]
        score, state, released = max(stacks, key=lambda stack: stack[0])  # first wins ties
        for name, value in state.items():
            setattr(self, name, value)
        self._cache_release(graph, _KIND, released)
        if self.verbose:
            print(f"{type(self).__name__}: stage 1 reads {self.stage1_input_!r}, C="
                  f"{self.stage1_C_:g}; stage 3 form={self.stage3_form_!r}, "
                  f"C={self.stage3_C_}, weights={self.stage3_weights_} (held-out accuracy "
                  f"{score:.3f})")

    def _stack(self, name: str, nodes: Nodes, y: np.ndarray, plan: NeighbourVotePlan,
               streams: RandomStreams, splits, voters: np.ndarray, fitted: np.ndarray):
        """Stages 1 to 3 on stage-1 input ``name``: ``(held-out accuracy, fitted attributes,
        release)``."""
        graph, k = nodes.graph, len(self.classes_)
        x = self._stage1_inputs(graph, name, nodes.index)
        c1 = select(STAGE1_C_GRID, lambda c, fit, held: np.mean(fit_class_model(
            x[fit], y[fit], c, k).predict_proba(x[held]).argmax(1) == y[held]), splits)
        stage1 = fit_class_model(x, y, c1, k)
        crossed = cross_fit(x, y, c1, k, kfold(len(y), streams.numpy("split")))
        own = np.log(np.clip(crossed, _FLOOR, None))
        rows = vote_rows(stage1.predict_proba(self._stage1_inputs(graph, name)))
        rows[nodes.index[fitted]] = vote_rows(crossed[fitted])  # as unlabelled nodes vote
        rows[nodes.index[voters]] = np.eye(k)[y[voters]]  # public labels vote for themselves
        receivers = np.ones(graph.num_nodes, bool)
        if len(fitted) < len(y):  # the label voters' own sums are not used
            receivers[nodes.index[voters]] = False
        released = release_neighbour_votes(graph, rows, plan, streams.numpy("noise"), receivers)
        sums = released[nodes.index]
        splits3 = splits if len(fitted) == len(y) else [
            (np.setdiff1d(fitted, part), part)
            for part in (fitted[p] for p in kfold(len(fitted), streams.numpy("split"),
                                                  SELECTION_FOLDS))]
        (form, c3), score = select(
            stage3_candidates(), lambda pair, fit, held: np.mean(_fit_stage3(
                pair, own[fit], sums[fit], y[fit], k).predict_proba(
                own[held], sums[held]).argmax(1) == y[held]), splits3, with_score=True)
        stage3 = _fit_stage3((form, c3), own[fitted], sums[fitted], y[fitted], k)
        state = {"stage1_input_": name, "stage1_C_": c1, "_stage1_": stage1,
                 "_receivers_": receivers,  # public: the training nodes and the hold-out
                 "n_stage3_nodes_": len(fitted), "stage3_form_": form, "stage3_C_": c3,
                 "_stage3_": stage3, "stage3_weights_": getattr(stage3, "weights", None)}
        return score, state, released

    @staticmethod
    def _vote_roles(index: np.ndarray, splits, holdout: bool) -> tuple[np.ndarray, np.ndarray]:
        """Positions of the training nodes whose labels vote, and of those stage 3 fits on.

        With a hold-out, the held-out nodes do not vote with their labels: they receive
        the release as unlabelled nodes do, and stage 3 fits on them alone, so that the
        label voters' edges may feed only the other end's sum (:func:`vote_weights
        <skdpgraph.privacy.vote_weights>`). Without one, every training node does both.
        """
        everyone = np.arange(len(index))
        if not holdout:
            return everyone, everyone
        voters, held = splits[0]
        fitted = held[~np.isin(index[held], index[voters])]  # a node listed twice votes
        return (voters, fitted) if len(fitted) >= 2 else (everyone, everyone)

    def _selection_splits(self, y: np.ndarray, streams: RandomStreams):
        """``(fit, held)`` position pairs the choices are scored on: the hold-out, else folds."""
        held = self._validation_size(len(y))
        if held:
            (fit, _), (out, _) = self._holdout(np.arange(len(y)), y, held, streams)
            return [(fit, out)]
        parts = kfold(len(y), streams.numpy("split"), SELECTION_FOLDS)
        return [(np.setdiff1d(np.arange(len(y)), part), part) for part in parts]

    def _stage1_inputs(self, graph: Graph, name: str | None = None, index=None):
        """Stage 1's inputs: the row-normalised ``"features"``, or their ``"propagated"``
        form (SGC), which reads the edges and is a candidate only when the graph is
        public (``epsilon=inf``)."""
        name = self.stage1_input_ if name is None else name
        if name == "propagated":
            return propagated_features(graph, index, self._projection_)
        return row_normalised_features(graph, index)

    def _rows(self, graph: Graph) -> np.ndarray:
        """Stage 1's sharpened class probabilities of every node of ``graph``: the released rows."""
        return vote_rows(self._stage1_.predict_proba(self._stage1_inputs(graph)))

    # ------------------------------------------------------------------ predict
    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        graph, plan = nodes.graph, self._plan_
        released = self._release(graph, _KIND, lambda streams: release_neighbour_votes(
            graph, self._rows(graph), plan, streams.numpy("noise")),
            lambda: plan.release_cost(self.delta_))
        own = np.log(np.clip(self._stage1_.predict_proba(
            self._stage1_inputs(graph, index=nodes.index)), _FLOOR, None))
        probabilities = self._stage3_.predict_proba(own, released[nodes.index])
        return torch.from_numpy(np.log(np.clip(probabilities, 1e-300, None)))

    # ------------------------------------------------------------------ report
    def _unit_and_relation(self, graph: Graph) -> tuple[str, str]:
        return self._plan_.unit, self._plan_.relation

    def _inference(self, plan: NeighbourVotePlan) -> str:
        if not plan.private:
            return "not private: predict reads the noise-free neighbour sums."
        return (f"predict on the fitted graph reuses the release paid in fit (no further "
                f"cost); on any other graph it makes one new release of that graph's sums "
                f"with fresh noise (scale {plan.scale:.4g}), recorded in privacy_.releases at "
                f"epsilon {plan.epsilon():.4g}.")

    def _assumptions(self, plan: NeighbourVotePlan, nodes: Nodes) -> tuple[str, ...]:
        delta = (("delta is stated but unused: the release is pure DP",)
                 if plan.private and self.delta is not None else ())
        return plan.assumptions() + delta


class _RegressionStage3:
    """Stage 3 as a logistic regression on :func:`stage3_inputs` of one form."""

    def __init__(self, form: str, model) -> None:
        self.form, self.model = form, model

    def predict_proba(self, own: np.ndarray, released: np.ndarray) -> np.ndarray:
        return self.model.predict_proba(stage3_inputs(own, released, self.form))


def _fit_stage3(candidate: tuple, own: np.ndarray, released: np.ndarray, y: np.ndarray,
                num_classes: int):
    """Stage 3 fitted on one ``(form, C)`` candidate of :func:`stage3_candidates`."""
    form, c = candidate
    if form == "tied":
        return TiedVoteModel().fit(own, released, y)
    inputs = stage3_inputs(own, released, form)
    return _RegressionStage3(form, fit_class_model(inputs, y, c, num_classes, scale=True))
