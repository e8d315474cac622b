"""ProGAP: GAP's aggregation perturbation, learned progressively, one stage per hop."""

from __future__ import annotations

import numpy as np
import torch

from skdpgraph._random import RandomStreams
from skdpgraph.estimators._gap import GAPClassifier
from skdpgraph.graph import Graph, Nodes
from skdpgraph.nn import (GAPEncoder, ProgressiveStage, embed_nodes, hop_inputs, stack_hops,
                          with_known_labels)
from skdpgraph.privacy import GAPPlan

__all__ = ["ProGAPClassifier"]

_KIND = "ProGAP aggregations"


class ProGAPClassifier(GAPClassifier):
    """Progressive GAP (ProGAP): each stage learns on the noisy aggregations of the last.

    Sajadmanesh & Gatica-Perez (WSDM 2024), the successor of :class:`GAPClassifier`.
    Stage 0 is GAP's encoder on the node features. Then, for ``i = 1..hops``, the
    embedding of stage ``i - 1`` is row-normalised and aggregated once over the
    in-neighbours with Gaussian noise (one PMA hop), and stage ``i`` is trained on the
    node's own stage-0 embedding together with every aggregation released so far, by
    GAP's classification module over those parts. GAP aggregates one fixed encoder's
    output ``hops`` times; ProGAP aggregates a new, learned one at each hop. The last
    stage is the classifier.

    Privacy is GAP's, with the same parameters: at edge level the ``hops`` one-hop
    Gaussians compose exactly as GAP's ``hops`` hops (the stages read only public features
    and labels); at node level ``hops + 1`` DP-SGD runs and the ``hops`` Gaussians share
    one noise multiplier, composed in RDP. ``predict`` on the fitted graph reuses the
    aggregations released in ``fit``; on another graph it is a new release (all stages'
    aggregations, fresh noise), recorded in ``privacy_.releases`` at the cost of
    ``hops`` Gaussians. The parameters are :class:`GAPClassifier`'s; ``hops``, ``epochs``
    and ``encoder_epochs`` count per stage.

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
        K >= 1, the number of one-hop noisy aggregations (None: 2 at edge level, 1 at
        node level), one per stage: K + 1 stages, stage 0 the encoder and stage K the
        classifier. The K Gaussians share ``epsilon``, so more hops mean more noise per
        hop (and, at node level, more DP-SGD runs).
    hidden_dim : int, default=None
        Width of the embeddings and of the layers after them; None: 64 (see "How the
        defaults were chosen" in the docs). It does not change the accountant: aggregated
        rows are row-normalised.
    encoder_layers : int, default=None
        Linear layers of the encoder MLP (each followed by ``activation``), which embeds
        the node features before any aggregation; None: 1 at node level (the DP-MLP
        baseline's network), 2 at edge level. It does not change the accountant.
    combine : {"cat", "sum", "max"}, default="cat"
        How the own embedding and the aggregations are combined: concatenation
        (row-normalised), sum or element-wise maximum. It does not change the accountant.
    aggregate : {"auto", "embeddings", "predictions", "labels"}, default="auto"
        What each stage aggregates: its embedding, its class probabilities
        (``"predictions"``, fewer coordinates for the same noise), or (``"labels"``) those
        with the fitted nodes' one-hot labels in place of theirs (at node level protected
        by PMA's node-level sensitivity, as the features are). ``"auto"``: ``"labels"``.
        It does not change the accountant.
    activation : {"relu", "selu", "tanh", "elu", "gelu"}, default="selu"
        Activation of every network. It does not change the accountant.
    head : {"auto", "trained", "vote"}, default="auto"
        Every ProGAP stage is a trained classifier: ``"auto"`` and ``"trained"`` are the
        same, and ``"vote"`` (:class:`GAPClassifier`'s untrained head) is refused.
    epochs : int, default=None
        Training epochs of the last stage (the classifier); None: 100 at edge level, 50
        at node level. Edge level: free (public features and labels). Node level: its
        DP-SGD steps enter the accountant, so more epochs mean more noise.
    encoder_epochs : int, default=None
        Training epochs of each of the stages 0 to K - 1, whose outputs are aggregated;
        None: the resolved ``epochs`` at edge level, 20 at node level. Node level: all K
        runs enter the accountant.
    lr : float, default=0.01
        Learning rate of Adam in every training run, in ``(0, 1e30]``. It does not change
        the accountant.
    batch_size : int, default=None
        Expected Poisson batch size of every training run; None: all training nodes at
        edge level, 1024 at node level. Node level: the sampling rate
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
        sigma: the noise std of each aggregation / sensitivity (and, at node level, of
        every stage's DP-SGD / C).
    sensitivity_ : float
    privacy_ : PrivacyReport
    device_ : torch.device
    encoder_ : GAPEncoder
        Stage 0.
    stages_ : list of ProgressiveStage
        Stages ``1..hops-1``, whose outputs are aggregated.
    module_ : ProgressiveStage
        The last stage.
    history_ : list of dict
        Per-epoch records of every stage (``stage`` is ``"stage 0"`` .. ``"stage K"``),
        with the running epsilon (see ``private_diagnostics``).

    Examples
    --------
    >>> from skdpgraph import ProGAPClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=300, random_state=0)
    >>> clf = ProGAPClassifier(epsilon=4.0, epochs=20, encoder_epochs=20, random_state=0)
    >>> clf = clf.fit(data.nodes()[:200], data.y[:200])
    >>> clf.epsilon_spent_ <= 4.0, len(clf.stages_) + 2, clf.predict(data.nodes()[200:]).shape
    (True, 3, (100,))
    """

    _progressive = True
    _head = "trained"  # every stage is a trained classifier; head="vote" is refused

    @property
    def _epochs(self) -> tuple[int, int]:
        """``(epochs, encoder_epochs)`` with None resolved: at node level, 50 for the last
        stage, which learns how to weigh the aggregations, and 20 for each stage before."""
        if not self._node_unit:
            return super()._epochs
        return self.epochs or 50, self.encoder_epochs or 20

    def _train(self, nodes: Nodes, y: np.ndarray, plan: GAPPlan, streams: RandomStreams) -> None:
        graph = nodes.graph
        self.noise_multiplier_, self.sensitivity_ = plan.noise_multiplier, plan.sensitivity
        (nodes, y), held = self._split(nodes, y, plan, streams)
        width, classes, self.history_ = self._width, len(self.classes_), []

        def fit_stage(index: int, aggregations: torch.Tensor | None):
            last = index == self._hops
            if index == 0:
                build = lambda: GAPEncoder(graph.num_features, width, classes,  # noqa: E731
                                           num_layers=self._encoder_layers,
                                           activation=self.activation, dropout=self._dropout)
                inputs = lambda part: torch.from_numpy(np.asarray(part))  # noqa: E731
            else:
                build = lambda: ProgressiveStage(  # noqa: E731
                    width, classes, parts=index + 1, combine=self.combine,
                    activation=self.activation, dropout=self._dropout,
                    in_dim=self._input_width(classes),
                    embedding=self._aggregated == "embeddings" and not last)
                inputs = lambda part: hop_inputs(self.encoder_, part, aggregations)  # noqa: E731
            module, history = self._stage(
                build, plan, "classifier" if last else "encoder", inputs, nodes, y, held, streams,
                index=0 if last else index, name=f"stage {index}")
            self.history_ += history
            if index == 0:
                self.encoder_ = module
            return module

        self.stages_ = []
        aggregations = self._progress(graph, streams, fit_stage, self._known_labels(nodes, y))
        self._cache_release(graph, _KIND, aggregations, keep_in_pickle=plan.own_rows_covered)

    def _progress(self, graph: Graph, streams: RandomStreams, fit_stage=None,
                  labelled=None) -> torch.Tensor:
        """The stages' aggregations on ``graph`` (one release), training stages if fitting.

        With ``fit_stage(index, aggregations)``, stage ``index`` is trained (on the
        aggregations released so far) just before its embedding is needed; without it the
        fitted stages are used. Each stage aggregates its embedding, or with
        ``aggregate="labels"`` its class probabilities with the ``labelled`` nodes' labels
        in place. Returns a Tensor of shape (num_nodes, hops, hidden_dim or classes).
        """
        plan, fitting = self._plan_, fit_stage is not None
        encoder = fit_stage(0, None) if fitting else self.encoder_
        adjacency = plan.bounded(graph.adjacency(), streams)
        own = embed_nodes(encoder, graph).to(self.device_)
        noise = streams.torch("noise", self.device_) if plan.private else None
        embedding = self._aggregated_rows(encoder, graph, labelled).to(self.device_)
        aggregations = []
        for index in range(1, self._hops + 1):
            aggregations.append(plan.aggregate_once(adjacency, embedding, noise).cpu())
            if index == self._hops:
                break
            released = torch.stack(aggregations, dim=1)
            if fitting:
                self.stages_.append(fit_stage(index, released).cpu())
            stage = self.stages_[index - 1].to(self.device_).eval()
            with torch.no_grad():
                stacked = stack_hops(own, released.to(self.device_))
                embedding = (with_known_labels(stage(stacked).softmax(-1), labelled)
                             if self._aggregated != "embeddings" else stage.embed(stacked))
            self.stages_[index - 1] = stage.cpu()
        released = torch.stack(aggregations, dim=1)
        if fitting:
            self.module_ = fit_stage(self._hops, released)
        return released

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        graph, plan = nodes.graph, self._plan_
        aggregations = self._release(graph, _KIND, lambda streams: self._progress(graph, streams),
                                     lambda: plan.release_cost(self.delta_),
                                     keep_in_pickle=plan.own_rows_covered)
        return self.module_(hop_inputs(self.encoder_, nodes, aggregations))
