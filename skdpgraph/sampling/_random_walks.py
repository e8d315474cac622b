r"""Disjoint random-walk subgraphs (DRW, DRW-R, DRW-D) of Ayle et al. [AHM22]_.

A *disjoint* sampler splits the graph into subgraphs that share no node, each grown from
a root by random walks; every walk step moves to a uniformly chosen *unassigned*
neighbour and stops early when there is none. DRW: one walk of ``walk_length`` steps
(at most ``walk_length + 1`` nodes); DRW-R: ``restarts`` walks from the same root (at
most ``1 + restarts * walk_length`` nodes); DRW-D re-runs DRW every few training steps
(the caller re-draws). Because no node is in two subgraphs, changing one node's features
changes at most one subgraph: the property DP-SGD over subgraphs needs.

The paper grows one subgraph at a time. Here all walks of a round step together: each
walk picks an unassigned neighbour, walks that picked the same node are ordered by a
fresh random priority and the first keeps it; the others pick again among what is still
unassigned. No node is ever claimed twice, and every step is a few vectorised passes
over the CSR entries of the walks' current nodes. Walks follow in-edges (the senders of
messages to the current node); on undirected graphs that is every edge.

References
----------
.. [AHM22] Ayle, Gosch, Schuchardt, Zügner, Günnemann. "Training Differentially Private
   Graph Neural Networks with Random Walk Sampling", 2022, Section 4.2 and Appendix B.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skdpgraph.sampling._subgraphs import gather_csr_rows

__all__ = ["Subgraphs", "disjoint_random_walks", "rooted_random_walks", "max_subgraph_size"]


@dataclass(frozen=True)
class Subgraphs:
    """A padded table of subgraphs: ``nodes[k]`` lists subgraph ``k``, root first, -1 pads.

    Parameters
    ----------
    nodes : ndarray of shape (num_subgraphs, max_size), int64
        The node ids of each subgraph, root first, padded with -1.
    """

    nodes: np.ndarray

    def __len__(self) -> int:
        return int(self.nodes.shape[0])

    @property
    def roots(self) -> np.ndarray:
        return self.nodes[:, 0]

    @property
    def sizes(self) -> np.ndarray:
        return (self.nodes >= 0).sum(axis=1)

    def owner(self, num_nodes: int) -> np.ndarray:
        """Subgraph index of every graph node (-1 for nodes in no subgraph)."""
        owner = np.full(num_nodes, -1, dtype=np.int64)
        rows, cols = np.nonzero(self.nodes >= 0)
        owner[self.nodes[rows, cols]] = rows
        return owner


def max_subgraph_size(walk_length: int, restarts: int = 1) -> int:
    """Largest possible subgraph: ``1 + restarts * walk_length`` nodes.

    Parameters
    ----------
    walk_length : int
        Steps per walk.
    restarts : int, default=1
        Walks per root.

    Returns
    -------
    size : int
        The largest number of nodes of a subgraph.
    """
    return 1 + int(restarts) * int(walk_length)


def _hash_uniform(key: int, *words: np.ndarray) -> np.ndarray:
    """Uniforms in [0, 1) as a fixed function of ``(key, *words)`` (SplitMix64 mixing).

    Counter-based randomness: the value for one tuple of words does not depend on which
    other tuples are drawn in the same call. ``key`` comes from a generator of
    :mod:`skdpgraph._random`.
    """
    z = np.full(np.broadcast(*words).shape, np.uint64(key & 0xFFFFFFFFFFFFFFFF))
    with np.errstate(over="ignore"):
        for word in words:
            z = z ^ np.asarray(word).astype(np.uint64)
            z = z + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def _choose_neighbours(indptr, indices, current, is_free, uniforms):
    """One uniformly random entry per walk among those ``is_free(walk, node)`` accepts.

    ``uniforms`` holds one U[0, 1) draw per walk. Returns the chosen node per walk, -1
    where no neighbour is free.
    """
    owner, neighbour = gather_csr_rows(indptr, indices, current)
    free = is_free(owner, neighbour)
    count = np.bincount(owner, weights=free, minlength=len(current)).astype(np.int64)
    chosen = np.full(len(current), -1, dtype=np.int64)
    has = np.flatnonzero(count > 0)
    if has.size == 0:
        return chosen
    # The k-th free entry of a walk's segment, k uniform in [0, count): rank in a cumsum.
    cumulative = np.cumsum(free)
    degree = indptr[current + 1] - indptr[current]
    before = np.concatenate([[0], cumulative])[np.cumsum(degree) - degree]
    rank = before[has] + np.floor(uniforms[has] * count[has]).astype(np.int64) + 1
    chosen[has] = neighbour[np.searchsorted(cumulative, rank)]
    return chosen


def _walk_disjoint(indptr, indices, table, assigned, walk_length, restarts, rng):
    """Grow every row of ``table`` (roots in column 0, already assigned) in place."""
    rows = np.arange(table.shape[0])
    fill = np.ones(table.shape[0], dtype=np.int64)
    for _ in range(restarts):
        current, alive = table[:, 0].copy(), rows.copy()
        for _ in range(walk_length):
            pending = alive
            alive = []
            while pending.size:
                chosen = _choose_neighbours(indptr, indices, current[pending],
                                            lambda _, v: ~assigned[v], rng.random(pending.size))
                pending = pending[chosen >= 0]
                chosen = chosen[chosen >= 0]
                # Conflicts: the walk with the smallest fresh priority keeps the node.
                order = np.argsort(rng.random(pending.size), kind="stable")
                _, first = np.unique(chosen[order], return_index=True)
                win = np.zeros(pending.size, dtype=bool)
                win[order[first]] = True
                winners, nodes = pending[win], chosen[win]
                assigned[nodes] = True
                table[winners, fill[winners]] = nodes
                fill[winners] += 1
                current[winners] = nodes
                alive.append(winners)
                pending = pending[~win]  # losers choose again among what is left
            alive = np.sort(np.concatenate(alive)) if alive else rows[:0]
            if alive.size == 0:
                break


def disjoint_random_walks(indptr: np.ndarray, indices: np.ndarray, walk_length: int, *,
                          restarts: int = 1, roots: np.ndarray | None = None,
                          generator: np.random.Generator) -> Subgraphs:
    """Split a graph into disjoint random-walk subgraphs (DRW; DRW-R with ``restarts > 1``).

    Parameters
    ----------
    indptr, indices : ndarray
        In-adjacency CSR of the graph (``Graph.indptr``, ``Graph.indices``).
    walk_length : int
        Steps per walk, L >= 1.
    restarts : int, default=1
        Walks per root, R; subgraphs have at most ``1 + R * L`` nodes.
    roots : array of int, optional
        Distinct root nodes, reserved before any walk starts: the result has exactly one
        subgraph per root (in this order), walks never enter another root, and nodes
        no walk reaches are in no subgraph. None (the paper's procedure): every node ends
        in a subgraph; roots are drawn among unassigned nodes in rounds of
        ``ceil(remaining / max_size)``.
    generator : numpy.random.Generator
        The randomness of the roots and the walks.

    Returns
    -------
    Subgraphs
        The disjoint subgraphs, root first.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph._random import RandomStreams
    >>> from skdpgraph.datasets import make_csbm
    >>> g = make_csbm(n_nodes=200, random_state=0).graph
    >>> walks = RandomStreams(0).numpy("walks")
    >>> parts = disjoint_random_walks(g.indptr, g.indices, 4, generator=walks)
    >>> members = parts.nodes[parts.nodes >= 0]
    >>> len(members) == len(np.unique(members)) == 200, int(parts.sizes.max()) <= 5
    (True, True)
    """
    if walk_length < 1 or restarts < 1:
        raise ValueError(f"disjoint_random_walks: walk_length and restarts must be >= 1; got "
                         f"{walk_length} and {restarts}.")
    num_nodes = indptr.shape[0] - 1
    size = max_subgraph_size(walk_length, restarts)
    assigned = np.zeros(num_nodes, dtype=bool)
    if roots is not None:
        roots = np.asarray(roots, dtype=np.int64)
        if len(np.unique(roots)) != len(roots):
            raise ValueError("disjoint_random_walks: roots must be distinct.")
        table = np.full((len(roots), size), -1, dtype=np.int64)
        table[:, 0] = roots
        assigned[roots] = True
        _walk_disjoint(indptr, indices, table, assigned, walk_length, restarts, generator)
        return Subgraphs(table)
    tables = []
    while True:
        remaining = np.flatnonzero(~assigned)
        if remaining.size == 0:
            break
        picked = generator.choice(remaining, math.ceil(remaining.size / size), replace=False)
        table = np.full((len(picked), size), -1, dtype=np.int64)
        table[:, 0] = picked
        assigned[picked] = True
        _walk_disjoint(indptr, indices, table, assigned, walk_length, restarts, generator)
        tables.append(table)
    return Subgraphs(np.concatenate(tables) if tables else np.zeros((0, size), np.int64))


def rooted_random_walks(indptr: np.ndarray, indices: np.ndarray, roots: np.ndarray,
                        walk_length: int, *, restarts: int = 1,
                        generator: np.random.Generator) -> Subgraphs:
    """One random-walk subgraph per root, grown independently (subgraphs may overlap).

    The same walks as :func:`disjoint_random_walks` except that a walk only avoids nodes of
    its own subgraph: used at prediction time, where no privacy argument needs
    disjointness. Roots may repeat. One 64-bit key is drawn from ``generator``; the walks
    are then a fixed function of ``(key, root, restart, step)``, so a root's subgraph does
    not depend on the other roots in the call (predictions on a subset equal those on the
    whole set when the generator starts in the same state, e.g.
    :func:`skdpgraph._random.keyed_generator`).

    Parameters
    ----------
    indptr, indices : ndarray
        In-adjacency CSR of the graph (``Graph.indptr``, ``Graph.indices``).
    roots : array of int
        The root of each subgraph.
    walk_length : int
        Steps per walk.
    restarts : int, default=1
        Walks per root.
    generator : numpy.random.Generator
        The randomness of the walks (one key is drawn from it).

    Returns
    -------
    Subgraphs
        One subgraph per root, in the order of ``roots``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph._random import RandomStreams
    >>> indptr, indices = np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1])  # path 0-1-2
    >>> rooted_random_walks(indptr, indices, np.array([0, 2]), 2,
    ...                     generator=RandomStreams(0).numpy("walks")).nodes
    array([[0, 1, 2],
           [2, 1, 0]])
    """
    key = int(generator.integers(0, 2**64, dtype=np.uint64))
    roots = np.asarray(roots, dtype=np.int64)
    table = np.full((len(roots), max_subgraph_size(walk_length, restarts)), -1, dtype=np.int64)
    table[:, 0] = roots
    fill = np.ones(len(roots), dtype=np.int64)
    rows = np.arange(len(roots))
    for restart in range(restarts):
        current, alive = roots.copy(), rows
        for step in range(walk_length):
            if alive.size == 0:
                break
            members = table[alive]
            chosen = _choose_neighbours(
                indptr, indices, current[alive],
                lambda walk, v: ~(members[walk] == v[:, None]).any(axis=1),
                _hash_uniform(key, restart, step, roots[alive]))
            step = chosen >= 0
            alive, chosen = alive[step], chosen[step]
            table[alive, fill[alive]] = chosen
            fill[alive] += 1
            current[alive] = chosen
    return Subgraphs(table)
