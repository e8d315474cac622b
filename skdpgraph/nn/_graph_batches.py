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

__all__ = ["GraphBatches", "GraphExamples"]


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
        sizes = self.num_nodes[index]
        owner, local = _positions(sizes)
        x = self.features[self.node_start[index][owner] + local]
        edge_owner, edge_local = _positions(self.num_entries[index])
        entry = self.entry_start[index][edge_owner] + edge_local
        offset = (np.cumsum(sizes) - sizes)[edge_owner]
        edge_index = np.stack([self.sources[entry] + offset, self.targets[entry] + offset])
        return tuple(torch.from_numpy(t).to(self.device) for t in (x, edge_index, sizes))

    def chunks(self, size: int = 256) -> Iterator[tuple[torch.Tensor, ...]]:
        """:meth:`packed` of consecutive runs of ``size`` graphs, in order (for inference)."""
        for start in range(0, len(self), size):
            yield self.packed(np.arange(start, min(start + size, len(self))))


def _positions(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ``counts[b]`` items per row ``b``: every item's row and its position in the row."""
    owner = np.repeat(np.arange(len(counts)), counts)
    first = np.cumsum(counts) - counts
    return owner, np.arange(len(owner)) - first[owner]


class GraphExamples:
    """A DP-SGD example set (``train_dpsgd``'s ``ExampleSet``) whose examples are graphs.

    ``batch(index, step)`` returns ``(x, edge_index, sizes, y)`` for the graphs ``index``,
    packed (see :class:`GraphBatches`); one example is one graph with its label, the
    privacy unit of graph-level DP.

    Parameters
    ----------
    graphs : iterable of Graph
        The training graphs, all with the same feature width.
    labels : Tensor of shape (n_graphs,)
        The encoded label of each graph, in the order of ``graphs``.
    device : torch.device or str, default="cpu"
        Where the batches' tensors and the labels are put.
    """

    def __init__(self, graphs: Iterable[Graph], labels: torch.Tensor, *,
                 device: torch.device | str = "cpu") -> None:
        self.graphs = GraphBatches(graphs, device=device)
        self.labels = labels.to(device)
        if len(self.graphs) != len(self.labels):
            raise ValueError(f"GraphExamples: {len(self.graphs)} graphs but {len(self.labels)} "
                             "labels.")

    def __len__(self) -> int:
        return len(self.graphs)

    def batch(self, index: torch.Tensor, step: int) -> tuple[torch.Tensor, ...]:
        index = index.cpu()
        return (*self.graphs.packed(index.numpy()), self.labels[index.to(self.labels.device)])
