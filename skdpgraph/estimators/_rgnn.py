"""RGNN: a GNN trained on locally private features and labels, reconstructed by the server."""

from __future__ import annotations

import functools
import math
from numbers import Integral, Real

import numpy as np
import torch

from skdpgraph._random import RandomStreams
from skdpgraph._validation import DP_CONSTRAINTS, DPSGD_CONSTRAINTS, Interval, StrOptions
from skdpgraph.estimators._base import BaseDPClassifier
from skdpgraph.graph import Graph, Nodes
from skdpgraph.nn import CONVS, GNN, InNeighbourMean, ProbabilityAverage
from skdpgraph.preprocessing import (bag_label_proportions, client_generators, feature_schema,
                                     held_out_label_hops, holdout_split,
                                     mean_propagation_operator, noisy_label_means,
                                     propagation_hops, reconstruct_from_clients,
                                     reconstruct_labels)
from skdpgraph.privacy import (LocalDPPlan, grr_fs_epsilon, grr_probabilities,
                               grr_randomize, label_transition_matrix, plan_local_grr,
                               split_local_budget)
from skdpgraph.sampling import metis_partition
from skdpgraph.training import train_llp_gnn

__all__ = ["RGNNClassifier"]


class RGNNClassifier(BaseDPClassifier):
    r"""Reconstruction-based GNN under local DP on node features and labels (RGNN).

    Bhaila et al. (SDM 2024): every node reports its categorical features through GRR-FS,
    every training node its label through GRR; the server reconstructs both over the public
    graph and trains a GNN with a label-proportion loss on METIS bags. ``predict`` on the
    training graph (or a same-content copy) reuses the cached reconstruction; elsewhere it
    is a new GRR-FS release, recorded in ``privacy_.releases``. See :ref:`rgnn_accounting`.

    Parameters
    ----------
    epsilon : float, default=13.0
        Total local budget of a training node, :math:`m\varepsilon_x + \varepsilon_y`, in
        ``(0, inf]`` (``inf``: features and labels sent in the clear). Split by default
        3/13 to the labels and 10/13 evenly over the :math:`m` sampled features: the
        paper's :math:`\varepsilon_x = 1`, :math:`\varepsilon_y = 3` at the default 13.
        The guarantee is pure local DP (``delta_`` is 0).
    epsilon_per_feature : float, default=None
        Override of :math:`\varepsilon_x`, the budget of each sampled feature's GRR
        report, in ``(0, inf]``. Given alone, the labels get the rest of ``epsilon``;
        given with ``epsilon_labels``, :math:`m\varepsilon_x + \varepsilon_y` must equal
        ``epsilon`` (otherwise ``fit`` refuses). The value used is
        ``epsilon_per_feature_``.
    epsilon_labels : float, default=None
        Override of :math:`\varepsilon_y`, the budget of each training node's GRR label
        report, in ``(0, inf]``. Given alone, the features get the rest of ``epsilon``,
        split evenly over the :math:`m` sampled features. The value used is
        ``epsilon_labels_``.
    classes : array-like, default=None
        The public label set (None: read from ``y`` and stated as public).
    n_sampled_features : int, default=10
        :math:`m`, the features each node reports through GRR-FS, capped at the number of
        encoded features ``d`` (the split uses the capped value, so the whole ``epsilon``
        is spent). A larger :math:`m` leaves less budget per feature.
    feature_type : {"binary", "continuous"}, default="binary"
        The public schema of the node features, stated here and never read from the
        data. ``"binary"`` (bag-of-words features, as in the shared datasets): every
        value must be 0 or 1, and ``fit`` (or ``predict`` on a new graph) refuses any
        other value by name. ``"continuous"``: every column is cut into 4 bins over
        ``feature_range``.
    feature_group_size : int, default=None
        OR-group this many binary columns into one feature before randomisation (Cora
        25, Facebook 100); None: no grouping. Only with ``feature_type="binary"``. It
        changes ``d``, not the total budget.
    feature_range : tuple (low, high), default=(-1.5, 1.5)
        Public range of the 4 bins of ``feature_type="continuous"`` (values outside go
        to the end bins), never read from the data; suits standardised features.
    feature_hops : int or "auto", default="auto"
        Rounds (>= 0) of neighbourhood means in the feature reconstruction.
        ``"auto"``: the most rounds, up to 16 (the paper's), before the means cover half
        the graph (:func:`~skdpgraph.preprocessing.propagation_hops`, public structure
        only): 16 on Cora, 3-4 on small dense graphs, where 16 rounds leave only the
        global mean; 0 when ``epsilon_per_feature_`` is ``inf`` (exact reports, nothing
        to denoise). Post-processing of the reports: no privacy cost.
    label_hops : int or "auto", default="auto"
        Rounds (>= 0) of neighbourhood means of the noisy labels. ``"auto"``: 0 when
        ``epsilon_labels_`` is ``inf``; otherwise chosen on held-out reports (the
        validation nodes, or a fifth of the training nodes held out for this choice
        only, whose reports feed neither candidate): a GNN fitted without label means
        and one with the rounds of the ``feature_hops`` rule are scored by how often
        they predict a held-out node's noisy label, and 0 is kept when it is ahead by
        more than two standard errors; else the rounds, up to that rule's, whose label
        means best predict the held-out reports
        (:func:`~skdpgraph.preprocessing.held_out_label_hops`). Two more GNNs are
        fitted. Over wide neighbourhoods the means teach each node its neighbourhood's
        classes rather than its own: with the rule's 16 rounds, Amazon Photo scored 70.7
        at ``epsilon=8`` against 88.9 with none (seed 0). Post-processing of the
        reports: no privacy cost.
    label_loss : {"auto", "forward", "reconstructed"}, default="auto"
        How the noisy labels supervise the GNN (post-processing of the reports, no
        privacy cost). ``"forward"``: the GNN's class probabilities, passed through the
        label randomiser's channel :math:`P`, are fitted to each training node's
        ``label_hops``-round frequencies of noisy labels
        (:func:`~skdpgraph.nn.forward_corrected_loss`), and ``validation_fraction``
        selects the epoch by the same loss on the held-out nodes. ``"reconstructed"``:
        the paper's Algorithm 2, cross-entropy against the argmax of the
        :math:`P^{-1}`-de-biased frequencies, epochs selected by accuracy against them.
        ``"auto"``: ``"forward"`` when GRR keeps a label with probability
        :math:`p = e^{\varepsilon_y}/(e^{\varepsilon_y} + c - 1)` below one half (most
        reports flipped; e.g. :math:`\varepsilon_y \le 1` on Cora's 7 classes), else
        ``"reconstructed"``: the rule reads only the public :math:`\varepsilon_y` and
        class count. On Cora (paper protocol, 5 seeds) ``"forward"`` gains 3-10 points
        at :math:`\varepsilon_y \in \{0.5, 1\}` and loses 1-2 at 2-3. The choice
        is ``label_loss_``.
    n_clusters : int, default=16
        METIS bags (>= 1) of the label-proportion loss, cut from the public structure;
        their label proportions come from the randomised labels (no privacy cost).
    llp_weight : float, default=0.1
        Weight (>= 0) of the label-proportion loss added to the cross-entropy (0: the
        cross-entropy alone). Post-processing: no privacy cost.
    conv : {"sage", "gcn", "gat"}, default="sage"
        Graph convolution of the GNN over the public graph. No privacy cost.
    ensemble_size : int, default=5
        GNNs (>= 1) trained from different initialisations on the same reconstruction;
        predictions average their class probabilities. Post-processing of the reports:
        no privacy cost; training time grows linearly. On Cora (paper protocol, 5 seeds)
        at :math:`\varepsilon_y = 1`: 67.4 with 1 or 3, 67.9 with 5.
    standardize : bool or "auto", default="auto"
        Shift and scale every reconstructed feature to mean 0 and variance 1 over the
        training graph's nodes before the GNN reads it (``feature_mean_`` and
        ``feature_scale_``, reused at prediction). Post-processing of the reports: no
        privacy cost. ``"auto"``: only when the features are reported exactly
        (``epsilon_per_feature_`` is ``inf``). Unscaled binary bag-of-words inputs leave
        the default GNN at the majority class on Amazon Computers (37.4 at
        ``epsilon=inf``; 91.3 standardised); on randomised reports the reconstructed
        frequencies are kept as they are: standardising them cost 1.1 points on Cora
        (paper protocol, :math:`\varepsilon_y = 1`, 5 seeds) and gained 2.7 on Computers
        (``epsilon=13``, 1 seed). The choice is ``standardize_``.
    hidden_dim : int, default=16
        Width of the GNN's hidden layers, at least 1. No privacy cost.
    num_layers : int, default=2
        Message-passing layers of the GNN, at least 1. No privacy cost.
    dropout : float, default=0.5
        Dropout rate in ``[0, 1)`` of the GNN during training. No privacy cost.
    epochs : int, default=100
        Full-batch training epochs, at least 1. Training reads only the reports, so
        epochs cost nothing (unlike DP-SGD).
    lr : float, default=0.01
        Learning rate of Adam, in ``(0, 1e30]``. No privacy cost.
    max_grad_norm : float or None, default=None
        Clip the global gradient norm to this value (> 0), for stability only: the
        guarantee comes from the local reports. None: no clipping.
    validation_fraction : float, default=None
        Hold out this fraction of the training nodes and keep the epoch with the best
        accuracy on their reconstructed labels (post-processing, no cost); None: no
        split.
    randomize : bool, default=True
        True: the estimator simulates the clients (GRR-FS on the features, GRR on
        ``y``). False: the features and ``y`` are already GRR-FS and GRR reports
        (``GRRFeatureRandomizer``), made with this fit's budget split, and are used as is.
    random_state : int, RandomState instance or None, default=None
        Root of the clients', METIS', split and training streams. Leave None in
        production: a known seed makes the randomisation reproducible.
    device : {"auto", "cpu", "cuda", "cuda:<index>"} or torch.device, default="auto"
        Where to train and predict; ``"auto"`` takes CUDA when available, else the CPU.
        The device used is ``device_``; it does not change the guarantee.
    verbose : bool, default=False
        Show a progress bar with the loss and epsilon (spent before training); the
        output is stated as not covered in ``privacy_``.
    private_diagnostics : bool, default=False
        The shared switch for noise-free diagnostics in ``history_``. RGNN's history is
        computed from the randomised reports only (post-processing, covered), so it is
        kept whole either way.

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
    n_sampled_features_ : int
    feature_hops_ : int
        Feature reconstruction rounds used on the training graph.
    label_hops_ : int
        Label reconstruction rounds used on the training graph.
    label_hops_scores_ : dict
        With ``label_hops="auto"`` and finite ``epsilon_labels_``: for 0 rounds and
        the ``feature_hops`` rule's, the share of held-out nodes whose noisy label the
        GNN fitted with them predicts (empty otherwise).
    label_loss_ : str
        ``"forward"`` or ``"reconstructed"``: the supervision used (see ``label_loss``).
    domain_sizes_ : ndarray of shape (d,)
    feature_encoder_ : CategoricalFeatureEncoder or None
    reconstructed_x_ : ndarray of shape (num_nodes, n_reconstructed)
    standardize_ : bool
        Whether the GNN reads standardised features (see ``standardize``).
    feature_mean_ : ndarray of shape (n_reconstructed,)
        The shift of ``standardize`` (0 without it).
    feature_scale_ : ndarray of shape (n_reconstructed,)
        The scale of ``standardize`` (1 without it).
    history_ : list of dict
        One record per epoch of each GNN (stage ``"classifier"``, or ``"classifier 1"``,
        ``"classifier 2"``... with ``ensemble_size > 1``; ``epsilon`` is the whole local
        budget, spent before training).
    best_epochs_ : tuple of int
        The epoch (1-based) whose parameters each GNN of the ensemble keeps.
    module_ : torch.nn.Module
        The GNN, or with ``ensemble_size > 1`` a
        :class:`~skdpgraph.nn.ProbabilityAverage` of them.
    device_ : torch.device

    Examples
    --------
    >>> from skdpgraph import RGNNClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=300, random_state=0)
    >>> clf = RGNNClassifier(epsilon=12.0, epsilon_labels=2.0, feature_type="continuous",
    ...                      epochs=20, random_state=0).fit(data.nodes()[:150], data.y[:150])
    >>> clf.epsilon_spent_, clf.epsilon_per_feature_  # m * eps_x + eps_y = 10 * 1 + 2
    (12.0, 1.0)
    >>> clf.predict(data.nodes()[150:]).shape
    (150,)
    """

    _parameter_constraints = {
        **{name: [Interval(Real, 0, np.inf, closed="right"), None]
           for name in ("epsilon_per_feature", "epsilon_labels")},
        **{name: [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})]
           for name in ("feature_hops", "label_hops")},
        **{name: [Interval(Integral, 1, None, closed="left")] for name in (
            "n_sampled_features", "n_clusters", "ensemble_size", "hidden_dim", "num_layers",
            "epochs")},
        "standardize": ["boolean", StrOptions({"auto"})],
        "feature_group_size": [Interval(Integral, 1, None, closed="left"), None],
        "llp_weight": [Interval(Real, 0, None, closed="left")], "feature_range": [tuple],
        "conv": [StrOptions(set(CONVS))],
        "feature_type": [StrOptions({"binary", "continuous"})],
        "label_loss": [StrOptions({"auto", "forward", "reconstructed"})],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "lr": DPSGD_CONSTRAINTS["lr"], "randomize": ["boolean"],
        "max_grad_norm": [Interval(Real, 0, None, closed="neither"), None],
        **{k: v for k, v in DP_CONSTRAINTS.items() if k != "delta"},
    }
    _training_size_public = False  # the local budget does not depend on it
    _history_on_private_data = False  # computed from the randomised reports only

    def __init__(self, *, epsilon=13.0, epsilon_per_feature=None, epsilon_labels=None,
                 classes=None, n_sampled_features=10, feature_type="binary",
                 feature_group_size=None,
                 feature_range=(-1.5, 1.5), feature_hops="auto", label_hops="auto",
                 label_loss="auto", n_clusters=16, llp_weight=0.1, conv="sage",
                 ensemble_size=5, standardize="auto", hidden_dim=16, num_layers=2, dropout=0.5,
                 epochs=100, lr=0.01,
                 max_grad_norm=None, validation_fraction=None,
                 randomize=True, random_state=None, device="auto", verbose=False,
                 private_diagnostics=False):
        self.epsilon = epsilon
        self.epsilon_per_feature, self.epsilon_labels = epsilon_per_feature, epsilon_labels
        self.classes, self.n_sampled_features = classes, n_sampled_features
        self.feature_type = feature_type
        self.feature_group_size, self.feature_range = feature_group_size, feature_range
        self.feature_hops, self.label_hops, self.n_clusters = feature_hops, label_hops, n_clusters
        self.label_loss, self.ensemble_size = label_loss, ensemble_size
        self.standardize = standardize
        self.llp_weight, self.conv, self.hidden_dim = llp_weight, conv, hidden_dim
        self.num_layers, self.dropout, self.epochs, self.lr = num_layers, dropout, epochs, lr
        self.max_grad_norm, self.validation_fraction = max_grad_norm, validation_fraction
        self.randomize, self.random_state, self.device = randomize, random_state, device
        self.verbose = verbose
        self.private_diagnostics = private_diagnostics

    _protected_units = staticmethod(lambda nodes: 0)  # pure local DP: delta 0

    def _check_data(self, nodes: Nodes, y: np.ndarray) -> None:
        self.feature_encoder_, self.domain_sizes_ = feature_schema(
            nodes.graph.x, randomize=self.randomize, feature_type=self.feature_type,
            group_size=self.feature_group_size, feature_range=self.feature_range,
            name="RGNNClassifier")
        self.n_sampled_features_ = min(self.n_sampled_features, self.domain_sizes_.size)
        self.epsilon_per_feature_, self.epsilon_labels_ = split_local_budget(
            self._budget(), self.n_sampled_features_,
            epsilon_per_feature=_as_float(self.epsilon_per_feature),
            epsilon_labels=_as_float(self.epsilon_labels), context="RGNNClassifier")

    def _plan(self, nodes: Nodes, y: np.ndarray) -> LocalDPPlan:
        return plan_local_grr(n_features=self.domain_sizes_.size,
                              n_sampled_features=self.n_sampled_features_,
                              epsilon_per_feature=self.epsilon_per_feature_,
                              n_classes=len(self.classes_), epsilon_labels=self.epsilon_labels_)

    def _train(self, nodes: Nodes, y: np.ndarray, plan: LocalDPPlan,
               streams: RandomStreams) -> None:
        graph, c, eps_y = nodes.graph, len(self.classes_), self.epsilon_labels_
        feature_rng, label_rng = client_generators(streams)           # clients (simulated)
        y = grr_randomize(y, c, eps_y, label_rng) if self.randomize else y
        operator = mean_propagation_operator(graph)                    # server: reconstruct
        searched = functools.cache(lambda: propagation_hops(operator))  # once: a K-round pass
        self.feature_hops_ = _rounds(self.feature_hops, self.epsilon_per_feature_, searched)
        self.reconstructed_x_ = self._reconstructed(graph, feature_rng, operator,
                                                    self.feature_hops_)
        self._cache_release(graph, "features", self.reconstructed_x_)
        self.standardize_ = (math.isinf(self.epsilon_per_feature_) if self.standardize == "auto"
                             else bool(self.standardize))
        self.feature_mean_, self.feature_scale_ = _standardization(self.reconstructed_x_,
                                                                   self.standardize_)
        self.label_loss_ = self.label_loss
        if self.label_loss == "auto":
            keep = grr_probabilities(eps_y, c)[0]
            self.label_loss_ = "forward" if keep < 0.5 else "reconstructed"
        train, val = holdout_split(len(y), self.validation_fraction or 0.0,
                                   streams.numpy("split"))
        parts = metis_partition(graph.indptr, graph.indices, self.n_clusters,
                                seed=streams.integer("split"))
        inputs, structure = self._inputs(self.reconstructed_x_), _structure(graph, self.conv)
        fit_gnn = functools.partial(self._fit_gnn, inputs, structure, operator, parts,
                                    nodes.index, y, c, eps_y)
        self.label_hops_ = _rounds(self.label_hops, eps_y, searched)
        self.label_hops_scores_ = {}
        if self.label_hops == "auto" and self.label_hops_ > 0:
            self.label_hops_, self.label_hops_scores_ = self._chosen_label_hops(
                fit_gnn, operator, inputs, structure, nodes.index, y, train, val, streams)
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

    def _fit_gnn(self, inputs, structure, operator, parts, index, noisy, n_classes, eps_y,
                 hops, train, val, *, stage, epsilon=math.nan):
        """One GNN fitted to the reports at positions ``train``, its epoch chosen on ``val``.

        The label targets are smoothed over ``hops`` rounds among the reports at ``train``
        and ``val`` only: a node held out of both never feeds them.
        """
        reporting = np.concatenate([train, val])
        targets, transition = self._label_targets(operator, index[reporting],
                                                  noisy[reporting], n_classes, eps_y, hops)
        bag, proportions = bag_label_proportions(parts[index[train]], noisy[train], n_classes,
                                                 eps_y)
        module = GNN(inputs.shape[1], self.hidden_dim, n_classes, num_layers=self.num_layers,
                     conv=self.conv, dropout=self.dropout).to(self.device_)
        history, best_epoch = train_llp_gnn(
            module, inputs, structure, index[train], targets[:len(train)], bag, proportions,
            llp_weight=self.llp_weight, epochs=self.epochs, lr=self.lr,
            max_grad_norm=self.max_grad_norm, val_index=index[val],
            val_targets=targets[len(train):], transition=transition, epsilon=epsilon,
            stage=stage, verbose=bool(self.verbose),
            description=f"{type(self).__name__} {stage}")
        return module, history, best_epoch

    def _chosen_label_hops(self, fit_gnn, operator, inputs, structure, index, noisy, train,
                           val, streams) -> tuple[int, dict]:
        r"""Rounds of label means for ``label_hops="auto"``, and the held-out scores.

        A part of the labelled nodes is held out: the validation nodes, or without
        ``validation_fraction`` a fifth of the training nodes drawn for this choice only.
        Their reports feed nothing below.

        1. Do label means hurt the classifier? One GNN is fitted with the spread rule's
           :math:`K` rounds and one with none, and each is scored by how often its
           predicted class equals a held-out node's noisy label: under GRR that rate is
           :math:`q + (p - q)\,a` for a GNN of accuracy :math:`a`, so the higher rate is
           the more accurate GNN. 0 is taken when its rate is ahead by more than two
           standard errors of the paired differences.
        2. Otherwise, the rounds up to :math:`K` whose label means of the other reports
           best predict the held-out reports
           (:func:`~skdpgraph.preprocessing.held_out_label_hops`).

        Post-processing of the reports: no privacy cost. Returns the rounds and the rate
        of each GNN.
        """
        if len(val) == 0:
            kept, held = holdout_split(len(train), 0.2, streams.numpy("split"))
            train, val = train[kept], train[held]
        x = torch.as_tensor(inputs, device=self.device_)
        agrees = {}
        with streams.initialisation():  # its own stream: the fit that follows is unchanged
            for hops in (0, self.label_hops_):
                module = fit_gnn(hops, train, val[:0], stage=f"label_hops={hops}")[0]
                with torch.no_grad():
                    logits = module.eval()(x, structure.to(self.device_))[
                        torch.as_tensor(index[val])]
                agrees[hops] = (logits.argmax(-1).cpu().numpy() == noisy[val]).astype(float)
        rates = {hops: float(agree.mean()) for hops, agree in agrees.items()}
        if _clearly_ahead(agrees[0] - agrees[self.label_hops_]):
            return 0, rates
        return held_out_label_hops(operator, index[train], noisy[train], index[val],
                                   noisy[val], len(self.classes_), self.label_hops_), rates

    def _label_targets(self, operator, index, noisy, n_classes, eps_y, hops):
        """Per-node targets and the channel of the loss (None: plain cross-entropy)."""
        if np.isinf(eps_y):
            return noisy, None
        if self.label_loss_ == "forward":
            return (noisy_label_means(operator, index, noisy, n_classes, hops),
                    label_transition_matrix(eps_y, n_classes))
        return reconstruct_labels(operator, index, noisy, n_classes, eps_y,
                                  hops).argmax(axis=1), None

    def _inputs(self, x: np.ndarray) -> np.ndarray:
        """The GNN's input: ``x`` standardised with the fitted shift and scale."""
        if not self.standardize_:
            return x
        return ((x - self.feature_mean_) / self.feature_scale_).astype(np.float32, copy=False)

    def _reconstructed(self, graph: Graph, rng, operator=None, hops=None) -> np.ndarray:
        operator = mean_propagation_operator(graph) if operator is None else operator
        if hops is None:
            hops = _rounds(self.feature_hops, self.epsilon_per_feature_,
                           lambda: propagation_hops(operator))
        return reconstruct_from_clients(graph, self.feature_encoder_, self.domain_sizes_,
                                        self.epsilon_per_feature_, self.n_sampled_features_,
                                        hops, rng, operator=operator)

    def _features(self, graph: Graph) -> np.ndarray:
        """Cached (same content), a new recorded release, or (randomize=False) reconstructed."""
        cached = self._cached(graph, "features")
        if cached is not None or not self.randomize:
            return cached if cached is not None else self._reconstructed(graph, None)
        eps = grr_fs_epsilon(self.n_sampled_features_, self.epsilon_per_feature_)
        return self._release(graph, "features", lambda s: self._reconstructed(
            graph, client_generators(s)[0]), lambda: {"epsilon": eps, "delta": 0.0,
                                                      "mechanism": "GRR-FS of every node"})

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        x = self._inputs(self._features(nodes.graph))
        structure = _structure(nodes.graph, self.conv)
        return self.module_(torch.from_numpy(x), structure)[torch.tensor(nodes.index)]

    def _unit_and_relation(self, graph) -> tuple[str, str]:
        return ("local (each node's own feature vector; and label, for training nodes)",
                "local DP: any two feature vectors (and labels) of one node; structure public")

    def _inference(self, plan) -> str:
        return ("post-processing of LDP reports: the cached reconstruction on the training graph "
                "or a same-content copy; elsewhere a new GRR-FS release, in privacy_.releases")

    def _assumptions(self, plan, nodes: Nodes) -> tuple[str, ...]:
        return ("graph structure is public", "each node reports once (duplicates are refused)",
                self._schema_assumption())

    def _schema_assumption(self) -> str:
        if not self.randomize:
            return ("the features are GRR-FS reports; their domain sizes are read from the "
                    "reports (post-processing)")
        if self.feature_type == "binary":
            return ("the feature schema is public and stated by the user: feature_type="
                    "'binary' (values 0 or 1; any other value is refused), never read from "
                    "the data")
        return ("the feature schema is public and stated by the user: feature_type="
                f"'continuous', 4 bins over feature_range={tuple(self.feature_range)} (values "
                "outside go to the end bins), never read from the data")


def _as_float(value: float | None) -> float | None:
    """A budget part as a Python float (a NumPy scalar's rounding would differ), or None."""
    return None if value is None else float(value)


def _standardization(x: np.ndarray, standardize: bool) -> tuple[np.ndarray, np.ndarray]:
    """Column means and standard deviations of ``x`` (constant columns get scale 1)."""
    if not standardize:
        return np.zeros(x.shape[1], np.float32), np.ones(x.shape[1], np.float32)
    mean = x.mean(axis=0, dtype=np.float64)
    scale = x.std(axis=0, dtype=np.float64)
    scale[scale <= 1e-12] = 1.0
    return mean.astype(np.float32), scale.astype(np.float32)


def _clearly_ahead(gain: np.ndarray) -> bool:
    """Whether the mean of paired differences exceeds two of its standard errors."""
    if gain.size < 2:
        return False
    standard_error = gain.std(ddof=1) / math.sqrt(gain.size)
    return bool(gain.mean() > 2 * standard_error)


def _rounds(setting, epsilon: float, searched) -> int:
    """Reconstruction rounds: the setting, or for ``"auto"`` ``searched()`` (0 if exact)."""
    if setting != "auto":
        return int(setting)
    return 0 if np.isinf(epsilon) else searched()


def _structure(graph: Graph, conv: str) -> torch.Tensor | InNeighbourMean:
    """The graph as the GNN reads it: the same messages, in the fastest form for ``conv``.

    SAGE's mean is an :class:`~skdpgraph.nn.InNeighbourMean`: sparse products with the
    row-normalised in-adjacency and its stored transpose, with no per-edge message tensor
    (which at 10^7 edges and 128 features took 5 GB and 3x the time). GCN (whose
    normalisation builds sparse tensors that warn) and GAT (which weighs every edge) keep
    ``edge_index``.
    """
    if conv == "sage":
        return InNeighbourMean(graph.adjacency())
    return torch.tensor(graph.edge_index)
