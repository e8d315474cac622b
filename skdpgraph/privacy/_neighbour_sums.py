"""FDP's private inference: one Gaussian release of every node's neighbour sum and count.

For each node ``v`` of a graph, its degree-bounded star lists at most ``K`` kept
in-neighbours, and every node lies in at most ``K`` stars other than its own (see
:func:`~skdpgraph.sampling.star_rows`). The mechanism releases, for every node at once,

.. math::

    \\tilde S_v = \\sum_{u \\in \\mathrm{star}(v)} \\mathrm{clip}(h_u) + \\mathcal N(0, s^2 I),
    \\qquad
    \\tilde c_v = \\mathrm{clip}_{[0, K]}\\bigl(|\\mathrm{star}(v)| + \\mathcal N(0, s^2)\\bigr),

with ``clip`` scaling each encoding to norm at most ``sqrt(H)`` and
``s = noise_multiplier * sensitivity``. Under FDP's relation (one node replaced by an
isolated node) the vector of all ``(S_v, c_v)`` moves by at most
``sqrt(K (H + 1))`` on the stars the node feeds and ``K sqrt(H + 1)`` on its own
star, so the L2 sensitivity is ``sqrt(K (K + 1) (H + 1))``: the node's own row is
charged, and the whole release is covered by one Gaussian mechanism of multiplier
``noise_multiplier``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch

from skdpgraph.privacy._gaussian_accounting import gaussian_epsilon

__all__ = ["NeighbourSums", "inference_release_epsilon", "inference_sensitivity",
           "release_neighbour_sums"]


class NeighbourSums(NamedTuple):
    """One release: the noisy neighbour sum and count of every row.

    Parameters
    ----------
    sums : ndarray of shape (R, H)
        The noisy neighbour sums.
    counts : ndarray of shape (R,)
        The noisy neighbour counts.
    """

    sums: np.ndarray
    counts: np.ndarray


def inference_sensitivity(max_degree: int, hidden_dim: int) -> float:
    """Compute the L2 sensitivity of all nodes' neighbour sums and counts under FDP's relation.

    A node is in at most ``K`` other stars, each moving by ``[h_u, 1]`` with
    ``||h_u|| <= sqrt(H)``, and its own star (at most ``K`` neighbours) empties:
    ``sqrt(K (H + 1) + K^2 (H + 1)) = sqrt(K (K + 1) (H + 1))``.

    Parameters
    ----------
    max_degree : int
        The degree bound K.
    hidden_dim : int
        H, the width of the encodings.

    Returns
    -------
    sensitivity : float
        ``sqrt(K (K + 1) (H + 1))``.

    Examples
    --------
    >>> inference_sensitivity(4, 100) == (4 * 5 * 101) ** 0.5
    True
    """
    k = int(max_degree)
    return math.sqrt(k * (k + 1) * (hidden_dim + 1.0))


def release_neighbour_sums(encodings: torch.Tensor, rows: sp.csr_matrix, *,
                           noise_multiplier: float, max_degree: int,
                           generator: torch.Generator) -> NeighbourSums:
    """Release every row's noisy neighbour sum and count (the Gaussian mechanism above).

    Parameters
    ----------
    encodings : Tensor of shape (n, H)
        Encoding of every node of the graph (clipped here to norm ``sqrt(H)``).
    rows : scipy.sparse.csr_matrix of shape (R, n)
        Row ``i``: the kept in-neighbours of the ``i``-th node. Each row has at most
        ``max_degree`` entries and each column at most ``max_degree`` (checked: the
        sensitivity depends on it).
    noise_multiplier : float
        Noise std / :func:`inference_sensitivity`.
    max_degree : int
        K.
    generator : torch.Generator
        CPU generator for the noise (a fresh stream for every release).

    Returns
    -------
    NeighbourSums
        The noisy sums and counts: float32 arrays of shape (R, H) and (R,).
    """
    rows = sp.csr_matrix(rows)
    k = int(max_degree)
    in_row = np.diff(rows.indptr)
    in_column = np.bincount(rows.indices, minlength=rows.shape[1])
    if rows.nnz and (in_row.max() > k or in_column.max() > k):
        raise ValueError(f"release_neighbour_sums: every row and column must have at most "
                         f"max_degree={k} entries; got {int(in_row.max())} and "
                         f"{int(in_column.max())}.")
    h = encodings.detach().float().cpu()
    bound = math.sqrt(h.shape[1])
    h = h * (bound / h.norm(dim=1, keepdim=True).clamp(min=bound))
    row = torch.from_numpy(np.repeat(np.arange(rows.shape[0]), in_row))
    column = torch.from_numpy(rows.indices.astype(np.int64))
    sums = torch.zeros((rows.shape[0], h.shape[1])).index_add_(0, row, h[column])
    counts = torch.from_numpy(in_row.astype(np.float32))
    std = float(noise_multiplier) * inference_sensitivity(k, h.shape[1])
    sums = sums + std * torch.randn(sums.shape, generator=generator)
    counts = (counts + std * torch.randn(counts.shape, generator=generator)).clamp(0.0, k)
    return NeighbourSums(sums.numpy(), counts.numpy())


def inference_release_epsilon(noise_multiplier: float, delta: float) -> float:
    """Compute the epsilon at ``delta`` of one release (the analytic Gaussian mechanism).

    Parameters
    ----------
    noise_multiplier : float
        Noise std / :func:`inference_sensitivity`.
    delta : float
        The delta of the ``(epsilon, delta)`` guarantee.

    Returns
    -------
    epsilon : float
        The release's epsilon at ``delta``.

    Examples
    --------
    >>> 0.99 < inference_release_epsilon(1.0, 0.1269) < 1.01
    True
    """
    return gaussian_epsilon(noise_multiplier, delta)
