"""Full-graph message-passing networks from PyTorch Geometric layers (no DP-SGD).

For methods whose inputs are already private (RGNN trains on post-processed LDP
reports), so Opacus' per-example gradients are not needed and PyG layers are fine.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from skdpgraph.nn._dropout import UniformDropout

__all__ = ["GNN", "CONVS", "InNeighbourMean", "ProbabilityAverage"]

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
        Number of graph convolutions.
    conv : {"sage", "gcn", "gat"}, default="sage"
        ``SAGEConv`` (mean aggregator), ``GCNConv`` or ``GATConv`` (4 heads, concatenated,
        in hidden layers; one head in the output layer).
    dropout : float, default=0.5
        Dropout between the convolutions.

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
        from torch_geometric.nn import GATConv, GCNConv

        if conv not in CONVS:
            raise ValueError(f"GNN: conv must be one of {CONVS}. Got {conv!r}.")
        widths = [in_dim] + [hidden_dim] * (num_layers - 1) + [out_dim]
        self.convs = nn.ModuleList()
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
            last = i == num_layers - 1
            if conv == "sage":
                layer = _mean_sage()(a, b)
            elif conv == "gcn":
                layer = GCNConv(a, b)
            else:
                a = a if i == 0 else a * _GAT_HEADS
                layer = GATConv(a, b, heads=1 if last else _GAT_HEADS, concat=not last)
            self.convs.append(layer)
        self.dropout = UniformDropout(dropout)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Logits of shape (num_nodes, out_dim) for ``x`` of shape (num_nodes, in_dim)."""
        for i, conv in enumerate(self.convs):
            if i > 0:
                x = self.dropout(torch.relu(x))
            x = conv(x, edge_index)
        return x


class InNeighbourMean:
    """The mean over each node's in-neighbours, as a sparse product with a stored transpose.

    ``mean(x)[i]`` is the average of ``x[j]`` over the in-neighbours ``j`` of ``i`` (0 for
    a node with none), the aggregation of PyG's ``SAGEConv``. Both the row-normalised
    in-adjacency and its transpose are built once, as torch CSR: the forward pass is one
    sparse product and the backward pass another, where ``torch.sparse.mm(...,
    reduce="mean")`` sorts the edges again at every backward pass. :class:`GNN`'s SAGE
    layers take it in place of ``edge_index``.

    Parameters
    ----------
    adjacency : scipy sparse matrix of shape (n, n)
        In-adjacency ``A[target, source]`` (nonzero: an edge); values are ignored.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp, torch
    >>> mean = InNeighbourMean(sp.csr_matrix(np.array([[0, 1, 1], [0, 0, 0], [1, 0, 0]])))
    >>> mean(torch.tensor([[2.0], [4.0], [6.0]])).ravel().tolist()
    [5.0, 0.0, 2.0]
    """

    def __init__(self, adjacency: sp.spmatrix | None = None) -> None:
        if adjacency is None:  # filled by ``to``
            return
        from skdpgraph.preprocessing import torch_csr

        pattern = sp.csr_matrix(adjacency, dtype=np.float32, copy=True)
        pattern.sum_duplicates()
        pattern.data[:] = 1.0
        degree = np.diff(pattern.indptr)
        pattern.data /= np.repeat(np.maximum(degree, 1), degree).astype(np.float32)
        self.matrix = torch_csr(pattern, np.float32)
        self.transposed = torch_csr(pattern.T.tocsr(), np.float32)

    def to(self, device: torch.device | str) -> "InNeighbourMean":
        """The same mean with both matrices on ``device``."""
        moved = InNeighbourMean()
        moved.matrix, moved.transposed = self.matrix.to(device), self.transposed.to(device)
        return moved

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """The mean of ``x`` (shape ``(n, d)``) over each node's in-neighbours."""
        return _SparseProduct.apply(self.matrix, self.transposed, x)


class _SparseProduct(torch.autograd.Function):
    """``matrix @ x`` whose gradient with respect to ``x`` uses the stored transpose."""

    @staticmethod
    def forward(ctx, matrix, transposed, x):
        ctx.transposed = transposed
        return torch.sparse.mm(matrix, x)

    @staticmethod
    def backward(ctx, grad):
        return None, None, torch.sparse.mm(ctx.transposed, grad.contiguous())


_MeanSAGEConv = None


def _mean_sage() -> type:
    """PyG's ``SAGEConv`` subclassed to aggregate after projecting where that is cheaper.

    Built on first use, as PyG is imported lazily; the module's ``__getattr__`` also builds
    it, so that pickles of fitted models find it in a fresh process.
    """
    global _MeanSAGEConv
    if _MeanSAGEConv is None:
        from torch_geometric.nn import SAGEConv

        class MeanSAGEConv(SAGEConv):
            """``SAGEConv`` that aggregates ``min(in, out)`` numbers per edge.

            ``edge_index`` may also be an :class:`InNeighbourMean` (SAGEConv's defaults only).

            The mean over in-neighbours is linear: ``lin_l(mean_j x_j) = mean_j (W x_j) + b``
            (a node without in-neighbours gets ``b`` both ways). Where ``lin_l`` narrows the
            rows (``out < in``: RGNN's reconstructed features to the hidden width, then the
            hidden width to the classes) the rows are projected first, so the sparse
            aggregation, the memory-bound part, reads fewer numbers per edge. Same
            parameters, same output up to float rounding.
            """

            def forward(self, x, edge_index, size=None):
                mean = isinstance(edge_index, InNeighbourMean)
                if not (isinstance(x, torch.Tensor) and self.aggr == "mean" and not self.project
                        and not self.normalize and isinstance(self.in_channels, int)):
                    if mean:
                        raise ValueError("InNeighbourMean needs SAGEConv's defaults.")
                    return super().forward(x, edge_index, size)
                if 0 < self.out_channels < self.in_channels:  # project, then aggregate
                    projected = nn.functional.linear(x, self.lin_l.weight)
                    out = (edge_index(projected) if mean else
                           self.propagate(edge_index, x=(projected, projected), size=size))
                    if self.lin_l.bias is not None:
                        out = out + self.lin_l.bias
                else:
                    out = self.lin_l(edge_index(x) if mean else
                                     self.propagate(edge_index, x=(x, x), size=size))
                return out + self.lin_r(x) if self.root_weight else out

        MeanSAGEConv.__module__, MeanSAGEConv.__qualname__ = __name__, "MeanSAGEConv"
        _MeanSAGEConv = MeanSAGEConv
    return _MeanSAGEConv


def __getattr__(name: str):
    if name == "MeanSAGEConv":
        return _mean_sage()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
