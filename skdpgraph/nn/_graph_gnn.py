"""Whole-graph classifiers on packed batches: one example is one graph.

A batch of graphs is packed without padding, as in PyG: node rows ``x`` of shape
``(nodes, features)`` (each graph's nodes in a run, graph after graph), ``edge_index`` of
shape ``(2, edges)`` (row 0 the source, row 1 the target, both batch-wide node rows) and
``sizes`` of shape ``(batch,)``, each graph's node count (a graph may have none). Every
trainable layer is an ``nn.Linear``: the node-level ones (:meth:`GraphGNN.row_layers`)
read rows of many graphs, each row owned by one graph (:meth:`GraphGNN.example_of_rows`),
and the head reads one row per graph. The loop's one-pass clipped sum
(:class:`~skdpgraph.training.ClippedSumModule`) counts each row's gradient towards its
own graph, which gives exactly one gradient per graph: per-graph clipping, as graph-level
DP-SGD needs. A message only flows along an edge, and edges never join two graphs, so a
graph's logits and gradient depend on that graph alone.
"""

from __future__ import annotations

import torch
from torch import nn

from skdpgraph.nn._mlp import MLP, make_activation

__all__ = ["GraphGNN", "PackedGINConv", "PackedGraphConv", "GRAPH_CONVS", "NORMS", "READOUTS",
           "graph_cross_entropy", "graph_readout"]

#: Graph convolutions of :class:`GraphGNN`.
GRAPH_CONVS = ("gin", "gcn", "sage")
#: Readouts of :class:`GraphGNN` (over the nodes of each graph).
READOUTS = ("sum", "mean")
#: Normalisations of :class:`GraphGNN`'s node rows.
NORMS = ("layer", None)


def graph_readout(h: torch.Tensor, sizes: torch.Tensor, readout: str,
                  slots: torch.Tensor | None = None) -> torch.Tensor:
    """Sum or mean of each graph's node rows in a packed batch.

    Parameters
    ----------
    h : Tensor of shape (nodes, width)
        Node rows of a packed batch, each graph's rows in a run.
    sizes : Tensor of shape (batch,)
        Each graph's node count, in the batch's order.
    readout : {"sum", "mean"}
        Sum of each graph's rows, or their mean (a graph without nodes gives zeros).
    slots : Tensor of shape (batch,), optional
        Each graph's rows when the batch is padded (:meth:`GraphBatches.padded`): its
        ``sizes[b]`` node rows, then padding rows that the readout leaves out.

    Returns
    -------
    readouts : Tensor of shape (batch, width)
        One row per graph, in the batch's order.

    Examples
    --------
    >>> import torch
    >>> h, sizes = torch.ones(3, 2), torch.tensor([2, 0, 1])
    >>> graph_readout(h, sizes, "sum").tolist(), graph_readout(h, sizes, "mean").tolist()
    ([[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]], [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]])
    """
    if readout not in READOUTS:
        raise ValueError(f"Unknown readout {readout!r}; use one of {READOUTS}.")
    return _readout(h, _readout_index(sizes, slots), sizes, readout)


def _readout(h: torch.Tensor, index: torch.Tensor, sizes: torch.Tensor,
             readout: str) -> torch.Tensor:
    """:func:`graph_readout` given each row's graph (``batch`` for padding rows)."""
    batch = sizes.shape[0]
    total = h.new_zeros(batch + 1, h.shape[1]).index_add_(0, index, h)[:batch]
    if readout == "sum":
        return total
    return total / sizes.clamp(min=1).to(h.dtype).unsqueeze(-1)


def _owner(sizes: torch.Tensor) -> torch.Tensor:
    """Each row's graph: ``sizes[b]`` rows of graph ``b``, graph after graph."""
    return torch.repeat_interleave(torch.arange(sizes.shape[0], device=sizes.device), sizes)


def _readout_index(sizes: torch.Tensor, slots: torch.Tensor | None) -> torch.Tensor:
    """Each row's graph, or ``batch`` for a padding row (the first ``sizes[b]`` of graph
    ``b``'s ``slots[b]`` rows are its nodes)."""
    if slots is None:
        return _owner(sizes)
    owner = _owner(slots)
    position = torch.arange(owner.shape[0], device=owner.device) - (slots.cumsum(0) - slots)[owner]
    return torch.where(position < sizes[owner], owner, sizes.shape[0])


def _propagate(h: torch.Tensor, edge_index: torch.Tensor,
               weight: torch.Tensor | None) -> torch.Tensor:
    """``out[t] = sum over edges s -> t of weight * h[s]`` (weight 1 when None)."""
    messages = h.index_select(0, edge_index[0])
    if weight is not None:
        messages = messages * weight.unsqueeze(-1)
    return torch.zeros_like(h).index_add_(0, edge_index[1], messages)


def _edge_weights(edge_index: torch.Tensor, num_nodes: int,
                  kind: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The edges and weights of a convolution's propagation.

    ``"gin"``: the edges, unweighted; ``"sage"``: weight ``1 / in-degree`` (mean over
    neighbours); ``"gcn"``: self-loops added, :math:`D^{-1/2}(A + I)D^{-1/2}`.
    """
    if kind == "gin":
        return edge_index, None
    if kind == "gcn":
        loops = torch.arange(num_nodes, device=edge_index.device).expand(2, -1)
        edge_index = torch.cat([edge_index, loops], dim=1)
    degree = torch.bincount(edge_index[1], minlength=num_nodes).clamp(min=1).float()
    if kind == "sage":
        return edge_index, degree.reciprocal()[edge_index[1]]
    scale = degree.rsqrt()
    return edge_index, scale[edge_index[0]] * scale[edge_index[1]]


class PackedGINConv(nn.Module):
    r"""The GIN-0 update of Xu et al. (ICLR 2019) on packed graphs.

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
    Shapes: x : (nodes, in_dim), edge_index : (2, edges)  ->  (nodes, out_dim)
    """

    def __init__(self, in_dim: int, out_dim: int, activation: str = "relu") -> None:
        super().__init__()
        self.mlp = MLP(in_dim, out_dim, out_dim, num_layers=2, activation=activation,
                       activate_last=True)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor,
                weight: torch.Tensor | None = None) -> torch.Tensor:
        return self.mlp(x + _propagate(x, edge_index, weight))


class PackedGraphConv(nn.Module):
    """A GCN or GraphSAGE convolution on packed graphs.

    ``"gcn"``: :math:`h' = P h W` with :math:`P = D^{-1/2}(A + I)D^{-1/2}`; ``"sage"``:
    :math:`h' = h W_1 + (D^{-1} A h) W_2`. The propagation's edges and weights come from
    :meth:`GraphGNN.forward`, once per batch.

    Parameters
    ----------
    in_dim, out_dim : int
        Input and output widths.
    kind : {"gcn", "sage"}, default="gcn"
        The convolution.

    Notes
    -----
    Shapes: x : (nodes, in_dim), edge_index : (2, edges), weight : (edges,)  ->
    (nodes, out_dim)
    """

    def __init__(self, in_dim: int, out_dim: int, kind: str = "gcn") -> None:
        super().__init__()
        self.kind = kind
        self.lin = nn.Linear(in_dim, out_dim)
        self.lin_neighbours = nn.Linear(in_dim, out_dim, bias=False) if kind == "sage" else None

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor,
                weight: torch.Tensor | None = None) -> torch.Tensor:
        if self.lin_neighbours is not None:
            return self.lin(x) + self.lin_neighbours(_propagate(x, edge_index, weight))
        return _propagate(self.lin(x), edge_index, weight)


class GraphGNN(nn.Module):
    """Graph convolutions, a readout of the input and of every layer, and an MLP head.

    Parameters
    ----------
    in_dim, hidden_dim, out_dim : int
        Node feature width, width of every hidden layer, number of classes.
    conv : {"gin", "gcn", "sage"}, default="gin"
        ``"gin"``: :class:`PackedGINConv`; ``"gcn"`` and ``"sage"``:
        :class:`PackedGraphConv` (the activation follows each).
    num_layers : int, default=3
        Graph convolutions, at least 1.
    readout : {"sum", "mean"}, default="sum"
        How the node features and each layer's node rows become one vector per graph
        (:func:`graph_readout`); the readouts are concatenated, the input's first (as in
        GIN: with one-hot node labels, the input's sum readout is the graph's label
        histogram).
    head_layers : int, default=2
        Linear layers of the head on the concatenated readouts, at least 1.
    activation : str, default="relu"
        Activation after every convolution and between the head's linear layers.
    dropout : float, default=0.0
        Dropout between the head's linear layers.
    norm : {"layer", None}, default=None
        ``"layer"``: every convolution's output rows are normalised to zero mean and unit
        variance over their features (layer normalisation without learned scale and
        shift: one node row at a time, so no graph reads another's).

    Notes
    -----
    Shapes: x : (nodes, in_dim), edge_index : (2, edges), sizes : (batch,)  ->
    (batch, out_dim); a padded batch (:meth:`GraphBatches.padded`) adds slots : (batch,),
    and its padding rows change no graph's logits.

    Examples
    --------
    >>> import torch
    >>> model = GraphGNN(3, 8, 2)
    >>> edge_index = torch.tensor([[0, 1, 3], [1, 0, 4]])  # graph 0: nodes 0-2, graph 1: 3-4
    >>> model(torch.randn(5, 3), edge_index, torch.tensor([3, 2])).shape
    torch.Size([2, 2])
    """

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, *, conv: str = "gin",
                 num_layers: int = 3, readout: str = "sum", head_layers: int = 2,
                 activation: str = "relu", dropout: float = 0.0,
                 norm: str | None = None) -> None:
        super().__init__()
        if norm not in NORMS:
            raise ValueError(f"Unknown norm {norm!r}; use one of {NORMS}.")
        if conv not in GRAPH_CONVS:
            raise ValueError(f"Unknown convolution {conv!r}; use one of {GRAPH_CONVS}.")
        if readout not in READOUTS:
            raise ValueError(f"Unknown readout {readout!r}; use one of {READOUTS}.")
        if num_layers < 1:
            raise ValueError(f"GraphGNN: num_layers must be >= 1; got {num_layers}.")
        self.conv_kind, self.readout, self.norm = conv, readout, norm
        widths = [in_dim] + [hidden_dim] * num_layers
        self.convs = nn.ModuleList(
            PackedGINConv(fan_in, fan_out, activation) if conv == "gin"
            else PackedGraphConv(fan_in, fan_out, conv)
            for fan_in, fan_out in zip(widths[:-1], widths[1:]))
        self.activation = make_activation(activation)
        self.head = MLP(in_dim + hidden_dim * num_layers, hidden_dim, out_dim,
                        num_layers=head_layers, activation=activation, dropout=dropout)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, sizes: torch.Tensor,
                slots: torch.Tensor | None = None) -> torch.Tensor:
        edge_index, weight = _edge_weights(edge_index, x.shape[0], self.conv_kind)
        index = _readout_index(sizes, slots)
        h, readouts = x, [_readout(x, index, sizes, self.readout)]
        for conv in self.convs:
            h = conv(h, edge_index, weight)
            if self.conv_kind != "gin":  # GIN's MLP ends with its activation
                h = self.activation(h)
            if self.norm == "layer":
                h = nn.functional.layer_norm(h, h.shape[-1:])
            readouts.append(_readout(h, index, sizes, self.readout))
        return self.head(torch.cat(readouts, dim=-1))

    def row_layers(self) -> list[nn.Linear]:
        """The linear layers that read node rows (each row one graph's), for per-graph
        clipping (see :class:`~skdpgraph.training.ClippedSumModule`)."""
        return [layer for layer in self.convs.modules() if isinstance(layer, nn.Linear)]

    def example_of_rows(self, x: torch.Tensor, edge_index: torch.Tensor, sizes: torch.Tensor,
                        slots: torch.Tensor | None = None) -> torch.Tensor:
        """Each row's graph in the batch (padding rows too: their gradient is zero), for
        per-graph clipping."""
        return _owner(sizes if slots is None else slots)


def graph_cross_entropy(module: nn.Module, batch: tuple) -> tuple[torch.Tensor, torch.Tensor]:
    """Compute the per-graph loss of a packed batch of graphs for ``train_dpsgd``.

    Parameters
    ----------
    module : torch.nn.Module
        The graph model, called as ``module(x, edge_index, sizes)``.
    batch : tuple
        A packed batch ``(x, edge_index, sizes, y)`` or a padded one ``(x, edge_index,
        sizes, slots, y)``, ``y`` the graphs' labels.

    Returns
    -------
    losses : Tensor of shape (batch,)
        The cross-entropy of each graph.
    correct : Tensor of shape (batch,) of bool
        Whether each graph is predicted right.
    """
    *inputs, y = batch
    logits = module(*inputs)
    return torch.nn.functional.cross_entropy(logits, y, reduction="none"), logits.argmax(-1) == y
