"""FDP's star model: its training loss, and its evaluation on a whole graph (deterministic).

Training sees padded stars; prediction may use every in-neighbour, so the dense padded
form would be as wide as the largest degree. For the one-layer mean convolution with a
residual update, the root's output is
``decoder(h_v + act(lin((h_v + S_v) / (1 + c_v))))`` with ``S_v`` the sum of the
neighbours' encodings and ``c_v`` their count (the mean commutes with the affine
``lin``). :func:`root_logits` computes it from the exact neighbours;
:func:`logits_from_sums` from given (e.g. privately released) sums and counts.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from skdpgraph.graph import Graph
from skdpgraph.nn._dense import DenseSubgraphGNN

__all__ = ["encode_nodes", "logits_from_sums", "root_cross_entropy", "root_logits"]

_CHUNK = 4096


def _check_star_model(module: DenseSubgraphGNN) -> None:
    if not (module.conv_kind == "mean" and module.residual and len(module.convs) == 1
            and module.encoder is not None):
        raise ValueError("FDP's star inference needs a one-layer mean-convolution model with an "
                         "encoder and residual update (DenseSubgraphGNN(conv='mean', "
                         "num_layers=1, encoder_layers>=1, residual=True)).")


def root_cross_entropy(module: torch.nn.Module, batch: tuple) -> tuple[torch.Tensor, torch.Tensor]:
    """Compute the per-example loss of padded-subgraph batches for ``train_dpsgd``.

    Parameters
    ----------
    module : torch.nn.Module
        The star model, called as ``module(x, adj, mask)`` to give the roots' logits.
    batch : tuple
        A padded-subgraph batch ``(x, adj, mask, y)``, ``y`` the roots' labels.

    Returns
    -------
    losses : Tensor of shape (batch,)
        The cross-entropy of each subgraph's root.
    correct : Tensor of shape (batch,) of bool
        Whether each root is predicted right.
    """
    x, adj, mask, y = batch
    logits = module(x, adj, mask)
    return torch.nn.functional.cross_entropy(logits, y, reduction="none"), logits.argmax(-1) == y


def encode_nodes(module: DenseSubgraphGNN, graph: Graph, ids: np.ndarray) -> torch.Tensor:
    """Encode the nodes ``ids`` with the model's encoder, in chunks (dense features per chunk).

    Parameters
    ----------
    module : DenseSubgraphGNN
        The star model whose ``encoder`` is applied.
    graph : Graph
        The graph whose feature rows are read.
    ids : ndarray of shape (n,)
        Positions of the nodes to encode.

    Returns
    -------
    encodings : Tensor of shape (n, hidden_dim)
        The encoder's output, one row per node of ``ids``, on the module's device.
    """
    device = next(module.parameters()).device
    ids = np.asarray(ids, dtype=np.int64)
    parts = [module.encoder(torch.from_numpy(graph.features(ids[i:i + _CHUNK])).to(device))
             for i in range(0, ids.shape[0], _CHUNK)]
    if not parts:
        return torch.zeros((0, module.decoder.in_features), device=device)
    return torch.cat(parts)


def logits_from_sums(module: DenseSubgraphGNN, h_root: torch.Tensor,
                     neighbour_sum: torch.Tensor, neighbour_count: torch.Tensor) -> torch.Tensor:
    """Compute the roots' logits from their encodings and their neighbours' sums and counts.

    Parameters
    ----------
    module : DenseSubgraphGNN
        A one-layer ``conv="mean"`` model with an encoder and residual update.
    h_root : Tensor of shape (R, H)
        The roots' encodings.
    neighbour_sum : Tensor of shape (R, H)
        The sum of each root's neighbours' encodings (exact or privately released).
    neighbour_count : Tensor of shape (R,)
        Each root's number of neighbours (exact or privately released).

    Returns
    -------
    logits : Tensor of shape (R, num_classes)
        The roots' class logits.
    """
    _check_star_model(module)
    mean = (h_root + neighbour_sum) / (1.0 + neighbour_count).unsqueeze(1)
    return module.decoder(h_root + module.activation(module.convs[0].lin(mean)))


def root_logits(module: DenseSubgraphGNN, graph: Graph, roots: np.ndarray,
                rows: sp.csr_matrix) -> torch.Tensor:
    """Compute each root's logits from its own features and the exact in-neighbours in ``rows``.

    Parameters
    ----------
    module : DenseSubgraphGNN
        A one-layer ``conv="mean"`` model with an encoder and residual update.
    graph : Graph
        The graph whose feature rows are read.
    roots : ndarray of shape (R,)
        Positions of the root nodes.
    rows : scipy.sparse.csr_matrix of shape (R, graph.num_nodes)
        Row ``i``: the in-neighbours aggregated by ``roots[i]`` (self excluded).

    Returns
    -------
    logits : Tensor of shape (R, num_classes)
        The roots' class logits.
    """
    _check_star_model(module)
    rows = sp.csr_matrix(rows)
    roots = np.asarray(roots, dtype=np.int64)
    needed, local = np.unique(np.concatenate([roots, rows.indices]), return_inverse=True)
    h = encode_nodes(module, graph, needed)
    device = h.device
    row = torch.from_numpy(np.repeat(np.arange(rows.shape[0]), np.diff(rows.indptr))).to(device)
    column = torch.from_numpy(local.ravel()[roots.shape[0]:].astype(np.int64)).to(device)
    total = torch.zeros((rows.shape[0], h.shape[1]), device=device).index_add_(0, row, h[column])
    count = torch.from_numpy(np.diff(rows.indptr).astype(np.float32)).to(device)
    h_root = h[torch.from_numpy(local.ravel()[:roots.shape[0]]).to(device)]
    return logits_from_sums(module, h_root, total, count)
