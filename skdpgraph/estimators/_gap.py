"""GAP: differentially private GNN by aggregation perturbation (edge and node level)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import torch

from skdpgraph._random import RandomStreams
from skdpgraph._validation import DPSGD_CONSTRAINTS, Interval, StrOptions
from skdpgraph.estimators._base import BaseDPClassifier
from skdpgraph.estimators._dpmlp import per_example_cross_entropy
from skdpgraph.graph import Graph, Nodes
from skdpgraph.nn._gap import (GAPClassificationModule, GAPEncoder, embed_nodes,
                               hop_inputs)
from skdpgraph.privacy import GAPPlan, plan_gap
from skdpgraph.training import BestEpoch, TensorExamples, train_dpsgd

__all__ = ["GAPClassifier"]

_KIND = "PMA aggregations"


class GAPClassifier(BaseDPClassifier):
    """Graph neural network with differential privacy by aggregation perturbation (GAP).

    An encoder MLP, PMA (``hops`` noisy sums over in-neighbours) and a classifier on both
    (Sajadmanesh et al., USENIX Security 2023). Relation, unit, conditions and the cost of
    ``predict``: the GAP section of the privacy-units guide, repeated in ``privacy_``.

    Parameters
    ----------
    epsilon : float, default=8.0
        Budget; ``np.inf`` is GAP-∞ (no noise, no clipping). At most 1e12 at edge level.
    delta : float, default=None
        ``1 / (10 * E)`` (E edges) at edge level, ``1 / (10 * num_nodes)`` at node level.
    classes : array-like, default=None
        The public label set; None reads it from ``y`` (stated in ``privacy_``).
    privacy_level : {"edge", "node"}, default="edge"
        Edge: add/remove one edge; features and labels public. Node: add/remove one node
        with its features, label and edges; node set public.
    hops, encoder_layers : int, default=2, 2
    hidden_dim : int, default=None
        Width of the embeddings and layers: 64 at edge level, 16 at node level (see
        "How the defaults were chosen" in the docs).
        ``encoder_layers``: linear layers of the encoder MLP, before any aggregation.
    combine, activation : str, default="cat", "selu"
    epochs, encoder_epochs, lr : int, int, float, default=None, None, 0.01
        Epochs: 100 at edge level, 10 at node level; ``encoder_epochs`` defaults to ``epochs``.
    batch_size : int, default=None
        Full batch at edge level; 256 (expected Poisson batch size) at node level.
    max_degree : int, default=100
        Node level: out-degree bound D; sensitivity sqrt(D), own rows not covered.
    max_in_degree : int, default=None
        Node level: also bound in-degree to D_in; sensitivity sqrt(D_in² + D), own rows covered.
    max_grad_norm, dropout : float, default=1.0, 0.0
        Clipping norm of both DP-SGD runs (node level); dropout rate.
    validation_fraction : float, "auto" or None, default="auto"
        Hold out this fraction of the training nodes and keep each stage's epoch with the
        best accuracy on them. ``"auto"``: 10% where the labels are public (edge level, or
        ``epsilon=inf``), none at private node level, where an explicit fraction is refused.
    random_state : int, RandomState or None, default=None
        Root of independent random streams; leave None in production.
    device : {"auto", "cpu", "cuda", "cuda:<index>"} or torch.device, default="auto"
    verbose : bool, default=False
        One progress bar per stage (encoder, classifier) with the loss and running epsilon.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    epsilon_spent_ : float
    delta_ : float
    noise_multiplier_ : float or None
        sigma: PMA noise std / sensitivity (and node-level DP-SGD noise std / C).
    sensitivity_ : float
    privacy_ : PrivacyReport
    history_ : list of dict
        One record per epoch of the ``"encoder"`` stage, then of the ``"classifier"``
        stage, with the running epsilon (not covered).
    encoder_ : GAPEncoder
    module_ : GAPClassificationModule
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
            ("activation", {"relu", "selu", "tanh", "elu", "gelu"}))},
        **{name: [Interval(Integral, 1, None, closed="left")]
           for name in ("hops", "encoder_layers", "max_degree")},
        **{name: [Interval(Integral, 1, None, closed="left"), None]
           for name in ("hidden_dim", "epochs", "encoder_epochs", "batch_size", "max_in_degree")},
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), StrOptions({"auto"}),
                                None],
    }

    def __init__(self, *, epsilon=8.0, delta=None, classes=None, privacy_level="edge", hops=2,
                 hidden_dim=None, encoder_layers=2, combine="cat", activation="selu",
                 epochs=None, encoder_epochs=None, lr=0.01, batch_size=None, max_degree=100,
                 max_in_degree=None, max_grad_norm=1.0, dropout=0.0,
                 validation_fraction="auto", random_state=None, device="auto", verbose=False):
        self.__dict__.update((k, v) for k, v in locals().items() if k != "self")  # as given

    _progressive = False  # ProGAPClassifier: one aggregation per stage

    def _labels_public(self) -> bool:  # features and labels are public at edge level
        return self.privacy_level == "edge" or math.isinf(self.epsilon)

    _node_unit = property(lambda self: self.privacy_level == "node")  # duplicates refused
    _width = property(lambda self: self.hidden_dim or (16 if self._node_unit else 64))
    _training_size_public = _node_unit  # only node level's sampling rate and noise depend on n

    def _protected_units(self, nodes: Nodes) -> int:  # every node, or the edges (1 if none)
        g = nodes.graph
        return g.num_nodes if self._node_unit else max(g.num_edges // (1 if g.directed else 2), 1)

    def _plan(self, nodes: Nodes, y: np.ndarray) -> GAPPlan:
        node, held = self._node_unit, self._validation_size(len(nodes))
        n, epochs = len(nodes) - held, self.epochs or (10 if node else 100)
        return plan_gap(
            epsilon=self.epsilon, delta=self.delta_, privacy_level=self.privacy_level,
            hops=self.hops, directed=nodes.graph.directed, num_examples=n,
            batch_size=self.batch_size or (256 if node else n), epochs=epochs,
            encoder_epochs=self.encoder_epochs or epochs, max_grad_norm=self.max_grad_norm,
            max_degree=self.max_degree, max_in_degree=self.max_in_degree,
            progressive=self._progressive, context=type(self).__name__)

    def _train(self, nodes: Nodes, y: np.ndarray, plan: GAPPlan, streams: RandomStreams) -> None:
        graph = nodes.graph
        self.noise_multiplier_, self.sensitivity_ = plan.noise_multiplier, plan.sensitivity
        (nodes, y), held = self._split(nodes, y, plan, streams)
        width, classes = self._width, len(self.classes_)
        self.encoder_, encoder = self._stage(
            lambda: GAPEncoder(graph.num_features, width, classes, num_layers=self.encoder_layers,
                               activation=self.activation, dropout=self.dropout),
            plan, "encoder", lambda part: torch.from_numpy(np.asarray(part)), nodes, y, held,
            streams)
        aggregations = self._aggregate(graph, streams)
        if plan.own_rows_covered:  # otherwise used to train the classifier only, then dropped
            self._cache_release(graph, _KIND, aggregations)
        self.module_, classifier = self._stage(
            lambda: GAPClassificationModule(width, classes, hops=self.hops, combine=self.combine,
                                            activation=self.activation, dropout=self.dropout),
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
            options = self._stage_options(plan, stage, streams)
            if name is not None:
                options.update(stage=name, description=f"{type(self).__name__} {name}",
                               epsilon_at=lambda steps: plan.running_epsilon(
                                   self.delta_, stage, steps, index=index))
            result = train_dpsgd(
                build().to(self.device_), TensorExamples(
                    inputs(nodes), torch.from_numpy(y), device=self.device_),
                per_example_cross_entropy, getattr(plan, stage), lr=self.lr,
                on_epoch=best, **options)
        return (best.restore(result.module) if best else result.module).cpu(), result.history

    def _aggregate(self, graph: Graph, streams: RandomStreams) -> torch.Tensor:
        """One PMA release on ``graph`` as planned (fresh streams for every release)."""
        embeddings = embed_nodes(self.encoder_, graph).to(self.device_)
        return self._plan_.aggregate(graph.adjacency(), embeddings, streams).cpu()

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        graph, plan = nodes.graph, self._plan_
        aggregations = self._release(graph, _KIND, lambda streams: self._aggregate(graph, streams),
                                     lambda: plan.release_cost(self.delta_),
                                     keep_in_pickle=plan.own_rows_covered)
        return self.module_(hop_inputs(self.encoder_, nodes, aggregations))

    def _unit_and_relation(self, graph: Graph) -> tuple[str, str]:
        return self._plan_.unit, self._plan_.relation

    def _running_epsilon(self, plan: GAPPlan, stage: str, steps: int) -> float:
        return plan.running_epsilon(self.delta_, stage, steps)  # inf when not private

    _inference = staticmethod(lambda plan: plan.inference)  # the plan states both
    _not_covered = staticmethod(lambda plan: plan.not_covered)

    def _assumptions(self, plan: GAPPlan, nodes: Nodes) -> tuple[str, ...]:
        return plan.assumptions(default_delta=self.delta is None)
