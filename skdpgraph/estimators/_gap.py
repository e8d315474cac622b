"""GAP: differentially private GNN by aggregation perturbation (edge and node level)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import torch

from skdpgraph._random import RandomStreams
from skdpgraph._validation import DPSGD_CONSTRAINTS, Interval, StrOptions, possible_edges
from skdpgraph.estimators._base import BaseDPClassifier
from skdpgraph.estimators._dpmlp import per_example_cross_entropy
from skdpgraph.graph import Graph, Nodes
from skdpgraph.nn import (GAPClassificationModule, GAPEncoder, class_log_probabilities,
                          class_probabilities, embed_nodes, hop_inputs, with_known_labels)
from skdpgraph.privacy import GAPPlan, plan_gap
from skdpgraph.training import BestEpoch, TensorExamples, train_dpsgd

__all__ = ["GAPClassifier"]

_KIND = "PMA aggregations"
_VOTES = "PMA neighbour votes"
#: Vote head: each noisy count is weighted by this many noise standard deviations (chosen
#: once on the shared graphs; see "How the defaults were chosen").
VOTE_WEIGHT = 2.0


class GAPClassifier(BaseDPClassifier):
    """Graph neural network with differential privacy by aggregation perturbation (GAP).

    An encoder MLP, PMA (``hops`` noisy sums over in-neighbours) and a classifier on both
    (Sajadmanesh et al., USENIX Security 2023). At node level the default ``head="auto"``
    replaces the trained classifier by noisy neighbour votes (see ``head``). Relation,
    unit, conditions and the cost of ``predict``: the GAP section of the privacy-units
    guide, repeated in ``privacy_``.

    Parameters
    ----------
    epsilon : float, default=8.0
        Total privacy budget of the fit, in ``(0, inf]``, met by one noise multiplier
        sigma. Edge level: only the aggregations pay (their Gaussians compose exactly);
        node level: the DP-SGD runs and the aggregations share it (RDP composition).
        ``np.inf``: no noise and no clipping (the non-private baseline). At most 1e12 at
        edge level.
    delta : float, default=None
        Delta of the guarantee, in ``(0, 1)``. None uses, at edge level,
        ``1 / (10 * P)`` with P the number of possible edges, ``N (N - 1) / 2`` for N nodes
        (``N (N - 1)`` if directed): below 1/E for every graph, and read from the public
        node count only, never from the protected edges. At node level ``1 / (10 * N)``
        (the node set is public). The value used is ``delta_``.
    classes : array-like, default=None
        The public label set; None reads it from ``y`` (stated in ``privacy_``).
    privacy_level : {"edge", "node"}, default="edge"
        The privacy unit. Edge: add/remove one edge; features and labels are public and
        only the aggregations are noisy. Node: add/remove one node with its features,
        label and edges; the node set is public, and training runs DP-SGD as well.
    hops : int, default=None
        K >= 1, the number of noisy aggregation hops; None: 2 at edge level, 1 at node
        level. The classifier reads each node's own embedding and its K aggregations;
        the K Gaussians share ``epsilon``, so more hops mean more noise per hop.
    hidden_dim : int, default=None
        Width of the embeddings that are aggregated and of the layers after them; None:
        16 for node level's trained head, else 64 (see "How the defaults were chosen" in
        the docs). It does not change the accountant: embeddings are row-normalised before
        aggregation.
    encoder_layers : int, default=None
        Linear layers of the encoder MLP (each followed by ``activation``), which embeds
        the node features before any aggregation; None: 1 with the vote head (then the
        encoder is the DP-MLP baseline's network), else 2. It does not change the
        accountant.
    combine : {"cat", "sum", "max"}, default="cat"
        How the own embedding and the aggregations are combined: concatenation
        (row-normalised), sum or element-wise maximum. It does not change the accountant.
    aggregate : {"auto", "embeddings", "predictions", "labels"}, default="auto"
        What PMA sums over each node's in-neighbours. ``"embeddings"``: the encoder's
        embeddings (the GAP paper). ``"predictions"``: each node's class probabilities
        from the encoder (the vote head: its predicted class), over as many coordinates
        as classes instead of ``hidden_dim``, so the same noise disturbs fewer of them.
        ``"labels"``: the same, with the fitted nodes' one-hot labels in place of theirs
        (a noisy label propagation); ``predict`` on another graph aggregates predictions
        alone (its labels are unknown). ``"auto"``: ``"labels"``. It does not change the
        accountant: every summed row has norm 1, and at node level a node's row, label
        or prediction, leaves the sums with the node, so the labels are protected as its
        features and edges are.
    activation : {"relu", "selu", "tanh", "elu", "gelu"}, default="selu"
        Activation of every network. It does not change the accountant.
    head : {"auto", "trained", "vote"}, default="auto"
        What predicts from each node's own features and its aggregations. ``"trained"``:
        a classifier network (the GAP paper; at node level a second DP-SGD run).
        ``"vote"``: no second run; PMA counts the encoder's predicted classes over
        in-neighbours (one-hot rows, sums not normalised; with ``aggregate="labels"`` the
        fitted nodes vote for their own label), and a node's logits are its own
        log-probabilities plus, per hop, 2 x its noisy counts / the noise std
        (:func:`~skdpgraph.privacy.noisy_neighbour_votes`).
        The encoder's DP-SGD is calibrated alone to 5/8 of ``epsilon`` and the Gaussians
        take the rest. Only at node level with a finite ``epsilon``. ``"auto"``:
        ``"vote"`` there, else ``"trained"`` (see "How the defaults were chosen").
    epochs : int, default=None
        Training epochs of the classifier (none with the vote head); None: 100 at edge
        level, 10 at node level.
        Edge level: free (public features and labels). Node level: its DP-SGD steps
        enter the accountant, so more epochs mean more noise.
    encoder_epochs : int, default=None
        Training epochs of the encoder; None: 50 with the vote head, else the resolved
        ``epochs``. Its cost is as for ``epochs``.
    lr : float, default=0.01
        Learning rate of Adam in every training run, in ``(0, 1e30]``. It does not change
        the accountant.
    batch_size : int, default=None
        Expected Poisson batch size of every training run; None: all training nodes at
        edge level, 1024 with the vote head, else 256. Node level: the sampling rate
        ``batch_size / n_train`` enters the accountant.
    max_degree : int, default=30
        Node level: out-degree bound D; each release first keeps at most D random
        out-edges per node, so one hop has sensitivity sqrt(D) (own rows held fixed).
        Larger D: more noise, fewer dropped edges. Unused at edge level.
    max_in_degree : int or None, default=10
        Node level: also keep at most D_in random in-edges per node; sensitivity
        sqrt(D_in² + D), so each node's own aggregation rows are covered by the reported
        epsilon and the release made in ``fit`` is kept in the pickle. None: in-degree
        unbounded; each node's own rows are then covered only by its in-degree d
        (sensitivity sqrt(d² + D) for it; ``privacy_.not_covered`` states the epsilon at
        d = 1, 5, 10, 30, 100), and the fit's release is kept in memory, never pickled.
        The bound's accuracy cost is measured in the privacy-units guide (GAP's node-level
        guarantee). Unused at edge level.
    max_grad_norm : float, default=1.0
        Node level: per-node clipping norm C of every DP-SGD run (noise std sigma * C);
        epsilon does not depend on it. Unused at edge level, which trains without
        clipping.
    dropout : float, default=None
        Dropout rate in ``[0, 1)`` of every network during training; None: 0.5 at edge
        level, 0 at node level. It does not change the accountant.
    validation_fraction : float, "auto" or None, default="auto"
        Hold out this fraction (in ``(0, 1)``) of the training nodes (stratified where
        possible) and keep, for every training run, the epoch with the best accuracy on
        them. Allowed only where the labels are public (edge level, or ``epsilon=inf``),
        so it costs nothing; an explicit fraction at private node level is refused.
        ``"auto"``: 10% where allowed (none below 500 training nodes), else none. None: no split.
    random_state : int, RandomState instance or None, default=None
        Root of independent streams (initialisation, batches, degree sampling, noise,
        validation split, later releases). Leave None in production: a known seed makes
        the noise reproducible.
    device : {"auto", "cpu", "cuda", "cuda:<index>"} or torch.device, default="auto"
        Where to train and predict; ``"auto"`` takes CUDA when available, else the CPU.
        The device used is ``device_``; it does not change the guarantee.
    verbose : bool, default=False
        One progress bar per training run with the loss and running epsilon. The printed
        loss is not covered (``privacy_`` says so).
    private_diagnostics : bool, default=False
        Also keep in ``history_`` the per-epoch loss and training accuracy where they are
        computed without noise on protected data (node level): not covered by the
        guarantee (``privacy_.not_covered`` then says so). False: there they are None.
        At edge level (features and labels public; the classifier reads the noisy
        aggregations) and with ``epsilon=np.inf`` the history is kept whole either way.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    epsilon_spent_ : float
    delta_ : float
    noise_multiplier_ : float or None
        sigma: PMA noise std / sensitivity (and, with node level's trained head, the DP-SGD
        noise std / C; the vote head's encoder has its own, in ``privacy_.mechanism``).
    sensitivity_ : float
    privacy_ : PrivacyReport
    history_ : list of dict
        One record per epoch of the ``"encoder"`` stage, then of the ``"classifier"``
        stage (none with the vote head), with the running epsilon (see
        ``private_diagnostics``).
    encoder_ : GAPEncoder
    module_ : GAPClassificationModule or None
        None with the vote head, which trains no classifier.
    device_ : torch.device

    Examples
    --------
    >>> from skdpgraph import GAPClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=300, random_state=0)
    >>> clf = GAPClassifier(epsilon=4.0, epochs=20, encoder_epochs=20, random_state=0)
    >>> clf = clf.fit(data.nodes()[:200], data.y[:200])
    >>> clf.epsilon_spent_ <= 4.0, clf.predict(data.nodes()[200:]).shape
    (True, (100,))
    """

    _parameter_constraints = {
        **DPSGD_CONSTRAINTS,
        **{name: [StrOptions(values)] for name, values in (
            ("privacy_level", {"edge", "node"}), ("combine", {"cat", "sum", "max"}),
            ("aggregate", {"auto", "embeddings", "predictions", "labels"}),
            ("head", {"auto", "trained", "vote"}),
            ("activation", {"relu", "selu", "tanh", "elu", "gelu"}))},
        **{name: [Interval(Integral, 1, None, closed="left")]
           for name in ("max_degree",)},
        **{name: [Interval(Integral, 1, None, closed="left"), None]
           for name in ("encoder_layers", "hops", "hidden_dim", "epochs", "encoder_epochs",
                        "batch_size", "max_in_degree")},
        "dropout": [Interval(Real, 0, 1, closed="left"), None],
    }

    def __init__(self, *, epsilon=8.0, delta=None, classes=None, privacy_level="edge", hops=None,
                 hidden_dim=None, encoder_layers=None, combine="cat", aggregate="auto",
                 activation="selu", head="auto",
                 epochs=None, encoder_epochs=None, lr=0.01, batch_size=None, max_degree=30,
                 max_in_degree=10, max_grad_norm=1.0, dropout=None,
                 validation_fraction="auto", random_state=None, device="auto", verbose=False,
                 private_diagnostics=False):
        self.__dict__.update((k, v) for k, v in locals().items() if k != "self")  # as given

    _progressive = False  # ProGAPClassifier: one aggregation per stage

    def _labels_public(self) -> bool:  # features and labels are public at edge level
        return self.privacy_level == "edge" or math.isinf(self.epsilon)

    _node_unit = property(lambda self: self.privacy_level == "node")  # duplicates refused
    #: At edge level the encoder reads public data and the classifier the noisy sums.
    _history_on_private_data = property(lambda self: not self._labels_public())

    @property
    def _head(self) -> str:
        """``head`` with ``"auto"`` resolved: the vote head for private node level."""
        if self.head != "auto":
            return self.head
        return "vote" if self._node_unit and not math.isinf(self.epsilon) else "trained"

    _vote = property(lambda self: self._head == "vote")
    #: The DP-MLP baseline's shape (one 64-wide layer, batches of 1024) for the networks of
    #: node level's vote head and of node-level ProGAP (see "How the defaults were chosen").
    _mlp_shaped = property(lambda self: self._vote or (self._progressive and self._node_unit))
    _encoder_layers = property(lambda self: self.encoder_layers or (1 if self._mlp_shaped else 2))
    _width = property(lambda self: self.hidden_dim or (
        16 if self._node_unit and not self._mlp_shaped else 64))
    _hops = property(lambda self: self.hops or (1 if self._node_unit else 2))
    _dropout = property(lambda self: (0.0 if self._node_unit else 0.5) if self.dropout is None
                        else self.dropout)
    _training_size_public = _node_unit  # only node level's sampling rate and noise depend on n

    _aggregated = property(lambda self: "labels" if self.aggregate == "auto" else self.aggregate)

    def _input_width(self, num_classes: int) -> int:
        """Width of the classifier's input rows (:func:`~skdpgraph.nn._gap.stack_hops`)."""
        return self._width if self._aggregated == "embeddings" else max(self._width, num_classes)

    def _check_data(self, nodes: Nodes, y: np.ndarray) -> None:
        if self.head == "vote" and self._progressive:
            raise ValueError(f"{type(self).__name__}: head='vote' is GAPClassifier's; every "
                             "ProGAP stage is a trained classifier (use head='auto').")
        if self.head == "vote" and not (self._node_unit and not math.isinf(self.epsilon)):
            raise ValueError(
                f"{type(self).__name__}: head='vote' replaces the trained classifier by noisy "
                "neighbour votes, which only pays off where the classifier costs privacy: "
                f"privacy_level='node' with a finite epsilon; got privacy_level="
                f"{self.privacy_level!r}, epsilon={self.epsilon:g}. Use head='auto'.")
        if self._vote and self.aggregate == "embeddings":
            raise ValueError(
                f"{type(self).__name__}: the vote head counts predicted classes or labels; "
                "aggregate='embeddings' is not possible with it (use 'auto').")

    def _known_labels(self, nodes: Nodes, y: np.ndarray):
        """``(index, labels)`` of the fitted nodes for :func:`with_known_labels`, or None."""
        if self._aggregated != "labels":
            return None
        return (torch.from_numpy(np.array(nodes.index, dtype=np.int64)),
                torch.from_numpy(np.array(y, dtype=np.int64)))

    def _aggregated_rows(self, module, graph: Graph, labelled=None) -> torch.Tensor:
        """What PMA sums (before its row normalisation): ``module``'s embeddings, or its class
        probabilities, with the ``labelled`` nodes' labels in place if given (``aggregate``)."""
        if self._aggregated == "embeddings":
            return embed_nodes(module, graph)
        return with_known_labels(class_probabilities(module, graph), labelled)

    def _protected_units(self, nodes: Nodes) -> int:
        """Every node (public node set), or at edge level the possible edges: a bound on
        the edges that reads only the public node count (the edge count is protected)."""
        g = nodes.graph
        return g.num_nodes if self._node_unit else max(possible_edges(g.num_nodes, g.directed), 1)

    def _plan(self, nodes: Nodes, y: np.ndarray) -> GAPPlan:
        node, held, vote = self._node_unit, self._validation_size(len(nodes)), self._vote
        n, (epochs, encoder_epochs) = len(nodes) - held, self._epochs
        return plan_gap(
            epsilon=self._budget(), delta=self.delta_, privacy_level=self.privacy_level,
            hops=self._hops, directed=nodes.graph.directed, num_examples=n,
            batch_size=self.batch_size or (1024 if self._mlp_shaped else 256 if node else n),
            epochs=epochs, encoder_epochs=encoder_epochs,
            max_grad_norm=self.max_grad_norm, max_degree=self.max_degree,
            max_in_degree=self.max_in_degree, progressive=self._progressive, vote=vote,
            context=type(self).__name__)

    @property
    def _epochs(self) -> tuple[int, int]:
        """``(epochs, encoder_epochs)`` with None resolved."""
        epochs = self.epochs or (10 if self._node_unit else 100)
        return epochs, self.encoder_epochs or (50 if self._vote else epochs)

    def _train(self, nodes: Nodes, y: np.ndarray, plan: GAPPlan, streams: RandomStreams) -> None:
        graph = nodes.graph
        self.noise_multiplier_, self.sensitivity_ = plan.noise_multiplier, plan.sensitivity
        (nodes, y), held = self._split(nodes, y, plan, streams)
        width, classes = self._width, len(self.classes_)
        self.encoder_, encoder = self._stage(
            lambda: GAPEncoder(graph.num_features, width, classes,
                               num_layers=self._encoder_layers,
                               activation=self.activation, dropout=self._dropout),
            plan, "encoder", lambda part: torch.from_numpy(np.asarray(part)), nodes, y, held,
            streams)
        if self._vote:  # no classifier: the fit's paid vote release serves predict
            self.module_, self.history_ = None, encoder
            votes = self._votes(graph, streams, self._known_labels(nodes, y))
            self._cache_release(graph, _VOTES, votes, keep_in_pickle=plan.own_rows_covered)
            return
        aggregations = self._aggregate(graph, streams, self._known_labels(nodes, y))
        self._cache_release(graph, _KIND, aggregations, keep_in_pickle=plan.own_rows_covered)
        self.module_, classifier = self._stage(
            lambda: GAPClassificationModule(width, classes, hops=self._hops, combine=self.combine,
                                            activation=self.activation, dropout=self._dropout,
                                            in_dim=self._input_width(classes)),
            plan, "classifier", lambda part: hop_inputs(self.encoder_, part, aggregations),
            nodes, y, held, streams)
        self.history_ = encoder + classifier

    def _split(self, nodes: Nodes, y: np.ndarray, plan: GAPPlan, streams: RandomStreams):
        """``((fit nodes, labels), (held-out nodes, labels) or None)``, sizes as planned."""
        return self._holdout(nodes, y, len(y) - plan.encoder.num_examples, streams)

    def _stage(self, build, plan: GAPPlan, stage: str, inputs, nodes, y, held, streams,
               index: int = 0, name: str | None = None):
        """Build (own init stream) and train one module; with ``held``, keep its best epoch.

        ``stage`` names the plan's run ("encoder" or "classifier"); a progressive plan's
        stages also give their ``index`` among the encoder runs and their ``name`` in
        ``history_``.
        """
        best = held and BestEpoch(inputs(held[0]).to(self.device_), held[1])  # public labels
        with streams.initialisation():
            options = self._stage_options(plan, stage, streams, best, name=name, index=index)
            result = train_dpsgd(
                build().to(self.device_), TensorExamples(
                    inputs(nodes), torch.from_numpy(y), device=self.device_),
                per_example_cross_entropy, getattr(plan, stage), **options)
        return (best.restore(result.module) if best else result.module).cpu(), result.history

    def _aggregate(self, graph: Graph, streams: RandomStreams, labelled=None) -> torch.Tensor:
        """One PMA release on ``graph`` as planned (fresh streams for every release);
        ``labelled``: the fitted nodes' ``(index, labels)`` when fitting on ``graph``."""
        rows = self._aggregated_rows(self.encoder_, graph, labelled).to(self.device_)
        return self._plan_.aggregate(graph.adjacency(), rows, streams).cpu()

    def _votes(self, graph: Graph, streams: RandomStreams, labelled=None) -> torch.Tensor:
        """One vote release on ``graph`` as planned (fresh streams for every release);
        ``labelled``: the fitted nodes' ``(index, labels)`` when fitting on ``graph``."""
        own = class_log_probabilities(self.encoder_, graph).to(self.device_)
        return self._plan_.votes(graph.adjacency(), own, VOTE_WEIGHT, streams, labelled).cpu()

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        graph, plan = nodes.graph, self._plan_
        if self._vote:  # the encoder's log-probabilities plus the neighbours' noisy votes
            votes = self._release(graph, _VOTES, lambda streams: self._votes(graph, streams),
                                  lambda: plan.release_cost(self.delta_),
                                  keep_in_pickle=plan.own_rows_covered)
            index = np.array(nodes.index, dtype=np.int64)  # a writable copy for torch
            own = class_log_probabilities(self.encoder_, graph, index)
            return own + votes[torch.from_numpy(index)]
        aggregations = self._release(graph, _KIND, lambda streams: self._aggregate(graph, streams),
                                     lambda: plan.release_cost(self.delta_),
                                     keep_in_pickle=plan.own_rows_covered)
        return self.module_(hop_inputs(self.encoder_, nodes, aggregations))

    def _unit_and_relation(self, graph: Graph) -> tuple[str, str]:
        return self._plan_.unit, self._plan_.relation

    _inference = staticmethod(lambda plan: plan.inference)  # the plan states both

    def _not_covered(self, plan: GAPPlan) -> tuple[str, ...]:
        return plan.not_covered(self.delta_)

    def _assumptions(self, plan: GAPPlan, nodes: Nodes) -> tuple[str, ...]:
        protected = ("public at this level; the edges stay the only protected input"
                     if self._labels_public() else "protected at this level: a node's row, "
                     "label or prediction, is one unit vector that leaves the sums with the "
                     "node, so PMA's node-level sensitivity covers it")
        labels = (f"aggregate={self.aggregate!r}: the noisy aggregations sum the fitted nodes' "
                  "one-hot labels and the other nodes' predicted classes or class "
                  f"probabilities; the labels are {protected}",
                  ) if plan.private and self._aggregated == "labels" else ()
        return plan.assumptions(default_delta=self.delta is None) + labels
