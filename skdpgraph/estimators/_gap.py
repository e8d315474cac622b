"""GAP: differentially private GNN by aggregation perturbation (edge and node level)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import torch

from skdpgraph._deprecation import DEPRECATED, renamed_parameter
from skdpgraph._docstrings import fill_doc
from skdpgraph._random import RandomStreams
from skdpgraph._validation import DPSGD_CONSTRAINTS, Interval, StrOptions, possible_edges
from skdpgraph.estimators import _gap_docs  # noqa: F401  (registers the shared fragments)
from skdpgraph.estimators._base import BaseDPClassifier
from skdpgraph.estimators._dpmlp import per_example_cross_entropy
from skdpgraph.estimators._gap_heads import TrainedHead, VoteHead
from skdpgraph.graph import Graph, Nodes
from skdpgraph.nn import GAPEncoder
from skdpgraph.privacy import GAPPlan, plan_gap
from skdpgraph.training import BestEpoch, TensorExamples, train_dpsgd

__all__ = ["GAPClassifier"]


@fill_doc
class GAPClassifier(BaseDPClassifier):
    """Graph neural network with differential privacy by aggregation perturbation (GAP).

    An encoder MLP, PMA (``hops`` noisy sums over in-neighbours) and a classifier on both
    (Sajadmanesh et al., USENIX Security 2023). At node level the default ``head="auto"``
    replaces the trained classifier by noisy neighbour votes (see ``head``). Relation,
    unit, conditions and the cost of ``predict``: the GAP section of the privacy-units
    guide, repeated in ``privacy_``.

    Parameters
    ----------
    {{gap_budget_parameters}}
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
    {{gap_combine_parameters}}
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
    {{gap_activation_parameters}}
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
    {{gap_lr_parameters}}
    batch_size : int, default=None
        Expected Poisson batch size of every training run; None: all training nodes at
        edge level, 1024 with the vote head, else 256. Node level: the sampling rate
        ``batch_size / n_train`` enters the accountant.
    {{gap_degree_and_run_parameters}}

    Attributes
    ----------
    {{gap_fitted_attributes}}
    head_ : TrainedHead or VoteHead
        ``head`` with ``"auto"`` resolved.
    noise_multiplier_ : float or None
        sigma: PMA noise std / sensitivity (and, with node level's trained head, the DP-SGD
        noise std / C; the vote head's encoder has its own, in ``privacy_.mechanism``).
    history_ : list of dict
        One record per epoch of the ``"encoder"`` stage, then of the ``"classifier"``
        stage (none with the vote head), with the running epsilon (see
        ``private_diagnostics``).
    encoder_ : GAPEncoder
    module_ : GAPClassificationModule or None
        None with the vote head, which trains no classifier.

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
            ("unit", {"edge", "node"}), ("privacy_level", {"edge", "node", DEPRECATED}),
            ("combine", {"cat", "sum", "max"}),
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

    def __init__(self, *, epsilon=8.0, delta=None, classes=None, unit="edge", hops=None,
                 hidden_dim=None, encoder_layers=None, combine="cat", aggregate="auto",
                 activation="selu", head="auto", epochs=None, encoder_epochs=None, lr=0.01,
                 batch_size=None, max_degree=30, max_in_degree=10, max_grad_norm=1.0,
                 dropout=None, validation_fraction="auto", random_state=None, device="auto",
                 verbose=False, private_diagnostics=False, privacy_level=DEPRECATED):
        self.epsilon = epsilon
        self.delta = delta
        self.classes = classes
        self.unit = unit
        self.hops = hops
        self.hidden_dim = hidden_dim
        self.encoder_layers = encoder_layers
        self.combine = combine
        self.aggregate = aggregate
        self.activation = activation
        self.head = head
        self.epochs = epochs
        self.encoder_epochs = encoder_epochs
        self.lr = lr
        self.batch_size = batch_size
        self.max_degree = max_degree
        self.max_in_degree = max_in_degree
        self.max_grad_norm = max_grad_norm
        self.dropout = dropout
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.private_diagnostics = private_diagnostics
        self.privacy_level = privacy_level

    # ------------------------------------------------------------------ defaults
    def _checked_plan(self, X, y, sample_weight=None):
        # The unit decides the checks that follow (distinct nodes at node level).
        self._resolve_defaults()
        return super()._checked_plan(X, y, sample_weight)

    def _resolve_head(self):
        """``head`` with ``"auto"`` resolved: the vote head for private node level."""
        if self.head == "vote" and not (self._node_unit and not math.isinf(self.epsilon)):
            raise ValueError(
                f"{type(self).__name__}: head='vote' replaces the trained classifier by noisy "
                "neighbour votes, which only pays off where the classifier costs privacy: "
                f"unit='node' with a finite epsilon; got unit={self.unit_!r}, "
                f"epsilon={self.epsilon:g}. Use head='auto'.")
        vote = self.head == "vote" or (self.head == "auto" and self._node_unit
                                       and not math.isinf(self.epsilon))
        return VoteHead() if vote else TrainedHead()

    def _default_epochs(self) -> tuple[int, int]:
        """``(epochs, encoder_epochs)`` with None resolved."""
        epochs = self.epochs or (10 if self._node_unit else 100)
        return epochs, self.encoder_epochs or (50 if self.head_.name == "vote" else epochs)

    def _resolve_defaults(self) -> None:
        """Resolve every default once into the fitted ``*_`` attributes (``batch_size_``,
        which depends on the number of training nodes, is resolved by the plan)."""
        self.unit_ = renamed_parameter(self, "privacy_level", "unit", default="edge")
        node, self.head_ = self._node_unit, self._resolve_head()
        if self.head_.name == "vote" and self.aggregate == "embeddings":
            raise ValueError(
                f"{type(self).__name__}: the vote head counts predicted classes or labels; "
                "aggregate='embeddings' is not possible with it (use 'auto').")
        self._mlp_shaped_ = node and self.head_.mlp_shaped_at_node_level
        self.hops_ = self.hops or (1 if node else 2)
        self.hidden_dim_ = self.hidden_dim or (16 if node and not self._mlp_shaped_ else 64)
        self.encoder_layers_ = self.encoder_layers or (1 if self._mlp_shaped_ else 2)
        self.dropout_ = (0.0 if node else 0.5) if self.dropout is None else self.dropout
        self.aggregate_ = "labels" if self.aggregate == "auto" else self.aggregate
        self.epochs_, self.encoder_epochs_ = self._default_epochs()

    # ------------------------------------------------------------------ the unit
    @property
    def _node_unit(self) -> bool:  # duplicates refused at node level
        return self.unit_ == "node"

    def _labels_public(self) -> bool:  # features and labels are public at edge level
        return self.unit_ == "edge" or math.isinf(self.epsilon)

    @property
    def _history_on_private_data(self) -> bool:
        # At edge level the encoder reads public data and the classifier the noisy sums.
        return not self._labels_public()

    @property
    def _training_size_public(self) -> bool:
        return self._node_unit  # only node level's sampling rate and noise depend on n

    def _protected_units(self, nodes: Nodes) -> int:
        """Every node (public node set), or at edge level the possible edges: a bound on
        the edges that reads only the public node count (the edge count is protected)."""
        g = nodes.graph
        return g.num_nodes if self._node_unit else max(possible_edges(g.num_nodes, g.directed), 1)

    # ------------------------------------------------------------------ plan and training
    def _plan(self, nodes: Nodes, y: np.ndarray) -> GAPPlan:
        n = len(nodes) - self._validation_size(len(nodes))
        self.batch_size_ = self.batch_size or (
            1024 if self._mlp_shaped_ else 256 if self._node_unit else n)
        return plan_gap(
            epsilon=self._budget(), delta=self.delta_, privacy_level=self.unit_,
            hops=self.hops_, directed=nodes.graph.directed, num_examples=n,
            batch_size=self.batch_size_, epochs=self.epochs_,
            encoder_epochs=self.encoder_epochs_, max_grad_norm=self.max_grad_norm,
            max_degree=self.max_degree, max_in_degree=self.max_in_degree,
            stages=self.head_.stages, context=type(self).__name__)

    def _input_width(self, num_classes: int) -> int:
        """Width of the classifier's input rows (:func:`~skdpgraph.nn.stack_hops`)."""
        if self.aggregate_ == "embeddings":
            return self.hidden_dim_
        return max(self.hidden_dim_, num_classes)

    def _train(self, nodes: Nodes, y: np.ndarray, plan: GAPPlan, streams: RandomStreams) -> None:
        graph = nodes.graph
        self.noise_multiplier_, self.sensitivity_ = plan.noise_multiplier, plan.sensitivity
        (nodes, y), held = self._split(nodes, y, plan, streams)
        self.encoder_, encoder = self._stage(
            lambda: GAPEncoder(graph.num_features, self.hidden_dim_, len(self.classes_),
                               num_layers=self.encoder_layers_, activation=self.activation,
                               dropout=self.dropout_),
            plan, "encoder", lambda part: torch.from_numpy(np.asarray(part)), nodes, y, held,
            streams, name=self.head_.encoder_stage)
        self.history_ = encoder + self.head_.fit(self, graph, nodes, y, held, plan, streams)

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
            run = f"{stage} {index}" if index else stage  # a progressive plan's encoder run
            options = self._stage_options(plan, run, streams, best, name=name)
            result = train_dpsgd(
                build().to(self.device_), TensorExamples(
                    inputs(nodes), torch.from_numpy(y), device=self.device_),
                per_example_cross_entropy, getattr(plan, stage), **options)
        return (best.restore(result.module) if best else result.module).cpu(), result.history

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        graph, plan, head = nodes.graph, self._plan_, self.head_
        released = self._release(graph, head.kind, lambda streams: head.release(
            self, graph, streams), lambda: plan.release_cost(self.delta_),
            keep_in_pickle=plan.own_rows_covered)
        return head.logits(self, nodes, released)

    # ------------------------------------------------------------------ report
    def _unit_and_relation(self, graph: Graph) -> tuple[str, str]:
        return self._plan_.unit, self._plan_.relation

    def _inference(self, plan: GAPPlan) -> str:  # the plan states both
        return plan.inference

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
                  ) if plan.private and self.aggregate_ == "labels" else ()
        return plan.assumptions(default_delta=self.delta is None) + labels
