"""GAP's privacy plan: PMA's K Gaussians, alone (edge level) or among DP-SGD runs (node).

A :class:`GAPPlan` fixes, before any private data is read, everything the guarantee of
``GAPClassifier`` and ``ProGAPClassifier`` depends on: the unit, the sensitivity of one
PMA hop, the noise multiplier and the stages (:class:`~skdpgraph.privacy.GAPLayout`:
which DP-SGD runs, after how many hops). It implements the
:class:`~skdpgraph.privacy.PrivacyPlan` protocol and composes three places: the
accounting (:mod:`~skdpgraph.privacy._gap_accounting`), the statements of the report
(:mod:`~skdpgraph.privacy._gap_statements`) and, for the mechanism, the
:class:`~skdpgraph.privacy.PMARelease` built from it.

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
from typing import Callable

import numpy as np

from skdpgraph._docstrings import fill_doc, register_fragments
from skdpgraph.privacy import _gap_statements as statements
from skdpgraph.privacy._accountant import gaussian_event
from skdpgraph.privacy._calibration import calibrate_noise_multiplier
from skdpgraph.privacy._gap_accounting import (GAPLayout, gap_node_event, pma_sensitivity,
                                               trained_head_stages)
from skdpgraph.privacy._gaussian_accounting import calibrate_gaussian_noise, gaussian_epsilon
from skdpgraph.privacy._rdp_orders import LazyRdpCurve, OrderHint, search_epsilon
from skdpgraph.privacy._dpsgd_plan import DPSGDPlan, plan_dpsgd, steps_for_epochs

__all__ = ["GAPPlan", "plan_gap"]

_STAGES = ("encoder", "classifier")


def _run_of(stage: str) -> tuple[str, int]:
    """``("encoder", k)`` for ``"encoder k"``, else ``(stage, 0)``; unknown stages raise."""
    name, _, number = stage.partition(" ")
    if name not in _STAGES or (number and (name != "encoder" or not number.isdigit())):
        raise ValueError(f"GAPPlan.running_epsilon: stage must be one of {_STAGES} or "
                         f"'encoder <k>'; got {stage!r}.")
    return name, int(number or 0)


register_fragments(gap_unit="""
    privacy_level : {"edge", "node"}
        The privacy unit: one edge or one node with its edges.
    hops : int
        K, the number of noisy aggregation hops.
    directed : bool
        Whether the graph is directed (edge level: the unit is then one directed edge).""")


@fill_doc
@dataclass(frozen=True)
class GAPPlan:
    """The privacy plan of one GAP-family fit.

    Parameters
    ----------
    {{gap_unit}}
    noise_multiplier : float or None
        The multiplier sigma: PMA noise std / sensitivity and, at node level, DP-SGD
        noise std / C (for the runs without a budget share of their own). None for a
        non-private plan.
    encoder, classifier : DPSGDPlan
        The planned runs (non-private at edge level); ``classifier`` is None where the
        layout has no classifier stage (the vote head).
    layout : GAPLayout
        The stages: GAP's trained or vote head, or ProGAP's progressive stages.
    max_degree : int or None
        Node level: out-degree bound D.
    max_in_degree : int or None
        Node level: in-degree bound D_in; None leaves in-degree unbounded (and each
        node's own aggregation rows covered according to its in-degree only).
    """

    privacy_level: str
    hops: int
    directed: bool
    noise_multiplier: float | None
    encoder: DPSGDPlan
    classifier: DPSGDPlan | None
    layout: GAPLayout
    max_degree: int | None = None
    max_in_degree: int | None = None

    # ------------------------------------------------------------------ parameters
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

    @property
    def encoder_runs(self) -> int:
        """How many runs of the ``encoder`` plan a fit makes: 1, or K if progressive."""
        return self.layout.encoder_runs

    @property
    def classifier_steps(self) -> int:
        """Steps of the classifier run (0 for the vote head, which has none)."""
        return 0 if self.classifier is None else self.classifier.steps

    # ------------------------------------------------------------------ accounting
    @functools.cached_property
    def _pma_curve(self) -> LazyRdpCurve:
        """RDP of the K Gaussians, computed at the orders the order search asks for."""
        return LazyRdpCurve(gaussian_event(self.noise_multiplier, self.hops))

    def running_epsilon(self, delta: float, stage: str, steps: int, *,
                        hint: OrderHint | None = None, integer_orders: bool = False) -> float:
        """Epsilon spent after ``steps`` steps of ``stage``: "encoder", "classifier" or "encoder k".

        ``"encoder k"`` names the encoder run ``k`` (0..K-1) of a progressive plan
        (``"encoder"`` is run 0); each run starts after the runs and hops the layout puts
        before it. Edge level: the epsilon
        of the aggregations released so far (0 before the first). Node level: the RDP
        composition of everything run so far; ``integer_orders=True`` converts it on the
        integer orders only, a cheaper and slightly looser bound (calibration's first guess);
        a ``hint`` starts the search at the last one's best order (after each epoch).
        """
        stage, index = _run_of(stage)
        if not 0 <= index < self.encoder_runs:
            raise ValueError(f"GAPPlan.running_epsilon: the encoder run index must be in [0, "
                             f"{self.encoder_runs}); got {index}.")
        if not self.private:
            return math.inf
        done_runs, hops = ((index, self.layout.hops_before("encoder", index))
                           if stage == "encoder" else (self.encoder_runs, self.hops))
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

    def release_epsilon(self, delta: float) -> float:
        """Epsilon of one PMA release (K Gaussians at sigma), exact, at ``delta``."""
        if not self.private:
            return math.inf
        return gaussian_epsilon(self.noise_multiplier, delta, count=self.hops)

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

    # ------------------------------------------------------------------ statements
    accountant = property(statements.accountant)
    mechanism = property(statements.mechanism)
    unit = property(statements.unit)
    relation = property(statements.relation)
    inference = property(statements.inference)

    def assumptions(self, *, default_delta: bool = False) -> tuple[str, ...]:
        """Conditions of the guarantee (the base class adds label set, hyperparameters, n)."""
        return statements.assumptions(self, default_delta=default_delta)

    def not_covered(self, delta: float) -> tuple[str, ...]:
        """What the guarantee at ``delta`` leaves out (none if each node's rows are covered)."""
        return statements.not_covered(self, delta)

    def release_cost(self, delta: float) -> dict:
        """The record of one PMA release at predict time: epsilon, delta and parameters."""
        cost = {"epsilon": self.release_epsilon(delta), "delta": delta if self.private else 0.0,
                "unit": self.unit, "noise_multiplier": self.noise_multiplier,
                "sensitivity": self.sensitivity, "hops": self.hops}
        uncovered = statements.release_not_covered(self)
        if uncovered is not None:
            cost["not_covered"] = uncovered
        return cost


@fill_doc
def plan_gap(*, epsilon: float, delta: float, privacy_level: str, hops: int, directed: bool,
             num_examples: int, batch_size: int, epochs: int, encoder_epochs: int,
             max_grad_norm: float, max_degree: int | None = None,
             max_in_degree: int | None = None,
             stages: Callable[[int], GAPLayout] = trained_head_stages,
             context: str = "GAP") -> GAPPlan:
    """Plan a GAP-family fit, calibrating one noise multiplier to ``(epsilon, delta)``.

    Edge level: sigma is the smallest multiplier for which K Gaussians are
    ``(epsilon, delta)``-DP on the exact curve. Node level: one sigma for the DP-SGD runs
    and the K Gaussians, calibrated on their RDP composition; a stage with a budget share
    of its own (GAP's vote head: :func:`~skdpgraph.privacy.vote_head_stages`) is first
    calibrated alone to that share of ``epsilon``, then the PMA multiplier so that both
    compose to ``(epsilon, delta)``. ``stages`` builds the layout from ``hops``
    (:func:`~skdpgraph.privacy.trained_head_stages`, ``vote_head_stages``,
    ``progressive_stages``). ``epsilon=inf`` gives a non-private plan.

    Parameters
    ----------
    {{plan_budget}}
    {{gap_unit}}
    num_examples : int
        Number of training examples (nodes) of the DP-SGD runs.
    batch_size : int
        Expected batch size of the DP-SGD runs.
    epochs : int
        Epochs of the classifier run.
    encoder_epochs : int
        Epochs of each encoder run.
    max_grad_norm : float
        Clipping threshold C of the private DP-SGD runs.
    max_degree : int, default=None
        Node level: out-degree bound D (required there).
    max_in_degree : int, default=None
        Node level: in-degree bound D_in; None leaves in-degree unbounded.
    stages : callable, default=trained_head_stages
        Builds the fit's :class:`~skdpgraph.privacy.GAPLayout` from ``hops``.
    context : str, default="GAP"
        Names the caller in error messages.

    Returns
    -------
    plan : GAPPlan
        The calibrated plan (non-private for ``epsilon=inf``).

    Raises
    ------
    PrivacyBudgetError
        If the budget cannot be met, or (edge level) ``epsilon`` exceeds
        :data:`~skdpgraph.privacy._gaussian_accounting.MAX_GAUSSIAN_EPSILON`.
    ValueError
        If the layout has a budget share of its own (the vote head) at edge level or
        with ``epsilon=inf``.

    Examples
    --------
    >>> plan = plan_gap(epsilon=4.0, delta=1e-5, privacy_level="edge", hops=2, directed=False,
    ...                 num_examples=100, batch_size=100, epochs=10, encoder_epochs=10,
    ...                 max_grad_norm=1.0)
    >>> round(plan.epsilon(1e-5), 6), round(plan.sensitivity, 4)
    (4.0, 1.4142)
    """
    node = privacy_level == "node"
    layout = stages(int(hops))
    if layout.budget_share("encoder") is not None and (not node or math.isinf(epsilon)):
        raise ValueError(f"{context}: the vote head needs unit='node' and a finite "
                         f"epsilon; got unit={privacy_level!r}, epsilon={epsilon:g}.")
    settings = _GAPSettings(privacy_level, int(hops), bool(directed), int(num_examples),
                            int(batch_size), int(epochs), int(encoder_epochs),
                            float(max_grad_norm), max_degree if node else None,
                            max_in_degree if node else None, layout)
    if node:
        context = (f"{context} (unit='node', hops={hops}, epochs={epochs}, "
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
    layout: GAPLayout


def _plan_maker(settings: _GAPSettings, epsilon: float, delta: float, context: str):
    """``sigma -> GAPPlan`` for ``settings``: a run with a budget share of its own is
    calibrated alone to that share of epsilon (once, here); every other run takes
    ``sigma`` at node level and no noise at edge level, and the aggregation takes
    ``sigma``. A run that no stage makes is None."""
    s = settings
    node = s.privacy_level == "node"
    steps = {"encoder": steps_for_epochs(s.encoder_epochs, s.num_examples, s.batch_size),
             "classifier": steps_for_epochs(s.epochs, s.num_examples, s.batch_size)}
    own = {stage: plan_dpsgd(
        epsilon=share * epsilon, delta=delta, sampling="poisson",
        num_examples=s.num_examples, batch_size=s.batch_size, steps=steps[stage],
        max_grad_norm=s.max_grad_norm, context=f"{context} {s.layout.kind}-head {stage}")
        for stage in _STAGES if (share := s.layout.budget_share(stage)) is not None}
    present = {"encoder": True, "classifier": s.layout.has_classifier}

    def run(stage: str, sigma: float | None) -> DPSGDPlan | None:
        if not present[stage] or stage in own:
            return own.get(stage)
        return plan_dpsgd(
            epsilon=math.inf, delta=delta, sampling="poisson", num_examples=s.num_examples,
            batch_size=s.batch_size, steps=steps[stage], max_grad_norm=s.max_grad_norm,
            noise_multiplier=sigma if node else None)

    def make(sigma: float | None) -> GAPPlan:
        runs = {stage: run(stage, sigma) for stage in _STAGES}
        return GAPPlan(s.privacy_level, s.hops, s.directed, sigma, runs["encoder"],
                       runs["classifier"], s.layout, max_degree=s.max_degree,
                       max_in_degree=s.max_in_degree)

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
