"""Graph partitioning with METIS (the bags of RGNN's label-proportion loss)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["metis_partition"]


def metis_partition(indptr: np.ndarray, indices: np.ndarray, n_parts: int,
                    seed: int | None = None) -> np.ndarray:
    """Partition a graph into ``n_parts`` parts with METIS (k-way, minimum edge cut).

    Parameters
    ----------
    indptr, indices : ndarray of int
        CSR adjacency (e.g. ``graph.indptr`` and ``graph.indices``). Directed graphs are
        symmetrised and self-loops dropped, as METIS requires.
    n_parts : int
        Number of parts, ``>= 1``; capped at the number of nodes.
    seed : int, default=None
        METIS' random seed (None keeps METIS' default).

    Returns
    -------
    ndarray of int64 of shape (n_nodes,)
        Part of each node, in ``0..n_parts - 1``. Every node gets a part; a part may be
        empty on tiny or edgeless graphs.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph.sampling import metis_partition
    >>> indptr, indices = np.array([0, 1, 2, 3, 4]), np.array([1, 0, 3, 2])
    >>> metis_partition(indptr, indices, 2, seed=0).tolist() in ([0, 0, 1, 1], [1, 1, 0, 0])
    True
    """
    import pymetis

    indptr, indices = np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64)
    n = indptr.size - 1
    if int(n_parts) < 1:
        raise ValueError(f"metis_partition: n_parts must be >= 1. Got {n_parts} instead.")
    n_parts = min(int(n_parts), n)
    if n_parts == 1:
        return np.zeros(n, dtype=np.int64)
    adjacency = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(n, n))
    adjacency = ((adjacency + adjacency.T) > 0).astype(np.int8).tocsr()
    adjacency.setdiag(0)
    adjacency.eliminate_zeros()
    adjacency.sort_indices()
    options = pymetis.Options(seed=int(seed)) if seed is not None else None
    result = pymetis.part_graph(
        n_parts, adjacency=pymetis.CSRAdjacency(adjacency.indptr.astype(np.int64),
                                                adjacency.indices.astype(np.int64)),
        options=options,
    )
    return np.asarray(result.vertex_part, dtype=np.int64)
