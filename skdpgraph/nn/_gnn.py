"""Full-graph message-passing networks from PyTorch Geometric layers (no DP-SGD).

For methods whose inputs are already private (RGNN trains on post-processed LDP
reports), so Opacus' per-example gradients are not needed and PyG layers are fine.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["GNN", "CONVS", "ProbabilityAverage"]

#: The graph convolutions :class:`GNN` builds (its ``conv`` parameter).
CONVS = ("sage", "gcn", "gat")
_GAT_HEADS = 4


class GNN(nn.Module):
    """``num_layers`` graph convolutions with ReLU and dropout between them.

    Parameters
    ----------
    in_dim, hidden_dim, out_dim : int
        Input, hidden and output widths.
    num_layers : int, default=2
    conv : {"sage", "gcn", "gat"}, default="sage"
        ``SAGEConv`` (mean aggregator), ``GCNConv`` or ``GATConv`` (4 heads, concatenated,
        in hidden layers; one head in the output layer).
    dropout : float, default=0.5

    Examples
    --------
    >>> import torch
    >>> from skdpgraph.nn import GNN
    >>> gnn = GNN(3, 8, 2, conv="gcn")
    >>> gnn(torch.ones(4, 3), torch.tensor([[0, 1, 2], [1, 2, 3]])).shape
    torch.Size([4, 2])
    """

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 2,
                 conv: str = "sage", dropout: float = 0.5) -> None:
        super().__init__()
        from torch_geometric.nn import GATConv, GCNConv, SAGEConv

        if conv not in CONVS:
            raise ValueError(f"GNN: conv must be one of {CONVS}. Got {conv!r}.")
        widths = [in_dim] + [hidden_dim] * (num_layers - 1) + [out_dim]
        self.convs = nn.ModuleList()
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
            last = i == num_layers - 1
            if conv == "sage":
                layer = SAGEConv(a, b)
            elif conv == "gcn":
                layer = GCNConv(a, b)
            else:
                a = a if i == 0 else a * _GAT_HEADS
                layer = GATConv(a, b, heads=1 if last else _GAT_HEADS, concat=not last)
            self.convs.append(layer)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Logits of shape (num_nodes, out_dim) for ``x`` of shape (num_nodes, in_dim)."""
        for i, conv in enumerate(self.convs):
            if i > 0:
                x = self.dropout(torch.relu(x))
            x = conv(x, edge_index)
        return x


class ProbabilityAverage(nn.Module):
    """An ensemble that averages its members' class probabilities.

    Returns the log of the mean softmax, so that its softmax (and argmax) are those of the
    average: a drop-in for a single module's logits.

    Parameters
    ----------
    members : sequence of nn.Module
        Each called as ``member(*inputs)``, returning logits of the same shape.

    Examples
    --------
    >>> import torch
    >>> from skdpgraph.nn import GNN, ProbabilityAverage
    >>> x, edges = torch.ones(4, 3), torch.tensor([[0, 1, 2], [1, 2, 3]])
    >>> ensemble = ProbabilityAverage([GNN(3, 8, 2), GNN(3, 8, 2)]).eval()
    >>> bool(torch.allclose(ensemble(x, edges).exp().sum(-1), torch.ones(4)))
    True
    """

    def __init__(self, members) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        """Log of the members' mean class probabilities."""
        probs = torch.stack([member(*inputs).softmax(-1) for member in self.members])
        return probs.mean(0).log()
