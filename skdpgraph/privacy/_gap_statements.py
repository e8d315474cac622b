"""What a GAP-family fit's privacy report says: unit, relation, accountant, mechanism,
assumptions, what is not covered and what ``predict`` costs, in words.

Each function reads a :class:`~skdpgraph.privacy.GAPPlan` (its public parameters and its
epsilon), so that the docstrings, the user guide and ``privacy_`` say the same thing.
"""

from __future__ import annotations

from typing import Any

from skdpgraph.privacy._report import NON_PRIVATE_NOTE

__all__ = ["STATED_IN_DEGREES", "accountant", "assumptions", "inference", "mechanism",
           "not_covered", "relation", "release_not_covered", "unit"]

#: Node level without ``max_in_degree``: the in-degrees at which ``privacy_.not_covered``
#: states a node's epsilon with its own rows counted (:meth:`GAPPlan.in_degree_epsilon`).
STATED_IN_DEGREES = (1, 5, 10, 30, 100)


def unit(plan: Any) -> str:
    if plan.node_level:
        return "node (its features, label and edges)"
    if plan.directed:
        return "edge (one directed edge)"
    return "edge (one undirected edge: both directed entries)"


def relation(plan: Any) -> str:
    if plan.node_level:
        return ("add or remove one node with all its edges (node set public: a removed "
                "node is isolated)")
    return f"add or remove one {'directed' if plan.directed else 'undirected'} edge"


def accountant(plan: Any) -> str:
    if not plan.private:
        return "none"
    kind = plan.layout.kind
    if kind == "vote":
        return ("dp-accounting RDP: encoder DP-SGD (Poisson, add/remove, its own sigma) + "
                "K Gaussians (the PMA sigma); Balle et al. 2020 conversion")
    if plan.node_level and kind == "progressive":
        return ("dp-accounting RDP: K+1 stage DP-SGD runs (Poisson, add/remove) + K "
                "one-hop Gaussians, one sigma; Balle et al. 2020 conversion")
    if plan.node_level:
        return ("dp-accounting RDP: encoder DP-SGD (Poisson, add/remove) + K Gaussians + "
                "classifier DP-SGD, one sigma; Balle et al. 2020 conversion")
    return ("exact: K Gaussians = one Gaussian with multiplier sigma/sqrt(K); analytic "
            "Gaussian mechanism (Balle & Wang 2018) via dp-accounting")


def mechanism(plan: Any) -> str:
    if not plan.private:
        return NON_PRIVATE_NOTE
    pma = (f"PMA: {plan.hops} hops of sum aggregation over in-neighbours, each + Gaussian "
           f"noise of std sigma*Delta = {plan.noise_multiplier:.4g}*{plan.sensitivity:.4g}")
    kind = plan.layout.kind
    if kind == "progressive":
        pma = (f"ProGAP: {plan.hops + 1} progressive stages; " + pma.replace(
            "hops of", "one-hop aggregations (one per stage, of that stage's embedding) of"))
    if kind == "vote":
        return (f"encoder {plan.encoder.mechanism}; {pma.replace('sum aggregation', 'sums')}"
                " of the predicted classes, one-hot (each hop on those after the previous "
                "votes), "
                "unnormalised; no classifier training: predictions add the votes, "
                "weight x noisy counts / noise std, to the encoder's log-probabilities")
    if plan.node_level:
        return (f"encoder {plan.encoder.mechanism}; {pma}; classifier "
                f"{plan.classifier.mechanism}; one sigma={plan.noise_multiplier:.4g}")
    return pma + "; encoder and classifier trained without noise on the features and labels"


def _degree_bound(plan: Any) -> str:
    bound = f"out-degree is at most max_degree={plan.max_degree}"
    if plan.max_in_degree is not None:
        bound += f" and in-degree at most max_in_degree={plan.max_in_degree}"
    return bound


def assumptions(plan: Any, *, default_delta: bool = False) -> tuple[str, ...]:
    """Conditions of the guarantee (the base class adds label set, hyperparameters, n)."""
    if not plan.private:
        return ()
    if not plan.node_level:
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
        f"every node's {_degree_bound(plan)} (the degree sampler is then the identity); "
        "on other graphs the guarantee holds for the degree-bounded graph taken as the "
        "input: the sampler is data-dependent (removing a node can change which edges "
        "its neighbours keep)",
        "the node set is public: removing a node is modelled as isolating it (GAP's "
        "Lemma 2); the number of nodes sets the default delta",
    )


def not_covered(plan: Any, delta: float) -> tuple[str, ...]:
    """What the guarantee at ``delta`` leaves out: each node's own rows beyond its
    in-degree, with the epsilon of a node at :data:`STATED_IN_DEGREES` (none if covered)."""
    if plan.own_rows_covered:
        return ()
    by_degree = ", ".join(f"d={d}: {plan.in_degree_epsilon(delta, d):.3g}"
                          for d in STATED_IN_DEGREES)
    release = "vote release" if plan.layout.kind == "vote" else "noisy aggregations"
    return (f"each node's own aggregation rows (the sums over its in-neighbours, whose "
            f"number is not bounded) with respect to that node: the sqrt(D) bound holds "
            f"with them fixed. Counted by in-degree, a node of in-degree at most d is "
            f"protected at epsilon {by_degree} (at delta_; the same noise read with "
            f"max_in_degree=d). The {release} made in fit, and any later release, carry "
            "this guarantee; they are kept in memory for repeated queries and never "
            "pickled (after loading, predict makes a new recorded release). "
            "max_in_degree (default 10) covers every node at epsilon_spent_",)


def inference(plan: Any) -> str:
    """What ``predict`` costs: nothing on the fitted graph, a recorded release elsewhere."""
    hop0 = ("Hop 0 is each queried node's own embedding, computed from its features in "
            "the clear at predict time.")
    if not plan.private:
        return "not private: predict aggregates the queried graph without noise. " + hop0
    cost = (f"a new PMA release with fresh noise (same sigma, epsilon of {plan.hops} "
            "Gaussians at delta_), recorded in privacy_.releases")
    fitted = ("predict on the fitted graph (the same object, a copy in the same session, "
              "or a graph marked with mark_fitted_graph, also after loading) reuses the ")
    own = "" if plan.own_rows_covered else (
        "; every release covers each node's own rows by its in-degree only (see not "
        "covered) and is never pickled")
    if plan.layout.kind == "vote":
        hop0 = ("The queried node's own log-probabilities come from its features in the "
                "clear at predict time.")
        return (fitted + "vote release made in fit, paid by the training epsilon; on "
                f"another graph it is {cost}{own}. " + hop0)
    return (fitted + "noisy aggregations computed in fit, at no cost; on another graph it "
            f"is {cost}{own}. " + hop0)


def release_not_covered(plan: Any) -> str | None:
    """The ``not_covered`` entry of one release's record (None if its rows are covered)."""
    if plan.own_rows_covered:
        return None
    return ("each queried node's own aggregation rows (its in-neighbourhood), with respect "
            "to that node, beyond its in-degree (see not covered)")
