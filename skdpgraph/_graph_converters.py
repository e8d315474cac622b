"""The arrays behind :meth:`skdpgraph.Graph.from_scipy` and :meth:`~skdpgraph.Graph.from_networkx`.

Each function turns another library's graph into the arguments of :class:`skdpgraph.Graph`:
``(edge_index, x, num_nodes, directed)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["networkx_arrays", "scipy_arrays"]


def scipy_arrays(adjacency: Any) -> tuple[np.ndarray, int]:
    """``(edge_index, num_nodes)`` of a square adjacency with ``adjacency[source, target] != 0``."""
    if not sp.issparse(adjacency):
        adjacency = sp.coo_matrix(np.asarray(adjacency))
    adjacency = sp.coo_matrix(adjacency)
    if adjacency.shape[0] != adjacency.shape[1]:
        raise ValueError(f"Graph.from_scipy: adjacency must be square; got {adjacency.shape}.")
    nonzero = adjacency.data != 0
    return np.vstack([adjacency.row[nonzero], adjacency.col[nonzero]]), adjacency.shape[0]


def networkx_arrays(G: Any, x: Any, feature_key: str) -> tuple[np.ndarray, Any, int]:
    """``(edge_index, x, num_nodes)`` of a networkx (Di)Graph, nodes in ``G.nodes`` order."""
    order = list(G.nodes)
    position = {node: i for i, node in enumerate(order)}
    if x is None:
        missing = [node for node in order if feature_key not in G.nodes[node]]
        if missing:
            raise ValueError(
                f"Graph.from_networkx: node {missing[0]!r} has no {feature_key!r} attribute; "
                "pass x= or set the attribute on every node."
            )
        x = np.vstack([np.asarray(G.nodes[node][feature_key], dtype=np.float32)
                       for node in order])
    edges = np.array([[position[u], position[v]] for u, v in G.edges()], dtype=np.int64)
    return edges.T.reshape(2, -1), x, len(order)
