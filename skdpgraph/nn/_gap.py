"""GAP's learnable modules: the graph-agnostic encoder and the multi-hop classifier.

Both are built from ``nn.Linear`` only (no BatchNorm), so Opacus computes their
per-example gradients and the same modules serve edge- and node-level training.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from skdpgraph._docstrings import fill_doc, register_fragments
from skdpgraph.nn._dropout import UniformDropout
from skdpgraph.nn._mlp import MLP, make_activation
from skdpgraph.privacy import row_normalize

__all__ = ["GAPEncoder", "GAPClassificationModule", "ProgressiveStage", "embed_nodes",
           "class_probabilities", "class_log_probabilities", "with_known_labels", "stack_hops",
           "hop_inputs"]

_COMBINE = ("cat", "sum", "max")
_CHUNK = 65536  # rows embedded at a time: bounds memory on wide sparse features


class GAPEncoder(nn.Module):
    """MLP on node features with a linear head; its body gives the node embeddings.

    Trained on features and labels only (no edges); ``embed`` is the body's output
    (after the last activation), which PMA aggregates.

    Parameters
    ----------
    in_dim : int
        Width of the node feature rows.
    hidden_dim : int
        Width of the body's layers, hence of the node embeddings.
    num_classes : int
        Number of classes: the width of the linear head's output.
    num_layers : int, default=2
        Linear layers in the body (each followed by the activation).
    activation : str, default="selu"
        Name of the activation after each body layer.
    dropout : float, default=0.0
        Dropout rate between the body's layers and before the head.

    Notes
    -----
    Shapes: x : Tensor of shape (batch, in_dim) -> ``embed``: (batch, hidden_dim); ``forward``:
    (batch, num_classes) logits.

    Examples
    --------
    >>> import torch
    >>> enc = GAPEncoder(5, 8, 3)
    >>> enc.embed(torch.zeros(4, 5)).shape, enc(torch.zeros(4, 5)).shape
    (torch.Size([4, 8]), torch.Size([4, 3]))
    """

    def __init__(self, in_dim: int, hidden_dim: int, num_classes: int, *, num_layers: int = 2,
                 activation: str = "selu", dropout: float = 0.0) -> None:
        super().__init__()
        self.body = MLP(in_dim, hidden_dim, hidden_dim, num_layers=num_layers,
                        activation=activation, dropout=dropout, activate_last=True)
        self.dropout = UniformDropout(dropout)
        self.head = nn.Linear(hidden_dim, num_classes)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.dropout(self.embed(x)))


class GAPClassificationModule(nn.Module):
    """Per-hop linear layers, a combination, then an MLP head.

    .. math::

        h = \\mathrm{act}\\big(\\mathrm{combine}_k(W_k \\bar x_k + b_k)\\big), \\quad
        \\text{logits} = \\mathrm{head}(h), \\quad k = 0..K,

    with ``combine`` a concatenation (row-normalised), a sum or an element-wise max.

    Parameters
    ----------
    hidden_dim : int
        Width of the per-hop layers' outputs (and of the hop embeddings by default).
    num_classes : int
        Number of classes: the width of the head's output.
    hops : int
        K; the input has K + 1 hop embeddings (hop 0 is the node's own embedding).
    combine : {"cat", "sum", "max"}, default="cat"
        How the per-hop outputs are combined.
    activation : str, default="selu"
        Name of the activation after the combination and between the head's layers.
    dropout : float, default=0.0
        Dropout rate before the head and between its layers.
    head_layers : int, default=1
        Linear layers in the MLP head.
    in_dim : int, default=None
        Width of each hop's input row (:func:`stack_hops` pads narrower rows with zeros);
        None: ``hidden_dim``.

    Notes
    -----
    Shapes: x : Tensor of shape (batch, hops + 1, in_dim) -> (batch, num_classes)

    Examples
    --------
    >>> import torch
    >>> GAPClassificationModule(8, 3, hops=2)(torch.zeros(4, 3, 8)).shape
    torch.Size([4, 3])
    """

    def __init__(self, hidden_dim: int, num_classes: int, *, hops: int, combine: str = "cat",
                 activation: str = "selu", dropout: float = 0.0, head_layers: int = 1,
                 in_dim: int | None = None) -> None:
        super().__init__()
        if combine not in _COMBINE:
            raise ValueError(f"GAPClassificationModule: combine must be one of {_COMBINE}; "
                             f"got {combine!r}.")
        self.combine = combine
        self.hop_layers = nn.ModuleList(nn.Linear(in_dim or hidden_dim, hidden_dim)
                                        for _ in range(hops + 1))
        width = hidden_dim * (hops + 1) if combine == "cat" else hidden_dim
        self.activation = make_activation(activation)
        self.dropout = UniformDropout(dropout)
        self.head = MLP(width, hidden_dim, num_classes, num_layers=head_layers,
                        activation=activation, dropout=dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hops = [layer(x[:, k]) for k, layer in enumerate(self.hop_layers)]
        if self.combine == "cat":
            h = torch.cat(hops, dim=-1)
            h = row_normalize(h)
        elif self.combine == "sum":
            h = torch.stack(hops, dim=0).sum(dim=0)
        else:
            h = torch.stack(hops, dim=0).max(dim=0).values
        return self.head(self.dropout(self.activation(h)))


class ProgressiveStage(nn.Module):
    """One ProGAP stage after the first: GAP's classification module on the parts so far.

    The input holds ``parts`` rows per node: the node's own first-stage embedding and the
    noisy aggregations released by the stages before. Without ``embedding`` the stage is
    a :class:`GAPClassificationModule` over those parts, whose class probabilities the next
    stage aggregates. With ``embedding=True`` (for aggregating embeddings) that module
    outputs ``hidden_dim`` values and a linear head follows; :meth:`embed` is their
    activation, which the next stage aggregates.

    Parameters
    ----------
    hidden_dim : int
        Width of the classification module's per-hop layers (and of the embedding).
    num_classes : int
        Number of classes: the width of the stage's output.
    parts : int
        Rows per node in the input (stage ``i`` reads ``i + 1``).
    combine : {"cat", "sum", "max"}, default="cat"
        How the per-part outputs are combined (see :class:`GAPClassificationModule`).
    activation : str, default="selu"
        Name of the activation in the classification module (and before the head with
        ``embedding=True``).
    dropout : float, default=0.0
        Dropout rate in the classification module (and before the head with
        ``embedding=True``).
    in_dim : int, default=None
        Width of the input rows; None: ``hidden_dim``.
    embedding : bool, default=False
        Give the stage an embedding layer before its head.

    Notes
    -----
    Shapes: x : Tensor of shape (batch, parts, in_dim) -> ``forward``: (batch, num_classes)
    logits; ``embed`` (with ``embedding=True``): (batch, hidden_dim).

    Examples
    --------
    >>> import torch
    >>> ProgressiveStage(8, 3, parts=2)(torch.zeros(4, 2, 8)).shape
    torch.Size([4, 3])
    >>> stage = ProgressiveStage(8, 3, parts=2, embedding=True)
    >>> stage.embed(torch.zeros(4, 2, 8)).shape, stage(torch.zeros(4, 2, 8)).shape
    (torch.Size([4, 8]), torch.Size([4, 3]))
    """

    def __init__(self, hidden_dim: int, num_classes: int, *, parts: int, combine: str = "cat",
                 activation: str = "selu", dropout: float = 0.0, in_dim: int | None = None,
                 embedding: bool = False) -> None:
        super().__init__()
        self.mix = GAPClassificationModule(hidden_dim, hidden_dim if embedding else num_classes,
                                           hops=parts - 1, combine=combine,
                                           activation=activation, dropout=dropout, in_dim=in_dim)
        self.head = (nn.Sequential(make_activation(activation), UniformDropout(dropout),
                                   nn.Linear(hidden_dim, num_classes)) if embedding else None)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        if self.head is None:
            raise RuntimeError("ProgressiveStage: embed needs a stage built with embedding=True.")
        return self.head[0](self.mix(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mixed = self.mix(x)  # the class logits, or the embedding layer's input
        return mixed if self.head is None else self.head(mixed)


def embed_nodes(encoder: GAPEncoder, graph: Any, index: Any = None) -> torch.Tensor:
    """Embed the nodes ``index`` as row-normalised rows ``rownorm(encoder.embed(x))``.

    The feature rows are read in chunks, so wide sparse features are never densified all
    at once; the embeddings are computed without gradients.

    Parameters
    ----------
    encoder : GAPEncoder
        The trained encoder whose body gives the embeddings.
    graph : Graph
        The :class:`~skdpgraph.graph.Graph` whose feature rows are embedded.
    index : array-like of int, default=None
        Positions of the nodes to embed; None: all nodes.

    Returns
    -------
    embeddings : Tensor of shape (n, hidden_dim)
        The row-normalised embeddings, on the CPU, one row per node of ``index``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph import Graph
    >>> graph = Graph([[0], [1]], np.ones((2, 5)))
    >>> out = embed_nodes(GAPEncoder(5, 8, 3), graph)
    >>> out.shape, bool(torch.allclose(out.norm(dim=-1), torch.ones(2)))
    (torch.Size([2, 8]), True)
    """
    return row_normalize(_on_features(encoder.embed, graph, index))


def _on_features(function, graph: Any, index: Any = None) -> torch.Tensor:
    """``function`` (a module or its method) on the feature rows of ``index`` (all nodes if
    None), ``_CHUNK`` rows at a time on the module's device, without gradients; on the CPU."""
    index = np.arange(graph.num_nodes) if index is None else np.asarray(index, dtype=np.int64)
    module = getattr(function, "__self__", function)
    device = next(module.parameters()).device
    with torch.no_grad():
        parts = [function(torch.from_numpy(graph.features(chunk)).to(device)).cpu()
                 for chunk in np.array_split(index, range(_CHUNK, len(index), _CHUNK))]
    return torch.cat(parts)


register_fragments(encoder_and_graph="""
    encoder : GAPEncoder
        The trained encoder whose head gives the class logits.
    graph : Graph
        The :class:`~skdpgraph.graph.Graph` whose nodes are classified.""")


@fill_doc
def class_probabilities(encoder: GAPEncoder, graph: Any) -> torch.Tensor:
    """Compute every node's class probabilities ``softmax(encoder(x))`` without gradients.

    Feature rows are read in chunks as in :func:`embed_nodes`.

    Parameters
    ----------
    {{encoder_and_graph}}

    Returns
    -------
    probabilities : Tensor of shape (num_nodes, num_classes)
        The class probabilities, on the CPU.
    """
    return _on_features(encoder, graph).softmax(-1)


@fill_doc
def class_log_probabilities(encoder: GAPEncoder, graph: Any, index: Any = None) -> torch.Tensor:
    """Compute ``log_softmax(encoder(x))`` of the nodes ``index`` without gradients.

    Feature rows are read in chunks as in :func:`embed_nodes`.

    Parameters
    ----------
    {{encoder_and_graph}}
    index : array-like of int, default=None
        Positions of the nodes to classify; None: all nodes.

    Returns
    -------
    log_probabilities : Tensor of shape (len(index), num_classes)
        The class log-probabilities, on the CPU.
    """
    return _on_features(encoder, graph, index).log_softmax(-1)


def with_known_labels(probabilities: torch.Tensor,
                      labelled: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
    """Row-normalise class probabilities, with one-hot labels in place of the known nodes' rows.

    Parameters
    ----------
    probabilities : Tensor of shape (n, num_classes)
        Each node's class probabilities; not modified.
    labelled : (index, labels) or None
        Positions of the nodes whose labels are known and their labels (class indices).

    Returns
    -------
    rows : Tensor of shape (n, num_classes)
        The row-normalised rows, the known nodes' rows one-hot.

    Examples
    --------
    >>> import torch
    >>> rows = with_known_labels(torch.full((2, 2), 0.5), (torch.tensor([1]), torch.tensor([0])))
    >>> [[round(v, 4) for v in row] for row in rows.tolist()]
    [[0.7071, 0.7071], [1.0, 0.0]]
    """
    rows = probabilities.clone()
    if labelled is not None:
        index, labels = labelled
        rows[index.to(rows.device)] = nn.functional.one_hot(
            labels.long(), rows.shape[1]).to(rows.device, rows.dtype)
    return row_normalize(rows)


def stack_hops(own: torch.Tensor, aggregations: torch.Tensor) -> torch.Tensor:
    """Stack each node's own row, then its K aggregation rows, into ``(n, K + 1, width)``.

    Rows narrower than the widest (class-probability aggregations next to wider
    embeddings, or the reverse) are padded with zeros, on which a hop layer's weights
    never train.

    Parameters
    ----------
    own : Tensor of shape (n, d_own)
        Each node's own row (hop 0).
    aggregations : Tensor of shape (n, K, d_agg)
        Each node's K aggregation rows.

    Returns
    -------
    hops : Tensor of shape (n, K + 1, max(d_own, d_agg))
        The own row then the aggregation rows, zero-padded to the widest.
    """
    width = max(own.shape[-1], aggregations.shape[-1])
    own = nn.functional.pad(own, (0, width - own.shape[-1]))
    aggregations = nn.functional.pad(aggregations, (0, width - aggregations.shape[-1]))
    return torch.cat([own.unsqueeze(1), aggregations], dim=1)


def hop_inputs(encoder: GAPEncoder, nodes: Any, aggregations: torch.Tensor) -> torch.Tensor:
    """Build the classifier inputs of ``nodes``: own embedding, then its K aggregation rows.

    Parameters
    ----------
    encoder : GAPEncoder
        The trained encoder that embeds the query nodes (see :func:`embed_nodes`).
    nodes : Nodes
        The query nodes (a :class:`~skdpgraph.graph.Nodes` view of a graph).
    aggregations : Tensor of shape (num_nodes, K, d)
        The PMA output on ``nodes.graph`` (d: the embedding width, or the number of classes
        when class probabilities were aggregated).

    Returns
    -------
    Tensor of shape (len(nodes), K + 1, max(hidden_dim, d))
        See :func:`stack_hops`.
    """
    index = torch.from_numpy(np.array(nodes.index, dtype=np.int64))
    return stack_hops(embed_nodes(encoder, nodes.graph, nodes.index), aggregations[index])
