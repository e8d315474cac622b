"""FDP's prediction on a whole graph: the star model evaluated with sparse aggregation.

Training sees padded stars; prediction may use every in-neighbour, so the dense padded
form would be as wide as the largest degree. For the mean convolution the root's output
is ``decoder(h_v + act(lin(mean of h over {v} and its neighbours)))`` (the mean commutes
with the affine ``lin``), which is computed here from a sparse neighbour sum. The private
variant releases the neighbour sums (and counts) through a Gaussian mechanism.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
import torch

from skdpgraph.graph import Graph
from skdpgraph.nn import DenseSubgraphGNN

__all__ = ["encode_nodes", "inference_sensitivity", "root_logits"]

_CHUNK = 4096


def encode_nodes(module: DenseSubgraphGNN, graph: Graph, ids: np.ndarray) -> torch.Tensor:
    """Encoder output of the nodes ``ids``, computed in chunks (dense features per chunk)."""
    device = next(module.parameters()).device
    parts = [module.encoder(torch.from_numpy(graph.features(ids[i:i + _CHUNK])).to(device))
             for i in range(0, ids.shape[0], _CHUNK)]
    if not parts:
        return torch.zeros((0, module.decoder.in_features), device=device)
    return torch.cat(parts)


def inference_sensitivity(max_degree: int, hidden_dim: int) -> float:
    """L2 sensitivity of the released neighbour sums and counts under node removal.

    Each node enters at most ``max_degree`` released rows, each with the vector
    ``[h_u, 1]`` where ``||h_u|| <= sqrt(hidden_dim)``: ``sqrt(K * (hidden_dim + 1))``.
    """
    return math.sqrt(max_degree * (hidden_dim + 1.0))


def root_logits(module: DenseSubgraphGNN, graph: Graph, roots: np.ndarray,
                rows: sp.csr_matrix, *, noise_std: float = 0.0, max_count: float = math.inf,
                generator: torch.Generator | None = None) -> torch.Tensor:
    """Logits of each root from its own features and the in-neighbours in ``rows``.

    Parameters
    ----------
    module : DenseSubgraphGNN
        A one-layer ``conv="mean"`` model with an encoder and residual update.
    graph : Graph
    roots : ndarray of shape (R,)
    rows : scipy.sparse.csr_matrix of shape (R, graph.num_nodes)
        Row ``i``: the in-neighbours aggregated by ``roots[i]`` (self excluded).
    noise_std : float, default=0
        If > 0, every neighbour encoding is clipped to norm ``sqrt(hidden_dim)`` (a no-op
        for tanh encoders) and Gaussian noise of this std is added to each row's
        neighbour sum and to its neighbour count; the noisy count is clipped to
        ``[0, max_count]``. The root's own encoding is used as is.
    max_count : float
        Public upper bound on the number of neighbours (the degree bound).
    generator : torch.Generator, optional
        CPU generator for the noise.
    """
    if not (module.conv_kind == "mean" and module.residual and len(module.convs) == 1
            and module.encoder is not None):
        raise ValueError("root_logits: needs a one-layer mean-convolution model with an encoder "
                         "and residual update (FDP's model).")
    rows = sp.csr_matrix(rows)
    needed, local = np.unique(np.concatenate([roots, rows.indices]), return_inverse=True)
    h = encode_nodes(module, graph, needed)
    h_root = h[torch.from_numpy(local[:roots.shape[0]])]
    h_neigh = h
    if noise_std > 0:
        bound = math.sqrt(h.shape[1])
        h_neigh = h * (bound / h.norm(dim=1, keepdim=True).clamp(min=bound))
    device = h.device
    row = torch.from_numpy(np.repeat(np.arange(rows.shape[0]), np.diff(rows.indptr))).to(device)
    col = torch.from_numpy(local[roots.shape[0]:].astype(np.int64)).to(device)
    total = torch.zeros((rows.shape[0], h.shape[1]), device=device).index_add_(
        0, row, h_neigh[col])
    count = torch.from_numpy(np.diff(rows.indptr).astype(np.float32)).to(device)
    if noise_std > 0:
        total = total + noise_std * torch.randn(total.shape, generator=generator).to(device)
        count = count + noise_std * torch.randn(count.shape, generator=generator).to(device)
        count = count.clamp(min=0.0, max=max_count)
    mean = (h_root + total) / (1.0 + count).unsqueeze(1)
    conv = module.convs[0]
    return module.decoder(h_root + module.activation(conv.lin(mean)))
