"""GAP-family accounting: pure functions of public quantities, and the fit's stages.

The sensitivity of one PMA hop, the dp-accounting event of a node-level fit, and the
stages that GAP's heads and ProGAP compose: which DP-SGD runs a fit makes, in which
order, and how many noisy hops each one follows. Nothing here reads data or draws noise
(the mechanism is :mod:`skdpgraph.privacy._pma`).

The sensitivity of ``A X̄_{k-1}`` (every row of ``X̄_{k-1}`` has norm <= 1): adding or
removing one directed edge, 1; one undirected edge, sqrt(2); one node v of out-degree
<= D, sqrt(D) on the *other* nodes' rows (v's own row, the sum over its in-neighbours,
held fixed, as in [SSBG23]_); and, when the in-degree is bounded by D_in as well,
sqrt(D_in^2 + D) on all rows, v's own included. The removed node is isolated: the node
set is public.

References
----------
.. [SSBG23] Sajadmanesh, Shamsabadi, Bellet, Gatica-Perez. "GAP: Differentially Private
   Graph Neural Networks with Aggregation Perturbation", USENIX Security 2023,
   Algorithm 1, Lemmas 1-2, Theorems 1-4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dp_accounting import dp_event

from skdpgraph._docstrings import fill_doc, register_fragments
from skdpgraph.privacy._accountant import gaussian_event

__all__ = ["GAPLayout", "GAPStage", "VOTE_ENCODER_SHARE", "gap_node_event",
           "pma_sensitivity", "progressive_stages", "trained_head_stages", "vote_head_stages"]

#: Vote head: the share of epsilon the encoder's DP-SGD is calibrated to alone; the PMA
#: Gaussians take the rest of the budget in the RDP composition. Chosen once on the shared
#: graphs (5/8: encoder at epsilon 5 of 8; see "How the defaults were chosen").
VOTE_ENCODER_SHARE = 0.625


@dataclass(frozen=True)
class GAPStage:
    """One DP-SGD run of a GAP-family fit.

    Parameters
    ----------
    run : {"encoder", "classifier"}
        Which planned run it is (its steps and noise).
    hops_before : int
        How many noisy hops are released before it starts.
    budget_share : float or None, default=None
        Calibrated alone to this share of epsilon (its own noise multiplier); None: the
        fit's one multiplier.
    """

    run: str
    hops_before: int
    budget_share: float | None = None


@dataclass(frozen=True)
class GAPLayout:
    """The stages of a GAP-family fit, in order, and the name that states them.

    Parameters
    ----------
    kind : {"trained", "vote", "progressive"}
        The head that the stages make (the report's wording follows it).
    stages : tuple of GAPStage
        The fit's DP-SGD runs, in the order they are made.
    """

    kind: str
    stages: tuple[GAPStage, ...]

    @property
    def encoder_runs(self) -> int:
        """How many runs of the ``encoder`` plan a fit makes."""
        return sum(stage.run == "encoder" for stage in self.stages)

    @property
    def has_classifier(self) -> bool:
        return any(stage.run == "classifier" for stage in self.stages)

    @property
    def stagewise(self) -> bool:
        """Whether the hops are released one per stage (ProGAP) rather than all at once."""
        return self.kind == "progressive"

    def budget_share(self, run: str) -> float | None:
        """The share of epsilon that ``run`` is calibrated to alone (None: the shared sigma)."""
        return next((stage.budget_share for stage in self.stages if stage.run == run), None)

    def hops_before(self, run: str, index: int = 0) -> int:
        """Hops released before run ``index`` of ``run`` starts."""
        return [stage.hops_before for stage in self.stages if stage.run == run][index]


register_fragments(layout_hops_and_returns="""
    hops : int
        K, the number of noisy hops the fit releases.

    Returns
    -------
    layout : GAPLayout
        The fit's stages, in order.""")


@fill_doc
def trained_head_stages(hops: int) -> GAPLayout:
    """Lay out GAP with a trained classifier: encoder, the K hops, then the classifier.

    Parameters
    ----------
    {{layout_hops_and_returns}}
    """
    return GAPLayout("trained", (GAPStage("encoder", 0), GAPStage("classifier", hops)))


@fill_doc
def vote_head_stages(hops: int) -> GAPLayout:
    """Lay out GAP's vote head: the encoder, then the K hops of the vote release.

    The encoder is calibrated alone to :data:`VOTE_ENCODER_SHARE` of epsilon; there is no
    classifier run.

    Parameters
    ----------
    {{layout_hops_and_returns}}
    """
    return GAPLayout("vote", (GAPStage("encoder", 0, budget_share=VOTE_ENCODER_SHARE),))


@fill_doc
def progressive_stages(hops: int) -> GAPLayout:
    """Lay out ProGAP (Sajadmanesh & Gatica-Perez, WSDM 2024): K + 1 stages.

    Stage ``i < K`` comes after ``i`` one-hop releases (runs of the ``encoder`` plan), the
    last one (the ``classifier`` plan) after all K.

    Parameters
    ----------
    {{layout_hops_and_returns}}
    """
    return GAPLayout("progressive", tuple(GAPStage("encoder", index) for index in range(hops))
                     + (GAPStage("classifier", hops),))


def pma_sensitivity(privacy_level: str, *, directed: bool, max_degree: int | None = None,
                    max_in_degree: int | None = None) -> float:
    """Compute the L2 sensitivity of one PMA hop for the privacy unit.

    ``"edge"``: one undirected edge moves two rows by a unit vector each (sqrt(2)); one
    directed edge moves one row (1). ``"node"``: a node of out-degree <= D moves the
    rows of its <= D out-neighbours by a unit vector each (sqrt(D)), its own row held
    fixed; with ``max_in_degree`` D_in its own row (a sum of <= D_in unit vectors) is
    charged too: sqrt(D_in^2 + D).

    Parameters
    ----------
    privacy_level : {"edge", "node"}
        The privacy unit: one edge or one node with its edges.
    directed : bool
        Whether the graph's edges are directed (edge level only).
    max_degree : int, default=None
        D, the bound on a node's out-degree; required at node level.
    max_in_degree : int, default=None
        D_in, the bound on a node's in-degree; None: the node's own row is held fixed.

    Returns
    -------
    sensitivity : float
        The L2 sensitivity of one hop's aggregation.

    Raises
    ------
    ValueError
        If ``privacy_level`` is neither ``"edge"`` nor ``"node"``, or a degree bound is
        below 1.

    Examples
    --------
    >>> pma_sensitivity("edge", directed=False)
    1.4142135623730951
    >>> pma_sensitivity("node", directed=False, max_degree=100)
    10.0
    >>> pma_sensitivity("node", directed=False, max_degree=16, max_in_degree=3)
    5.0
    """
    if privacy_level == "edge":
        return 1.0 if directed else math.sqrt(2.0)
    if privacy_level == "node":
        if max_degree is None or max_degree < 1:
            raise ValueError(
                f"pma_sensitivity: node level needs max_degree >= 1; got {max_degree}.")
        if max_in_degree is None:
            return math.sqrt(max_degree)
        if max_in_degree < 1:
            raise ValueError(f"pma_sensitivity: max_in_degree must be >= 1; got {max_in_degree}.")
        return math.sqrt(max_in_degree ** 2 + max_degree)
    raise ValueError(
        f"pma_sensitivity: privacy_level must be 'edge' or 'node'; got {privacy_level!r}.")


def gap_node_event(noise_multiplier: float, hops: int, encoder_plan,
                   classifier_plan=None) -> dp_event.DpEvent:
    """Build the node-level event of GAP (Sajadmanesh et al. 2023, Theorem 4).

    Encoder DP-SGD, then K Gaussian mechanisms (PMA with std ``noise_multiplier * sqrt(D)``),
    then classifier DP-SGD (None for the untrained vote head), composed adaptively under
    add/remove-one-node. Each :class:`~skdpgraph.privacy.DPSGDPlan` carries its own noise
    multiplier (GAP's trained head uses ``noise_multiplier`` for all three).

    Parameters
    ----------
    noise_multiplier : float
        The PMA noise multiplier: each hop's noise std over its sensitivity.
    hops : int
        K, the number of PMA hops.
    encoder_plan : DPSGDPlan
        The encoder's DP-SGD plan (Poisson sampling, with a noise multiplier).
    classifier_plan : DPSGDPlan, default=None
        The classifier's DP-SGD plan; None for the untrained vote head.

    Returns
    -------
    event : dp_accounting.dp_event.DpEvent
        The composed event, for a dp-accounting accountant.

    Raises
    ------
    ValueError
        If a DP-SGD plan does not use Poisson sampling with a noise multiplier.
    """
    runs = [plan for plan in (encoder_plan, classifier_plan) if plan is not None]
    for plan in runs:
        if plan.noise_multiplier is None or plan.sampling != "poisson":
            raise ValueError("gap_node_event: the DP-SGD plans must use Poisson sampling and "
                             "a noise multiplier.")
    pma = gaussian_event(noise_multiplier, hops)
    if classifier_plan is None:
        return dp_event.ComposedDpEvent([encoder_plan.dp_event(), pma])
    if (encoder_plan.sample_rate == classifier_plan.sample_rate
            and encoder_plan.noise_multiplier == classifier_plan.noise_multiplier):
        # Same sampled-Gaussian step in both runs: one run of T_enc + T_cls steps has the
        # same RDP, and the accountant evaluates the step once (calibration is 2x faster).
        training = encoder_plan.dp_event(encoder_plan.steps + classifier_plan.steps)
        return dp_event.ComposedDpEvent([training, pma])
    return dp_event.ComposedDpEvent([encoder_plan.dp_event(), pma, classifier_plan.dp_event()])
