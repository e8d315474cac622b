"""Degree bounding: keep at most ``max_degree`` edges per node, chosen uniformly at random.

Functions take a :class:`~skdpgraph.graph.Graph` or its in-adjacency CSR matrix
(``A[target, source] = 1``) and return a new in-adjacency CSR matrix; inputs are never
modified. Everything is vectorised over the edge list (one sort), no loop over nodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from skdpgraph._docstrings import fill_doc, register_fragments

__all__ = ["bound_in_degree", "bound_out_degree", "bound_star_membership"]

register_fragments(degree_bound_parameters="""
    graph_or_csr : Graph or scipy.sparse matrix of shape (n, n)
        The graph, or its in-adjacency ``A[target, source]``.
    max_degree : int
        The bound, >= 1 (on the out-degree or the in-degree).
    rng : numpy.random.Generator
        Source of the key.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n, n)
        The bounded in-adjacency (float32 ones, sorted indices).""")


def _in_adjacency(graph_or_csr: Any) -> sp.csr_matrix:
    if sp.issparse(graph_or_csr):
        return sp.csr_matrix(graph_or_csr)
    if hasattr(graph_or_csr, "adjacency"):
        return graph_or_csr.adjacency()
    raise TypeError(f"Expected a Graph or a scipy sparse in-adjacency; got "
                    f"{type(graph_or_csr).__name__}.")


def _edge_priorities(target: np.ndarray, source: np.ndarray, num_nodes: int,
                     rng: np.random.Generator) -> np.ndarray:
    """A random priority per directed edge, a function of the pair ``(source, target)`` only.

    The priority of an edge does not depend on which other edges exist (it is a keyed
    hash of the pair: one random 64-bit key from ``rng``, then a 64-bit mixing function),
    so removing a node leaves every other edge's priority unchanged.
    """
    key = rng.integers(0, np.iinfo(np.int64).max, dtype=np.int64, endpoint=True).astype(np.uint64)
    z = source.astype(np.uint64) * np.uint64(num_nodes) + target.astype(np.uint64)
    with np.errstate(over="ignore"):
        for constant in (0xBF58476D1CE4E5B9, 0x94D049BB133111EB):  # two keyed mixing rounds
            z = (z ^ key) * np.uint64(constant)
            z ^= z >> np.uint64(29)
            z = (z + key) * np.uint64(0x9E3779B97F4A7C15)
            z ^= z >> np.uint64(32)
    return z


def _keep_lowest_priorities(groups: np.ndarray, priorities: np.ndarray,
                            max_per_group: int) -> np.ndarray:
    """Boolean mask keeping, in every group, the ``max_per_group`` lowest priorities."""
    order = np.lexsort((priorities, groups))
    sorted_groups = groups[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_groups)) + 1]
    sizes = np.diff(np.r_[starts, sorted_groups.shape[0]])
    rank = np.arange(sorted_groups.shape[0]) - np.repeat(starts, sizes)
    keep = np.zeros(groups.shape[0], dtype=bool)
    keep[order[rank < max_per_group]] = True
    return keep


def _bound_degree(graph_or_csr: Any, max_degree: int, rng: np.random.Generator, *,
                  by: str, name: str) -> sp.csr_matrix:
    if isinstance(max_degree, bool) or int(max_degree) < 1:
        raise ValueError(f"{name}: max_degree must be >= 1; got {max_degree}.")
    adjacency = _in_adjacency(graph_or_csr).tocoo()
    target, source = adjacency.row, adjacency.col
    priorities = _edge_priorities(target, source, adjacency.shape[0], rng)
    keep = _keep_lowest_priorities(source if by == "source" else target, priorities,
                                   int(max_degree))
    bounded = sp.csr_matrix(
        (np.ones(int(keep.sum()), dtype=np.float32), (target[keep], source[keep])),
        shape=adjacency.shape,
    )
    bounded.sort_indices()
    return bounded


@fill_doc
def bound_out_degree(graph_or_csr: Any, max_degree: int,
                     rng: np.random.Generator) -> sp.csr_matrix:
    """Keep at most ``max_degree`` out-edges per source node, chosen at random.

    A node's out-edges are the entries of its *column* in the in-adjacency (the nodes
    it sends messages to). Nodes with out-degree <= ``max_degree`` keep all their edges;
    the others keep a uniformly random subset of exactly ``max_degree``: the edges with
    the lowest priorities, where every edge's priority is a keyed hash of its
    ``(source, target)`` pair under a fresh random key. On an undirected graph the result
    is in general directed (u may keep v while v drops u).

    Parameters
    ----------
    {{degree_bound_parameters}}

    Notes
    -----
    The choice is **data dependent**: removing node v can let one of v's in-neighbours
    keep, in place of its edge to v, an edge it had dropped. Because priorities depend
    on the edge's pair only, each node's kept set changes by at most that one swap (a
    positional random draw would reshuffle every node's choice). A node-level guarantee
    that uses the bound D therefore holds for graphs whose out-degree is already at most
    D (where this function is the identity); on other graphs it holds for the bounded
    graph taken as the input.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skdpgraph._random import RandomStreams
    >>> star = sp.csr_matrix((np.ones(4), ([1, 2, 3, 4], [0, 0, 0, 0])), shape=(5, 5))
    >>> bounded = bound_out_degree(star, 2, RandomStreams(0).numpy("degree"))
    >>> int(bounded.getcol(0).nnz), int(bounded.nnz)
    (2, 2)
    """
    return _bound_degree(graph_or_csr, max_degree, rng, by="source", name="bound_out_degree")


@fill_doc
def bound_in_degree(graph_or_csr: Any, max_degree: int,
                    rng: np.random.Generator) -> sp.csr_matrix:
    """Keep at most ``max_degree`` in-edges per target node, chosen at random.

    The in-edges of a node are the entries of its *row* in the in-adjacency (the nodes
    whose messages it sums). The same sampler as :func:`bound_out_degree`, grouped by
    target: nodes within the bound keep everything, the others keep the ``max_degree``
    in-edges of lowest keyed priority. Node-level GAP with ``max_in_degree`` applies it
    after :func:`bound_out_degree`, so both bounds hold.

    Parameters
    ----------
    {{degree_bound_parameters}}

    Notes
    -----
    Data dependent like :func:`bound_out_degree`: removing node v can let one of v's
    out-neighbours keep another in-edge in place of its edge from v (at most one swap per
    node). Guarantees that use the bound hold for graphs already within it (where this
    function is the identity), or with the bounded graph taken as the input.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skdpgraph._random import RandomStreams
    >>> hub = sp.csr_matrix((np.ones(4), ([0, 0, 0, 0], [1, 2, 3, 4])), shape=(5, 5))
    >>> int(bound_in_degree(hub, 3, RandomStreams(0).numpy("degree")).getrow(0).nnz)
    3
    """
    return _bound_degree(graph_or_csr, max_degree, rng, by="target", name="bound_in_degree")


_STAR_METHODS = ("bernoulli", "greedy")


def bound_star_membership(graph_or_csr: Any, roots: Any, max_degree: int,
                          rng: np.random.Generator, *,
                          method: str = "bernoulli") -> sp.csr_matrix:
    """Keep in-edges of the ``roots`` so that every node feeds at most ``max_degree`` roots.

    The star of a root ``v`` is ``v`` and the in-neighbours whose edge to ``v`` is kept.
    After bounding, every node ``u`` lies in the stars of at most ``max_degree`` roots
    other than its own, which is what FDP's node-level accountant needs (K' = K + 1
    terms per node). Daigavane et al. read edges the other way round and call this the
    in-degree from training nodes; here it is the number of kept entries in ``u``'s
    column, restricted to the roots' rows.

    Parameters
    ----------
    graph_or_csr : Graph or scipy.sparse matrix of shape (n, n)
        The graph, or its in-adjacency ``A[target, source]``.
    roots : array-like of int
        Distinct node ids whose stars are built (the training nodes).
    max_degree : int
        The bound K, >= 1.
    rng : numpy.random.Generator
        Source of randomness.
    method : {"bernoulli", "greedy"}, default="bernoulli"
        ``"bernoulli"`` (the authors' code): a node feeding ``d`` roots keeps each of
        those edges with probability ``K / (2 d)``; if more than K survive it keeps none.
        ``"greedy"``: a node keeps K of its edges to roots, chosen uniformly at random
        (a per-node cap in random edge order).

    Returns
    -------
    scipy.sparse.csr_matrix of shape (len(roots), n)
        Row ``i`` holds the kept in-neighbours of ``roots[i]`` (float32 ones, sorted
        indices). Self-loops are never kept.

    Notes
    -----
    Both methods are data dependent: replacing a node by an isolated node (FDP's
    neighbouring relation, :data:`~skdpgraph.privacy.FDP_RELATION`) removes its edges,
    which changes how many roots its in-neighbours feed and so which of their other
    edges they keep. FDP's node-level guarantee therefore holds with the bounded stars
    taken as the input (the assumption of Daigavane et al.), or for the raw graph where
    every node already feeds at most K roots and ``"greedy"`` is the identity.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> hub = sp.csr_matrix((np.ones(4), ([1, 2, 3, 4], [0, 0, 0, 0])), shape=(5, 5))
    >>> kept = bound_star_membership(hub, [1, 2, 3, 4], 2, np.random.default_rng(0),
    ...                              method="greedy")
    >>> kept.shape, int(kept.getcol(0).nnz)
    ((4, 5), 2)
    """
    if int(max_degree) < 1:
        raise ValueError(f"bound_star_membership: max_degree must be >= 1; got {max_degree}.")
    if method not in _STAR_METHODS:
        raise ValueError(f"bound_star_membership: method must be one of {_STAR_METHODS}; "
                         f"got {method!r}.")
    roots = np.asarray(roots, dtype=np.int64).ravel()
    if np.unique(roots).shape[0] != roots.shape[0]:
        raise ValueError("bound_star_membership: roots must be distinct node ids.")
    rows = _in_adjacency(graph_or_csr)[roots].tocoo()
    row, source = rows.row, rows.col
    not_self = source != roots[row]
    row, source = row[not_self], source[not_self]
    k = int(max_degree)
    if method == "greedy":
        keep = _keep_lowest_priorities(source, rng.random(source.shape[0]), k)
    else:
        feeds = np.bincount(source, minlength=rows.shape[1])
        keep = rng.random(source.shape[0]) <= k / (2.0 * feeds[source])
        survivors = np.bincount(source[keep], minlength=rows.shape[1])
        keep &= survivors[source] <= k
    bounded = sp.csr_matrix(
        (np.ones(int(keep.sum()), dtype=np.float32), (row[keep], source[keep])),
        shape=rows.shape,
    )
    bounded.sort_indices()
    return bounded
