"""Stars: one training example per root, the root and its kept in-neighbours, padded.

A star is stored as a row of node ids, the root first, then at most ``size - 1`` kept
in-neighbours, then ``-1`` padding. Features are gathered per batch, so the star set
costs ``len(roots) * size`` integers however wide the features are.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from skdpgraph.graph import Graph
from skdpgraph.sampling._degree import bound_star_membership

__all__ = ["StarExamples", "star_members", "star_rows", "star_tensors"]

PAD = -1


def star_members(kept: sp.csr_matrix, roots: np.ndarray, size: int,
                 rng: np.random.Generator) -> np.ndarray:
    """Node ids of each star: the root, then up to ``size - 1`` of its kept in-neighbours.

    Parameters
    ----------
    kept : scipy.sparse.csr_matrix of shape (len(roots), n)
        Row ``i``: the kept in-neighbours of ``roots[i]`` (e.g. from
        :func:`~skdpgraph.sampling.bound_star_membership`).
    roots : array-like of int
        The root of each row.
    size : int
        Star size S >= 1 (FDP: K + 1). A root with more kept neighbours keeps a uniformly
        random ``S - 1`` of them; dropping edges never breaks the degree bound.
    rng : numpy.random.Generator
        The randomness of the choice of neighbours.

    Returns
    -------
    ndarray of shape (len(roots), size), int64
        ``[root, neighbours..., -1, ...]``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> kept = sp.csr_matrix(np.array([[0, 1, 1, 0], [1, 0, 0, 0]], dtype=np.float32))
    >>> members = star_members(kept, np.array([0, 1]), 3, np.random.default_rng(0))
    >>> sorted(members[0, 1:].tolist()), members[1].tolist()
    ([1, 2], [1, 0, -1])
    """
    kept = sp.csr_matrix(kept)
    roots = np.asarray(roots, dtype=np.int64).ravel()
    if kept.shape[0] != roots.shape[0]:
        raise ValueError(f"star_members: kept has {kept.shape[0]} rows for {roots.shape[0]} roots.")
    if int(size) < 1:
        raise ValueError(f"star_members: size must be >= 1; got {size}.")
    row = np.repeat(np.arange(kept.shape[0]), np.diff(kept.indptr))
    neighbour = kept.indices.astype(np.int64)
    # Rank each neighbour within its row in a random order; keep ranks < size - 1.
    order = np.lexsort((rng.random(row.shape[0]), row))
    starts = kept.indptr[:-1]
    rank = np.empty(row.shape[0], dtype=np.int64)
    rank[order] = np.arange(row.shape[0]) - starts[row[order]]
    keep = rank < int(size) - 1
    members = np.full((roots.shape[0], int(size)), PAD, dtype=np.int64)
    members[:, 0] = roots
    members[row[keep], 1 + rank[keep]] = neighbour[keep]
    return members


def star_rows(graph: Graph, roots: np.ndarray, max_degree: int, rng: np.random.Generator, *,
              method: str = "bernoulli") -> sp.csr_matrix:
    """Degree-bounded stars as rows: at most K kept in-neighbours per root.

    Each node is in at most K rows. :func:`~skdpgraph.sampling.bound_star_membership`
    caps how many roots each node feeds, then :func:`star_members` keeps at most ``K``
    neighbours per root. Both are data dependent (see their Notes).

    Parameters
    ----------
    graph : Graph
        The graph.
    roots : array-like of int
        Distinct root ids (all nodes of the graph for FDP's private inference).
    max_degree : int
        K, >= 1.
    rng : numpy.random.Generator
        The degree-sampling stream.
    method : {"bernoulli", "greedy"}, default="bernoulli"
        How :func:`~skdpgraph.sampling.bound_star_membership` bounds the memberships.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (len(roots), graph.num_nodes)
        Row ``i``: the kept in-neighbours of ``roots[i]`` (float32 ones, self excluded).

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph import Graph
    >>> hub = Graph([[1, 2, 3, 4], [0, 0, 0, 0]], np.eye(5), directed=True)
    >>> rows = star_rows(hub, np.arange(5), 2, np.random.default_rng(0), method="greedy")
    >>> int(rows[0].nnz), int(rows.getnnz(axis=0).max())
    (2, 1)
    """
    k = int(max_degree)
    roots = np.asarray(roots, dtype=np.int64).ravel()
    kept = bound_star_membership(graph, roots, k, rng, method=method)
    neighbours = star_members(kept, roots, k + 1, rng)[:, 1:]
    real = neighbours != PAD
    rows = sp.csr_matrix((np.ones(int(real.sum()), dtype=np.float32),
                          (np.nonzero(real)[0], neighbours[real])),
                         shape=(roots.shape[0], kept.shape[1]))
    rows.sort_indices()
    return rows


def star_tensors(graph: Graph, members: np.ndarray,
                 device: torch.device | str = "cpu") -> tuple[torch.Tensor, ...]:
    """Dense ``(x, adj, mask)`` of a batch of stars for :class:`~skdpgraph.nn.DenseSubgraphGNN`.

    ``x`` (B, S, F) holds the members' features (zeros for padding), ``adj`` (B, S, S) has
    ``adj[b, 0, j] = 1`` for every real neighbour ``j`` (they send to the root; only the
    root's output is used), ``mask`` (B, S) marks real nodes.

    Parameters
    ----------
    graph : Graph
        The graph the ids in ``members`` refer to.
    members : ndarray of shape (B, S)
        From :func:`star_members`.
    device : torch.device or str, default="cpu"
        Where the tensors are made.

    Returns
    -------
    x, adj, mask : Tensor
        The features, adjacency and mask of the batch.
    """
    members = np.asarray(members)
    mask = members != PAD
    x = np.zeros((*members.shape, graph.num_features), dtype=np.float32)
    x[mask] = graph.features(members[mask])
    adj = np.zeros((*members.shape, members.shape[1]), dtype=np.float32)
    adj[:, 0, 1:] = mask[:, 1:]
    return (torch.from_numpy(x).to(device), torch.from_numpy(adj).to(device),
            torch.from_numpy(mask.astype(np.float32)).to(device))


class StarExamples:
    """The training set of stars for ``train_dpsgd``: one star (and its root's label) each.

    Features are read from ``graph`` batch by batch; the set lives only during ``fit``.

    Parameters
    ----------
    graph : Graph
        The graph the stars are drawn from.
    members : ndarray of shape (n_stars, S)
        From :func:`star_members`.
    labels : ndarray of shape (n_stars,)
        Encoded label of each root.
    device : torch.device or str
        Where the batches' tensors are made.
    """

    def __init__(self, graph: Graph, members: np.ndarray, labels: np.ndarray,
                 device: torch.device | str = "cpu") -> None:
        if members.shape[0] != labels.shape[0]:
            raise ValueError("StarExamples: one label per star is required.")
        self.graph = graph
        self.members = members
        self.labels = torch.as_tensor(labels, dtype=torch.long)
        self.device = device

    def __len__(self) -> int:
        return int(self.members.shape[0])

    def batch(self, index: torch.Tensor, step: int) -> tuple[torch.Tensor, ...]:
        index = index.cpu()
        x, adj, mask = star_tensors(self.graph, self.members[index.numpy()], self.device)
        return x, adj, mask, self.labels[index].to(self.device)
