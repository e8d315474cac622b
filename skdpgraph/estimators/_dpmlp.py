"""DP-SGD multi-layer perceptron on node features: the graph-agnostic baseline."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from numbers import Integral, Real

from skdpgraph._random import RandomStreams
from skdpgraph._validation import DPSGD_CONSTRAINTS, Interval, StrOptions
from skdpgraph.estimators._base import BaseDPClassifier, plan_poisson_epochs
from skdpgraph.estimators._parameter_docs import fill_doc
from skdpgraph.graph import Nodes
from skdpgraph.nn import MLP
from skdpgraph.privacy import DPSGDPlan
from skdpgraph.training import BestEpoch, TensorExamples, train_dpsgd

__all__ = ["DPMLPClassifier", "per_example_cross_entropy"]


def per_example_cross_entropy(module: nn.Module, batch):
    """Loss function for ``train_dpsgd`` on ``(features, labels)`` batches."""
    x, y = batch
    logits = module(x)
    return nn.functional.cross_entropy(logits, y, reduction="none"), logits.argmax(-1) == y


@fill_doc
class DPMLPClassifier(BaseDPClassifier):
    """Multi-layer perceptron on node features, trained with DP-SGD.

    The baseline every paper compares against: it ignores the edges, so it protects each
    training node's features and label (node-level DP) at no structural cost. Each step
    samples training nodes with Poisson sampling (rate ``batch_size / n``), clips each
    node's gradient to ``max_grad_norm`` and adds Gaussian noise calibrated to
    ``(epsilon, delta)`` with dp-accounting's RDP accountant.

    Parameters
    ----------
    epsilon : float, default=8.0
        {{epsilon}}
        ``np.inf`` trains the same MLP on the same batches without clipping or noise.
    delta : float, default=None
        {{delta}}
        None uses ``1 / (10 * n_train)`` (only the training nodes are used).
    classes : array-like, default=None
        {{classes}}
    hidden_dim : int, default=64
        Width of every hidden layer of the MLP, at least 1. Public; it does not change
        the accountant (each node's whole gradient is clipped).
    num_layers : int, default=2
        Linear layers of the MLP, at least 1 (1: a linear model). Public; it does not
        change the accountant.
    activation : {"relu", "selu", "tanh", "elu", "gelu"}, default="relu"
        {{activation}}
    dropout : float, default=0.0
        {{dropout}}
    epochs : int, default=50
        Passes over the training nodes, at least 1: ``epochs * ceil(n_train /
        batch_size)`` DP-SGD steps. Every step spends budget, so at a fixed ``epsilon``
        more epochs mean more noise per step.
    lr : float, default=0.01
        {{lr}}
    batch_size : int, default=1024
        Expected batch size of Poisson sampling: each step keeps every training node
        independently with probability ``batch_size / n_train`` (capped at 1). The
        sampling rate and the number of steps enter the accountant. Large batches divide
        the noise among more gradients (Amazon Computers at epsilon=8, 5 seeds: 75.9 with
        256, 80.7 with 1024; see "How the defaults were chosen" in the docs).
    max_grad_norm : float, default=1.0
        {{max_grad_norm}}
        Each node's gradient is scaled to L2 norm at most C; the noise std is
        ``noise_multiplier * C``.
    noise_multiplier : float, default=None
        {{noise_multiplier}}
        The sensitivity is C. Given, it is used as is (even with ``epsilon=np.inf``)
        and the fit fails, before training, if its epsilon exceeds ``epsilon``.
    validation_fraction : float, "auto" or None, default="auto"
        {{validation_fraction}}
    random_state : int, RandomState instance or None, default=None
        {{random_state}}
    device : {"auto", "cpu", "cuda", "cuda:<index>"} or torch.device, default="auto"
        {{device}}
    verbose : bool, default=False
        {{verbose}}
    private_diagnostics : bool, default=False
        {{private_diagnostics}}

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    epsilon_spent_ : float
        Epsilon of the training run (<= ``epsilon``).
    delta_ : float
    noise_multiplier_ : float or None
        Noise std / C; None for ``epsilon=inf``.
    privacy_ : PrivacyReport
    history_ : list of dict
        One record per epoch (stage ``"classifier"``): epsilon so far, and the loss and
        training accuracy with ``private_diagnostics=True`` (see Notes).
    module_ : torch.nn.Module
    device_ : torch.device

    Notes
    -----
    Privacy unit: one training node (its features and label), add/remove relation; a
    node listed twice in ``X`` is refused. ``predict`` uses only the queried nodes' own
    features and the private model, so it costs no further budget. ``history_``'s loss
    and training accuracy are kept only with ``private_diagnostics=True`` (not covered).

    Examples
    --------
    >>> from sklearn.model_selection import train_test_split
    >>> from skdpgraph import DPMLPClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=400, random_state=0)
    >>> X_tr, X_te, y_tr, y_te = train_test_split(data.nodes(), data.y, random_state=0)
    >>> clf = DPMLPClassifier(epsilon=4.0, epochs=5, random_state=0).fit(X_tr, y_tr)
    >>> clf.epsilon_spent_ <= 4.0
    True
    """

    _uses_edges = False  # features only: a plain array loses nothing

    _parameter_constraints = {
        **DPSGD_CONSTRAINTS,
        "hidden_dim": [Interval(Integral, 1, None, closed="left")],
        "num_layers": [Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions({"relu", "selu", "tanh", "elu", "gelu"})],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "noise_multiplier": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(self, *, epsilon=8.0, delta=None, classes=None, hidden_dim=64, num_layers=2,
                 activation="relu", dropout=0.0, epochs=50, lr=0.01, batch_size=1024,
                 max_grad_norm=1.0, noise_multiplier=None, validation_fraction="auto",
                 random_state=None, device="auto", verbose=False, private_diagnostics=False):
        self.epsilon = epsilon
        self.delta = delta
        self.classes = classes
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.activation = activation
        self.dropout = dropout
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.max_grad_norm = max_grad_norm
        self.noise_multiplier = noise_multiplier
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.private_diagnostics = private_diagnostics

    def _plan(self, nodes: Nodes, y: np.ndarray) -> DPSGDPlan:
        return plan_poisson_epochs(
            self, len(nodes) - self._validation_size(len(nodes)),
            context=f"DPMLPClassifier (epochs={self.epochs}, batch_size={self.batch_size})")

    def _train(self, nodes: Nodes, y: np.ndarray, plan: DPSGDPlan,
               streams: RandomStreams) -> None:
        (nodes, y), held = self._holdout(nodes, y, len(y) - plan.num_examples, streams)
        best = held and BestEpoch(torch.from_numpy(np.asarray(held[0])).to(self.device_),
                                  held[1])  # only where the labels are public
        module = MLP(nodes.graph.num_features, self.hidden_dim, len(self.classes_),
                     num_layers=self.num_layers, activation=self.activation,
                     dropout=self.dropout).to(self.device_)
        examples = TensorExamples(torch.from_numpy(np.asarray(nodes)), torch.from_numpy(y),
                                  device=self.device_)
        result = train_dpsgd(module, examples, per_example_cross_entropy, plan,
                             **self._stage_options(plan, "classifier", streams, best))
        self.module_ = (best.restore(result.module) if best else result.module).cpu()
        self.history_ = result.history
        self.noise_multiplier_ = plan.noise_multiplier

    def _unit_and_relation(self, graph) -> tuple[str, str]:
        return "node (its features and label)", "add or remove one training node"

    def _inference(self, plan) -> str:
        return ("predict uses only the queried nodes' own features and the trained model: no "
                "further privacy cost.")

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        return self.module_(torch.from_numpy(np.asarray(nodes)))
