"""Dense graph convolutions on batches of small padded subgraphs.

Subgraph methods (DRW, FDP) train on examples that are whole subgraphs: a root node and
a few others, padded to a fixed size ``S``. A batch is a feature tensor
``x`` of shape ``(batch, S, features)`` and a binary adjacency ``adj`` of shape
``(batch, S, S)`` (``adj[b, i, j] = 1`` when node ``j`` sends a message to node ``i``;
padding rows and columns are zero). Every layer is ``nn.Linear`` applied along the last
axis plus parameter-free matrix products with ``adj``, so Opacus' Linear rule, which sums
over the middle axes, returns exactly one gradient per subgraph.
"""

from __future__ import annotations

import torch
from torch import nn

from skdpgraph.nn._dropout import UniformDropout
from skdpgraph.nn._mlp import MLP, make_activation

__all__ = ["DenseSubgraphConv", "DenseSubgraphGNN", "normalize_dense_adjacency"]

_KINDS = ("gcn", "sage", "mean")


def normalize_dense_adjacency(adj: torch.Tensor, kind: str, mask: torch.Tensor) -> torch.Tensor:
    r"""Propagation matrices for a batch of padded subgraphs.

    Parameters
    ----------
    adj : Tensor of shape (batch, S, S)
        Binary adjacency without self-loops.
    kind : {"gcn", "sage", "mean"}
        ``"gcn"``: :math:`D^{-1/2}(A + I)D^{-1/2}`; ``"sage"``: :math:`D^{-1}A` (mean over
        neighbours, the self term is separate); ``"mean"``: :math:`(D + I)^{-1}(A + I)`
        (mean over the node and its neighbours).
    mask : Tensor of shape (batch, S)
        1 for real nodes, 0 for padding (padding gets no self-loop).

    Returns
    -------
    Tensor of shape (batch, S, S)
        The propagation matrix of each subgraph.
    """
    if kind == "sage":
        degree = adj.sum(-1, keepdim=True)
        return adj / degree.clamp(min=1)
    with_self = adj + torch.diag_embed(mask.to(adj.dtype))
    degree = with_self.sum(-1)
    if kind == "mean":
        return with_self / degree.clamp(min=1).unsqueeze(-1)
    if kind == "gcn":
        scale = degree.clamp(min=1).rsqrt() * (degree > 0)
        return scale.unsqueeze(-1) * with_self * scale.unsqueeze(-2)
    raise ValueError(f"Unknown convolution {kind!r}; use one of {_KINDS}.")


class DenseSubgraphConv(nn.Module):
    """One graph convolution on padded subgraphs.

    ``"gcn"`` and ``"mean"``: :math:`h' = P h W`; ``"sage"``:
    :math:`h' = h W_1 + (D^{-1} A h) W_2`.

    Parameters
    ----------
    in_dim, out_dim : int
        Input and output widths.
    kind : {"gcn", "sage", "mean"}, default="gcn"
        The convolution.

    Notes
    -----
    Shapes: x : (batch, S, in_dim), propagation : (batch, S, S)  ->  (batch, S, out_dim)
    """

    def __init__(self, in_dim: int, out_dim: int, kind: str = "gcn") -> None:
        super().__init__()
        if kind not in _KINDS:
            raise ValueError(f"Unknown convolution {kind!r}; use one of {_KINDS}.")
        self.kind = kind
        self.lin = nn.Linear(in_dim, out_dim)
        self.lin_neighbours = nn.Linear(in_dim, out_dim, bias=False) if kind == "sage" else None

    def forward(self, x: torch.Tensor, propagation: torch.Tensor) -> torch.Tensor:
        if self.lin_neighbours is not None:
            return self.lin(x) + self.lin_neighbours(propagation @ x)
        return propagation @ self.lin(x)


class DenseSubgraphGNN(nn.Module):
    """Encoder MLP, graph convolutions, linear decoder; predicts the root (node 0).

    Parameters
    ----------
    in_dim, hidden_dim, out_dim : int
        Input, hidden and output widths.
    conv : {"gcn", "sage", "mean"}, default="gcn"
        The convolution (see :class:`DenseSubgraphConv`).
    num_layers : int, default=1
        Number of graph convolutions.
    encoder_layers : int, default=0
        Linear layers before the convolutions (0: the first convolution reads features).
    activation : str, default="relu"
        The activation between layers (see :func:`make_activation`).
    residual : bool, default=False
        ``h <- h + act(conv(h))`` (FDP's update; needs equal widths, so an encoder).
    dropout : float, default=0.0
        Dropout before every hidden layer.

    Notes
    -----
    Shapes: x : (batch, S, in_dim), adj : (batch, S, S), mask : (batch, S)  ->  (batch, out_dim),
    the logits of each subgraph's node 0.

    Examples
    --------
    >>> import torch
    >>> model = DenseSubgraphGNN(3, 8, 2, conv="mean", encoder_layers=1, residual=True)
    >>> adj = torch.zeros(4, 5, 5); adj[:, 0, 1:] = 1
    >>> model(torch.randn(4, 5, 3), adj, torch.ones(4, 5)).shape
    torch.Size([4, 2])
    """

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, *, conv: str = "gcn",
                 num_layers: int = 1, encoder_layers: int = 0, activation: str = "relu",
                 residual: bool = False, dropout: float = 0.0) -> None:
        super().__init__()
        if residual and encoder_layers == 0:
            raise ValueError("DenseSubgraphGNN: residual=True needs encoder_layers >= 1.")
        self.conv_kind = conv
        self.residual = residual
        self.encoder = (MLP(in_dim, hidden_dim, hidden_dim, num_layers=encoder_layers,
                            activation=activation, dropout=dropout, activate_last=True)
                        if encoder_layers else None)
        width = hidden_dim if encoder_layers else in_dim
        self.convs = nn.ModuleList()
        for _ in range(num_layers):
            self.convs.append(DenseSubgraphConv(width, hidden_dim, conv))
            width = hidden_dim
        self.activation = make_activation(activation)
        self.dropout = UniformDropout(dropout)
        self.decoder = nn.Linear(width, out_dim)

    def forward(self, x: torch.Tensor, adj: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        propagation = normalize_dense_adjacency(adj, self.conv_kind, mask)
        h = self.encoder(x) if self.encoder is not None else x
        for conv in self.convs:
            update = self.activation(conv(self.dropout(h), propagation))
            h = h + update if self.residual else update
        return self.decoder(h[:, 0])
