"""RGNN: a GNN trained on locally private features and labels, reconstructed by the server."""

from __future__ import annotations

import hashlib
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
import torch

from skdpgraph._random import Seeds
from skdpgraph._validation import Interval, StrOptions
from skdpgraph.estimators._base import BaseDPClassifier
from skdpgraph.graph import Graph, Nodes
from skdpgraph.nn import BACKBONES, GNN, train_llp_gnn
from skdpgraph.preprocessing import (CategoricalFeatureEncoder, bag_label_proportions,
                                     holdout_split, mean_propagation_operator,
                                     reconstruct_features, reconstruct_labels)
from skdpgraph.preprocessing._randomizers import (FEATURE_STREAM, LABEL_STREAM, check_codes,
                                                  randomizer_rng)
from skdpgraph.privacy import (PrivacyReport, grr_fs_epsilon, grr_fs_paper_epsilon,
                               grr_fs_randomize, grr_randomize)
from skdpgraph.sampling import metis_partition

__all__ = ["RGNNClassifier"]

_NEW_GRAPH_STREAM = 3


class RGNNClassifier(BaseDPClassifier):
    r"""Reconstruction-based GNN under local DP on node features and labels (RGNN).

    Each node randomises its own categorical feature vector with GRR-FS (``m`` of ``d``
    features through GRR with :math:`\varepsilon_x` each, uniform values for the others)
    and each training node its label with GRR (:math:`\varepsilon_y`). The server, which
    knows the graph structure, then (1) estimates every node's features from the mean of
    the one-hot reports over ``feature_hops`` rounds of :math:`\{v\} \cup N(v)`
    propagation and the unbiased GRR-FS estimator, (2) estimates the training labels by
    masked propagation and :math:`P^{-1}`, (3) splits the graph into ``n_clusters`` METIS
    bags with de-biased label proportions, and trains a PyG GNN on
    :math:`\mathrm{CE}(\hat y, \tilde y) + \alpha\,\overline{\mathrm{KL}}(\tilde b \| \hat b)`.
    Everything after the randomisation is post-processing, so the model is trained
    without DP-SGD. See :ref:`rgnn_accounting`.

    Parameters
    ----------
    epsilon_per_feature : float, default=1.0
        :math:`\varepsilon_x`, the GRR budget of each sampled feature, in ``(0, inf]``.
    epsilon_labels : float, default=3.0
        :math:`\varepsilon_y` of each training label; ``np.inf`` uses labels as given.
    n_sampled_features : int, default=10
        :math:`m`, capped at the number of encoded features ``d`` (``n_sampled_features_``).
    feature_group_size : int, default=None
        OR-group this many binary columns into one feature (Cora 25, Facebook 100); see
        :class:`~skdpgraph.preprocessing.CategoricalFeatureEncoder`. Non-binary features
        are cut into 4 equal-width bins. Ignored when ``randomize=False``.
    feature_hops, label_hops : int, default=16
        :math:`K_x`, :math:`K_y` propagation rounds of the reconstruction.
    n_clusters : int, default=16
        METIS bags for the label-proportion loss.
    llp_weight : float, default=0.1
        :math:`\alpha`; 0 disables the LLP term.
    backbone : {"sage", "gcn", "gat"}, default="sage"
    hidden_dim : int, default=16
    layers : int, default=2
    dropout : float, default=0.5
    epochs : int, default=100
    lr : float, default=0.01
        Adam learning rate (full-batch training).
    max_grad_norm : float or None, default=None
        Clip the gradient norm of each step (training stability; privacy needs none).
    validation_fraction : float, default=0.0
        Hold out this fraction of the labelled nodes for model selection: their noisy
        labels still feed the label reconstruction, but not the loss or the bags, and
        the epoch with the best accuracy against their *reconstructed* labels is kept
        (``best_epoch_``). Only LDP reports are used, so it costs no budget.
    randomize : bool, default=True
        True: ``fit`` simulates the clients, randomising the features of all nodes of
        the graph and the labels ``y``. False: the graph's features are already GRR-FS
        reports (integer codes) and ``y`` already GRR labels, made with the budgets given
        here, e.g. by :class:`~skdpgraph.preprocessing.GRRFeatureRandomizer` and
        :class:`~skdpgraph.preprocessing.GRRLabelRandomizer` with the same
        ``random_state``, which then yields the same model as ``randomize=True``.
    random_state : int, RandomState or None, default=None
        Seeds the simulated randomisation, METIS and training. Leave it None in
        production.
    device : {"auto", "cpu", "cuda"}, default="auto"
    verbose : bool, default=False

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    epsilon_spent_ : float
        Per-node local budget :math:`m\varepsilon_x + \varepsilon_y`.
    delta_ : float
        0 (pure local DP).
    privacy_ : PrivacyReport
    n_sampled_features_ : int
    domain_sizes_ : ndarray of shape (d,)
        Categories of each encoded feature.
    encoder_ : CategoricalFeatureEncoder or None
        The client-side encoder (``randomize=True``).
    reconstructed_x_ : ndarray of shape (num_nodes, n_reconstructed)
        Reconstructed features of the training graph (post-processing of reports).
    history_ : list of dict
        Per-epoch loss and accuracy (``val_accuracy`` on the held-out nodes) against
        the *reconstructed* labels.
    best_epoch_ : int
        The epoch whose parameters are kept (``epochs`` without validation).
    module_ : torch.nn.Module
    device_ : torch.device

    Notes
    -----
    Privacy unit: local DP. Each node's feature vector is :math:`m\varepsilon_x`-LDP and
    each training label :math:`\varepsilon_y`-LDP, so a training node is
    :math:`(m\varepsilon_x + \varepsilon_y)`-LDP and ``epsilon_spent_`` reports that sum.
    :math:`m\varepsilon_x` is tight: the paper's Theorem 1 value
    :math:`\ln(1 + \frac{m}{d}(e^{m\varepsilon_x} - 1))` is not an upper bound under its
    own definition (two feature vectors differing in every feature have likelihood
    ratio exactly :math:`e^{m\varepsilon_x}`). The structure is public.

    ``predict`` reveals post-processing of LDP reports only: on the training graph it
    reuses the cached reconstructed features. On another graph, with ``randomize=True``
    it simulates that graph's clients randomising their features (a new
    :math:`m\varepsilon_x`-LDP release of *those* nodes; deterministic per
    ``random_state`` and graph content, so repeated queries on the same data reuse the
    same reports) and reconstructs them; with ``randomize=False``
    its features must already be reports. ``history_`` is computed from reports only.

    With ``randomize=True`` and non-binary features, the bin ranges are read from the
    features (treated as public schema); pass pre-randomised data to avoid that.

    References
    ----------
    .. [BHWW24] Bhaila, K., Huang, W., Wu, Y. and Wu, X. (2024). "Local Differential
       Privacy in Graph Neural Networks: a Reconstruction Approach". SDM.

    Examples
    --------
    >>> from skdpgraph import RGNNClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=300, random_state=0)
    >>> nodes = data.graph.nodes()
    >>> clf = RGNNClassifier(epsilon_per_feature=1.0, epsilon_labels=2.0, epochs=20,
    ...                      random_state=0).fit(nodes[:150], data.y[:150])
    >>> clf.epsilon_spent_  # m * eps_x + eps_y = 10 * 1 + 2
    12.0
    >>> clf.predict(nodes[150:]).shape
    (150,)
    """

    _parameter_constraints = {
        "epsilon_per_feature": [Interval(Real, 0, np.inf, closed="right")],
        "epsilon_labels": [Interval(Real, 0, np.inf, closed="right")],
        "n_sampled_features": [Interval(Integral, 1, None, closed="left")],
        "feature_group_size": [Interval(Integral, 1, None, closed="left"), None],
        "feature_hops": [Interval(Integral, 0, None, closed="left")],
        "label_hops": [Interval(Integral, 0, None, closed="left")],
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "llp_weight": [Interval(Real, 0, None, closed="left")],
        "backbone": [StrOptions(set(BACKBONES))],
        "hidden_dim": [Interval(Integral, 1, None, closed="left")],
        "layers": [Interval(Integral, 1, None, closed="left")],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "epochs": [Interval(Integral, 1, None, closed="left")],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "max_grad_norm": [Interval(Real, 0, None, closed="neither"), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "randomize": ["boolean"],
        "random_state": ["random_state"],
        "device": [StrOptions({"auto", "cpu", "cuda"}), torch.device],
        "verbose": ["verbose"],
    }

    def __init__(self, *, epsilon_per_feature=1.0, epsilon_labels=3.0, n_sampled_features=10,
                 feature_group_size=None, feature_hops=16, label_hops=16, n_clusters=16,
                 llp_weight=0.1, backbone="sage", hidden_dim=16, layers=2, dropout=0.5,
                 epochs=100, lr=0.01, max_grad_norm=None, validation_fraction=0.0,
                 randomize=True, random_state=None, device="auto", verbose=False):
        self.epsilon_per_feature = epsilon_per_feature
        self.epsilon_labels = epsilon_labels
        self.n_sampled_features = n_sampled_features
        self.feature_group_size = feature_group_size
        self.feature_hops = feature_hops
        self.label_hops = label_hops
        self.n_clusters = n_clusters
        self.llp_weight = llp_weight
        self.backbone = backbone
        self.hidden_dim = hidden_dim
        self.layers = layers
        self.dropout = dropout
        self.epochs = epochs
        self.lr = lr
        self.max_grad_norm = max_grad_norm
        self.validation_fraction = validation_fraction
        self.randomize = randomize
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def _fit(self, nodes: Nodes, y: np.ndarray, seeds: Seeds) -> None:
        graph, c = nodes.graph, len(self.classes_)
        self._seed_ = seeds.seed
        reports = self._feature_reports(graph, fitting=True)         # clients (simulated)
        if self.randomize:
            y = grr_randomize(y, c, self.epsilon_labels, randomizer_rng(seeds.seed, LABEL_STREAM))
        operator = mean_propagation_operator(graph)                   # server: reconstruct
        self.reconstructed_x_ = self._reconstruct(operator, reports)
        self._train_graph_uid_ = graph.uid
        targets = (y if np.isinf(self.epsilon_labels) else reconstruct_labels(
            operator, nodes.index, y, c, self.epsilon_labels, self.label_hops).argmax(axis=1))
        train, val = holdout_split(len(y), self.validation_fraction, seeds.numpy)
        parts = metis_partition(graph.indptr, graph.indices, self.n_clusters, seed=seeds.seed)
        bag, proportions = bag_label_proportions(parts[nodes.index[train]], y[train], c,
                                                 self.epsilon_labels)
        module = GNN(self.reconstructed_x_.shape[1], self.hidden_dim, c, num_layers=self.layers,
                     backbone=self.backbone, dropout=self.dropout).to(self.device_)
        x, edges, train_nodes, train_y, bag, proportions, val_nodes, val_y = (
            torch.tensor(np.asarray(a), device=self.device_) for a in (
                self.reconstructed_x_, graph.edge_index, nodes.index[train], targets[train], bag,
                proportions, nodes.index[val], targets[val]))
        self.history_, self.best_epoch_ = train_llp_gnn(
            module, x, edges, train_nodes, train_y, bag, proportions, llp_weight=self.llp_weight,
            epochs=self.epochs, lr=self.lr, max_grad_norm=self.max_grad_norm,
            val_index=val_nodes if val.size else None, val_targets=val_y,
            verbose=self.verbose, desc=type(self).__name__)
        self.module_ = module.cpu().eval()
        self._set_privacy(self._report())

    def _feature_reports(self, graph: Graph, fitting: bool) -> np.ndarray:
        """GRR-FS reports of every node: simulated (randomize=True) or read from ``graph``."""
        if not self.randomize:
            codes = check_codes(graph.features(), f"{type(self).__name__} (randomize=False)")
            if fitting:
                self.encoder_ = None
                self.domain_sizes_ = np.maximum(codes.max(axis=0) + 1, 2)
                self.n_sampled_features_ = min(self.n_sampled_features, codes.shape[1])
            elif np.any(codes >= self.domain_sizes_):
                raise ValueError(f"{type(self).__name__}: feature codes exceed the domain sizes "
                                 f"seen in fit ({self.domain_sizes_.tolist()[:10]}).")
            return codes
        if fitting:
            self.encoder_ = CategoricalFeatureEncoder(group_size=self.feature_group_size)
            self.encoder_.fit(graph.x)
            self.domain_sizes_ = self.encoder_.domain_sizes_
            self.n_sampled_features_ = min(self.n_sampled_features, self.domain_sizes_.size)
            rng = randomizer_rng(self._seed_, FEATURE_STREAM)
        else:
            rng = randomizer_rng(self._seed_, _NEW_GRAPH_STREAM, _content_key(graph))
        return grr_fs_randomize(self.encoder_.transform(graph.x), self.domain_sizes_,
                                self.epsilon_per_feature, self.n_sampled_features_, rng)

    def _reconstruct(self, operator, reports: np.ndarray) -> np.ndarray:
        return reconstruct_features(operator, reports, self.domain_sizes_,
                                    self.epsilon_per_feature, self.n_sampled_features_,
                                    self.feature_hops)

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        graph = nodes.graph
        if graph.uid == self._train_graph_uid_:
            x = self.reconstructed_x_
        else:
            x = self._reconstruct(mean_propagation_operator(graph),
                                  self._feature_reports(graph, fitting=False))
        logits = self.module_(torch.from_numpy(x), torch.tensor(graph.edge_index))
        return logits[torch.tensor(nodes.index)]

    def _report(self) -> PrivacyReport:
        m, d = self.n_sampled_features_, self.domain_sizes_.size
        eps_x, eps_y = grr_fs_epsilon(m, self.epsilon_per_feature), float(self.epsilon_labels)
        paper = grr_fs_paper_epsilon(d, m, self.epsilon_per_feature)
        return PrivacyReport(
            estimator="RGNNClassifier",
            unit="local (each node's own feature vector; and label, for training nodes)",
            neighbouring_relation="local DP: any two feature vectors (and any two labels) of "
                                  "one node; graph structure public",
            epsilon=eps_x + eps_y, delta=0.0,
            accountant="pure LDP, basic composition: GRR-FS m*eps_x (tight, "
                       "skdpgraph.privacy.grr_fs_epsilon) + GRR eps_y",
            mechanism=(f"GRR-FS on d={d} encoded features, m={m} sampled, eps_x="
                       f"{self.epsilon_per_feature:g} each (all nodes); GRR over "
                       f"{len(self.classes_)} classes, eps_y={eps_y:g} (training nodes)"),
            events=(f"features: GRR-FS, epsilon {eps_x:g} (the paper's Theorem 1 would claim "
                    f"{paper:.4g}, not an upper bound)", f"labels: GRR, epsilon {eps_y:g}"),
            inference="predictions are post-processing of LDP reports (training graph: cached "
                      "reconstruction). On another graph, randomize=True simulates a fresh "
                      f"{eps_x:g}-LDP feature release of that graph's nodes.",
            assumptions=("graph structure is public", "each node reports once",
                         "feature schema (binary grouping, bin ranges) is public"),
            not_covered=(),
        )


def _content_key(graph: Graph) -> int:
    """A hash of the graph's features and edges: the same data gets the same reports."""
    digest = hashlib.sha256(graph.edge_index.tobytes())
    x = graph.x
    for part in ((x.data, x.indices, x.indptr) if sp.issparse(x) else (x,)):
        digest.update(np.ascontiguousarray(part).tobytes())
    return int.from_bytes(digest.digest()[:16], "little")

