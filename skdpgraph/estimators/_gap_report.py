"""The privacy records of GAPClassifier: the training release and later PMA releases."""

from __future__ import annotations

import math

from skdpgraph.estimators._base import HISTORY_NOT_COVERED
from skdpgraph.privacy import (
    NON_PRIVATE_NOTE, PrivacyReport, gap_node_event, gaussian_epsilon, gaussian_event,
)

__all__ = ["gap_report", "gap_release"]

_NODE_ASSUMPTIONS = (
    "every node's out-degree is at most max_degree={D} (then the random out-degree bounding "
    "is the identity); on other graphs the guarantee holds for the bounded graph taken as input",
    "the node set is public: removing a node is modelled as isolating it (GAP's Lemma 2)",
    "hyperparameters (hops, max_degree, epochs, lr, batch_size...) are public choices",
)
_NODE_OWN_ROW = (
    "a node's own cached aggregation row and its own prediction, with respect to that node "
    "(they are functions of its own edges and features); the model and every other node's "
    "rows are covered"
)


def _units(est, graph) -> tuple[str, str]:
    if est.privacy_level == "node":
        return ("node (its features, label and edges)",
                "add or remove one node with all its edges")
    if graph.directed:
        return "edge (one directed edge)", "add or remove one directed edge"
    return ("edge (one undirected edge: both directed entries)",
            "add or remove one undirected edge")


def gap_report(est, encoder_plan, classifier_plan, epsilon: float, graph) -> PrivacyReport:
    """The record of a fit; ``epsilon`` is the accountant's bound for the whole pipeline."""
    unit, relation = _units(est, graph)
    sigma, hops, private = est.noise_multiplier_, est.hops, math.isfinite(epsilon)
    pma = (f"PMA: {hops} hops, Gaussian noise std sigma*Delta = {sigma:.4g}*{est.sensitivity_:.4g}"
           if private else "")
    node = est.privacy_level == "node"
    if not private:
        accountant, mechanism, event = "none", NON_PRIVATE_NOTE, None
    elif node:
        event = gap_node_event(sigma, hops, encoder_plan, classifier_plan)
        accountant = ("dp-accounting RDP: encoder DP-SGD + K Gaussians + classifier DP-SGD, "
                      "one sigma, Balle et al. 2020 conversion")
        mechanism = (f"encoder DP-SGD ({encoder_plan.steps} Poisson steps, q="
                     f"{encoder_plan.sample_rate:.4g}, C={encoder_plan.max_grad_norm:g}); {pma}; "
                     f"classifier DP-SGD ({classifier_plan.steps} steps); sigma={sigma:.4g}")
    else:
        event = gaussian_event(sigma, hops)
        accountant = ("exact: K Gaussians = one Gaussian with multiplier sigma/sqrt(K); analytic "
                      "Gaussian mechanism (Balle & Wang 2018) via dp-accounting")
        mechanism = pma + "; encoder and classifier trained without noise (edges unused)"
    return PrivacyReport(
        estimator="GAPClassifier", unit=unit, neighbouring_relation=relation, epsilon=epsilon,
        delta=est.delta_ if private else 0.0, accountant=accountant, mechanism=mechanism,
        events=(str(event),) if event is not None else (),
        inference=("predict on the fitted graph reuses the cached noisy aggregations (no cost); "
                   "on another graph it is a new PMA release, added to privacy_.releases"),
        assumptions=tuple(a.format(D=est.max_degree) for a in _NODE_ASSUMPTIONS) if node else (),
        not_covered=(HISTORY_NOT_COVERED,) + ((_NODE_OWN_ROW,) if node and private else ()),
        dp_event=event,
    )


def gap_release(est, graph) -> PrivacyReport:
    """``privacy_`` with one more PMA release on ``graph`` (a new graph at predict time)."""
    unit, _ = _units(est, graph)
    sigma, previous = est.noise_multiplier_, est.privacy_
    if sigma is None:
        epsilon = math.inf
    else:  # the PMA part alone: K Gaussians, exact curve, at the fit's delta
        epsilon = gaussian_epsilon(sigma, est.delta_, count=est.hops)
    return previous.with_release(
        kind="PMA on a new graph", graph_uid=graph.uid, num_nodes=graph.num_nodes, unit=unit,
        epsilon=epsilon, delta=est.delta_ if sigma is not None else 0.0,
        noise_multiplier=sigma, hops=est.hops,
    )
