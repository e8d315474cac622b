"""A synthetic graph-classification collection whose classes differ in structure.

Node features carry a weak class signal; the strong one is in the edges: graphs of a higher
class are denser. A model that sees only the graphs' feature histograms and sizes (what a
user without a GNN would try) finds the weak signal only, and a GNN that sums over
neighbours reads the density from its first layer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from skdpgraph._random import public_generator
from skdpgraph.datasets._synthetic import _check_number, _class_directions
from skdpgraph.graph import Graph
from skdpgraph.graph_collection import GraphCollection

__all__ = ["make_graph_classification"]


def _one_graph(n_nodes: int, extra_per_node: float, mean: np.ndarray,
               rng: np.random.Generator) -> Graph:
    """A random tree on ``n_nodes`` nodes with about ``extra_per_node * n_nodes`` more edges."""
    child = np.arange(1, n_nodes)
    parent = np.floor(rng.random(n_nodes - 1) * child).astype(np.int64)
    n_extra = int(round(extra_per_node * n_nodes))
    extra = rng.integers(0, n_nodes, size=(2, n_extra))
    extra = extra[:, extra[0] != extra[1]]
    edges = np.hstack([np.vstack([child, parent]), extra])
    # repeats of an edge are merged here, so the Graph receives each edge once
    low, high = np.minimum(edges[0], edges[1]), np.maximum(edges[0], edges[1])
    codes = np.unique(low * n_nodes + high)
    x = mean + rng.standard_normal((n_nodes, mean.shape[0]))
    return Graph(np.vstack([codes // n_nodes, codes % n_nodes]), x)


def make_graph_classification(n_graphs: int = 60, n_classes: int = 2, *,
                              n_nodes: tuple[int, int] = (8, 16), n_features: int = 4,
                              extra_edges: float = 1.0, feature_shift: float = 0.25,
                              random_state: Any = None) -> tuple[GraphCollection, np.ndarray]:
    """Generate a seedable collection of small graphs with one label each.

    Every graph is a uniform random recursive tree (connected, ``n - 1`` edges) with
    ``round(extra_edges * c / (n_classes - 1) * n)`` more random edges for class ``c``
    (repeats merged): class 0 graphs are trees, the last class has about ``extra_edges``
    more edges per node. Node features are ``1 + noise + feature_shift * d_c``: standard
    normal noise, a unit vector ``d_c`` per class, and a common offset of one, so that a
    sum over neighbours carries the degree. Sizes are uniform in ``n_nodes`` for every
    class: the size says nothing about the class.

    Parameters
    ----------
    n_graphs : int, default=60
        Number of graphs; classes are balanced (sizes differ by at most one).
    n_classes : int, default=2
        Number of classes, at least 2.
    n_nodes : tuple of (int, int), default=(8, 16)
        Smallest and largest number of nodes of a graph.
    n_features : int, default=4
        Node feature width.
    extra_edges : float, default=1.0
        Edges per node that the last class has beyond a tree's.
    feature_shift : float, default=0.25
        Length of the class shift of the node features, in noise standard deviations.
    random_state : int, Generator or None, default=None
        Seed; the same seed gives the same collection.

    Returns
    -------
    X : GraphCollection
        The ``n_graphs`` graphs, with their node features.
    y : ndarray of int64 of shape (n_graphs,)
        Class of each graph, 0 to ``n_classes - 1``, in random order.

    Examples
    --------
    >>> from skdpgraph.datasets import make_graph_classification
    >>> X, y = make_graph_classification(n_graphs=6, random_state=0)
    >>> X, sorted(y.tolist())
    (GraphCollection(n_graphs=6, num_features=4), [0, 0, 0, 1, 1, 1])
    """
    _check_number(n_graphs, "n_graphs", 1, integer=True)
    _check_number(n_classes, "n_classes", 2, integer=True)
    _check_number(n_features, "n_features", 1, integer=True)
    _check_number(extra_edges, "extra_edges", 0)
    _check_number(feature_shift, "feature_shift", 0)
    if (not isinstance(n_nodes, tuple) or len(n_nodes) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in n_nodes)
            or not 2 <= n_nodes[0] <= n_nodes[1]):
        raise ValueError("make_graph_classification: n_nodes must be a tuple (smallest, "
                         f"largest) of ints with 2 <= smallest <= largest; got {n_nodes!r}.")
    rng = public_generator(random_state)
    y = rng.permutation(np.arange(n_graphs) % n_classes).astype(np.int64)
    means = 1.0 + feature_shift * _class_directions(n_classes, n_features, rng)
    sizes = rng.integers(n_nodes[0], n_nodes[1] + 1, size=n_graphs)
    graphs = [_one_graph(int(size), extra_edges * label / (n_classes - 1), means[label], rng)
              for size, label in zip(sizes, y)]
    return GraphCollection(graphs), y
