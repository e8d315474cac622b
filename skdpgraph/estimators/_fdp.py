"""FDP: node-level DP-SGD on degree-bounded one-hop stars (Daigavane et al., 2021)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import torch

from skdpgraph._random import RandomStreams
from skdpgraph._validation import DPSGD_CONSTRAINTS, Interval, StrOptions
from skdpgraph.estimators._base import BaseDPClassifier
from skdpgraph.estimators._parameter_docs import fill_doc
from skdpgraph.graph import Graph, Nodes
from skdpgraph.nn import (DenseSubgraphGNN, encode_nodes, logits_from_sums, root_cross_entropy,
                          root_logits)
from skdpgraph.privacy import (FDPPlan, NeighbourSums, fdp_relation, inference_release_epsilon,
                               inference_sensitivity, plan_fdp, release_neighbour_sums,
                               steps_for_epochs)
from skdpgraph.sampling import StarExamples, bound_star_membership, star_members
from skdpgraph.sampling import star_rows
from skdpgraph.training import BestEpoch, train_dpsgd

__all__ = ["FDPClassifier"]

_RELEASE = "fdp_neighbour_sums"
_DEFAULT_STEPS = 500  # chosen on the shared datasets: doc/user_guide/defaults.rst


@fill_doc
class FDPClassifier(BaseDPClassifier):
    """One-layer GNN on degree-bounded stars, trained with node-level DP-SGD.

    Daigavane et al. (2021), arXiv:2111.15521: one star per training node (itself and at
    most K kept in-neighbours), DP-SGD accounted by :class:`~skdpgraph.privacy.FDPPlan`.
    Relation, conditions and inference: :ref:`fdp_guarantee` in the user guide.

    Parameters
    ----------
    epsilon : float, default=8.0
        {{epsilon}}
        With ``private_inference`` this covers the release of the training graph's
        neighbour sums too. ``np.inf`` trains the same model without clipping or noise
        unless ``noise_multiplier`` is given.
    delta : float, default=None
        {{delta}}
        None uses ``1 / (10 * graph.num_nodes)``: every node of the graph is protected.
    classes : array-like, default=None
        {{classes}}
    max_degree : int, default=1
        Degree bound K >= 1: each node feeds at most K stars, each star has at most K
        neighbours. One node then touches at most K + 1 examples, which the accountant
        charges: a larger K means more noise (the noise std grows with K + 1, while each
        extra neighbour adds little to the one-layer model).
    degree_sampler : {"bernoulli", "greedy"}, default="bernoulli"
        How K is enforced: ``"bernoulli"`` (the authors' code) keeps each of a node's
        ``d`` edges to training nodes with probability ``K / (2 d)``, none if more than
        K survive; ``"greedy"`` keeps K of them at random. It does not change the
        accountant (see Notes for the condition both share).
    hidden_dim : int, default=32
        Width H of the encoder and of the message-passing layer, at least 1. It does not
        change the training accountant; with ``private_inference`` the released sums'
        sensitivity ``sqrt(K(K+1)(H+1))`` grows with it (same epsilon, more noise).
    encoder_layers : int, default=1
        Linear layers encoding each node's features before the one message-passing
        layer, at least 1. It does not change the accountant.
    activation : {"relu", "selu", "tanh", "elu", "gelu"}, default="tanh"
        {{activation}}
    dropout : float, default=0.0
        {{dropout}}
    epochs : int, default=None
        Passes over the training nodes: ``epochs * ceil(n_train / batch_size)`` DP-SGD
        steps. More steps mean more noise per step at a fixed ``epsilon``. None: as many
        epochs as make at least 500 steps (Cora's 140 training nodes in one batch: 500
        epochs; 10,000 nodes in batches of 4096: 167). Many small steps average the noise
        better than a few large ones (see "How the defaults were chosen" in the docs).
    lr : float, default=0.005
        {{lr}}
    batch_size : int, default=4096
        Stars per step, drawn without replacement (capped at n_train). The sampling rate
        ``batch_size / n_train`` enters the accountant, whose multi-term bound is loose at
        small rates and tight from about one half: large batches pay off.
    max_grad_norm : float, default=1.0
        {{max_grad_norm}}
        Here C bounds each star's gradient; the noise std is ``sigma * 2(K+1)C``.
    noise_multiplier : float, default=None
        {{noise_multiplier}}
        Here it is sigma (the sensitivity is 2(K+1)C). If given, it is used as is (even with
        ``epsilon=np.inf``) and the fit fails, before training, when its epsilon exceeds
        ``epsilon``.
    private_inference : bool, default=False
        Predict from noisy neighbour sums and counts, released once per graph content: the
        training graph's in ``fit`` (in ``epsilon_spent_``, so training gets more noise),
        others in ``privacy_.releases``. False: ``predict`` reads the exact graph and
        is not covered.
    validation_fraction : float, "auto" or None, default="auto"
        {{validation_fraction}}
        The held-out nodes root no star.
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
    delta_ : float
    noise_multiplier_ : float or None
    privacy_ : PrivacyReport
    history_ : list of dict
        One record per epoch (stage ``"classifier"``; ``epsilon`` is training's, before
        the ``private_inference`` release); loss and training accuracy only with
        ``private_diagnostics=True``.
    module_ : DenseSubgraphGNN
    device_ : torch.device

    Notes
    -----
    Unit: one node with its features, label and edges. Relation: replace one node by an
    isolated node (any features and label, no edges); the number of training nodes is
    public. Degree sampling is data dependent: the guarantee holds with the degree-bounded
    stars taken as the input. Without ``private_inference``, predictions are not covered.

    Examples
    --------
    >>> from skdpgraph import FDPClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=400, random_state=0)
    >>> clf = FDPClassifier(epochs=3, random_state=0).fit(data.nodes()[:300], data.y[:300])
    >>> clf.epsilon_spent_ <= 8.0
    True
    """

    _parameter_constraints = {
        **DPSGD_CONSTRAINTS,
        "epochs": [Interval(Integral, 1, None, closed="left"), None],
        "max_degree": [Interval(Integral, 1, None, closed="left")],
        "degree_sampler": [StrOptions({"bernoulli", "greedy"})],
        "hidden_dim": [Interval(Integral, 1, None, closed="left")],
        "encoder_layers": [Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions({"relu", "selu", "tanh", "elu", "gelu"})],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "noise_multiplier": [Interval(Real, 0, None, closed="neither"), None],
        "private_inference": ["boolean"],
    }

    def __init__(self, *, epsilon=8.0, delta=None, classes=None, max_degree=1,
                 degree_sampler="bernoulli", hidden_dim=32, encoder_layers=1,
                 activation="tanh", dropout=0.0, epochs=None, lr=0.005, batch_size=4096,
                 max_grad_norm=1.0, noise_multiplier=None, private_inference=False,
                 validation_fraction="auto", random_state=None, device="auto",
                 verbose=False, private_diagnostics=False):
        self.epsilon = epsilon
        self.delta = delta
        self.classes = classes
        self.max_degree = max_degree
        self.degree_sampler = degree_sampler
        self.hidden_dim = hidden_dim
        self.encoder_layers = encoder_layers
        self.activation = activation
        self.dropout = dropout
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.max_grad_norm = max_grad_norm
        self.noise_multiplier = noise_multiplier
        self.private_inference = private_inference
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.private_diagnostics = private_diagnostics

    def _protected_units(self, nodes: Nodes) -> int:
        return nodes.graph.num_nodes

    def _plan(self, nodes: Nodes, y: np.ndarray) -> FDPPlan:
        n = len(nodes) - self._validation_size(len(nodes))
        batch = min(int(self.batch_size), n)
        epochs = self._epochs(n, batch)
        return plan_fdp(
            epsilon=self._budget(), delta=self.delta_, num_train=n, batch_size=batch,
            steps=steps_for_epochs(epochs, n, batch), max_degree=self.max_degree,
            max_grad_norm=self.max_grad_norm, noise_multiplier=self.noise_multiplier,
            private_inference=self.private_inference, degree_sampler=self.degree_sampler,
            context=f"FDPClassifier (K={self.max_degree}, epochs={epochs}, batch={batch})")

    def _epochs(self, num_train: int, batch_size: int) -> int:
        """``epochs``, or with None the fewest epochs that make ``_DEFAULT_STEPS`` steps."""
        if self.epochs is not None:
            return int(self.epochs)
        return math.ceil(_DEFAULT_STEPS / steps_for_epochs(1, num_train, batch_size))

    def _train(self, nodes: Nodes, y: np.ndarray, plan: FDPPlan, streams: RandomStreams) -> None:
        (nodes, y), held = self._holdout(nodes, y, len(y) - plan.training.num_examples, streams)
        best = held and BestEpoch(self._held_out_logits(held[0]), held[1])  # non-private fit
        graph, roots, k = nodes.graph, np.asarray(nodes.index), self._width(nodes.graph)
        degree = streams.numpy("degree")
        kept = bound_star_membership(graph, roots, k, degree, method=self.degree_sampler)
        examples = StarExamples(graph, star_members(kept, roots, k + 1, degree), y,
                                device=self.device_)
        module = DenseSubgraphGNN(graph.num_features, self.hidden_dim, len(self.classes_),
                                  conv="mean", num_layers=1, encoder_layers=self.encoder_layers,
                                  activation=self.activation, residual=True,
                                  dropout=self.dropout).to(self.device_)
        result = train_dpsgd(module, examples, root_cross_entropy, plan.training,
                             **self._stage_options(plan, "classifier", streams, best))
        self.module_ = (best.restore(result.module) if best else result.module).cpu()
        self.history_ = result.history
        self.noise_multiplier_ = plan.noise_multiplier
        if plan.private and plan.private_inference:  # paid by the plan's Gaussian term
            self._cache_release(graph, _RELEASE, self._neighbour_sums(graph, streams))

    def _held_out_logits(self, held: Nodes):
        """``logits(module)`` of the held-out nodes from their exact in-neighbours, as a
        non-private ``predict`` (only where the labels are public: see
        ``validation_fraction``)."""
        roots = np.asarray(held.index)
        rows = held.graph.adjacency()[roots]
        return lambda module: root_logits(module, held.graph, roots, rows)

    def _width(self, graph: Graph) -> int:  # no star has more than n - 1 neighbours
        return min(int(self.max_degree), max(graph.num_nodes - 1, 1))

    def _neighbour_sums(self, graph: Graph, streams: RandomStreams) -> NeighbourSums:
        """The Gaussian release of every node's degree-bounded neighbour sum and count."""
        everyone = np.arange(graph.num_nodes)
        rows = star_rows(graph, everyone, self._width(graph), streams.numpy("degree"),
                         method=self.degree_sampler)
        with torch.no_grad():
            encodings = encode_nodes(self.module_, graph, everyone)
        return release_neighbour_sums(encodings, rows, noise_multiplier=self.noise_multiplier_,
                                      max_degree=int(self.max_degree),
                                      generator=streams.torch("noise"))

    def _unit_and_relation(self, graph: Graph) -> tuple[str, str]:
        return "node (its features, label and edges)", fdp_relation(self.max_degree)

    def _inference(self, plan: FDPPlan) -> str:
        if plan.private and plan.private_inference:
            sensitivity = inference_sensitivity(int(self.max_degree), self.hidden_dim)
            return ("predict answers from one Gaussian release per graph content of every node's "
                    "degree-bounded neighbour sum and count (sensitivity sqrt(K(K+1)(H+1)) = "
                    f"{sensitivity:.4g}, own row included): the training graph's is made in fit "
                    "and in epsilon, any other graph's is recorded in privacy_.releases. A "
                    "queried node's own features enter its own prediction in the clear.")
        return ("predict reads the exact graph passed with the queried nodes (all in-edges, "
                "neighbours' features): predictions are not covered by the guarantee.")

    def _assumptions(self, plan: FDPPlan, nodes: Nodes) -> tuple[str, ...]:
        if not plan.private:
            return ()
        return (f"K={self.max_degree} is enforced by data-dependent samplers "
                f"({self.degree_sampler}): replacing a node changes which edges its in-neighbours"
                " keep, so the guarantee holds with the degree-bounded stars taken as the input "
                "(Daigavane et al.); for the raw graph only where every node feeds <= K stars "
                "and the sampler is 'greedy'",) + ((
                    f"the number of nodes (N={nodes.graph.num_nodes}) is public, as the "
                    "relation replaces nodes and never adds or removes one: it sets the "
                    "default delta 1/(10 N)",) if self.delta is None else ())

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        graph, roots = nodes.graph, np.asarray(nodes.index)
        if not (self.private_inference and self.noise_multiplier_ is not None):
            return root_logits(self.module_, graph, roots, graph.adjacency()[roots])
        sigma = self.noise_multiplier_
        released = self._release(graph, _RELEASE, lambda s: self._neighbour_sums(graph, s),
                                 lambda: {"epsilon": inference_release_epsilon(sigma, self.delta_),
                                          "delta": self.delta_, "noise_multiplier": sigma})
        return logits_from_sums(self.module_, encode_nodes(self.module_, graph, roots),
                                torch.from_numpy(released.sums[roots]),
                                torch.from_numpy(released.counts[roots]))
