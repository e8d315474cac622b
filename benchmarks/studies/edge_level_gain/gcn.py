"""The plain non-private GCN anchor: two PyG ``GCNConv`` layers, Kipf and Welling's settings.

Hidden width 64 (or 16, the paper's), ReLU, dropout 0.5, Adam (lr 0.01, weight decay
5e-4), 200 full-batch epochs on the training nodes, the epoch of best validation accuracy
kept. Features are row-normalised as in the paper (``normalize=False`` feeds the raw rows
the estimators see). Sparse feature rows stay sparse: the first layer's product with the
features and its weight gradient are CSR products (:class:`_CSRLinear`: the same map and
gradient as ``GCNConv``'s own linear map, whose backward on CSR input is slow).
"""

import time

import numpy as np
import torch


class _CSRProduct(torch.autograd.Function):
    """``x @ weight.T`` for a fixed CSR ``x``; the weight gradient by the CSR ``x.T``."""

    @staticmethod
    def forward(ctx, weight, x, transposed):
        ctx.transposed = transposed
        return torch.sparse.mm(x, weight.t())

    @staticmethod
    def backward(ctx, grad):
        return torch.sparse.mm(ctx.transposed, grad).t(), None, None


class _CSRLinear(torch.nn.Module):
    """``GCNConv``'s linear map (no bias) on the fixed sparse features ``x``.

    Parameters
    ----------
    weight : Parameter of shape (out, in)
        The layer's own weight, kept (the optimiser updates it as before).
    x : sparse CSR Tensor of shape (n, in)
        The features every call multiplies, whatever it is given.
    """

    def __init__(self, weight, x):
        super().__init__()
        self.weight, self.x = weight, x
        self.transposed = x.to_sparse_coo().t().coalesce().to_sparse_csr()

    def forward(self, _):
        return _CSRProduct.apply(self.weight, self.x, self.transposed)


def _tensors(graph, normalize):
    """Features (a sparse CSR tensor where the graph's are sparse) and the edge index."""
    import scipy.sparse as sp

    x = graph.x if sp.issparse(graph.x) else sp.csr_matrix(graph.features())
    x = sp.csr_matrix(x, dtype=np.float32)
    if normalize:
        sums = np.asarray(x.sum(axis=1)).ravel()
        x = sp.diags(1.0 / np.where(sums == 0, 1.0, sums)).astype(np.float32) @ x
        x = sp.csr_matrix(x, dtype=np.float32)
    features = torch.sparse_csr_tensor(
        torch.from_numpy(x.indptr.astype(np.int64)), torch.from_numpy(x.indices.astype(np.int64)),
        torch.from_numpy(x.data), size=x.shape)
    return features, torch.from_numpy(np.asarray(graph.edge_index, dtype=np.int64))


def fit_gcn(graph, y, split, seed, *, hidden=64, epochs=200, normalize=True):
    """Fit the anchor on ``split["train"]`` and score the kept epoch.

    Parameters
    ----------
    graph : Graph
        The whole graph (transductive, as Kipf and Welling).
    y : ndarray of shape (num_nodes,)
        Every node's label (only the training nodes' enter the loss).
    split : dict
        ``"train"``, ``"val"`` and ``"test"`` node ids.
    seed : int
        Seed of the initialisation and dropout.
    hidden : int, default=64
        Width of the hidden layer.
    epochs : int, default=200
        Full-batch Adam steps.
    normalize : bool, default=True
        Row-normalise the features first.

    Returns
    -------
    dict
        ``test_accuracy`` and ``val_accuracy`` at the kept epoch, ``best_epoch`` and
        ``fit_seconds``.
    """
    from torch_geometric.nn import GCNConv

    torch.manual_seed(seed)
    start = time.perf_counter()
    x, edge_index = _tensors(graph, normalize)
    labels = torch.from_numpy(np.asarray(y, dtype=np.int64))
    parts = {k: torch.from_numpy(np.asarray(split[k], dtype=np.int64)) for k in split}
    convs = torch.nn.ModuleList([GCNConv(x.shape[1], hidden),
                                 GCNConv(hidden, int(labels.max()) + 1)])
    convs[0].lin = _CSRLinear(convs[0].lin.weight, x)
    optimizer = torch.optim.Adam(convs.parameters(), lr=0.01, weight_decay=5e-4)

    def forward(training):
        h = torch.relu(convs[0](x, edge_index))
        h = torch.nn.functional.dropout(h, 0.5, training)
        return convs[1](h, edge_index)

    best = (-1.0, 0, None)
    for epoch in range(epochs):
        convs.train()
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(forward(True)[parts["train"]],
                                          labels[parts["train"]]).backward()
        optimizer.step()
        with torch.no_grad():
            predicted = forward(False).argmax(1)
        accuracy = {k: float((predicted[v] == labels[v]).float().mean()) for k, v in parts.items()}
        if accuracy["val"] > best[0]:
            best = (accuracy["val"], epoch, accuracy)
    return {"test_accuracy": best[2]["test"], "val_accuracy": best[2]["val"],
            "best_epoch": best[1], "fit_seconds": time.perf_counter() - start}
