"""Whole-graph classifiers on padded dense batches: one example is one graph.

A batch of graphs is a feature tensor ``x`` of shape ``(batch, S, features)``, a binary
adjacency ``adj`` of shape ``(batch, S, S)`` (``adj[b, i, j] = 1`` when node ``j`` of graph
``b`` sends a message to node ``i``) and a ``mask`` of shape ``(batch, S)`` (1 for real
nodes), every graph padded to ``S`` nodes. Every layer is ``nn.Linear`` along the last axis
plus parameter-free products with ``adj`` and masked sums over the nodes, so Opacus'
Linear rule (which sums over the middle axes) and the loop's one-pass clipped sum give
exactly one gradient per graph: per-graph clipping, as graph-level DP-SGD needs.

Padding changes nothing: padding rows are zeroed after every layer, receive and send no
message and are left out of the readout, so a graph's logits do not depend on ``S``.
"""

from __future__ import annotations

import torch
from torch import nn

from skdpgraph.nn._dense import DenseSubgraphConv, normalize_dense_adjacency
from skdpgraph.nn._mlp import MLP, make_activation

__all__ = ["DenseGraphGNN", "DenseGINConv", "GRAPH_CONVS", "READOUTS", "masked_readout"]

#: Graph convolutions of :class:`DenseGraphGNN`.
GRAPH_CONVS = ("gin", "gcn", "sage")
#: Readouts of :class:`DenseGraphGNN` (over the real nodes of each graph).
READOUTS = ("sum", "mean")


def masked_readout(h: torch.Tensor, mask: torch.Tensor, readout: str) -> torch.Tensor:
    """Sum or mean of each graph's node rows, padding left out.

    Parameters
    ----------
    h : Tensor of shape (batch, S, width)
        Node rows of a padded batch of graphs.
    mask : Tensor of shape (batch, S)
        1 for real nodes, 0 for padding.
    readout : {"sum", "mean"}
        Sum of the real node rows, or their mean (a graph without nodes gives zeros).

    Returns
    -------
    readouts : Tensor of shape (batch, width)
        One row per graph, in the batch's order.

    Examples
    --------
    >>> import torch
    >>> h, mask = torch.ones(1, 3, 2), torch.tensor([[1.0, 1.0, 0.0]])
    >>> masked_readout(h, mask, "sum").tolist(), masked_readout(h, mask, "mean").tolist()
    ([[2.0, 2.0]], [[1.0, 1.0]])
    """
    total = (h * mask.unsqueeze(-1)).sum(1)
    if readout == "sum":
        return total
    if readout == "mean":
        return total / mask.sum(1, keepdim=True).clamp(min=1)
    raise ValueError(f"Unknown readout {readout!r}; use one of {READOUTS}.")


class DenseGINConv(nn.Module):
    r"""The GIN-0 update of Xu et al. (ICLR 2019) on padded graphs.

    :math:`h'_i = \mathrm{MLP}(h_i + \sum_{j \to i} h_j)`, the MLP of two linear layers
    with the activation after each (no batch normalisation: it would mix the graphs of a
    batch, and one graph's gradient must depend on that graph alone).

    Parameters
    ----------
    in_dim : int
        Width of the input node rows.
    out_dim : int
        Width of the output node rows (and of the MLP's hidden layer).
    activation : str, default="relu"
        Activation after each of the MLP's two linear layers (see ``make_activation``).

    Notes
    -----
    Shapes: x : (batch, S, in_dim), adj : (batch, S, S)  ->  (batch, S, out_dim)
    """

    def __init__(self, in_dim: int, out_dim: int, activation: str = "relu") -> None:
        super().__init__()
        self.mlp = MLP(in_dim, out_dim, out_dim, num_layers=2, activation=activation,
                       activate_last=True)

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        return self.mlp(x + adj @ x)


class DenseGraphGNN(nn.Module):
    """Graph convolutions, a readout of every layer, and an MLP head: one logit row per graph.

    Parameters
    ----------
    in_dim, hidden_dim, out_dim : int
        Node feature width, width of every hidden layer, number of classes.
    conv : {"gin", "gcn", "sage"}, default="gin"
        ``"gin"``: :class:`DenseGINConv`; ``"gcn"``: symmetric-normalised convolution with
        self-loops; ``"sage"``: GraphSAGE with a mean over neighbours (the activation
        follows each).
    num_layers : int, default=3
        Graph convolutions, at least 1.
    readout : {"sum", "mean"}, default="sum"
        How each layer's node rows become one vector per graph (:func:`masked_readout`);
        the layers' readouts are concatenated (as in GIN).
    head_layers : int, default=2
        Linear layers of the head on the concatenated readouts, at least 1.
    activation : str, default="relu"
        Activation after every convolution and between the head's linear layers.
    dropout : float, default=0.0
        Dropout between the head's linear layers.

    Notes
    -----
    Shapes: x : (batch, S, in_dim), adj : (batch, S, S), mask : (batch, S)  ->
    (batch, out_dim).

    Examples
    --------
    >>> import torch
    >>> model = DenseGraphGNN(3, 8, 2)
    >>> adj = torch.zeros(4, 5, 5); adj[:, 0, 1] = adj[:, 1, 0] = 1
    >>> model(torch.randn(4, 5, 3), adj, torch.ones(4, 5)).shape
    torch.Size([4, 2])
    """

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, *, conv: str = "gin",
                 num_layers: int = 3, readout: str = "sum", head_layers: int = 2,
                 activation: str = "relu", dropout: float = 0.0) -> None:
        super().__init__()
        if conv not in GRAPH_CONVS:
            raise ValueError(f"Unknown convolution {conv!r}; use one of {GRAPH_CONVS}.")
        if readout not in READOUTS:
            raise ValueError(f"Unknown readout {readout!r}; use one of {READOUTS}.")
        if num_layers < 1:
            raise ValueError(f"DenseGraphGNN: num_layers must be >= 1; got {num_layers}.")
        self.conv_kind, self.readout = conv, readout
        widths = [in_dim] + [hidden_dim] * num_layers
        self.convs = nn.ModuleList(
            DenseGINConv(fan_in, fan_out, activation) if conv == "gin"
            else DenseSubgraphConv(fan_in, fan_out, conv)
            for fan_in, fan_out in zip(widths[:-1], widths[1:]))
        self.activation = make_activation(activation)
        self.head = MLP(hidden_dim * num_layers, hidden_dim, out_dim, num_layers=head_layers,
                        activation=activation, dropout=dropout)

    def forward(self, x: torch.Tensor, adj: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        column = mask.unsqueeze(-1)
        propagation = (adj if self.conv_kind == "gin"
                       else normalize_dense_adjacency(adj, self.conv_kind, mask))
        h, readouts = x * column, []
        for conv in self.convs:
            h = conv(h, propagation)
            if self.conv_kind != "gin":  # GIN's MLP ends with its activation
                h = self.activation(h)
            h = h * column  # padding rows stay zero: they never reach a real node
            readouts.append(masked_readout(h, mask, self.readout))
        return self.head(torch.cat(readouts, dim=-1))
