"""Packed batches of whole graphs, and the DP-SGD example set whose examples are graphs.

Every graph of a collection is flattened once into node and edge arrays; a batch of
graphs then becomes ``(x, edge_index, sizes)`` (see :mod:`skdpgraph.nn._graph_gnn`) by
vectorised gathers, the graphs' nodes packed one graph after another with no padding.
"""

from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np
import torch

from skdpgraph.graph import Graph

__all__ = ["GraphBatches", "GraphExamples", "padded_widths"]


#: Padding allowed in :meth:`GraphBatches.padded`: a block's rows are at most this much
#: more than its nodes.
_PADDING_SLACK = 0.1


class GraphBatches:
    """A collection of graphs, flattened once, that packs any subset into one batch.

    Parameters
    ----------
    graphs : iterable of Graph
        All with the same feature width.
    device : torch.device or str, default="cpu"
        Where :meth:`packed` puts the tensors.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph import Graph
    >>> pair, single = Graph([[0], [1]], np.ones((2, 1))), Graph([[], []], np.ones((1, 1)))
    >>> batches = GraphBatches([pair, single])
    >>> x, edge_index, sizes = batches.packed(np.array([1, 0]))
    >>> tuple(x.shape), edge_index.tolist(), sizes.tolist()
    ((3, 1), [[2, 1], [1, 2]], [1, 2])
    """

    def __init__(self, graphs: Iterable[Graph], device: torch.device | str = "cpu") -> None:
        graphs = list(graphs)
        self.device = device
        self.num_nodes = np.array([g.num_nodes for g in graphs], dtype=np.int64)
        self.node_start = np.cumsum(self.num_nodes) - self.num_nodes
        width = graphs[0].num_features if graphs else 0
        self.features = (np.vstack([g.features() for g in graphs]).astype(np.float32, copy=False)
                         if graphs else np.zeros((0, width), np.float32))
        # In-adjacency entries (target row, source column) of every graph, local node ids.
        entries = [np.diff(g.indptr).astype(np.int64) for g in graphs]
        self.num_entries = np.array([len(g.indices) for g in graphs], dtype=np.int64)
        self.entry_start = np.cumsum(self.num_entries) - self.num_entries
        self.targets = (np.concatenate([np.repeat(np.arange(len(e)), e) for e in entries])
                        if graphs else np.zeros(0, np.int64))
        self.sources = (np.concatenate([g.indices for g in graphs]).astype(np.int64)
                        if graphs else np.zeros(0, np.int64))

    def __len__(self) -> int:
        return len(self.num_nodes)

    def packed(self, index: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(x, edge_index, sizes)`` of the graphs ``index``, packed in that order."""
        index = np.asarray(index, dtype=np.int64)
        return self._pack(index, self.num_nodes[index])[:3]

    def padded(self, index: np.ndarray, slack: float | None = None
               ) -> tuple[torch.Tensor, ...]:
        """``(x, edge_index, sizes, slots)`` of the graphs ``index``, packed in that order
        with each graph's nodes followed by padding rows up to its block's width.

        Graph ``b`` owns ``slots[b]`` rows: its ``sizes[b]`` nodes, then zero rows with no
        edges (:func:`padded_widths` sets the widths, ``slack`` its parameter). Sorted by
        size, a batch then has a few widths, and per-graph gradients take one batched
        product per width, for the cost of the padding rows.
        """
        index = np.asarray(index, dtype=np.int64)
        return self._pack(index, padded_widths(self.num_nodes[index], slack))

    def _pack(self, index: np.ndarray, slots: np.ndarray) -> tuple[torch.Tensor, ...]:
        sizes = self.num_nodes[index]
        owner, local = _positions(sizes)
        first_row = np.cumsum(slots) - slots
        rows = first_row[owner] + local
        x = np.zeros((int(slots.sum()), self.features.shape[1]), np.float32)
        x[rows] = self.features[self.node_start[index][owner] + local]
        edge_owner, edge_local = _positions(self.num_entries[index])
        entry = self.entry_start[index][edge_owner] + edge_local
        offset = first_row[edge_owner]
        edge_index = np.stack([self.sources[entry] + offset, self.targets[entry] + offset])
        return tuple(torch.from_numpy(t).to(self.device) for t in (x, edge_index, sizes, slots))

    def chunks(self, size: int = 256) -> Iterator[tuple[torch.Tensor, ...]]:
        """:meth:`packed` of consecutive runs of ``size`` graphs, in order (for inference)."""
        for start in range(0, len(self), size):
            yield self.packed(np.arange(start, min(start + size, len(self))))


def padded_widths(sizes: np.ndarray, slack: float | None = None) -> np.ndarray:
    """Each graph's row count when consecutive graphs share widths in blocks.

    Parameters
    ----------
    sizes : ndarray of shape (batch,)
        Node counts; in increasing order, the blocks are fewest.
    slack : float, optional
        A block of consecutive graphs takes its largest graph's width while its rows
        stay within ``(1 + slack)`` times its nodes; the next graph starts a new block.
        Default: 0.1.

    Returns
    -------
    slots : ndarray of shape (batch,)
        Each graph's width, at least its size.

    Examples
    --------
    >>> padded_widths(np.array([3, 3, 4, 10, 10]), slack=0.2).tolist()
    [4, 4, 4, 10, 10]
    """
    slack = _PADDING_SLACK if slack is None else slack
    sizes = np.asarray(sizes, dtype=np.int64)
    widths, counts = [], []  # each block's width and graph count
    first, nodes, width = 0, 0, 0
    for b, size in enumerate(sizes.tolist()):
        if b and (b - first + 1) * max(width, size) > (1 + slack) * (nodes + size):
            widths.append(width)
            counts.append(b - first)
            first, nodes, width = b, 0, 0
        nodes, width = nodes + size, max(width, size)
    if len(sizes):
        widths.append(width)
        counts.append(len(sizes) - first)
    return np.repeat(np.array(widths, dtype=np.int64), counts)


def _positions(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ``counts[b]`` items per row ``b``: every item's row and its position in the row."""
    owner = np.repeat(np.arange(len(counts)), counts)
    first = np.cumsum(counts) - counts
    return owner, np.arange(len(owner)) - first[owner]


class GraphExamples:
    """A DP-SGD example set (``train_dpsgd``'s ``ExampleSet``) whose examples are graphs.

    ``batch(index, step)`` returns ``(x, edge_index, sizes, y)`` for the graphs ``index``,
    packed (see :class:`GraphBatches`), or with ``padded=True`` ``(x, edge_index, sizes,
    slots, y)``, sorted by size and padded to a few widths (:meth:`GraphBatches.padded`)
    so that per-graph gradients take a few batched products. One example is one graph
    with its label, the privacy unit of graph-level DP.

    Parameters
    ----------
    graphs : iterable of Graph
        The training graphs, all with the same feature width.
    labels : Tensor of shape (n_graphs,)
        The encoded label of each graph, in the order of ``graphs``.
    device : torch.device or str, default="cpu"
        Where the batches' tensors and the labels are put.
    padded : bool, default=False
        Whether batches are padded to a few widths, for per-graph gradients.
    """

    def __init__(self, graphs: Iterable[Graph], labels: torch.Tensor, *,
                 device: torch.device | str = "cpu", padded: bool = False) -> None:
        self.graphs = GraphBatches(graphs, device=device)
        self.padded = padded
        self.labels = labels.to(device)
        if len(self.graphs) != len(self.labels):
            raise ValueError(f"GraphExamples: {len(self.graphs)} graphs but {len(self.labels)} "
                             "labels.")

    def __len__(self) -> int:
        return len(self.graphs)

    def batch(self, index: torch.Tensor, step: int) -> tuple[torch.Tensor, ...]:
        index = index.cpu().numpy()
        if self.padded:
            index = index[np.argsort(self.graphs.num_nodes[index], kind="stable")]
        graphs = self.graphs.padded(index) if self.padded else self.graphs.packed(index)
        return (*graphs, self.labels[torch.from_numpy(index).to(self.labels.device)])
