"""RGNN: a GNN trained on locally private features and labels, reconstructed by the server."""

from __future__ import annotations

import functools
from numbers import Integral, Real

import numpy as np
import torch

from skdpgraph._deprecation import DEPRECATED, renamed_parameter
from skdpgraph._random import RandomStreams
from skdpgraph._validation import DP_CONSTRAINTS, DPSGD_CONSTRAINTS, Interval, StrOptions
from skdpgraph.estimators._base import BaseDPClassifier
from skdpgraph.estimators._parameter_docs import fill_doc
from skdpgraph.estimators._rgnn_inputs import (ReconstructedFeatures, as_float, gnn_structure,
                                               reconstruction_rounds, schema_assumption)
from skdpgraph.estimators._rgnn_labels import (LabelSupervision, choose_label_hops,
                                               resolved_label_loss)
from skdpgraph.graph import Nodes
from skdpgraph.nn import CONVS, ProbabilityAverage
from skdpgraph.preprocessing import (client_generators, feature_schema,
                                     mean_propagation_operator, propagation_hops)
from skdpgraph.privacy import (LocalDPPlan, grr_randomize, plan_local_grr,
                               split_local_budget)
from skdpgraph.sampling import metis_partition

__all__ = ["RGNNClassifier"]


@fill_doc
class RGNNClassifier(ReconstructedFeatures, LabelSupervision, BaseDPClassifier):
    r"""Reconstruction-based GNN under local DP on node features and labels (RGNN).

    Bhaila et al. (SDM 2024): every node reports its categorical features through GRR-FS,
    every training node its label through GRR; the server reconstructs both over the public
    graph and trains a GNN with a label-proportion loss on METIS bags. ``predict`` on the
    training graph (or a same-content copy) reuses the cached reconstruction; elsewhere it
    is a new GRR-FS release, recorded in ``privacy_.releases``. See :ref:`rgnn_accounting`;
    every choice after the reports is post-processing (:ref:`rgnn_choices`).

    Parameters
    ----------
    epsilon : float, default=13.0
        Total local budget of a training node, :math:`m\varepsilon_x + \varepsilon_y`, in
        ``(0, inf]`` (``inf``: features and labels sent in the clear). Split by default
        3/13 to the labels and 10/13 evenly over the :math:`m` sampled features: the
        paper's :math:`\varepsilon_x = 1`, :math:`\varepsilon_y = 3` at the default 13.
        The guarantee is pure local DP (``delta_`` is 0).
    epsilon_per_feature : float, default=None
        Override of :math:`\varepsilon_x` (each sampled feature's GRR report), in
        ``(0, inf]``. Alone, the labels get the rest of ``epsilon``; with
        ``epsilon_labels``, :math:`m\varepsilon_x + \varepsilon_y` must equal ``epsilon``.
        The value used is ``epsilon_per_feature_``.
    epsilon_labels : float, default=None
        Override of :math:`\varepsilon_y` (each training node's GRR label report), in
        ``(0, inf]``. Alone, the features get the rest of ``epsilon``, split evenly over
        the :math:`m` sampled features. The value used is ``epsilon_labels_``.
    classes : array-like, default=None
        {{classes}}
    num_sampled_features : int, default=10
        :math:`m`, the features each node reports through GRR-FS, capped at the number of
        encoded features ``d`` (the value used is ``num_sampled_features_``). A larger
        :math:`m` leaves less budget per feature.
    feature_type : {"binary", "continuous"}, default="binary"
        The public schema of the node features, never read from the data. ``"binary"``
        (bag-of-words): every value must be 0 or 1, any other is refused by name.
        ``"continuous"``: every column is cut into 4 bins over ``feature_range``.
    feature_group_size : int, default=None
        OR-group this many binary columns into one feature before randomisation (Cora
        25, Facebook 100); None: no grouping. It changes ``d``, not the total budget.
    feature_range : tuple (low, high), default=(-1.5, 1.5)
        Public range of the 4 bins of ``feature_type="continuous"`` (values outside go
        to the end bins), never read from the data; suits standardised features.
    feature_hops : int or "auto", default="auto"
        Rounds (>= 0) of neighbourhood means in the feature reconstruction. ``"auto"``:
        the most rounds, up to 16, before the means cover half the graph (public
        structure only); 0 when ``epsilon_per_feature_`` is ``inf``.
    label_hops : int or "auto", default="auto"
        Rounds (>= 0) of neighbourhood means of the noisy labels. ``"auto"``: 0 when
        ``epsilon_labels_`` is ``inf``; otherwise none or up to the ``feature_hops``
        rule's rounds, chosen on held-out reports by two more GNNs (the scores are
        ``label_hops_scores_``).
    label_loss : {"auto", "forward", "reconstructed"}, default="auto"
        How the noisy labels supervise the GNN. ``"forward"``: the GNN's probabilities,
        through the label randomiser's channel, fit each node's ``label_hops``-round
        frequencies of noisy labels. ``"reconstructed"``: the paper's cross-entropy
        against the argmax of the de-biased frequencies. ``"auto"``: ``"forward"`` when
        GRR keeps a label with probability below one half, else ``"reconstructed"``.
    num_clusters : int, default=16
        METIS bags (>= 1) of the label-proportion loss, cut from the public structure.
    llp_weight : float, default=0.1
        Weight (>= 0) of the label-proportion loss added to the cross-entropy.
    conv : {"sage", "gcn", "gat"}, default="sage"
        Graph convolution of the GNN over the public graph.
    ensemble_size : int, default=5
        GNNs (>= 1) trained from different initialisations on the same reconstruction;
        predictions average their class probabilities.
    standardize : bool or "auto", default="auto"
        Scale every reconstructed feature to mean 0 and variance 1 over the training
        graph's nodes (``feature_mean_``, ``feature_scale_``, reused at prediction).
        ``"auto"``: only for exact reports (``epsilon_per_feature_`` is ``inf``).
    hidden_dim : int, default=16
        Width of the GNN's hidden layers, at least 1.
    num_layers : int, default=2
        Message-passing layers of the GNN, at least 1.
    dropout : float, default=0.5
        {{dropout}}
    epochs : int, default=100
        Full-batch training epochs, at least 1 (training reads only the reports).
    lr : float, default=0.01
        Learning rate of Adam, in ``(0, 1e30]``.
    max_grad_norm : float or None, default=None
        Clip the full-batch gradient's norm to this value (> 0), for stability only: the
        guarantee comes from the local reports. None: no clipping.
    validation_fraction : float, "auto" or None, default=None
        Hold out this fraction of the training reports (in ``(0, 1)``, rounded up,
        stratified where every class fits in both parts) and keep the epoch with the
        best accuracy on their reconstructed labels. They are reports, so any fraction
        is allowed; ``"auto"``: 10% from 500 training nodes on. None: no split.
    randomize : bool, default=True
        True: simulate the clients (GRR-FS on the features, GRR on ``y``). False: the
        features and ``y`` are already reports made with this fit's budget split.
    random_state : int, RandomState instance or None, default=None
        Root of the clients', METIS', split and training streams. Leave None in
        production: a known seed makes the randomisation reproducible.
    device : {"auto", "cpu", "cuda", "cuda:<index>"} or torch.device, default="auto"
        {{device}}
    verbose : bool, default=False
        Show a progress bar with the loss and epsilon (spent before training).
    private_diagnostics : bool, default=False
        No effect: the history is computed from the reports only, and kept whole.
    n_sampled_features : int, default="deprecated"
        Former name of ``num_sampled_features``.
    n_clusters : int, default="deprecated"
        Former name of ``num_clusters``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    epsilon_spent_ : float
        :math:`m\varepsilon_x + \varepsilon_y` per training node (``delta_`` is 0).
    epsilon_per_feature_ : float
        :math:`\varepsilon_x`, this fit's share of ``epsilon`` per sampled feature.
    epsilon_labels_ : float
        :math:`\varepsilon_y`, this fit's share of ``epsilon`` per label.
    delta_ : float
    privacy_ : PrivacyReport
    num_sampled_features_ : int
    feature_hops_ : int
    label_hops_ : int
    label_hops_scores_ : dict
        For ``label_hops="auto"``: each candidate's share of held-out noisy labels its
        GNN predicts (empty otherwise).
    label_loss_ : str
    domain_sizes_ : ndarray of shape (d,)
    feature_encoder_ : CategoricalFeatureEncoder or None
    reconstructed_x_ : ndarray of shape (num_nodes, n_reconstructed)
    standardize_ : bool
    feature_mean_ : ndarray of shape (n_reconstructed,)
    feature_scale_ : ndarray of shape (n_reconstructed,)
    history_ : list of dict
        One record per epoch of each GNN (stage ``"classifier"``, or ``"classifier 1"``,
        ... with ``ensemble_size > 1``); ``epsilon`` is the whole local budget.
    best_epochs_ : tuple of int
        The epoch (1-based) whose parameters each GNN keeps.
    module_ : torch.nn.Module
        The GNN, or a :class:`~skdpgraph.nn.ProbabilityAverage` of the ensemble.
    device_ : torch.device

    Examples
    --------
    >>> from skdpgraph.datasets import make_csbm
    >>> from skdpgraph import RGNNClassifier
    >>> dataset = make_csbm(n_nodes=300, random_state=0)
    >>> clf = RGNNClassifier(epsilon=12.0, epsilon_labels=2.0, feature_type="continuous",
    ...                      epochs=20, random_state=0)
    >>> clf = clf.fit(dataset.nodes()[:150], dataset.y[:150])
    >>> clf.epsilon_spent_, clf.epsilon_per_feature_  # m * eps_x + eps_y = 10 * 1 + 2
    (12.0, 1.0)
    """

    _parameter_constraints = {
        **{name: [Interval(Real, 0, np.inf, closed="right"), None]
           for name in ("epsilon_per_feature", "epsilon_labels")},
        **{name: [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})]
           for name in ("feature_hops", "label_hops")},
        **{name: [Interval(Integral, 1, None, closed="left")] for name in (
            "num_sampled_features", "num_clusters", "ensemble_size", "hidden_dim",
            "num_layers", "epochs")},
        **{name: [Interval(Integral, 1, None, closed="left"), StrOptions({DEPRECATED})]
           for name in ("n_sampled_features", "n_clusters")},
        "standardize": ["boolean", StrOptions({"auto"})],
        "feature_group_size": [Interval(Integral, 1, None, closed="left"), None],
        "llp_weight": [Interval(Real, 0, None, closed="left")], "feature_range": [tuple],
        "conv": [StrOptions(set(CONVS))],
        "feature_type": [StrOptions({"binary", "continuous"})],
        "label_loss": [StrOptions({"auto", "forward", "reconstructed"})],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "validation_fraction": DPSGD_CONSTRAINTS["validation_fraction"],
        "lr": DPSGD_CONSTRAINTS["lr"], "randomize": ["boolean"],
        "max_grad_norm": [Interval(Real, 0, None, closed="neither"), None],
        **{k: v for k, v in DP_CONSTRAINTS.items() if k != "delta"},
    }
    _training_size_public = False  # the local budget does not depend on it
    _history_on_private_data = False  # computed from the randomised reports only

    def __init__(self, *, epsilon=13.0, epsilon_per_feature=None, epsilon_labels=None,
                 classes=None, num_sampled_features=10, feature_type="binary",
                 feature_group_size=None, feature_range=(-1.5, 1.5), feature_hops="auto",
                 label_hops="auto", label_loss="auto", num_clusters=16, llp_weight=0.1,
                 conv="sage", ensemble_size=5, standardize="auto", hidden_dim=16, num_layers=2,
                 dropout=0.5, epochs=100, lr=0.01, max_grad_norm=None, validation_fraction=None,
                 randomize=True, random_state=None, device="auto", verbose=False,
                 private_diagnostics=False, n_sampled_features=DEPRECATED,
                 n_clusters=DEPRECATED):
        self.epsilon = epsilon
        self.epsilon_per_feature = epsilon_per_feature
        self.epsilon_labels = epsilon_labels
        self.classes = classes
        self.num_sampled_features = num_sampled_features
        self.feature_type = feature_type
        self.feature_group_size = feature_group_size
        self.feature_range = feature_range
        self.feature_hops = feature_hops
        self.label_hops = label_hops
        self.label_loss = label_loss
        self.num_clusters = num_clusters
        self.llp_weight = llp_weight
        self.conv = conv
        self.ensemble_size = ensemble_size
        self.standardize = standardize
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.dropout = dropout
        self.epochs = epochs
        self.lr = lr
        self.max_grad_norm = max_grad_norm
        self.validation_fraction = validation_fraction
        self.randomize = randomize
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.private_diagnostics = private_diagnostics
        self.n_sampled_features = n_sampled_features
        self.n_clusters = n_clusters

    _protected_units = staticmethod(lambda nodes: 0)  # pure local DP: delta 0
    _labels_public = staticmethod(lambda: True)  # it reads label reports (post-processing)

    def _check_data(self, nodes: Nodes, y: np.ndarray) -> None:
        self.feature_encoder_, self.domain_sizes_ = feature_schema(
            nodes.graph.x, randomize=self.randomize, feature_type=self.feature_type,
            group_size=self.feature_group_size, feature_range=self.feature_range,
            name="RGNNClassifier")
        sampled = renamed_parameter(self, "n_sampled_features", "num_sampled_features",
                                    default=10)
        self._num_clusters_ = renamed_parameter(self, "n_clusters", "num_clusters", default=16)
        self.num_sampled_features_ = min(sampled, self.domain_sizes_.size)
        self.epsilon_per_feature_, self.epsilon_labels_ = split_local_budget(
            self._budget(), self.num_sampled_features_,
            epsilon_per_feature=as_float(self.epsilon_per_feature),
            epsilon_labels=as_float(self.epsilon_labels), context="RGNNClassifier")

    def _plan(self, nodes: Nodes, y: np.ndarray) -> LocalDPPlan:
        return plan_local_grr(n_features=self.domain_sizes_.size,
                              n_sampled_features=self.num_sampled_features_,
                              epsilon_per_feature=self.epsilon_per_feature_,
                              n_classes=len(self.classes_), epsilon_labels=self.epsilon_labels_)

    def _train(self, nodes: Nodes, y: np.ndarray, plan: LocalDPPlan,
               streams: RandomStreams) -> None:
        graph, c, eps_y = nodes.graph, len(self.classes_), self.epsilon_labels_
        feature_rng, label_rng = client_generators(streams)           # clients (simulated)
        y = grr_randomize(y, c, eps_y, label_rng) if self.randomize else y
        operator = mean_propagation_operator(graph)                    # server: reconstruct
        searched = functools.cache(lambda: propagation_hops(operator))  # once: a K-round pass
        inputs = self._fit_inputs(graph, feature_rng, operator, searched)
        self.label_loss_ = resolved_label_loss(self.label_loss, eps_y, c)
        train, val = self._validation_split(y, streams)
        parts = metis_partition(graph.indptr, graph.indices, self._num_clusters_,
                                seed=streams.integer("split"))
        structure = gnn_structure(graph, self.conv)
        fit_gnn = functools.partial(self._fit_gnn, inputs, structure, operator, parts,
                                    nodes.index, y, c, eps_y)
        self.label_hops_ = reconstruction_rounds(self.label_hops, eps_y, searched)
        self.label_hops_scores_ = {}
        if self.label_hops == "auto" and self.label_hops_ > 0:
            x = torch.as_tensor(inputs, device=self.device_)
            self.label_hops_, self.label_hops_scores_ = choose_label_hops(
                fit_gnn, lambda module: module(x, structure.to(self.device_)), operator,
                nodes.index, y, train, val, max_hops=self.label_hops_, n_classes=c,
                streams=streams)
        members, self.history_, best = [], [], []
        for i in range(self.ensemble_size):
            stage = "classifier" if self.ensemble_size == 1 else f"classifier {i + 1}"
            module, history, best_epoch = fit_gnn(
                self.label_hops_, train, val, stage=stage,
                epsilon=plan.running_epsilon(self.delta_, stage, 0))
            members.append(module.cpu().eval())
            self.history_ += history
            best.append(best_epoch)
        self.best_epochs_ = tuple(best)
        self.module_ = members[0] if len(members) == 1 else ProbabilityAverage(members).eval()

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        x = self._inputs(self._features(nodes.graph))
        structure = gnn_structure(nodes.graph, self.conv)
        return self.module_(torch.from_numpy(x), structure)[torch.tensor(nodes.index)]

    def _unit_and_relation(self, graph) -> tuple[str, str]:
        return ("local (each node's own feature vector; and label, for training nodes)",
                "local DP: any two feature vectors (and labels) of one node; structure public")

    def _inference(self, plan) -> str:
        return ("post-processing of LDP reports: the cached reconstruction on the training graph "
                "or a same-content copy; elsewhere a new GRR-FS release, in privacy_.releases")

    def _assumptions(self, plan, nodes: Nodes) -> tuple[str, ...]:
        return ("graph structure is public", "each node reports once (duplicates are refused)",
                schema_assumption(self.randomize, self.feature_type, self.feature_range))
