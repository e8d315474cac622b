"""The neighbour-vote release: each node's weighted sum of its neighbours' class rows, plus noise.

At edge level the node features and labels are public and one edge is the unit. Given a
public row ``R_u`` for every node ``u`` (a class-probability vector or a one-hot label:
non-negative, L1 norm at most 1) and a public set of *receivers* (the nodes whose sums
are used), the mechanism releases, for every node at once,

.. math::

    \\tilde S_v = \\sum_{u \\in N(v)} w_{vu} R_u + \\mathrm{Lap}(b)^{C},
    \\qquad b = \\Delta_1 / \\varepsilon,

where ``N(v)`` are ``v``'s in-neighbours. The weights split each edge between its two end
points so that together they carry at most one row: ``w_vu = 0`` if ``v`` is not a
receiver; otherwise ``1/2`` if ``u`` is a receiver too, and ``1`` if it is not (the edge
then only feeds ``v``'s sum). On a directed graph ``w_vu`` is 1 for a receiver ``v``.
Adding or removing one edge ``(u, v)`` changes ``S_v`` by ``w_vu R_u`` and ``S_u`` by
``w_uv R_v`` and no other sum, and ``w_vu + w_uv <= 1``, so the L1 sensitivity of the
whole release is ``Delta_1 = 1``. The Laplace mechanism is then ``epsilon``-DP (pure, at
every delta), accounted as dp-accounting's ``LaplaceDpEvent`` of multiplier
``b / Delta_1`` (:func:`~skdpgraph.privacy.pure_epsilon`). The rows and the receivers
must not depend on the edges (they come from the public features and labels and the
choice of training nodes), which the caller guarantees.

With every node a receiver this is the plain sum of all neighbours' rows, halved. With
the training nodes whose labels vote left out of the receivers, an edge from such a node
to any other feeds the other's sum in full: the sums that are used carry those labels at
twice the signal for the same noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from skdpgraph.graph import Graph
from skdpgraph.privacy._accountant import laplace_event, pure_epsilon
from skdpgraph.privacy._rdp_orders import OrderHint

__all__ = ["NeighbourVotePlan", "neighbour_vote_sums", "plan_neighbour_votes",
           "release_neighbour_votes", "vote_weights"]

#: Slack on the rows' L1 norms (float rounding of probability vectors).
_ROW_TOLERANCE = 1e-6


@dataclass(frozen=True)
class NeighbourVotePlan:
    """The privacy plan of one neighbour-vote release (pure edge-level DP).

    Implements :class:`~skdpgraph.privacy.PrivacyPlan`; build it with
    :func:`plan_neighbour_votes`.

    Parameters
    ----------
    num_classes : int
        Coordinates of every released sum.
    directed : bool
        Whether the graph is directed: the unit is then one directed edge.
    scale : float or None
        The Laplace scale per coordinate; None for a non-private plan (no noise).

    Examples
    --------
    >>> plan = plan_neighbour_votes(epsilon=4.0, num_classes=3, directed=False)
    >>> plan.sensitivity, plan.scale, plan.epsilon(0.0)
    (1.0, 0.25, 4.0)
    """

    num_classes: int
    directed: bool
    scale: float | None

    @property
    def private(self) -> bool:
        return self.scale is not None

    @property
    def sensitivity(self) -> float:
        """The L1 sensitivity of the whole release: 1 (:func:`vote_weights` split each edge)."""
        return 1.0

    @property
    def noise_multiplier(self) -> float | None:
        """The Laplace scale over the L1 sensitivity (None if not private)."""
        return None if self.scale is None else self.scale / self.sensitivity

    @property
    def unit(self) -> str:
        edge = "one directed edge" if self.directed else "one undirected edge"
        return f"{edge}; node features and labels are public"

    @property
    def relation(self) -> str:
        return f"add or remove one {'directed' if self.directed else 'undirected'} edge"

    @property
    def accountant(self) -> str:
        return ("pure DP of the Laplace mechanism: epsilon = L1 sensitivity / scale, "
                "dp-accounting's LaplaceDpEvent (delta = 0; it holds at every delta)")

    @property
    def mechanism(self) -> str:
        if not self.private:
            return "one release of neighbour class-vote sums, without noise (not private)"
        return (f"Laplace, scale {self.scale:.4g} per coordinate (L1 sensitivity "
                f"{self.sensitivity:g}: each edge's two contributions carry one row at most), "
                f"one release of weighted neighbour class-vote sums over {self.num_classes} "
                "classes")

    @property
    def events(self) -> tuple[str, ...]:
        if not self.private:
            return ()
        return (f"Laplace mechanism, noise multiplier {self.noise_multiplier:.4g} "
                f"(scale / L1 sensitivity), epsilon {self.epsilon(0.0):.4g}",)

    def dp_event(self):
        """dp-accounting's ``LaplaceDpEvent`` of the release (None if not private)."""
        return laplace_event(self.noise_multiplier) if self.private else None

    def epsilon(self, delta: float = 0.0) -> float:
        """The release's epsilon: pure DP, the same at every ``delta`` (inf if not private)."""
        return pure_epsilon(self.dp_event()) if self.private else math.inf

    def running_epsilon(self, delta: float, stage: str, steps: int = 0, *,
                        hint: OrderHint | None = None, integer_orders: bool = False) -> float:
        """The whole :meth:`epsilon`: the one release is the whole cost.

        Examples
        --------
        >>> plan_neighbour_votes(epsilon=2.0, num_classes=3, directed=True).running_epsilon(
        ...     0.0, "classifier")
        2.0
        """
        return self.epsilon(delta)

    def assumptions(self) -> tuple[str, ...]:
        """Conditions of the guarantee (the base class adds the label set and hyperparameters)."""
        if not self.private:
            return ()
        return ("the node features, the labels and the node set are public; the edges are "
                "the only protected input",
                "the released rows (stage-1 class probabilities from the public features, "
                "one-hot labels of the training nodes) and the receivers (the nodes whose "
                "sums are used: all but the training nodes whose labels vote) do not "
                "depend on the edges",
                "the release covers every node of the fitted graph at once: one release, "
                "whatever the queried nodes")

    def release_cost(self, delta: float) -> dict:
        """The record of one release at predict time: epsilon, delta and parameters."""
        return {"epsilon": self.epsilon(delta), "delta": 0.0, "unit": self.unit,
                "noise": "laplace", "noise_multiplier": self.noise_multiplier,
                "scale": self.scale, "sensitivity": self.sensitivity}


def plan_neighbour_votes(epsilon: float, num_classes: int, directed: bool) -> NeighbourVotePlan:
    """Plan one neighbour-vote release at ``epsilon``: Laplace scale = sensitivity / epsilon.

    Parameters
    ----------
    epsilon : float
        The budget, in ``(0, inf]``; ``inf``: no noise (a non-private plan).
    num_classes : int
        Coordinates of every released sum.
    directed : bool
        Whether the graph is directed (the unit is then one directed edge; the L1
        sensitivity is 1 either way).

    Returns
    -------
    plan : NeighbourVotePlan
        Its scale is ``sensitivity / epsilon`` (None for ``epsilon=inf``).

    Raises
    ------
    ValueError
        If ``epsilon`` is not positive.

    Examples
    --------
    >>> plan_neighbour_votes(epsilon=float("inf"), num_classes=2, directed=False).private
    False
    """
    epsilon = float(epsilon)
    if not epsilon > 0:
        raise ValueError(f"plan_neighbour_votes: epsilon must be positive; got {epsilon}.")
    plan = NeighbourVotePlan(int(num_classes), bool(directed), None)
    return plan if math.isinf(epsilon) else NeighbourVotePlan(
        plan.num_classes, plan.directed, plan.sensitivity / epsilon)


def vote_weights(graph: Graph, receivers: np.ndarray | None = None) -> sp.csr_matrix:
    """The weights ``W[v, u]`` of ``u``'s row in ``v``'s sum (see the module's formula).

    Parameters
    ----------
    graph : Graph
        The private graph.
    receivers : array-like of bool, shape (num_nodes,), default=None
        The nodes whose sums are used (public); None: every node.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (num_nodes, num_nodes)
        Non-zero only on edges; for every undirected edge ``W[v, u] + W[u, v] <= 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph import Graph
    >>> g = Graph([[0, 1], [1, 2]], np.eye(3))
    >>> vote_weights(g, np.array([False, True, True])).toarray().tolist()
    [[0.0, 0.0, 0.0], [1.0, 0.0, 0.5], [0.0, 0.5, 0.0]]
    """
    n = graph.num_nodes
    receivers = np.ones(n, bool) if receivers is None else np.asarray(receivers, dtype=bool)
    if receivers.shape != (n,):
        raise ValueError(f"vote_weights: receivers must have shape (num_nodes={n},); got "
                         f"{receivers.shape}.")
    edges = graph.adjacency().tocoo()
    target, source = edges.row, edges.col
    if graph.directed:
        weights = receivers[target].astype(np.float64)
    else:
        weights = np.where(receivers[target], np.where(receivers[source], 0.5, 1.0), 0.0)
    return sp.csr_matrix((weights, (target, source)), shape=(n, n))


def neighbour_vote_sums(graph: Graph, rows: np.ndarray,
                        receivers: np.ndarray | None = None) -> np.ndarray:
    """Every node's weighted sum of its in-neighbours' ``rows``, without noise (float64).

    Parameters
    ----------
    graph : Graph
        The private graph.
    rows : ndarray of shape (num_nodes, C)
        Non-negative rows with L1 norm at most 1 (checked: the sensitivity depends on it).
    receivers : array-like of bool, shape (num_nodes,), default=None
        The nodes whose sums are used (:func:`vote_weights`); None: every node.

    Returns
    -------
    sums : ndarray of shape (num_nodes, C)
        Row ``v``: the sum of ``rows`` over ``v``'s in-neighbours, weighted by
        :func:`vote_weights`.

    Raises
    ------
    ValueError
        If ``rows`` has the wrong number of rows, a negative or non-finite entry, or a row
        of L1 norm above 1.
    """
    rows = np.asarray(rows, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[0] != graph.num_nodes:
        raise ValueError(f"neighbour_vote_sums: rows must have shape (num_nodes={graph.num_nodes}"
                         f", C); got {rows.shape}.")
    if not np.isfinite(rows).all() or (rows < 0).any() or (
            rows.sum(axis=1) > 1 + _ROW_TOLERANCE).any():
        raise ValueError("neighbour_vote_sums: every row must be non-negative with L1 norm at "
                         "most 1 (a probability vector or a one-hot label); the sensitivity "
                         "depends on it.")
    return np.asarray(vote_weights(graph, receivers) @ rows)


def release_neighbour_votes(graph: Graph, rows: np.ndarray, plan: NeighbourVotePlan,
                            generator: np.random.Generator,
                            receivers: np.ndarray | None = None) -> np.ndarray:
    """Release every node's noisy neighbour-vote sum (the Laplace mechanism above).

    Parameters
    ----------
    graph : Graph
        The private graph; its direction must be the plan's.
    rows : ndarray of shape (num_nodes, C)
        The public rows (:func:`neighbour_vote_sums`), ``C = plan.num_classes``.
    plan : NeighbourVotePlan
        The checked plan: its scale (none if not private).
    generator : numpy.random.Generator
        The noise's stream (a fresh one for every release, from
        :class:`~skdpgraph._random.RandomStreams`).
    receivers : array-like of bool, shape (num_nodes,), default=None
        The nodes whose sums are used, chosen from public data (:func:`vote_weights`);
        None: every node.

    Returns
    -------
    sums : ndarray of shape (num_nodes, C)
        The noisy sums (the noise-free sums for a non-private plan).

    Raises
    ------
    ValueError
        If the graph's direction or the rows' width differ from the plan's.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph import Graph
    >>> from skdpgraph._random import RandomStreams
    >>> g = Graph([[0, 1], [1, 2]], np.eye(3))
    >>> plan = plan_neighbour_votes(epsilon=float("inf"), num_classes=2, directed=False)
    >>> release_neighbour_votes(g, np.array([[1, 0], [0, 1], [1, 0]]), plan,
    ...                         RandomStreams(0).numpy("noise")).tolist()
    [[0.0, 0.5], [1.0, 0.0], [0.0, 0.5]]
    """
    if graph.directed != plan.directed:
        raise ValueError(f"release_neighbour_votes: the graph is "
                         f"{'directed' if graph.directed else 'undirected'} but the plan's "
                         f"sensitivity is for a {'directed' if plan.directed else 'undirected'} "
                         "graph.")
    if np.shape(rows)[-1] != plan.num_classes:
        raise ValueError(f"release_neighbour_votes: rows have {np.shape(rows)[-1]} columns; "
                         f"the plan releases {plan.num_classes}.")
    sums = neighbour_vote_sums(graph, rows, receivers)
    if not plan.private:
        return sums
    return sums + generator.laplace(0.0, plan.scale, size=sums.shape)
