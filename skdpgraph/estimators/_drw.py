"""DP-SGD on disjoint random-walk subgraphs (DRW, DRW-R, DRW-D) of Ayle et al. 2022."""

from __future__ import annotations

import dataclasses
import math
from numbers import Integral, Real

import numpy as np
import torch
from torch import nn

from skdpgraph._random import Seeds
from skdpgraph._validation import DPSGD_CONSTRAINTS, Interval, StrOptions, default_delta
from skdpgraph.estimators._base import HISTORY_NOT_COVERED, BaseDPClassifier
from skdpgraph.graph import Nodes
from skdpgraph.nn import DenseSubgraphGNN
from skdpgraph.privacy import (NON_PRIVATE_NOTE, PrivacyBudgetError, PrivacyReport, plan_dpsgd,
                               steps_for_epochs)
from skdpgraph.sampling import (SubgraphExamples, disjoint_random_walks, pad_subgraphs,
                                rooted_random_walks)
from skdpgraph.training import train_dpsgd

__all__ = ["DRWClassifier"]

#: Random-walk subgraphs drawn per query node at prediction time (probabilities averaged).
PREDICT_DRAWS = 8
_PREDICT_CHUNK = 1024


def _root_cross_entropy(module: nn.Module, batch):
    x, adj, mask, y = batch
    logits = module(x, adj, mask)
    return nn.functional.cross_entropy(logits, y, reduction="none"), logits.argmax(-1) == y


def _steps_within_budget(plan, epsilon: float, delta: float, max_steps: int) -> int:
    """Largest T <= max_steps with epsilon(T) <= epsilon (epsilon grows with T)."""
    if plan.epsilon(delta, 1) > epsilon:
        raise PrivacyBudgetError(
            f"DRWClassifier: noise_multiplier={plan.noise_multiplier:g} spends "
            f"epsilon={plan.epsilon(delta, 1):.4g} > epsilon={epsilon:g} in a single step. "
            "Increase noise_multiplier or epsilon, or lower batch_size.")
    low, high = 1, max_steps
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if plan.epsilon(delta, middle) <= epsilon else (low, middle - 1)
    return low


class DRWClassifier(BaseDPClassifier):
    r"""Graph neural network trained with DP-SGD on disjoint random-walk subgraphs.

    Every training node becomes the root of one subgraph, grown by random walks that only
    step to nodes in no other subgraph, so no node lies in two subgraphs. Each step draws
    ``batch_size`` subgraphs uniformly without replacement, computes the gradient of each
    root's loss on its own subgraph with a dense GNN, clips it to C, adds
    :math:`\mathcal{N}(0, (2\lambda C)^2)` to the sum and steps. Changing one node's
    features or label changes at most one subgraph, hence at most one clipped gradient in
    any batch: sensitivity 2C under replace-one.

    Parameters
    ----------
    epsilon : float, default=8.0
        Privacy budget; ``np.inf`` trains the same model without clipping or noise.
    delta : float, default=None
        Defaults to ``1 / (10 * num_nodes)`` of the graph (every node is protected).
    sampler : {"drw", "drw-r", "drw-d"}, default="drw"
        One walk per root (DRW), ``restarts`` walks per root (DRW-R), or DRW re-drawn every
        ``resample_every`` steps (DRW-D).
    walk_length : int, default=4
        Steps per walk, L.
    restarts : int, default=2
        Walks per root for ``"drw-r"`` (subgraphs of at most ``1 + restarts * L`` nodes).
    resample_every : int, default=10
        Steps between re-draws for ``"drw-d"``.
    batch_size : int, default=64
        Subgraphs per step, m (capped at the number of training nodes).
    layers : int, default=1
        Graph convolutions, then a linear output layer.
    hidden_dim : int, default=256
    conv : {"gcn", "sage"}, default="gcn"
    lr : float, default=0.01
        Adam learning rate.
    epochs : int, default=30
        Passes of ``ceil(M / m)`` steps each; ignored if ``max_steps`` is set.
    max_steps : int, default=None
    max_grad_norm : float, default=1.0
        Clipping norm C.
    noise_multiplier : float, default=None
        None: calibrate lambda so the planned steps meet (epsilon, delta). Given: train
        with it until the planned steps end or the next step would exceed epsilon,
        whichever comes first (the paper's mode).
    random_state : int, RandomState or None, default=None
        Seeds walks, batches, noise and initialisation. Leave it None in production.
    device : {"auto", "cpu", "cuda"}, default="auto"
    verbose : bool, default=False

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    epsilon_spent_ : float
        Epsilon of the training run (<= ``epsilon``).
    delta_ : float
    noise_multiplier_ : float or None
        lambda = noise std / (2C); None for ``epsilon=inf``.
    n_steps_ : int
        Noisy steps taken.
    privacy_ : PrivacyReport
        Records M (subgraphs), m and the sampling probability m / M.
    history_ : list of dict
    module_ : DenseSubgraphGNN
    device_ : torch.device

    Notes
    -----
    Privacy unit: one node's features and label (replace-one); the graph structure and
    which nodes are training nodes are public. The subgraphs depend only on these and on
    the seed, so the number of subgraphs M equals the number of training nodes for all
    three samplers (DRW-D re-draws keep the same roots). The accountant is dp-accounting's
    RDP bound for sampling m of M without replacement [WBK19]_ with exactly this M. The
    paper's bound m / ceil(N / (L + 1)) assumes every node is in a subgraph; with roots
    restricted to training nodes M can be far smaller (Cora: 140 < 542) and that bound
    would understate the sampling probability, so it is not used.

    Prediction grows ``PREDICT_DRAWS`` random-walk subgraphs (same L and restarts) around
    each query node in the graph of the queried nodes and averages the probabilities. It
    reads the raw features of the query node and of the nodes its walks reach: those
    are not protected by the guarantee, which covers the trained model only. The fitted
    estimator keeps no graph.

    References
    ----------
    .. [AGS22] Ayle, Gosch, Schuchardt, Zügner, Günnemann. "Training Differentially Private
       Graph Neural Networks with Random Walk Sampling", 2022.
    .. [WBK19] Wang, Balle, Kasiviswanathan. "Subsampled Rényi Differential Privacy and
       Analytical Moments Accountant", AISTATS 2019.

    Examples
    --------
    >>> from skdpgraph import DRWClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=300, random_state=0)
    >>> clf = DRWClassifier(epsilon=4.0, epochs=3, hidden_dim=16, random_state=0)
    >>> clf = clf.fit(data.nodes()[:200], data.y[:200])
    >>> clf.epsilon_spent_ <= 4.0
    True
    """

    _parameter_constraints = {
        **DPSGD_CONSTRAINTS,
        "sampler": [StrOptions({"drw", "drw-r", "drw-d"})],
        "walk_length": [Interval(Integral, 1, None, closed="left")],
        "restarts": [Interval(Integral, 1, None, closed="left")],
        "resample_every": [Interval(Integral, 1, None, closed="left")],
        "layers": [Interval(Integral, 1, 2, closed="both")],
        "hidden_dim": [Interval(Integral, 1, None, closed="left")],
        "conv": [StrOptions({"gcn", "sage"})],
        "max_steps": [Interval(Integral, 1, None, closed="left"), None],
        "noise_multiplier": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(self, *, epsilon=8.0, delta=None, sampler="drw", walk_length=4, restarts=2,
                 resample_every=10, batch_size=64, layers=1, hidden_dim=256, conv="gcn",
                 lr=0.01, epochs=30, max_steps=None, max_grad_norm=1.0, noise_multiplier=None,
                 random_state=None, device="auto", verbose=False):
        self.epsilon = epsilon
        self.delta = delta
        self.sampler = sampler
        self.walk_length = walk_length
        self.restarts = restarts
        self.resample_every = resample_every
        self.batch_size = batch_size
        self.layers = layers
        self.hidden_dim = hidden_dim
        self.conv = conv
        self.lr = lr
        self.epochs = epochs
        self.max_steps = max_steps
        self.max_grad_norm = max_grad_norm
        self.noise_multiplier = noise_multiplier
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    @property
    def _restarts(self) -> int:
        return self.restarts if self.sampler == "drw-r" else 1

    def _fit(self, nodes: Nodes, y: np.ndarray, seeds: Seeds) -> None:
        graph, roots = nodes.graph, nodes.index
        if len(np.unique(roots)) != len(roots):
            raise ValueError("DRWClassifier.fit: X lists a node more than once; each training "
                             "node roots one subgraph, so pass distinct nodes.")
        delta = self.delta if self.delta is not None else default_delta(graph.num_nodes)
        plan = self._plan(len(roots), delta)
        examples = SubgraphExamples(
            graph, lambda: disjoint_random_walks(
                graph.indptr, graph.indices, self.walk_length, restarts=self._restarts,
                roots=roots, generator=seeds.numpy).nodes,
            torch.from_numpy(y), device=self.device_,
            resample_every=self.resample_every if self.sampler == "drw-d" else None)
        module = DenseSubgraphGNN(graph.num_features, self.hidden_dim, len(self.classes_),
                                  conv=self.conv, num_layers=self.layers).to(self.device_)
        result = train_dpsgd(
            module, examples, _root_cross_entropy, plan, lr=self.lr, generator=seeds.torch,
            noise_generator=seeds.torch_on(self.device_),
            epsilon_at=(lambda steps: plan.epsilon(delta, steps)) if plan.private else None,
            verbose=self.verbose, description=f"DRWClassifier ({self.sampler})")
        self.module_ = result.module.cpu()
        self.history_ = result.history
        self.noise_multiplier_ = plan.noise_multiplier
        self.n_steps_ = plan.steps
        self._predict_seed = seeds.seed
        self._set_privacy(self._report(plan, delta, examples.draws))

    def _plan(self, num_subgraphs: int, delta: float):
        steps = (self.max_steps if self.max_steps is not None
                 else steps_for_epochs(self.epochs, num_subgraphs, self.batch_size))
        private = not math.isinf(self.epsilon)
        plan = plan_dpsgd(
            epsilon=self.epsilon, delta=delta, sampling="without_replacement",
            num_examples=num_subgraphs, batch_size=self.batch_size, steps=steps,
            max_grad_norm=self.max_grad_norm,
            noise_multiplier=self.noise_multiplier if private else None,
            context=f"DRWClassifier (sampler={self.sampler!r}, steps={steps}, "
                    f"batch_size={self.batch_size}, {num_subgraphs} subgraphs)")
        if private and self.noise_multiplier is not None:
            steps = _steps_within_budget(plan, self.epsilon, delta, steps)
            plan = dataclasses.replace(plan, steps=steps)
        return plan

    def _report(self, plan, delta: float, draws: int) -> PrivacyReport:
        private = plan.private
        sampling = (f"{plan.num_examples} disjoint subgraphs (M, one per training node, "
                    f"sampler={self.sampler!r}, L={self.walk_length}, R={self._restarts}, "
                    f"{draws} draw(s)); m={plan.batch_size} per step without replacement, "
                    f"sampling probability m/M={plan.sample_rate:.4g}")
        return PrivacyReport(
            estimator="DRWClassifier",
            unit="node (its features and label); graph structure public",
            neighbouring_relation="replace one node's features and label (structure and "
                                  "the set of training nodes fixed)",
            epsilon=plan.epsilon(delta),
            delta=delta if private else 0.0,
            accountant="dp-accounting RDP (sampling without replacement, replace-one, "
                       "Wang et al. 2019), Balle et al. 2020 conversion" if private else "none",
            mechanism=(f"DP-SGD: {sampling}; {plan.steps} steps, clip C={plan.max_grad_norm:g}, "
                       f"noise std {plan.noise_multiplier:.4g} x 2C") if private
            else f"{NON_PRIVATE_NOTE} ({sampling})",
            events=(str(plan.dp_event()),) if private else (),
            inference="predict reads the raw features of each query node and of the nodes "
                      "its random walks reach in the given graph; they are not protected. "
                      "The model itself costs nothing further.",
            assumptions=("graph structure and the set of training nodes are public",
                         "subgraphs depend only on the structure, the training node ids "
                         "and the seed"),
            not_covered=(HISTORY_NOT_COVERED,),
            dp_event=plan.dp_event() if private else None,
        )

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        graph, queries = nodes.graph, nodes.index
        probabilities = torch.zeros(len(queries), len(self.classes_))
        for start in range(0, len(queries), _PREDICT_CHUNK):
            chunk = queries[start:start + _PREDICT_CHUNK]
            for draw in range(PREDICT_DRAWS):
                table = rooted_random_walks(graph.indptr, graph.indices, chunk,
                                            self.walk_length, restarts=self._restarts,
                                            seed=self._predict_seed, draw=draw).nodes
                logits = self.module_(*pad_subgraphs(graph, table))
                probabilities[start:start + len(chunk)] += torch.softmax(logits, -1)
        return torch.log(probabilities / PREDICT_DRAWS)
