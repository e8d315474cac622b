"""DP-SGD graph classification where one whole graph is the privacy unit (Mueller et al. 2023)."""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
import torch

from skdpgraph._random import RandomStreams
from skdpgraph._validation import (DPSGD_CONSTRAINTS, MAX_LR, Interval, StrOptions,
                                   check_fit_data)
from skdpgraph.estimators._base import BaseDPClassifier, plan_poisson_epochs
from skdpgraph.estimators._parameter_docs import fill_doc
from skdpgraph.graph import Graph
from skdpgraph.graph_collection import GraphCollection, check_graph_collection
from skdpgraph.nn import GraphBatches, GraphExamples, GraphGNN, graph_cross_entropy
from skdpgraph.privacy import DPSGDPlan
from skdpgraph.training import BestEpoch, train_dpsgd

__all__ = ["DPGraphClassifier"]

#: Graphs packed together at prediction and validation time.
_PREDICT_CHUNK = 256
#: ``epochs=None``: a private fit's epochs (more steps would each get more noise) and a
#: non-private fit's (still improving on held-out NCI1 graphs after 50; it keeps its best).
_PRIVATE_EPOCHS, _NON_PRIVATE_EPOCHS = 50, 200
#: ``lr=None``: Adam's learning rate of a private and of a non-private fit (on held-out
#: NCI1 graphs at epsilon=8, 0.003 beat 0.01 and 0.001).
_PRIVATE_LR, _NON_PRIVATE_LR = 0.003, 0.01


@fill_doc
class DPGraphClassifier(BaseDPClassifier):
    """Graph neural network classifying whole graphs, trained with DP-SGD: one graph, one unit.

    Graph-level differential privacy (Mueller et al., "Differentially Private Graph Neural
    Networks for Whole-Graph Classification", TPAMI 2023): each person contributes one
    graph (a molecule, a brain network, a discussion thread) with its label, and the
    guarantee covers adding or removing one graph with all its nodes, edges, features and
    label. Each step samples training graphs with Poisson sampling (rate ``batch_size /
    n``), clips each graph's gradient to ``max_grad_norm`` and adds Gaussian noise
    calibrated to ``(epsilon, delta)`` with dp-accounting's RDP accountant. Graphs are
    independent, so the subsampled Gaussian's accountant applies unchanged.

    Parameters
    ----------
    epsilon : float, default=8.0
        {{epsilon}}
        ``np.inf``: the same GNN on the same batches, neither clipped nor noised.
    delta : float, default=None
        {{delta}}
        None uses ``1 / (10 * N)`` with N the number of training graphs (stated as
        public).
    classes : array-like, default=None
        {{classes}}
    conv : {"gin", "gcn", "sage"}, default="gin"
        Graph convolution: GIN-0 (Xu et al. 2019), GCN or GraphSAGE (mean). It does not
        change the accountant.
    num_layers : int, default=3
        Graph convolutions, at least 1. It does not change the accountant.
    hidden_dim : int, default=64
        Width of the convolutions and of the head, at least 1.
    readout : {"sum", "mean"}, default="sum"
        How each layer's node embeddings become one vector per graph (the layers' readouts
        are concatenated). It does not change the accountant: each graph's whole gradient
        is clipped.
    head_layers : int, default=2
        Linear layers of the classifier on the readouts, at least 1.
    activation : {"relu", "selu", "tanh", "elu", "gelu"}, default="relu"
        {{activation}}
        It follows every convolution and sits between the head's layers.
    dropout : float, default=0.0
        {{dropout}}
        Only the head's hidden layers have dropout.
    norm : {"layer", None}, default=None
        ``"layer"``: normalise every convolution's node rows over their features (layer
        normalisation without learned parameters, one node at a time). It does not change
        the accountant.
    epochs : int, default=None
        Passes over the training graphs, at least 1: ``epochs * ceil(n_train /
        batch_size)`` DP-SGD steps. More steps mean more noise per step at a fixed epsilon.
        None: 50 for a private fit, 200 for a non-private one (which keeps its best epoch
        on held-out graphs; see ``validation_fraction``); the value used is ``epochs_``.
    batch_size : int, default=256
        Expected batch size of Poisson sampling: each step keeps every training graph
        independently with probability ``batch_size / n_train`` (capped at 1). The rate
        and the number of steps enter the accountant.
    lr : float, default=None
        {{lr}}
        None: 0.003 for a private fit (noisy steps want smaller ones), 0.01 for a
        non-private one; the value used is ``lr_``.
    max_grad_norm : float, default=1.0
        {{max_grad_norm}}
        One example is one graph: each graph's gradient is scaled to L2 norm at most C;
        the noise std is ``noise_multiplier * C``.
    noise_multiplier : float, default=None
        {{noise_multiplier}}
        The sensitivity is C. Given, it is used as is (even with ``epsilon=np.inf``) and
        the fit fails, before any data is read, if its epsilon exceeds ``epsilon``.
    allow_equal_graphs : bool, default=False
        Whether two distinct graphs with the same content (same node count, edges and
        features in the same order) may both be training graphs. False refuses them: a
        copy of one person's graph would count as two people. True accepts them as
        different people's graphs (NCI1 has 25 such groups, PROTEINS 3) and states so in
        ``privacy_.assumptions``. The same Graph object twice is always refused.
    validation_fraction : float, "auto" or None, default="auto"
        Hold out this fraction (in ``(0, 1)``) of the training graphs and keep the epoch
        with the best accuracy on them. ``"auto"``: 10% for a non-private fit
        (``epsilon=inf`` without ``noise_multiplier``; none below 500 training graphs),
        none when private, where an explicit fraction is refused (it would read protected
        labels without accounting). None: no split.
    random_state : int, RandomState instance or None, default=None
        {{random_state}}
    device : {"auto", "cpu", "cuda", "cuda:<index>"} or torch.device, default="auto"
        Where to train; ``"auto"`` takes CUDA when available. Prediction runs on the CPU.
    verbose : bool, default=False
        {{verbose}}
    private_diagnostics : bool, default=False
        Also keep in ``history_`` the per-epoch loss and training accuracy, computed
        without noise on the private training graphs (then stated as not covered).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
        Node feature width of the training graphs.
    epochs_ : int
        The planned epochs (``epochs``, or its rule when None).
    lr_ : float
        Adam's learning rate (``lr``, or its rule when None).
    epsilon_spent_ : float
        The training run's epsilon, at most ``epsilon``.
    delta_ : float
    noise_multiplier_ : float or None
        Noise std / C (None when not private).
    privacy_ : PrivacyReport
        Unit, relation, accountant, events and assumptions of the fit.
    history_ : list of dict
        One record per epoch (stage ``"classifier"``).
    module_ : GraphGNN
    device_ : torch.device

    Notes
    -----
    Privacy unit: one graph (its nodes, edges, features and label), add/remove relation.
    A batch packs its graphs' nodes one graph after another; messages flow only along
    a graph's own edges, so each graph's output and clipped gradient depend on that graph
    alone.
    ``predict`` reads only the queried graphs and the model: a graph's prediction depends
    on that graph alone, and the fitted estimator keeps no training graph.

    Examples
    --------
    >>> from sklearn.model_selection import train_test_split
    >>> from skdpgraph import DPGraphClassifier
    >>> from skdpgraph.datasets import make_graph_classification
    >>> X, y = make_graph_classification(n_graphs=80, random_state=0)
    >>> X_tr, X_te, y_tr, y_te = train_test_split(X, y, random_state=0)
    >>> clf = DPGraphClassifier(epsilon=4.0, epochs=3, batch_size=16, random_state=0)
    >>> clf = clf.fit(X_tr, y_tr)
    >>> clf.epsilon_spent_ <= 4.0, clf.predict(X_te).shape
    (True, (20,))
    """

    _data_kind = "graphs"
    _node_unit = False
    _training_size_public = False  # stated in graph words by _assumptions

    _parameter_constraints = {
        **DPSGD_CONSTRAINTS,
        "conv": [StrOptions({"gin", "gcn", "sage"})],
        "readout": [StrOptions({"sum", "mean"})],
        **{name: [Interval(Integral, 1, None, closed="left")]
           for name in ("num_layers", "hidden_dim", "head_layers")},
        "activation": [StrOptions({"relu", "selu", "tanh", "elu", "gelu"})],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "norm": [StrOptions({"layer"}), None],
        "noise_multiplier": [Interval(Real, 0, None, closed="neither"), None],
        "allow_equal_graphs": ["boolean"],
        "epochs": [Interval(Integral, 1, None, closed="left"), None],
        "lr": [Interval(Real, 0, MAX_LR, closed="right"), None],
    }

    def __init__(self, *, epsilon=8.0, delta=None, classes=None, conv="gin", num_layers=3,
                 hidden_dim=64, readout="sum", head_layers=2, activation="relu", dropout=0.0,
                 norm=None, epochs=None, batch_size=256, lr=None, max_grad_norm=1.0,
                 noise_multiplier=None,
                 allow_equal_graphs=False, validation_fraction="auto", random_state=None,
                 device="auto", verbose=False, private_diagnostics=False):
        self.epsilon = epsilon
        self.delta = delta
        self.classes = classes
        self.conv = conv
        self.num_layers = num_layers
        self.hidden_dim = hidden_dim
        self.readout = readout
        self.head_layers = head_layers
        self.activation = activation
        self.dropout = dropout
        self.norm = norm
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.max_grad_norm = max_grad_norm
        self.noise_multiplier = noise_multiplier
        self.allow_equal_graphs = allow_equal_graphs
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.private_diagnostics = private_diagnostics

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> DPGraphClassifier:
        """Fit on the graphs ``X`` (a :class:`~skdpgraph.GraphCollection` or a list of
        :class:`~skdpgraph.Graph`) and one label per graph ``y``.

        ``sample_weight`` may only select graphs (0 drops one, 1 keeps it). The same Graph
        object twice is refused, and so are graphs of equal content unless
        ``allow_equal_graphs=True``.

        Returns
        -------
        self : DPGraphClassifier
            The fitted estimator.

        Raises
        ------
        PrivacyBudgetError
            If the budget cannot be met, before any graph is read. Whatever the error,
            the estimator is left unfitted.
        """
        return super().fit(X, y, sample_weight)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of the graphs ``X``, shape (n_graphs, n_classes)."""
        return super().predict_proba(X)

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class of each graph in ``X``."""
        return super().predict(X)

    # ------------------------------------------------------------------ data
    def _fit_data(self, X: Any, y: Any, sample_weight: Any = None
                  ) -> tuple[GraphCollection, np.ndarray]:
        name = type(self).__name__
        graphs = check_graph_collection(X, f"{name}.fit: X",
                                        allow_equal_graphs=self.allow_equal_graphs)
        if graphs.num_features == 0:
            raise ValueError(f"{name}.fit: the graphs have 0 node features; at least 1 is "
                             "required (e.g. a constant or the degree).")
        _refuse_missing_graph_labels(y, len(graphs), name)
        # The label checks of every estimator (encoding, public classes, two classes,
        # sample_weight as a 0/1 selection), on placeholder rows: one per graph, no data.
        rows = Graph(np.zeros((2, 0), np.int64), np.zeros((len(graphs), 1), np.float32))
        kept, encoded = check_fit_data(self, rows.nodes(), y, sample_weight)
        self.n_features_in_ = graphs.num_features
        return graphs[np.asarray(kept.index)], encoded

    def _predict_data(self, X: Any) -> GraphCollection:
        name = type(self).__name__
        graphs = X if isinstance(X, GraphCollection) else GraphCollection(X)
        if len(graphs) == 0:
            raise ValueError(f"{name}: X holds no graphs; at least one graph is required.")
        if graphs.num_features != self.n_features_in_:
            raise ValueError(f"X has graphs with {graphs.num_features} node features, but "
                             f"{name} is expecting {self.n_features_in_} features as input.")
        return graphs

    # ------------------------------------------------------------------ training
    def _plan(self, graphs: GraphCollection, y: np.ndarray) -> DPSGDPlan:
        n = len(graphs) - self._validation_size(len(graphs))
        public = self._labels_public()
        self.epochs_ = self.epochs or (_NON_PRIVATE_EPOCHS if public else _PRIVATE_EPOCHS)
        self.lr_ = self.lr or (_NON_PRIVATE_LR if public else _PRIVATE_LR)
        return plan_poisson_epochs(self, n, epochs=self.epochs_, context=(
            f"{type(self).__name__} ({n} graphs, epochs={self.epochs_}, "
            f"batch_size={self.batch_size})"))

    def _train(self, graphs: GraphCollection, y: np.ndarray, plan: DPSGDPlan,
               streams: RandomStreams) -> None:
        (graphs, y), held = self._holdout(graphs, y, len(y) - plan.num_examples, streams)
        best = held and BestEpoch(_logits_of(GraphBatches(held[0], self.device_)), held[1])
        module = GraphGNN(
            graphs.num_features, self.hidden_dim, len(self.classes_), conv=self.conv,
            num_layers=self.num_layers, readout=self.readout, head_layers=self.head_layers,
            activation=self.activation, dropout=self.dropout, norm=self.norm).to(self.device_)
        # Padding to a few widths makes per-graph gradients cheap; a non-private step
        # needs none, and would only pay for the padding rows.
        examples = GraphExamples(graphs, torch.from_numpy(y), device=self.device_,
                                 padded=plan.private)
        options = self._stage_options(plan, "classifier", streams, best, lr=self.lr_)
        result = train_dpsgd(module, examples, graph_cross_entropy, plan, **options)
        self.module_ = (best.restore(result.module) if best else result.module).cpu()
        self.history_ = result.history
        self.noise_multiplier_ = plan.noise_multiplier

    def _predict_logits(self, graphs: GraphCollection) -> torch.Tensor:
        return _logits_of(GraphBatches(graphs))(self.module_)

    # ------------------------------------------------------------------ report
    def _unit_and_relation(self, graph: None) -> tuple[str, str]:
        return ("one graph: its nodes, edges, features and label",
                "add or remove one training graph")

    def _inference(self, plan) -> str:
        return ("predict reads only the queried graphs and the trained model: each graph's "
                "prediction depends on that graph alone, and no training graph is kept; no "
                "further privacy cost.")

    def _assumptions(self, plan, graphs: GraphCollection) -> tuple[str, ...]:
        if not plan.private:
            return ()
        out = (f"the number of training graphs (N={len(graphs)}) is public: it sets the "
               "sampling rate, the number of steps and the calibrated noise"
               + (" and the default delta 1/(10 N)" if self.delta is None else ""),)
        if self.allow_equal_graphs:
            out += ("training graphs with equal content are different people's graphs "
                    "(allow_equal_graphs=True): each is one unit",)
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = False
        return tags


def _logits_of(batches: GraphBatches):
    """``logits(module)`` of every graph of ``batches``, packed a chunk at a time."""
    return lambda module: torch.cat([module(*chunk) for chunk in batches.chunks(_PREDICT_CHUNK)])


def _refuse_missing_graph_labels(y: Any, n_graphs: int, name: str) -> None:
    """Refuse empty label cells (None, NaN, pandas' NA) by position: every training graph
    needs its label."""
    if y is None:
        return  # check_fit_data names a missing y
    values = np.asarray(y, dtype=object)
    if values.ndim != 1 or len(values) != n_graphs:
        return  # its shape is checked with the other labels
    missing = np.flatnonzero(pd.isna(values))
    if len(missing):
        shown = ", ".join(str(int(i)) for i in missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise ValueError(
            f"{name}.fit: y has no label for {len(missing)} graph(s) (positions {shown}). Every "
            "training graph needs its label: drop the unlabelled ones, e.g. fit(X[keep], "
            "y[keep]) with keep = pandas.notna(y).")
