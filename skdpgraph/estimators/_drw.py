"""DP-SGD on disjoint random-walk subgraphs (DRW, DRW-R, DRW-D) of Ayle et al. 2022."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import torch

from skdpgraph._deprecation import DEPRECATED, renamed_parameter
from skdpgraph._random import RandomStreams, keyed_generator, prediction_key
from skdpgraph._validation import DPSGD_CONSTRAINTS, Interval, StrOptions
from skdpgraph.estimators._base import BaseDPClassifier
from skdpgraph.estimators._parameter_docs import fill_doc
from skdpgraph.graph import Nodes
from skdpgraph.nn import DenseSubgraphGNN, root_cross_entropy
from skdpgraph.privacy import DPSGDPlan, plan_dpsgd, plan_until_budget, steps_for_epochs
from skdpgraph.sampling import (SubgraphExamples, disjoint_random_walks, pad_subgraphs,
                                rooted_random_walks)
from skdpgraph.training import BestEpoch, train_dpsgd

__all__ = ["DRWClassifier"]

#: Random-walk subgraphs drawn per query node at prediction time (probabilities averaged).
PREDICT_DRAWS = 8
_PREDICT_CHUNK = 1024


def _trimmed(table: np.ndarray) -> np.ndarray:  # all-padding columns dropped (short walks)
    return table[:, :max(1, int((table >= 0).sum(axis=1).max(initial=1)))]


@fill_doc
class DRWClassifier(BaseDPClassifier):
    r"""Graph neural network trained with DP-SGD on disjoint random-walk subgraphs.

    Ayle et al. (2022): every training node roots one subgraph grown by random walks that
    never enter another; each step draws ``batch_size`` subgraphs without replacement,
    clips each root's gradient to C and adds :math:`\mathcal{N}(0, (2\lambda C)^2)`. One
    node's features and label change at most one subgraph (replace-one). The structure
    and the training set are public; ``predict`` reads the raw features its walks reach.
    See :ref:`drw_guarantee`.

    Parameters
    ----------
    epsilon : float, default=8.0
        {{epsilon}}
        Here lambda is calibrated under replace-one. ``np.inf`` trains the same model
        without clipping or noise (``noise_multiplier`` is then ignored).
    delta : float, default=None
        {{delta}}
        None uses ``1 / (10 * num_nodes)`` of the graph (every node is protected).
    classes : array-like, default=None
        {{classes}}
    subgraph_sampler : {"drw", "drw-r", "drw-d"}, default="drw-r"
        How the disjoint subgraphs are drawn: one walk per root (``"drw"``),
        ``restarts`` walks per root (``"drw-r"``), or DRW drawn again every
        ``resample_every`` steps (``"drw-d"``). The subgraphs are disjoint in every case,
        so the accountant is the same. The default, ``restarts`` walks of one step, gives
        each root a star of up to 8 neighbours: the one-layer GNN sees them all, where a
        longer walk feeds it only the first.
    walk_length : int, default=1
        Steps per random walk, at least 1, in training and in ``predict``. It does not
        change the accountant (a node still lies in one subgraph at most).
    restarts : int, default=8
        Walks per root with ``subgraph_sampler="drw-r"`` (training and ``predict``), at
        least 1; ignored by the other samplers. It does not change the accountant.
    resample_every : int, default=10
        Steps between two draws of the subgraphs with ``subgraph_sampler="drw-d"``, at
        least 1; ignored by the other samplers. It does not change the accountant.
    batch_size : int, default=1024
        Subgraphs per step, drawn without replacement (capped at the number of training
        nodes: full batches up to 1024 of them). The sampling rate ``batch_size / n_train``
        enters the accountant. Large batches divide the noise by more examples per step.
    num_layers : int, default=1
        Message-passing layers of the GNN (1 or 2). It does not change the accountant.
    hidden_dim : int, default=64
        Width of the GNN's layers, at least 1. It does not change the accountant (see
        :ref:`defaults` for how 64 was chosen).
    conv : {"gcn", "sage"}, default="gcn"
        Graph convolution inside each subgraph: GCN or GraphSAGE. It does not change the
        accountant.
    dropout : float, default=0.0
        {{dropout}}
    lr : float, default=0.01
        {{lr}}
        Private fits take many small noisy steps (their noise averages out better than
        over a few large ones); without clipping and noise, 0.05 diverged (Amazon Computers
        fell to the majority class).
    epochs : int, default=50
        Passes of ``ceil(n_train / batch_size)`` steps each; ignored if ``max_steps`` is
        set. More steps mean more noise at a fixed ``epsilon``.
    max_steps : int, default=None
        DP-SGD steps, instead of those of ``epochs``; None: from ``epochs``. With
        ``noise_multiplier`` given it is an upper bound.
    max_grad_norm : float, default=1.0
        {{max_grad_norm}}
        Here C bounds each root's gradient; the noise std is ``2 * lambda * C``
        (replace-one moves one clipped gradient by at most 2C).
    noise_multiplier : float, default=None
        {{noise_multiplier}}
        Here lambda = noise std / (2C) (the sensitivity is 2C). Given (the paper's mode),
        training runs for the most planned steps within ``epsilon``, fixed before training
        (``n_steps_``); ignored with ``epsilon=np.inf``.
    validation_fraction : float, "auto" or None, default="auto"
        {{validation_fraction}}
        The held-out nodes root no subgraph.
    random_state : int, RandomState instance or None, default=None
        {{random_state}}
        It also seeds the prediction walks' key (``prediction_key_``).
    device : {"auto", "cpu", "cuda", "cuda:<index>"} or torch.device, default="auto"
        {{device}}
    verbose : bool, default=False
        {{verbose}}
    private_diagnostics : bool, default=False
        {{private_diagnostics}}
    sampler : {"drw", "drw-r", "drw-d"}, default="deprecated"
        Former name of ``subgraph_sampler``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    epsilon_spent_ : float
    delta_ : float
    noise_multiplier_ : float or None
        lambda = noise std / (2C); None for ``epsilon=inf``.
    n_steps_ : int
    prediction_key_ : int
        Key of the prediction walks, independent of training (deterministic ``predict``).
    privacy_ : PrivacyReport
    history_ : list of dict
        One record per epoch (stage ``"classifier"``); loss and training accuracy only
        with ``private_diagnostics=True``.
    module_ : DenseSubgraphGNN
    device_ : torch.device

    Examples
    --------
    >>> from skdpgraph.datasets import make_csbm
    >>> from skdpgraph import DRWClassifier
    >>> data = make_csbm(n_nodes=300, random_state=0)
    >>> clf = DRWClassifier(epsilon=4.0, epochs=3, hidden_dim=16, random_state=0)
    >>> clf = clf.fit(data.nodes()[:200], data.y[:200])
    >>> clf.epsilon_spent_ <= 4.0
    True
    """

    _parameter_constraints = {
        **DPSGD_CONSTRAINTS,
        "subgraph_sampler": [StrOptions({"drw", "drw-r", "drw-d"})],
        "sampler": [StrOptions({"drw", "drw-r", "drw-d", DEPRECATED})],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        **{name: [Interval(Integral, 1, None, closed="left")]
           for name in ("walk_length", "restarts", "resample_every", "hidden_dim")},
        "num_layers": [Interval(Integral, 1, 2, closed="both")],
        "conv": [StrOptions({"gcn", "sage"})],
        "max_steps": [Interval(Integral, 1, None, closed="left"), None],
        "noise_multiplier": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(self, *, epsilon=8.0, delta=None, classes=None, subgraph_sampler="drw-r",
                 walk_length=1, restarts=8, resample_every=10, batch_size=1024,
                 num_layers=1, hidden_dim=64, conv="gcn", dropout=0.0, lr=0.01, epochs=50,
                 max_steps=None, max_grad_norm=1.0, noise_multiplier=None,
                 validation_fraction="auto", random_state=None, device="auto",
                 verbose=False, private_diagnostics=False, sampler=DEPRECATED):
        self.epsilon = epsilon
        self.delta = delta
        self.classes = classes
        self.subgraph_sampler = subgraph_sampler
        self.walk_length = walk_length
        self.restarts = restarts
        self.resample_every = resample_every
        self.batch_size = batch_size
        self.num_layers = num_layers
        self.hidden_dim = hidden_dim
        self.conv = conv
        self.dropout = dropout
        self.lr = lr
        self.epochs = epochs
        self.max_steps = max_steps
        self.max_grad_norm = max_grad_norm
        self.noise_multiplier = noise_multiplier
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.private_diagnostics = private_diagnostics
        self.sampler = sampler

    def _labels_public(self) -> bool:  # noise_multiplier is ignored with epsilon=inf
        return math.isinf(self.epsilon)

    @property
    def _restarts(self) -> int:
        return self.restarts if self._subgraph_sampler_ == "drw-r" else 1

    def _check_data(self, nodes: Nodes, y: np.ndarray) -> None:
        self._subgraph_sampler_ = renamed_parameter(self, "sampler", "subgraph_sampler",
                                                    default="drw-r")

    def _protected_units(self, nodes: Nodes) -> int:
        return nodes.graph.num_nodes

    def _plan(self, nodes: Nodes, y: np.ndarray) -> DPSGDPlan:
        m = len(nodes) - self._validation_size(len(nodes))
        steps = self.max_steps or steps_for_epochs(self.epochs, m, self.batch_size)
        private = not math.isinf(self.epsilon)
        context = (f"DRWClassifier (subgraph_sampler={self._subgraph_sampler_!r}, "
                   f"steps={steps}, batch_size={self.batch_size}, {m} subgraphs)")
        plan = plan_dpsgd(epsilon=self._budget(), delta=self.delta_, sampling="without_replacement",
                          num_examples=m, batch_size=self.batch_size, steps=steps,
                          max_grad_norm=self.max_grad_norm, context=context,
                          noise_multiplier=self.noise_multiplier if private else None)
        if private and self.noise_multiplier is not None:
            plan = plan_until_budget(plan, self._budget(), self.delta_, context=context)
        return plan

    def _train(self, nodes: Nodes, y: np.ndarray, plan: DPSGDPlan,
               streams: RandomStreams) -> None:
        graph, walks = nodes.graph, streams.numpy("walks")
        (nodes, y), held = self._holdout(nodes, y, len(y) - plan.num_examples, streams)
        best = held and BestEpoch(self._held_out_logits(held[0], streams), held[1])
        examples = SubgraphExamples(
            graph, lambda: _trimmed(disjoint_random_walks(
                graph.indptr, graph.indices, self.walk_length, restarts=self._restarts,
                roots=nodes.index, generator=walks).nodes),
            torch.from_numpy(y), device=self.device_,
            resample_every=self.resample_every if self._subgraph_sampler_ == "drw-d" else None)
        module = DenseSubgraphGNN(graph.num_features, self.hidden_dim, len(self.classes_),
                                  conv=self.conv, num_layers=self.num_layers,
                                  dropout=self.dropout).to(self.device_)
        result = train_dpsgd(module, examples, root_cross_entropy, plan,
                             **self._stage_options(plan, "classifier", streams, best))
        self.module_ = (best.restore(result.module) if best else result.module).cpu()
        self.history_ = result.history
        self.noise_multiplier_, self.n_steps_ = plan.noise_multiplier, plan.steps
        self.prediction_key_ = prediction_key(self.random_state)

    def _held_out_logits(self, held: Nodes, streams: RandomStreams):
        """``logits(module)`` of the held-out nodes, each rooting one walk subgraph drawn once
        (only where the labels are public: see ``validation_fraction``)."""
        table = _trimmed(rooted_random_walks(
            held.graph.indptr, held.graph.indices, np.asarray(held.index), self.walk_length,
            restarts=self._restarts, generator=streams.numpy("walks")).nodes)
        inputs = pad_subgraphs(held.graph, table, device=self.device_)
        return lambda module: module(*inputs)

    def _unit_and_relation(self, graph) -> tuple[str, str]:
        return ("node (its features and label); graph structure public",
                "replace one node's features and label (structure and the set of training "
                "nodes fixed)")

    def _inference(self, plan) -> str:
        return ("predict reads the raw features of each query node and of the nodes its random "
                "walks reach in the given graph; they are not protected. The model itself costs "
                "nothing further.")

    def _assumptions(self, plan, nodes: Nodes) -> tuple[str, ...]:
        sampler = self._subgraph_sampler_
        draws = (plan.steps - 1) // self.resample_every + 1 if sampler == "drw-d" else 1
        return ("graph structure and the set of training nodes are public",
                f"{plan.num_examples} disjoint subgraphs (M, one per training node; "
                f"subgraph_sampler={sampler!r}, L={self.walk_length}, R={self._restarts}, "
                f"{draws} draw(s)) depend only on the structure, the training node ids and the "
                f"walk stream; sampling probability m/M={plan.sample_rate:.4g}")

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        graph, queries = nodes.graph, nodes.index
        probabilities = torch.zeros(len(queries), len(self.classes_))
        for start in range(0, len(queries), _PREDICT_CHUNK):
            chunk = queries[start:start + _PREDICT_CHUNK]
            for draw in range(PREDICT_DRAWS):
                table = _trimmed(rooted_random_walks(
                    graph.indptr, graph.indices, chunk, self.walk_length, restarts=self._restarts,
                    generator=keyed_generator(self.prediction_key_, draw)).nodes)
                logits = self.module_(*pad_subgraphs(graph, table))
                probabilities[start:start + len(chunk)] += torch.softmax(logits, -1)
        return torch.log(probabilities / PREDICT_DRAWS)
