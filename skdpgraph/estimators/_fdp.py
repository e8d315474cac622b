"""FDP: node-level DP-SGD on degree-bounded one-hop stars (Daigavane et al., 2021)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from skdpgraph._random import Seeds, make_seeds
from skdpgraph._validation import DPSGD_CONSTRAINTS, Interval, StrOptions, default_delta
from skdpgraph.estimators._base import HISTORY_NOT_COVERED, BaseDPClassifier
from skdpgraph.estimators._fdp_inference import inference_sensitivity, root_logits
from skdpgraph.graph import Nodes
from skdpgraph.nn import DenseSubgraphGNN
from skdpgraph.privacy import (FINE_ORDERS, NON_PRIVATE_NOTE, DPSGDPlan, PrivacyBudgetError,
                               PrivacyReport, calibrate_noise_multiplier, compute_rdp,
                               compute_rdp_fdp, epsilon_from_rdp, gaussian_event,
                               steps_for_epochs)
from skdpgraph.sampling import StarExamples, bound_star_membership, star_members
from skdpgraph.training import train_dpsgd

__all__ = ["FDPClassifier"]

_ASSUMPTION = ("the degree bound K is enforced by a data-dependent sampler; the guarantee "
               "holds with the degree-bounded graph taken as the input (Daigavane et al.)")


def _star_loss(module: nn.Module, batch):
    x, adj, mask, y = batch
    logits = module(x, adj, mask)
    return nn.functional.cross_entropy(logits, y, reduction="none"), logits.argmax(-1) == y


class FDPClassifier(BaseDPClassifier):
    """One-layer GNN on degree-bounded stars, trained with node-level DP-SGD.

    Every node keeps its edges to at most ``max_degree`` (K) training nodes; each
    training node ``v`` becomes one example, the star of ``v`` and its kept in-neighbours
    (at most K of them). The model is an encoder MLP, one mean aggregation over the star
    with a residual update, and a linear decoder on the root. Each step draws a batch of
    exactly ``batch_size`` stars without replacement, clips each star's gradient to C on
    its global norm and adds Gaussian noise of std ``sigma * 2 (K + 1) * C``: removing a
    node changes at most K + 1 stars. The multi-term hypergeometric accountant
    (:func:`~skdpgraph.privacy.compute_rdp_fdp`) gives epsilon.

    Parameters
    ----------
    epsilon : float, default=8.0
        Privacy budget; ``np.inf`` trains the same model without clipping or noise.
    delta : float, default=None
        Defaults to ``1 / (10 * n_train)``.
    max_degree : int, default=4
        Degree bound K (the DRW paper tunes FDP over {2, 4}).
    degree_sampler : {"bernoulli", "greedy"}, default="bernoulli"
        See :func:`~skdpgraph.sampling.bound_star_membership`.
    hidden_dim : int, default=100
    encoder_layers : int, default=1
    activation : str, default="tanh"
    epochs : int, default=30
        Steps = ``epochs * ceil(n_train / batch_size)``.
    lr : float, default=0.01
        Adam learning rate.
    batch_size : int, default=256
        Exact batch size (capped at ``n_train``).
    max_grad_norm : float, default=1.0
    noise_multiplier : float, default=None
        sigma = noise std / (2 (K + 1) C); calibrated when None. If given, the fit fails
        when its epsilon exceeds ``epsilon``.
    private_inference : bool, default=False
        Predict from noisy neighbour aggregates of a degree-bounded graph instead of the
        exact graph, and count one such release in ``epsilon_spent_``.
    random_state : int, RandomState or None, default=None
        Seeds degree sampling, batches, noise and initialisation. Leave it None in
        production: a known seed makes the noise reproducible.
    device : {"auto", "cpu", "cuda"}, default="auto"
    verbose : bool, default=False

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    epsilon_spent_ : float
        Epsilon of training (plus one private-inference release if enabled), <= epsilon.
    delta_ : float
    noise_multiplier_ : float or None
    privacy_ : PrivacyReport
    history_ : list of dict
        Per-epoch loss, training accuracy and epsilon (not private; see Notes).
    module_ : DenseSubgraphGNN
    device_ : torch.device

    Notes
    -----
    Privacy unit: one node with its features, label and edges (node-level DP); the
    accountant treats the change as up to K + 1 replaced per-example terms. Assumption:
    the degree bound is enforced by a data-dependent sampler, so the guarantee holds
    with the degree-bounded graph taken as the input, as in Daigavane et al.
    By default ``predict`` aggregates the exact, non-private graph passed with the
    queried nodes (neighbours' features and all edges): predictions are *not* covered.
    With ``private_inference=True`` the neighbour sums and counts of a degree-bounded
    graph are released with the Gaussian mechanism (same sigma, L2 sensitivity
    ``sqrt(K (hidden_dim + 1))``); ``epsilon_spent_`` composes one such release (RDP
    curves added on the same orders). Each call of ``predict``/``predict_proba`` is one
    release; a queried node's own features enter its own prediction unperturbed.
    The fitted estimator stores no graph. ``history_`` is not covered.

    References
    ----------
    .. [1] Daigavane, Madan, Sinha, Thakurta, Aggarwal and Jain (2021). "Node-Level
       Differentially Private Graph Neural Networks". arXiv:2111.15521.

    Examples
    --------
    >>> from skdpgraph import FDPClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=400, random_state=0)
    >>> nodes = data.nodes()
    >>> clf = FDPClassifier(epsilon=8.0, epochs=3, random_state=0).fit(nodes[:300], data.y[:300])
    >>> clf.epsilon_spent_ <= 8.0
    True
    """

    _parameter_constraints = {
        **DPSGD_CONSTRAINTS,
        "max_degree": [Interval(Integral, 1, None, closed="left")],
        "degree_sampler": [StrOptions({"bernoulli", "greedy"})],
        "hidden_dim": [Interval(Integral, 1, None, closed="left")],
        "encoder_layers": [Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions({"relu", "selu", "tanh", "elu", "gelu"})],
        "noise_multiplier": [Interval(Real, 0, None, closed="neither"), None],
        "private_inference": ["boolean"],
    }

    def __init__(self, *, epsilon=8.0, delta=None, max_degree=4, degree_sampler="bernoulli",
                 hidden_dim=100, encoder_layers=1, activation="tanh", epochs=30, lr=0.01,
                 batch_size=256, max_grad_norm=1.0, noise_multiplier=None,
                 private_inference=False, random_state=None, device="auto", verbose=False):
        self.epsilon = epsilon
        self.delta = delta
        self.max_degree = max_degree
        self.degree_sampler = degree_sampler
        self.hidden_dim = hidden_dim
        self.encoder_layers = encoder_layers
        self.activation = activation
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.max_grad_norm = max_grad_norm
        self.noise_multiplier = noise_multiplier
        self.private_inference = private_inference
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    def _fit(self, nodes: Nodes, y: np.ndarray, seeds: Seeds) -> None:
        roots = np.asarray(nodes.index)
        if np.unique(roots).shape[0] != roots.shape[0]:
            raise ValueError("FDPClassifier: training nodes must be distinct (one star per node).")
        n, k = len(roots), int(self.max_degree)
        delta = self.delta if self.delta is not None else default_delta(n)
        batch = min(int(self.batch_size), n)
        steps = steps_for_epochs(self.epochs, n, batch)
        plan = self._plan(n, batch, steps, delta)
        kept = bound_star_membership(nodes.graph, roots, k, seeds.numpy,
                                     method=self.degree_sampler)
        examples = StarExamples(nodes.graph, star_members(kept, roots, k + 1, seeds.numpy), y,
                                device=self.device_)
        module = DenseSubgraphGNN(nodes.graph.num_features, self.hidden_dim, len(self.classes_),
                                  conv="mean", num_layers=1, encoder_layers=self.encoder_layers,
                                  activation=self.activation, residual=True).to(self.device_)
        result = train_dpsgd(
            module, examples, _star_loss, plan, lr=self.lr, generator=seeds.torch,
            noise_generator=seeds.torch_on(self.device_),
            epsilon_at=(lambda t: self._epsilon(plan.noise_multiplier, t, delta, False))
            if plan.private else None,
            verbose=self.verbose, description="FDPClassifier",
        )
        self.module_ = result.module.cpu()
        self.history_ = result.history
        self.noise_multiplier_ = plan.noise_multiplier
        self._set_privacy(self._report(plan, delta))

    # ----------------------------------------------------------------- accounting
    def _rdp(self, sigma: float, steps: int, with_inference: bool) -> np.ndarray:
        rdp = compute_rdp_fdp(sigma, self._n_train, self._batch, int(self.max_degree), steps,
                              FINE_ORDERS)
        if with_inference:
            rdp = rdp + compute_rdp(gaussian_event(sigma), orders=FINE_ORDERS)
        return rdp

    def _epsilon(self, sigma: float, steps: int, delta: float, with_inference: bool) -> float:
        return epsilon_from_rdp(self._rdp(sigma, steps, with_inference), delta,
                                orders=FINE_ORDERS)

    def _plan(self, n: int, batch: int, steps: int, delta: float) -> DPSGDPlan:
        self._n_train, self._batch = n, batch
        common = dict(sampling="without_replacement", num_examples=n, batch_size=batch,
                      steps=steps, sensitivity=2.0 * (int(self.max_degree) + 1))
        if np.isinf(self.epsilon) and self.noise_multiplier is None:
            return DPSGDPlan(noise_multiplier=None, max_grad_norm=None, **common)
        sigma = self.noise_multiplier
        if sigma is None:
            sigma = calibrate_noise_multiplier(
                lambda s: self._epsilon(s, steps, delta, self.private_inference), self.epsilon,
                context=f"FDPClassifier (max_degree={self.max_degree}, epochs={self.epochs}, "
                        f"batch_size={batch}, private_inference={self.private_inference})")
        return DPSGDPlan(noise_multiplier=sigma, max_grad_norm=self.max_grad_norm, **common)

    def _report(self, plan: DPSGDPlan, delta: float) -> PrivacyReport:
        k = int(self.max_degree)
        if not plan.private:
            return PrivacyReport(
                estimator="FDPClassifier", unit="node (its features, label and edges)",
                neighbouring_relation="add or remove one node", epsilon=np.inf, delta=0.0,
                accountant="none", mechanism=NON_PRIVATE_NOTE,
                inference="predict uses the exact graph: not private.",
                not_covered=(HISTORY_NOT_COVERED,))
        private_inference = bool(self.private_inference)
        epsilon = self._epsilon(plan.noise_multiplier, plan.steps, delta, private_inference)
        if epsilon > self.epsilon * (1 + 1e-9):
            raise PrivacyBudgetError(
                f"FDPClassifier: noise_multiplier={self.noise_multiplier} gives "
                f"epsilon={epsilon:.4g} > epsilon={self.epsilon:g} for {plan.steps} steps.")
        events = [f"FDP multi-term DP-SGD: N={plan.num_examples}, B={plan.batch_size}, "
                  f"K'={k + 1}, sigma={plan.noise_multiplier:.4g}, T={plan.steps}"]
        sensitivity = inference_sensitivity(k, self.hidden_dim)
        if private_inference:
            events.append(f"Gaussian (one test-time release): noise std "
                          f"{plan.noise_multiplier:.4g} x L2 sensitivity {sensitivity:.4g}")
            inference = ("each predict call releases the neighbour sums and counts of a "
                         "degree-bounded graph with Gaussian noise; one release is included "
                         "in epsilon; every further call composes another. A queried node's "
                         "own features enter its own prediction unperturbed.")
        else:
            inference = ("predict uses the exact (non-private) graph passed with the queried "
                         "nodes: all edges and neighbours' features; predictions are not "
                         "covered by the guarantee.")
        return PrivacyReport(
            estimator="FDPClassifier", unit="node (its features, label and edges)",
            neighbouring_relation="add or remove one node; up to K+1 = "
                                  f"{k + 1} per-example terms change (sensitivity 2(K+1)C)",
            epsilon=epsilon, delta=delta,
            accountant="FDP multi-term hypergeometric RDP (Daigavane et al. 2021)"
                       + (" + Gaussian RDP" if private_inference else "")
                       + ", Balle et al. 2020 conversion on FINE_ORDERS",
            mechanism=(f"DP-SGD on degree-bounded stars ({self.degree_sampler}, K={k}): "
                       f"fixed-size batches of {plan.batch_size} without replacement, "
                       f"{plan.steps} steps, clip C={plan.max_grad_norm:g}, noise std "
                       f"{plan.noise_multiplier:.4g} x {plan.sensitivity:g}C"),
            events=tuple(events), inference=inference, assumptions=(_ASSUMPTION,),
            not_covered=(HISTORY_NOT_COVERED,))

    # ----------------------------------------------------------------- prediction
    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        graph, roots = nodes.graph, np.asarray(nodes.index)
        private = bool(self.private_inference) and self.noise_multiplier_ is not None
        if not private:
            return root_logits(self.module_, graph, roots, graph.adjacency()[roots])
        k = int(self.max_degree)
        seeds = make_seeds(self.random_state)
        unique, position = np.unique(roots, return_inverse=True)
        kept = bound_star_membership(graph, unique, k, seeds.numpy, method=self.degree_sampler)
        members = star_members(kept, unique, k + 1, seeds.numpy)[:, 1:]
        real = members >= 0
        rows = sp.csr_matrix((np.ones(int(real.sum()), dtype=np.float32),
                              (np.nonzero(real)[0], members[real])),
                             shape=(unique.shape[0], graph.num_nodes))
        std = self.noise_multiplier_ * inference_sensitivity(k, self.hidden_dim)
        logits = root_logits(self.module_, graph, unique, rows, noise_std=std, max_count=k,
                             generator=seeds.torch)
        return logits[torch.from_numpy(position.ravel())]
