"""Padded subgraph batches: node tables of small subgraphs to dense ``(x, adj, mask)``.

Subgraph methods (DRW's random walks, FDP's stars) describe a batch as a node table of
shape ``(batch, S)``: row ``b`` lists the graph ids of subgraph ``b``, its root in column
0, padded with ``-1``. :func:`pad_subgraphs` turns such a table into the tensors that
:class:`skdpgraph.nn.DenseSubgraphGNN` reads. Everything is vectorised over the CSR
arrays of the graph (no loop over nodes).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

__all__ = ["gather_csr_rows", "subgraph_adjacency", "pad_subgraphs", "SubgraphExamples"]

_EDGES = ("induced", "star")


def gather_csr_rows(indptr: np.ndarray, indices: np.ndarray,
                    rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All CSR entries of ``rows``, concatenated.

    Parameters
    ----------
    indptr, indices : ndarray
        The CSR matrix (for a graph: ``Graph.indptr``, ``Graph.indices``).
    rows : ndarray of int
        The rows read.

    Returns
    -------
    owner : ndarray of shape (n_entries,)
        Position in ``rows`` of the row each entry belongs to.
    columns : ndarray of shape (n_entries,)
        The column index (for the in-adjacency: the in-neighbour) of each entry.

    Examples
    --------
    >>> import numpy as np
    >>> indptr, indices = np.array([0, 2, 3, 3]), np.array([1, 2, 0])
    >>> gather_csr_rows(indptr, indices, np.array([1, 0]))
    (array([0, 1, 1]), array([0, 1, 2]))
    """
    rows = np.asarray(rows, dtype=np.int64)
    start = indptr[rows].astype(np.int64)
    count = indptr[rows + 1].astype(np.int64) - start
    owner = np.repeat(np.arange(rows.shape[0]), count)
    first = np.cumsum(count) - count
    position = np.arange(owner.shape[0]) - first[owner] + start[owner]
    return owner, indices[position].astype(np.int64)


def subgraph_adjacency(indptr: np.ndarray, indices: np.ndarray, table: np.ndarray,
                       edges: str = "induced") -> np.ndarray:
    """Binary adjacency of every subgraph in a padded node table.

    Parameters
    ----------
    indptr, indices : ndarray
        The graph's in-adjacency CSR (row = target, column = source).
    table : ndarray of shape (batch, S)
        Graph ids per subgraph, root first, ``-1`` for padding. Rows may share nodes.
    edges : {"induced", "star"}, default="induced"
        ``"induced"``: every graph edge between two nodes of the same subgraph;
        ``"star"``: the root and each other node exchange messages (no other edges).

    Returns
    -------
    ndarray of shape (batch, S, S), float32
        ``adj[b, i, j] = 1`` when node ``table[b, j]`` sends to ``table[b, i]``.
    """
    if edges not in _EDGES:
        raise ValueError(f"Unknown edges {edges!r}; use one of {_EDGES}.")
    batch, size = table.shape
    adj = np.zeros((batch, size, size), dtype=np.float32)
    valid = table >= 0
    if edges == "star":
        adj[:, 0, 1:] = valid[:, 1:]
        adj[:, 1:, 0] = valid[:, 1:]
        return adj
    slots = np.flatnonzero(valid.ravel())
    members = table.ravel()[slots]
    # Look up (subgraph, node) pairs by one sorted key: b * num_nodes + node.
    num_nodes = np.int64(indptr.shape[0] - 1)
    keys = (slots // size) * num_nodes + members
    order = np.argsort(keys)
    sorted_keys = keys[order]
    owner, sources = gather_csr_rows(indptr, indices, members)
    target_slot = slots[owner]
    query = (target_slot // size) * num_nodes + sources
    found = np.minimum(np.searchsorted(sorted_keys, query), max(len(sorted_keys) - 1, 0))
    hit = sorted_keys[found] == query if len(sorted_keys) else np.zeros(0, dtype=bool)
    source_slot = slots[order[found[hit]]]
    target_slot = target_slot[hit]
    adj[target_slot // size, target_slot % size, source_slot % size] = 1.0
    return adj


def pad_subgraphs(graph, table: np.ndarray, *, edges: str = "induced",
                  device: torch.device | str = "cpu"
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Dense tensors of a batch of subgraphs for :class:`~skdpgraph.nn.DenseSubgraphGNN`.

    Parameters
    ----------
    graph : Graph
        The graph the ids in ``table`` refer to.
    table : ndarray of shape (batch, S)
        Graph ids per subgraph, root in column 0, ``-1`` for padding.
    edges : {"induced", "star"}, default="induced"
        See :func:`subgraph_adjacency`.
    device : torch.device or str, default="cpu"
        Where the tensors are made.

    Returns
    -------
    x : Tensor of shape (batch, S, num_features)
        Features of the members (zeros at padding).
    adj : Tensor of shape (batch, S, S)
        Binary adjacency, ``adj[b, i, j] = 1`` when member ``j`` sends to member ``i``.
    mask : Tensor of shape (batch, S)
        1 for members, 0 for padding.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph import Graph
    >>> g = Graph(np.array([[0, 1, 2], [1, 2, 3]]), np.eye(4))
    >>> x, adj, mask = pad_subgraphs(g, np.array([[1, 0, 2], [3, -1, -1]]))
    >>> adj[0].tolist(), mask.tolist()
    ([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    """
    table = np.asarray(table, dtype=np.int64)
    if table.ndim != 2 or table.shape[1] == 0:
        raise ValueError(f"pad_subgraphs: table must have shape (batch, S) with S >= 1; got "
                         f"shape {table.shape}.")
    valid = table >= 0
    x = np.zeros((*table.shape, graph.num_features), dtype=np.float32)
    x[valid] = graph.features(table[valid])
    adj = subgraph_adjacency(graph.indptr, graph.indices, table, edges)
    return (torch.from_numpy(x).to(device), torch.from_numpy(adj).to(device),
            torch.from_numpy(valid.astype(np.float32)).to(device))


class SubgraphExamples:
    """A DP-SGD example set whose examples are rooted subgraphs (one per labelled root).

    ``batch(index, step)`` returns ``(x, adj, mask, y)`` for the subgraphs ``index`` (see
    :func:`pad_subgraphs`; ``y`` holds the roots' labels). With ``resample_every`` the
    subgraphs are re-drawn with ``draw()`` whenever ``step`` enters a new block of
    ``resample_every`` steps (DRW-D). Every draw must return the same roots in the same
    order, so example ``k`` is always rooted at the same node and the number of examples
    the accountant sees never changes.

    Parameters
    ----------
    graph : Graph
        The graph the subgraphs are drawn from.
    draw : callable
        ``draw()`` returns a node table of shape (num_examples, S), root in column 0.
    labels : Tensor of shape (num_examples,)
        Label of each example's root.
    resample_every : int, optional
        Re-draw the subgraphs every this many steps (None: never).
    edges : {"induced", "star"}, default="induced"
        See :func:`pad_subgraphs`.
    device : torch.device or str, default="cpu"
        Where the batches' tensors are made.
    """

    def __init__(self, graph, draw: Callable[[], np.ndarray], labels: torch.Tensor, *,
                 resample_every: int | None = None, edges: str = "induced",
                 device: torch.device | str = "cpu") -> None:
        self.graph, self.draw, self.edges, self.device = graph, draw, edges, device
        self.labels = labels.to(device)
        self.resample_every = resample_every
        self.table = np.asarray(draw())
        self.roots = self.table[:, 0].copy()
        self.block = 0
        self.draws = 1
        if len(self.table) != len(self.labels):
            raise ValueError(f"SubgraphExamples: {len(self.table)} subgraphs but "
                             f"{len(self.labels)} labels.")

    def __len__(self) -> int:
        return int(self.table.shape[0])

    def _redraw_for(self, step: int) -> None:
        block = step // self.resample_every
        if block == self.block:
            return
        table = np.asarray(self.draw())
        if table.shape[0] != len(self) or not np.array_equal(table[:, 0], self.roots):
            raise RuntimeError("SubgraphExamples: a re-draw changed the roots; the privacy "
                               "accounting assumes a fixed set of examples.")
        self.table, self.block, self.draws = table, block, self.draws + 1

    def batch(self, index: torch.Tensor, step: int) -> tuple[torch.Tensor, ...]:
        if self.resample_every is not None:
            self._redraw_for(step)
        index = index.cpu().numpy()
        x, adj, mask = pad_subgraphs(self.graph, self.table[index], edges=self.edges,
                                     device=self.device)
        return x, adj, mask, self.labels[torch.from_numpy(index).to(self.labels.device)]
