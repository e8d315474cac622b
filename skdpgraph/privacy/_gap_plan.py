"""GAP's privacy plan: PMA's K Gaussians, alone (edge level) or between two DP-SGD runs (node).

A :class:`GAPPlan` fixes, before any private data is read, everything the guarantee of
``GAPClassifier`` depends on: the unit, the sensitivity of one PMA hop, the noise
multiplier and the two DP-SGD runs. It implements the
:class:`~skdpgraph.privacy.PrivacyPlan` protocol, and also states what ``predict`` costs
(:meth:`GAPPlan.release_cost`), what the guarantee assumes and what it leaves uncovered,
so that the docstring, the user guide and ``privacy_`` say the same thing.

Edge level: the K noisy hops compose exactly into one Gaussian mechanism with multiplier
``sigma / sqrt(K)`` ([DRS22]_, Corollary 3.3), accounted on its exact analytic curve; the
encoder and the classifier read only the features and labels, public at this level.
Node level: encoder DP-SGD, then the K Gaussians (std ``sigma * Delta``), then classifier
DP-SGD, all with one ``sigma``, composed in RDP under add/remove-one-node ([SSBG23]_,
Theorem 4).

References
----------
.. [SSBG23] Sajadmanesh, Shamsabadi, Bellet, Gatica-Perez. "GAP: Differentially Private
   Graph Neural Networks with Aggregation Perturbation", USENIX Security 2023.
.. [DRS22] Dong, Roth, Su. "Gaussian Differential Privacy", JRSS-B 2022.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from skdpgraph.privacy._accountant import gaussian_event
from skdpgraph.privacy._aggregation import (gap_node_event, noisy_neighbour_votes,
                                            pma_sensitivity, private_multi_hop_aggregation)
from skdpgraph.privacy._calibration import calibrate_noise_multiplier
from skdpgraph.privacy._gaussian import calibrate_gaussian_noise, gaussian_epsilon
from skdpgraph.privacy._orders import LazyRdpCurve, OrderHint, search_epsilon
from skdpgraph.privacy._plan import DPSGDPlan, plan_dpsgd, steps_for_epochs
from skdpgraph.privacy._report import NON_PRIVATE_NOTE
from skdpgraph.sampling import bound_in_degree, bound_out_degree

__all__ = ["GAPPlan", "plan_gap", "VOTE_ENCODER_SHARE", "STATED_IN_DEGREES"]

_STAGES = ("encoder", "classifier")

#: Vote head: the share of epsilon the encoder's DP-SGD is calibrated to alone; the PMA
#: Gaussians take the rest of the budget in the RDP composition. Chosen once on the shared
#: graphs (5/8: encoder at epsilon 5 of 8; see "How the defaults were chosen").
VOTE_ENCODER_SHARE = 0.625
#: Node level without ``max_in_degree``: the in-degrees at which ``privacy_.not_covered``
#: states a node's epsilon with its own rows counted (:meth:`GAPPlan.in_degree_epsilon`).
STATED_IN_DEGREES = (1, 5, 10, 30, 100)


@dataclass(frozen=True)
class GAPPlan:
    """The privacy plan of one GAP fit.

    Parameters
    ----------
    privacy_level : {"edge", "node"}
    hops : int
        K, the number of noisy aggregation hops.
    directed : bool
        Whether the graph is directed (edge level: the unit is then one directed edge).
    noise_multiplier : float or None
        sigma: PMA noise std / sensitivity and, at node level, DP-SGD noise std / C.
        None for a non-private (``epsilon=inf``) plan.
    encoder, classifier : DPSGDPlan
        The two training runs (non-private at edge level).
    max_degree : int or None
        Node level: out-degree bound D.
    max_in_degree : int or None
        Node level: in-degree bound D_in; None leaves in-degree unbounded (and each
        node's own aggregation rows covered according to its in-degree only).
    vote : bool, default=False
        Node level, GAP's vote head: no classifier run (``classifier`` is None); the
        encoder has its own noise multiplier (``encoder.noise_multiplier``), calibrated
        to :data:`VOTE_ENCODER_SHARE` of epsilon, and ``noise_multiplier`` is the PMA's.
    progressive : bool, default=False
        ProGAP (Sajadmanesh & Gatica-Perez, WSDM 2024): K + 1 stages, each trained on the
        noisy aggregations released so far, each of the first K aggregating its own
        embedding once. ``encoder`` is then
        the run of each of those K stages and ``classifier`` the run of the last one;
        the K one-hop Gaussians compose exactly as GAP's K hops.
    """

    privacy_level: str
    hops: int
    directed: bool
    noise_multiplier: float | None
    encoder: DPSGDPlan
    classifier: DPSGDPlan | None
    max_degree: int | None = None
    max_in_degree: int | None = None
    progressive: bool = False
    vote: bool = False

    # ------------------------------------------------------------------ mechanism
    @property
    def private(self) -> bool:
        return self.noise_multiplier is not None

    @property
    def node_level(self) -> bool:
        return self.privacy_level == "node"

    @property
    def sensitivity(self) -> float:
        """L2 sensitivity of one PMA hop (:func:`~skdpgraph.privacy.pma_sensitivity`)."""
        return pma_sensitivity(self.privacy_level, directed=self.directed,
                               max_degree=self.max_degree if self.node_level else None,
                               max_in_degree=self.max_in_degree if self.node_level else None)

    @property
    def noise_std(self) -> float:
        """Std of the Gaussian noise added to every coordinate of every hop (0 if not private)."""
        return self.noise_multiplier * self.sensitivity if self.private else 0.0

    @property
    def own_rows_covered(self) -> bool:
        """Whether the sensitivity covers each node's own aggregation rows.

        True at edge level and at node level with ``max_in_degree``. Otherwise a node's own
        rows are covered according to its in-degree (:meth:`in_degree_epsilon`).
        """
        return not (self.private and self.node_level and self.max_in_degree is None)

    def bounded(self, adjacency: sp.spmatrix, streams: Any) -> sp.spmatrix:
        """The adjacency that a release aggregates over: degree-bounded at node level.

        The kept edges come from a fresh ``"degree"`` stream of ``streams``; one release
        bounds once and uses the result for all its hops (or stages).
        """
        if not self.node_level:
            return adjacency
        degree = streams.numpy("degree")
        adjacency = bound_out_degree(adjacency, self.max_degree, degree)
        if self.max_in_degree is not None:
            adjacency = bound_in_degree(adjacency, self.max_in_degree, degree)
        return adjacency

    def aggregate_once(self, adjacency: sp.spmatrix, embeddings: torch.Tensor,
                       noise: torch.Generator | None) -> torch.Tensor:
        """One noisy hop on an already :meth:`bounded` adjacency (a progressive stage).

        Returns a Tensor of shape (n, d): row-normalised noisy sums of the row-normalised
        ``embeddings``, with noise std :attr:`noise_std` from ``noise``.
        """
        with torch.no_grad():
            return private_multi_hop_aggregation(adjacency, embeddings, 1, self.noise_std,
                                                 noise)[:, 0]

    def aggregate(self, adjacency: sp.spmatrix, embeddings: torch.Tensor,
                  streams: Any) -> torch.Tensor:
        """One PMA release as planned: degree bounding (node level), then K noisy hops.

        Parameters
        ----------
        adjacency : scipy sparse matrix of shape (n, n)
            In-adjacency ``A[target, source]`` of the queried graph.
        embeddings : Tensor of shape (n, d)
            Encoder embeddings (row-normalised by PMA), on the device to compute on.
        streams : RandomStreams
            The edges kept by the degree bounds come from a ``"degree"`` stream, the noise
            from a ``"noise"`` stream: fresh ones for every release.

        Returns
        -------
        Tensor of shape (n, K, d), on the device of ``embeddings``.
        """
        if self.progressive:
            raise ValueError("GAPPlan.aggregate: a progressive plan aggregates stage by stage "
                             "(bounded, then aggregate_once per stage).")
        with torch.no_grad():
            return private_multi_hop_aggregation(
                self.bounded(adjacency, streams), embeddings, self.hops, self.noise_std,
                streams.torch("noise", embeddings.device))

    def votes(self, adjacency: sp.spmatrix, log_probabilities: torch.Tensor, weight: float,
              streams: Any, labelled: tuple[torch.Tensor, torch.Tensor] | None = None
              ) -> torch.Tensor:
        """One vote release (vote head): degree bounding, then K noisy vote hops.

        ``labelled``: the fitted nodes' ``(index, labels)``, which vote for their label.

        Returns the Tensor of shape (n, C) of :func:`~skdpgraph.privacy.noisy_neighbour_votes`,
        with noise std :attr:`noise_std` from a fresh ``"noise"`` stream of ``streams``.
        """
        with torch.no_grad():
            return noisy_neighbour_votes(
                self.bounded(adjacency, streams), log_probabilities, self.hops, self.noise_std,
                weight, streams.torch("noise", log_probabilities.device), labelled)

    # ------------------------------------------------------------------ accounting
    @functools.cached_property
    def _pma_curve(self) -> LazyRdpCurve:
        """RDP of the K Gaussians, computed at the orders the order search asks for."""
        return LazyRdpCurve(gaussian_event(self.noise_multiplier, self.hops))

    @property
    def encoder_runs(self) -> int:
        """How many runs of the ``encoder`` plan a fit makes: 1, or K if progressive."""
        return self.hops if self.progressive else 1

    def running_epsilon(self, delta: float, stage: str, steps: int, *, index: int = 0,
                        integer_orders: bool = False, hint: OrderHint | None = None) -> float:
        """Epsilon spent after ``steps`` steps of ``stage`` ("encoder" or "classifier").

        ``index`` numbers the encoder runs of a progressive plan (0..K-1); run ``i``
        starts after ``i`` runs and ``i`` one-hop aggregations. Edge level: the epsilon
        of the aggregations released so far (0 before the first). Node level: the RDP
        composition of everything run so far; ``integer_orders=True`` converts it on the
        integer orders only, a cheaper and slightly looser bound (calibration's first guess);
        a ``hint`` starts the search at the last one's best order (after each epoch).
        """
        if stage not in _STAGES:
            raise ValueError(f"GAPPlan.running_epsilon: stage must be one of {_STAGES}; "
                             f"got {stage!r}.")
        if not 0 <= index < self.encoder_runs:
            raise ValueError(f"GAPPlan.running_epsilon: index must be in [0, "
                             f"{self.encoder_runs}); got {index}.")
        if not self.private:
            return math.inf
        done_runs, hops = ((index, index) if stage == "encoder" else
                           (self.encoder_runs, self.hops))
        if not self.node_level:
            return 0.0 if hops == 0 else gaussian_epsilon(self.noise_multiplier, delta,
                                                          count=hops)
        encoder_steps = done_runs * self.encoder.steps + (steps if stage == "encoder" else 0)
        classifier_steps = steps if stage == "classifier" else 0
        if encoder_steps == classifier_steps == hops == 0:
            return 0.0

        def rdp_at(indices: np.ndarray) -> np.ndarray:
            # The RDP of everything run so far adds up: DP-SGD steps, then Gaussian hops.
            rdp = self._pma_curve.at(indices) * (hops / self.hops)
            if encoder_steps:
                rdp = rdp + encoder_steps * self.encoder.step_rdp_at(indices)
            if classifier_steps:
                rdp = rdp + classifier_steps * self.classifier.step_rdp_at(indices)
            return rdp

        return search_epsilon(rdp_at, delta, integer_orders=integer_orders, hint=hint)

    def epsilon(self, delta: float, *, integer_orders: bool = False,
                hint: OrderHint | None = None) -> float:
        """Epsilon of the whole fit at ``delta`` (``inf`` if not private); see
        :meth:`running_epsilon` for ``integer_orders`` and ``hint``."""
        return self.running_epsilon(delta, "classifier", self.classifier_steps,
                                    integer_orders=integer_orders, hint=hint)

    @property
    def classifier_steps(self) -> int:
        """Steps of the classifier run (0 for the vote head, which has none)."""
        return 0 if self.classifier is None else self.classifier.steps

    def release_epsilon(self, delta: float) -> float:
        """Epsilon of one PMA release (K Gaussians at sigma), exact, at ``delta``."""
        if not self.private:
            return math.inf
        return gaussian_epsilon(self.noise_multiplier, delta, count=self.hops)

    def dp_event(self):
        """The dp-accounting event of the fit (None if not private)."""
        if not self.private:
            return None
        if self.node_level:
            encoder = dataclasses.replace(self.encoder,
                                          steps=self.encoder_runs * self.encoder.steps)
            return gap_node_event(self.noise_multiplier, self.hops, encoder, self.classifier)
        return gaussian_event(self.noise_multiplier, self.hops)

    @property
    def events(self) -> tuple[str, ...]:
        return (str(self.dp_event()),) if self.private else ()

    @property
    def accountant(self) -> str:
        if not self.private:
            return "none"
        if self.vote:
            return ("dp-accounting RDP: encoder DP-SGD (Poisson, add/remove, its own sigma) + "
                    "K Gaussians (the PMA sigma); Balle et al. 2020 conversion")
        if self.node_level and self.progressive:
            return ("dp-accounting RDP: K+1 stage DP-SGD runs (Poisson, add/remove) + K "
                    "one-hop Gaussians, one sigma; Balle et al. 2020 conversion")
        if self.node_level:
            return ("dp-accounting RDP: encoder DP-SGD (Poisson, add/remove) + K Gaussians + "
                    "classifier DP-SGD, one sigma; Balle et al. 2020 conversion")
        return ("exact: K Gaussians = one Gaussian with multiplier sigma/sqrt(K); analytic "
                "Gaussian mechanism (Balle & Wang 2018) via dp-accounting")

    @property
    def mechanism(self) -> str:
        if not self.private:
            return NON_PRIVATE_NOTE
        pma = (f"PMA: {self.hops} hops of sum aggregation over in-neighbours, each + Gaussian "
               f"noise of std sigma*Delta = {self.noise_multiplier:.4g}*{self.sensitivity:.4g}")
        if self.progressive:
            pma = (f"ProGAP: {self.hops + 1} progressive stages; " + pma.replace(
                "hops of", "one-hop aggregations (one per stage, of that stage's embedding) of"))
        if self.vote:
            return (f"encoder {self.encoder.mechanism}; {pma.replace('sum aggregation', 'sums')}"
                    " of the predicted classes, one-hot (each hop on those after the previous "
                    "votes), "
                    "unnormalised; no classifier training: predictions add the votes, "
                    "weight x noisy counts / noise std, to the encoder's log-probabilities")
        if self.node_level:
            return (f"encoder {self.encoder.mechanism}; {pma}; classifier "
                    f"{self.classifier.mechanism}; one sigma={self.noise_multiplier:.4g}")
        return pma + "; encoder and classifier trained without noise on the features and labels"

    # ------------------------------------------------------------------ statements
    @property
    def unit(self) -> str:
        if self.node_level:
            return "node (its features, label and edges)"
        if self.directed:
            return "edge (one directed edge)"
        return "edge (one undirected edge: both directed entries)"

    @property
    def relation(self) -> str:
        if self.node_level:
            return ("add or remove one node with all its edges (node set public: a removed "
                    "node is isolated)")
        return f"add or remove one {'directed' if self.directed else 'undirected'} edge"

    @property
    def _degree_bound(self) -> str:
        bound = f"out-degree is at most max_degree={self.max_degree}"
        if self.max_in_degree is not None:
            bound += f" and in-degree at most max_in_degree={self.max_in_degree}"
        return bound

    def assumptions(self, *, default_delta: bool = False) -> tuple[str, ...]:
        """Conditions of the guarantee (the base class adds label set, hyperparameters, n)."""
        if not self.private:
            return ()
        if not self.node_level:
            out = ("node features and labels are public at edge level: the encoder and the "
                   "classifier are trained on them without noise, and validation_fraction's "
                   "epoch selection uses them; only the edges are protected",)
            if default_delta:
                out += ("delta=None: the default delta 1/(10 P) reads only the public number of "
                        "nodes N: P = N(N-1)/2 possible undirected edges (N(N-1) directed) "
                        "bounds the number of edges of every graph on these nodes, which "
                        "stays protected",)
            return out
        return (
            f"every node's {self._degree_bound} (the degree sampler is then the identity); "
            "on other graphs the guarantee holds for the degree-bounded graph taken as the "
            "input: the sampler is data-dependent (removing a node can change which edges "
            "its neighbours keep)",
            "the node set is public: removing a node is modelled as isolating it (GAP's "
            "Lemma 2); the number of nodes sets the default delta",
        )

    def in_degree_epsilon(self, delta: float, in_degree: int) -> float:
        """Epsilon of the fit for a node of in-degree at most ``in_degree``, own rows counted.

        Without ``max_in_degree`` a node's own rows are outside the sqrt(D) bound; for a node
        of in-degree at most d they move by at most d, so the same noise is the plan with
        ``max_in_degree=d`` (sensitivity sqrt(d² + D)) and the multiplier that gives the
        same noise std, accounted as the whole fit is. With ``max_in_degree`` (or at edge
        level) this is the fit's epsilon.

        Examples
        --------
        >>> plan = plan_gap(epsilon=4.0, delta=1e-5, privacy_level="node", hops=1,
        ...                 directed=False, num_examples=1000, batch_size=100, epochs=2,
        ...                 encoder_epochs=2, max_grad_norm=1.0, max_degree=30)
        >>> bool(plan.in_degree_epsilon(1e-5, 1) < plan.in_degree_epsilon(1e-5, 10))
        True
        """
        if self.own_rows_covered:
            return self.epsilon(delta)
        bounded = dataclasses.replace(self, max_in_degree=int(in_degree))
        return dataclasses.replace(
            bounded, noise_multiplier=self.noise_std / bounded.sensitivity).epsilon(delta)

    def not_covered(self, delta: float) -> tuple[str, ...]:
        """What the guarantee at ``delta`` leaves out: each node's own rows beyond its
        in-degree, with the epsilon of a node at :data:`STATED_IN_DEGREES` (none if covered)."""
        if self.own_rows_covered:
            return ()
        by_degree = ", ".join(f"d={d}: {self.in_degree_epsilon(delta, d):.3g}"
                              for d in STATED_IN_DEGREES)
        release = "vote release" if self.vote else "noisy aggregations"
        return (f"each node's own aggregation rows (the sums over its in-neighbours, whose "
                f"number is not bounded) with respect to that node: the sqrt(D) bound holds "
                f"with them fixed. Counted by in-degree, a node of in-degree at most d is "
                f"protected at epsilon {by_degree} (at delta_; the same noise read with "
                f"max_in_degree=d). The {release} made in fit, and any later release, carry "
                "this guarantee; they are kept in memory for repeated queries and never "
                "pickled (after loading, predict makes a new recorded release). "
                "max_in_degree (default 10) covers every node at epsilon_spent_",)

    @property
    def inference(self) -> str:
        hop0 = ("Hop 0 is each queried node's own embedding, computed from its features in "
                "the clear at predict time.")
        if not self.private:
            return "not private: predict aggregates the queried graph without noise. " + hop0
        cost = (f"a new PMA release with fresh noise (same sigma, epsilon of {self.hops} "
                "Gaussians at delta_), recorded in privacy_.releases")
        fitted = ("predict on the fitted graph (the same object, a copy in the same session, "
                  "or a graph marked with mark_fitted_graph, also after loading) reuses the ")
        own = "" if self.own_rows_covered else (
            "; every release covers each node's own rows by its in-degree only (see not "
            "covered) and is never pickled")
        if self.vote:
            hop0 = ("The queried node's own log-probabilities come from its features in the "
                    "clear at predict time.")
            return (fitted + "vote release made in fit, paid by the training epsilon; on "
                    f"another graph it is {cost}{own}. " + hop0)
        return (fitted + "noisy aggregations computed in fit, at no cost; on another graph it "
                f"is {cost}{own}. " + hop0)

    def release_cost(self, delta: float) -> dict:
        """The record of one PMA release at predict time: epsilon, delta and parameters."""
        cost = {"epsilon": self.release_epsilon(delta), "delta": delta if self.private else 0.0,
                "unit": self.unit, "noise_multiplier": self.noise_multiplier,
                "sensitivity": self.sensitivity, "hops": self.hops}
        if not self.own_rows_covered:
            cost["not_covered"] = ("each queried node's own aggregation rows (its "
                                   "in-neighbourhood), with respect to that node, beyond its "
                                   "in-degree (see not covered)")
        return cost


def plan_gap(*, epsilon: float, delta: float, privacy_level: str, hops: int, directed: bool,
             num_examples: int, batch_size: int, epochs: int, encoder_epochs: int,
             max_grad_norm: float, max_degree: int | None = None,
             max_in_degree: int | None = None, progressive: bool = False,
             vote: bool = False, context: str = "GAP") -> GAPPlan:
    """Plan a GAP fit, calibrating one noise multiplier to ``(epsilon, delta)``.

    Edge level: sigma is the smallest multiplier for which K Gaussians are
    ``(epsilon, delta)``-DP on the exact curve. Node level: one sigma for the encoder
    DP-SGD, the K Gaussians and the classifier DP-SGD, calibrated on their RDP
    composition. Node level with ``vote=True`` (GAP's vote head, no classifier run): the
    encoder's multiplier is calibrated alone to ``VOTE_ENCODER_SHARE * epsilon``, then the
    PMA multiplier so that both compose to ``(epsilon, delta)``. ``epsilon=inf`` gives a
    non-private plan.

    Raises
    ------
    PrivacyBudgetError
        If the budget cannot be met, or (edge level) ``epsilon`` exceeds
        :data:`~skdpgraph.privacy._gaussian.MAX_GAUSSIAN_EPSILON`.

    Examples
    --------
    >>> plan = plan_gap(epsilon=4.0, delta=1e-5, privacy_level="edge", hops=2, directed=False,
    ...                 num_examples=100, batch_size=100, epochs=10, encoder_epochs=10,
    ...                 max_grad_norm=1.0)
    >>> round(plan.epsilon(1e-5), 6), round(plan.sensitivity, 4)
    (4.0, 1.4142)
    """
    node = privacy_level == "node"
    if vote and (not node or math.isinf(epsilon)):
        raise ValueError(f"{context}: the vote head needs privacy_level='node' and a finite "
                         f"epsilon; got privacy_level={privacy_level!r}, epsilon={epsilon:g}.")
    settings = _GAPSettings(privacy_level, int(hops), bool(directed), int(num_examples),
                            int(batch_size), int(epochs), int(encoder_epochs),
                            float(max_grad_norm), max_degree if node else None,
                            max_in_degree if node else None, bool(progressive), bool(vote))
    if node:
        context = (f"{context} (privacy_level='node', hops={hops}, epochs={epochs}, "
                   f"encoder_epochs={encoder_epochs}, delta={delta:.3g})")
    make = _plan_maker(settings, epsilon, delta, context)
    if math.isinf(epsilon):
        return make(None)
    if not node:
        return make(calibrate_gaussian_noise(epsilon, delta, count=hops, context=context))
    return make(_calibrated_node_multiplier(settings, float(epsilon), float(delta), context))


@dataclass(frozen=True)
class _GAPSettings:
    """:func:`plan_gap`'s arguments but the budget: what a plan is made of, hashable."""

    privacy_level: str
    hops: int
    directed: bool
    num_examples: int
    batch_size: int
    epochs: int
    encoder_epochs: int
    max_grad_norm: float
    max_degree: int | None
    max_in_degree: int | None
    progressive: bool
    vote: bool


def _plan_maker(settings: _GAPSettings, epsilon: float, delta: float, context: str):
    """``sigma -> GAPPlan`` for ``settings``: at node level with the vote head, the
    encoder's multiplier is calibrated alone to ``VOTE_ENCODER_SHARE * epsilon`` and
    ``sigma`` is the aggregation's; otherwise ``sigma`` is every mechanism's (node level)
    or the aggregation's (edge level; the DP-SGD runs are then not private)."""
    s = settings
    node = s.privacy_level == "node"
    steps = {"encoder": steps_for_epochs(s.encoder_epochs, s.num_examples, s.batch_size),
             "classifier": steps_for_epochs(s.epochs, s.num_examples, s.batch_size)}
    if s.vote:
        encoder = plan_dpsgd(
            epsilon=VOTE_ENCODER_SHARE * epsilon, delta=delta, sampling="poisson",
            num_examples=s.num_examples, batch_size=s.batch_size, steps=steps["encoder"],
            max_grad_norm=s.max_grad_norm, context=context + " vote-head encoder")

        def make_vote(sigma: float) -> GAPPlan:
            return GAPPlan(s.privacy_level, s.hops, s.directed, sigma, encoder, None,
                           max_degree=s.max_degree, max_in_degree=s.max_in_degree, vote=True)

        return make_vote

    def make(sigma: float | None) -> GAPPlan:
        runs = {stage: plan_dpsgd(
            epsilon=math.inf, delta=delta, sampling="poisson", num_examples=s.num_examples,
            batch_size=s.batch_size, steps=steps[stage], max_grad_norm=s.max_grad_norm,
            noise_multiplier=sigma if node else None) for stage in _STAGES}
        return GAPPlan(s.privacy_level, s.hops, s.directed, sigma, runs["encoder"],
                       runs["classifier"], max_degree=s.max_degree,
                       max_in_degree=s.max_in_degree, progressive=s.progressive)

    return make


@functools.lru_cache(maxsize=256)
def _calibrated_node_multiplier(settings: _GAPSettings, epsilon: float, delta: float,
                                context: str) -> float:
    """The node-level multiplier, calibrated on the RDP composition of the plan's runs.

    Cached, as the DP-SGD multiplier is: cross-validation and searches plan the same fit
    many times. Calibration's evaluations are a sequence of nearby curves, so each order
    search starts at the last one's best order (one hint for the bound on the integer
    orders, one for the grid).
    """
    make_plan = _plan_maker(settings, epsilon, delta, context)
    hint, integer_hint = OrderHint(), OrderHint()
    return calibrate_noise_multiplier(
        lambda sigma: make_plan(sigma).epsilon(delta, hint=hint), epsilon, context=context,
        upper_bound_for=lambda sigma: make_plan(sigma).epsilon(
            delta, integer_orders=True, hint=integer_hint))
