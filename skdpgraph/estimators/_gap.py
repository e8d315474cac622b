"""GAP: differentially private GNN by aggregation perturbation (edge and node level)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.model_selection import train_test_split

from skdpgraph._random import Seeds, make_seeds
from skdpgraph._validation import DPSGD_CONSTRAINTS, Interval, StrOptions, default_delta
from skdpgraph.estimators._base import BaseDPClassifier
from skdpgraph.estimators._dpmlp import per_example_cross_entropy
from skdpgraph.estimators._gap_report import gap_release, gap_report
from skdpgraph.graph import Graph, Nodes
from skdpgraph.nn import GAPClassificationModule, GAPEncoder
from skdpgraph.privacy import (
    calibrate_gaussian_noise, calibrate_noise_multiplier, compute_epsilon, gap_node_event,
    gaussian_epsilon, pma_sensitivity, plan_dpsgd, private_multi_hop_aggregation, row_normalize,
    steps_for_epochs,
)
from skdpgraph.sampling import bound_out_degree
from skdpgraph.training import TensorExamples, train_dpsgd

__all__ = ["GAPClassifier"]

_CHUNK = 65536  # rows embedded at a time: bounds memory on wide sparse features


class GAPClassifier(BaseDPClassifier):
    """Graph neural network with differential privacy by aggregation perturbation (GAP).

    Three stages [SSBG23]_: an encoder MLP trained on features and labels (no edges); PMA,
    which sums the row-normalised embeddings over in-neighbours K times, adding Gaussian
    noise and row-normalising after each hop (:func:`~skdpgraph.privacy.
    private_multi_hop_aggregation`); and a classifier on the node's own embedding and its
    K noisy aggregations. Only PMA reads the edges.

    Parameters
    ----------
    epsilon : float, default=8.0
        Budget; ``np.inf`` is GAP-∞ (no noise, no clipping).
    delta : float, default=None
        Edge level: ``1 / (10 * E)`` with E the undirected (directed, on a directed graph)
        edges; node level: ``1 / (10 * num_nodes)`` of the whole graph (every node is
        protected by PMA, not only the training nodes).
    privacy_level : {"edge", "node"}, default="edge"
    hops : int, default=2
        K, the number of aggregation hops.
    hidden_dim : int, default=16
    encoder_layers : int, default=2
    combine : {"cat", "sum", "max"}, default="cat"
    activation : str, default="selu"
    epochs : int, default=None
        Classifier epochs: 100 at edge level, 10 at node level (the paper's defaults).
    encoder_epochs : int, default=None
        Encoder epochs: same defaults as ``epochs``.
    lr : float, default=0.01
    batch_size : int, default=None
        Edge level: full batch; node level: 256 (expected Poisson batch size).
    max_degree : int, default=100
        Node level: out-degree bound D (PMA sensitivity sqrt(D)).
    max_grad_norm : float, default=1.0
        Node level: per-example clipping norm of both DP-SGD runs.
    dropout : float, default=0.0
    validation_fraction : float, default=None
        Edge level only: hold out this fraction of the training nodes (stratified), train
        on the rest, and keep the encoder and classifier weights of the epoch with the best
        accuracy on the held-out nodes (the authors' model selection). Free at edge level:
        features and labels are public and the selection post-processes the one PMA
        release. Refused at node level, where it would use labels without accounting.
    random_state : int, RandomState or None, default=None
        Seeds noise, sampling and initialisation. Leave None in production.
    device : {"auto", "cpu", "cuda"}, default="auto"
    verbose : bool, default=False

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    epsilon_spent_ : float
        Epsilon of the training release (<= ``epsilon``).
    delta_ : float
    noise_multiplier_ : float or None
        sigma: PMA noise std / sensitivity, and (node level) DP-SGD noise std / C.
    sensitivity_ : float
        PMA sensitivity of one hop (sqrt(2), 1 or sqrt(D)).
    privacy_ : PrivacyReport
        Replaced by ``predict`` on another graph (a new entry in ``releases``).
    history_ : dict
        ``"encoder"`` and ``"classifier"`` per-epoch records (not private); with
        ``validation_fraction``, each record has ``validation_accuracy``.
    module_ : GAPClassificationModule
    encoder_ : GAPEncoder
    aggregations_ : Tensor of shape (num_nodes, hops, hidden_dim)
        The noisy aggregations X̄_1..X̄_K of every node of the fitted graph.
    device_ : torch.device

    Notes
    -----
    Edge level: the unit is one undirected edge on an undirected graph (both directed
    entries, sensitivity sqrt(2)), one directed edge on a directed graph. The K noisy hops
    compose exactly into one Gaussian mechanism with multiplier sigma/sqrt(K); sigma is
    calibrated on its exact (analytic) curve. Features and labels are public at this
    level, so encoder and classifier train without noise.

    Node level: the unit is one node with its features, label and edges (add/remove; the
    node set is public and a removed node is isolated, as in the paper's Lemma 2).
    Out-degree is bounded to ``max_degree`` by random edge sampling; the guarantee
    assumes the graph's out-degree is already <= ``max_degree`` (otherwise it holds for
    the sampled graph taken as input). One sigma serves encoder DP-SGD, the K PMA hops
    (std sigma*sqrt(D)) and classifier DP-SGD, calibrated on their RDP composition. A
    removed node only enters the classifier through its own example, so the cached rows
    of the other nodes and the trained model are covered; the node's own aggregation row
    and own prediction (functions of its own edges and features) are not covered with
    respect to that node itself. Hyperparameters are treated as public.

    ``predict`` on nodes of the fitted graph reuses the cached noisy aggregations: no new
    noise, no extra cost. On another graph it runs a new PMA release with the same sigma,
    recorded in ``privacy_.releases``. Hop 0 always comes from the queried nodes' own
    features. The estimator keeps no adjacency and no raw features.

    References
    ----------
    .. [SSBG23] Sajadmanesh, Shamsabadi, Bellet, Gatica-Perez. "GAP: Differentially
       Private Graph Neural Networks with Aggregation Perturbation", USENIX Security 2023.

    Examples
    --------
    >>> from skdpgraph import GAPClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=300, random_state=0)
    >>> nodes = data.nodes()
    >>> clf = GAPClassifier(epsilon=4.0, epochs=20, encoder_epochs=20, random_state=0)
    >>> clf = clf.fit(nodes[:200], data.y[:200])
    >>> clf.epsilon_spent_ <= 4.0, clf.predict(nodes[200:]).shape
    (True, (100,))
    """

    _parameter_constraints = {
        **DPSGD_CONSTRAINTS,
        "privacy_level": [StrOptions({"edge", "node"})],
        "hops": [Interval(Integral, 1, None, closed="left")],
        "hidden_dim": [Interval(Integral, 1, None, closed="left")],
        "encoder_layers": [Interval(Integral, 1, None, closed="left")],
        "combine": [StrOptions({"cat", "sum", "max"})],
        "activation": [StrOptions({"relu", "selu", "tanh", "elu", "gelu"})],
        "epochs": [Interval(Integral, 1, None, closed="left"), None],
        "encoder_epochs": [Interval(Integral, 1, None, closed="left"), None],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "max_degree": [Interval(Integral, 1, None, closed="left")],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
    }

    def __init__(self, *, epsilon=8.0, delta=None, privacy_level="edge", hops=2, hidden_dim=16,
                 encoder_layers=2, combine="cat", activation="selu", epochs=None,
                 encoder_epochs=None, lr=0.01, batch_size=None, max_degree=100,
                 max_grad_norm=1.0, dropout=0.0, validation_fraction=None, random_state=None,
                 device="auto", verbose=False):
        self.epsilon = epsilon
        self.delta = delta
        self.privacy_level = privacy_level
        self.hops = hops
        self.hidden_dim = hidden_dim
        self.encoder_layers = encoder_layers
        self.combine = combine
        self.activation = activation
        self.epochs = epochs
        self.encoder_epochs = encoder_epochs
        self.lr = lr
        self.batch_size = batch_size
        self.max_degree = max_degree
        self.max_grad_norm = max_grad_norm
        self.dropout = dropout
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    # ------------------------------------------------------------------ fit
    def _fit(self, nodes: Nodes, y: np.ndarray, seeds: Seeds) -> None:
        graph, node = nodes.graph, self.privacy_level == "node"
        nodes, y, held_out, y_held_out = self._hold_out(nodes, y, seeds)
        delta = self.delta if self.delta is not None else default_delta(
            graph.num_nodes if node else graph.num_edges // (1 if graph.directed else 2))
        self.sensitivity_ = pma_sensitivity(self.privacy_level, directed=graph.directed,
                                            max_degree=self.max_degree)
        encoder_plan, classifier_plan, sigma, epsilon = self._plan(len(nodes), delta)
        self.noise_multiplier_, self.delta_ = sigma, delta
        self.encoder_ = GAPEncoder(graph.num_features, self.hidden_dim, len(self.classes_),
                                   num_layers=self.encoder_layers, activation=self.activation,
                                   dropout=self.dropout).to(self.device_)
        labels = torch.from_numpy(y)
        encoder = self._train(self.encoder_, encoder_plan,
                              (torch.from_numpy(np.asarray(nodes)), labels), seeds, 1, "GAP encoder",
                              None if held_out is None else
                              (torch.from_numpy(np.asarray(held_out)), y_held_out))
        self._fit_uid = graph.uid
        self.aggregations_ = self._aggregate(graph, seeds)
        self._released = {graph.uid: self.aggregations_}
        classifier_input = self._hop_inputs(nodes)
        self.module_ = GAPClassificationModule(
            self.hidden_dim, len(self.classes_), hops=self.hops, combine=self.combine,
            activation=self.activation, dropout=self.dropout).to(self.device_)
        classifier = self._train(self.module_, classifier_plan, (classifier_input, labels),
                                 seeds, 3, "GAP classifier", None if held_out is None else
                                 (self._hop_inputs(held_out), y_held_out))
        self.history_ = {"encoder": encoder, "classifier": classifier}
        self._set_privacy(gap_report(self, encoder_plan, classifier_plan, epsilon, graph))

    def _hold_out(self, nodes: Nodes, y: np.ndarray, seeds: Seeds):
        """``(fit nodes, fit labels, held-out nodes or None, held-out labels or None)``."""
        if self.validation_fraction is None:
            return nodes, y, None, None
        if self.privacy_level == "node":
            raise ValueError("GAPClassifier: validation_fraction selects epochs on labels, which "
                             "node-level DP protects; it is only allowed at privacy_level='edge'.")
        stratify = y if np.bincount(y).min() >= 2 else None
        fit, held = train_test_split(np.arange(len(y)), test_size=self.validation_fraction,
                                     stratify=stratify, random_state=seeds.seed)
        return nodes[fit], y[fit], nodes[held], torch.from_numpy(y[held])

    def _level_defaults(self) -> tuple[int, int, int | None]:
        node = self.privacy_level == "node"
        epochs = self.epochs if self.epochs is not None else (10 if node else 100)
        encoder_epochs = self.encoder_epochs if self.encoder_epochs is not None else epochs
        return epochs, encoder_epochs, self.batch_size or (256 if node else None)

    def _plan(self, n: int, delta: float):
        """DP-SGD plans of encoder and classifier, sigma and the epsilon spent."""
        epochs, encoder_epochs, batch = self._level_defaults()
        batch = batch or n
        node_private = self.privacy_level == "node" and math.isfinite(self.epsilon)

        def plans(sigma):
            kwargs = dict(epsilon=self.epsilon if node_private else math.inf, delta=delta,
                          sampling="poisson", num_examples=n, batch_size=batch,
                          max_grad_norm=self.max_grad_norm, noise_multiplier=sigma)
            return (plan_dpsgd(steps=steps_for_epochs(encoder_epochs, n, batch), **kwargs),
                    plan_dpsgd(steps=steps_for_epochs(epochs, n, batch), **kwargs))

        context = (f"GAPClassifier (privacy_level={self.privacy_level!r}, hops={self.hops}, "
                   f"epochs={epochs}, encoder_epochs={encoder_epochs}, delta={delta:.3g})")
        if math.isinf(self.epsilon):
            return (*plans(None), None, math.inf)
        if not node_private:
            sigma = calibrate_gaussian_noise(self.epsilon, delta, count=self.hops, context=context)
            return (*plans(None), sigma, gaussian_epsilon(sigma, delta, count=self.hops))

        def epsilon_for(sigma):
            return compute_epsilon(gap_node_event(sigma, self.hops, *plans(sigma)), delta)

        sigma = calibrate_noise_multiplier(epsilon_for, self.epsilon, context=context)
        return (*plans(sigma), sigma, epsilon_for(sigma))

    def _train(self, module, plan, tensors, seeds: Seeds, offset: int, description: str,
               held_out=None):
        best = {"accuracy": -1.0, "state": None}

        def keep_best(module, record):  # edge level only: features and labels are public
            module.eval()
            with torch.no_grad():
                inputs, labels = (t.to(self.device_) for t in held_out)
                accuracy = float((module(inputs).argmax(-1) == labels).float().mean())
            module.train()
            record["validation_accuracy"] = accuracy
            if accuracy > best["accuracy"]:
                best.update(accuracy=accuracy, state={k: v.detach().clone()
                                                      for k, v in module.state_dict().items()})

        result = train_dpsgd(
            module, TensorExamples(*tensors, device=self.device_), per_example_cross_entropy,
            plan, lr=self.lr, generator=seeds.torch,
            noise_generator=seeds.torch_on(self.device_, offset), verbose=self.verbose,
            description=description, on_epoch=None if held_out is None else keep_best)
        if best["state"] is not None:
            result.module.load_state_dict(best["state"])
        result.module.cpu()
        return result.history

    # ------------------------------------------------------------------ PMA
    def _embed(self, graph: Graph, index) -> torch.Tensor:
        """Row-normalised encoder embeddings of ``index``, computed in chunks."""
        index = np.arange(graph.num_nodes) if index is None else np.asarray(index)
        with torch.no_grad():
            parts = [self.encoder_.embed(torch.from_numpy(graph.features(index[i:i + _CHUNK])))
                     for i in range(0, len(index), _CHUNK)]
        return row_normalize(torch.cat(parts) if parts else torch.zeros(0, self.hidden_dim))

    def _aggregate(self, graph: Graph, seeds: Seeds) -> torch.Tensor:
        """A PMA release on ``graph`` with the fitted sigma (degree-bounded at node level)."""
        adjacency = graph.adjacency()
        if self.privacy_level == "node":
            adjacency = bound_out_degree(adjacency, self.max_degree, seeds.numpy)
        sigma = self.noise_multiplier_
        with torch.no_grad():
            return private_multi_hop_aggregation(
                adjacency, self._embed(graph, None).to(self.device_), self.hops,
                0.0 if sigma is None else sigma * self.sensitivity_,
                seeds.torch_on(self.device_, 2)).cpu()

    def _aggregations_for(self, graph: Graph) -> torch.Tensor:
        """Cached noisy aggregations of ``graph``; a new recorded release for a new graph."""
        if graph.uid not in self._released:
            # One other graph is kept besides the fitted one: asking again for the latest
            # graph costs nothing; a graph seen before that is released afresh.
            fitted = {self._fit_uid: self._released[self._fit_uid]}
            fitted[graph.uid] = self._aggregate(graph, make_seeds(self.random_state))
            self._released = fitted
            self.privacy_ = gap_release(self, graph)
        return self._released[graph.uid]

    def _hop_inputs(self, nodes: Nodes) -> torch.Tensor:
        """(n, K + 1, hidden) classifier inputs: own embedding, then the noisy hops."""
        aggregations = self._aggregations_for(nodes.graph)
        own = self._embed(nodes.graph, nodes.index)
        index = torch.from_numpy(np.array(nodes.index, dtype=np.int64))
        return torch.cat([own.unsqueeze(1), aggregations[index]], dim=1)

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        return self.module_(self._hop_inputs(nodes))
