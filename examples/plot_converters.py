"""
From PyTorch Geometric and networkx
===================================

A graph already loaded in another library converts in one call:
:meth:`skdpgraph.Graph.from_pyg` takes a ``torch_geometric.data.Data`` with ``x`` and
``edge_index``; :meth:`skdpgraph.Graph.from_networkx` takes a networkx graph and features
given as an array or read from a node attribute. ``Graph.nodes(mask)`` then turns PyG's
boolean masks (or any index) into the node sets that estimators take as ``X``.
"""

import matplotlib.pyplot as plt
import networkx as nx
import numpy as np
import torch
from torch_geometric.data import Data

from skdpgraph import GAPClassifier, Graph
from skdpgraph.datasets import make_csbm

# %%
# A PyG ``Data`` object with masks
# --------------------------------
# Here the ``Data`` is built from a synthetic graph; with a PyG dataset use its ``data``.
source = make_csbm(n_nodes=600, random_state=0)
train_mask = torch.from_numpy(np.random.default_rng(0).random(600) < 0.5)
data = Data(x=torch.tensor(source.graph.x), edge_index=torch.tensor(source.graph.edge_index),
            y=torch.tensor(source.y), train_mask=train_mask, test_mask=~train_mask)

# ``directed=None`` (the default) asks PyG whether every edge is stored both ways.
graph = Graph.from_pyg(data)
print(graph.num_nodes, graph.num_edges, "directed" if graph.directed else "undirected")
y, train, test = data.y.numpy(), data.train_mask.numpy(), data.test_mask.numpy()
clf = GAPClassifier(epsilon=4.0, random_state=0).fit(graph.nodes(train), y[train])
print(f"PyG graph: test accuracy {clf.score(graph.nodes(test), y[test]):.3f}")

# %%
# A networkx graph
# ----------------
# Zachary's karate club: 34 members, the club each joined after the split as label. It
# has no features, so each node gets its row of the identity matrix: the edges carry all
# the signal, and edge-level privacy hides each friendship.
G = nx.karate_club_graph()
clubs = np.array([G.nodes[v]["club"] == "Officer" for v in G.nodes], dtype=int)
karate = Graph.from_networkx(G, x=np.eye(G.number_of_nodes()))
train = np.random.default_rng(1).permutation(34)[:12]
test = np.setdiff1d(np.arange(34), train)
gap = GAPClassifier(epsilon=8.0, random_state=0).fit(karate.nodes(train), clubs[train])
predicted = gap.predict(karate.nodes(np.arange(34)))
accuracy = gap.score(karate.nodes(test), clubs[test])
print(f"karate club: accuracy on the 22 other members {accuracy:.3f}")

# %%
# Predicted clubs, training members outlined
# -------------------------------------------
fig, ax = plt.subplots(figsize=(6, 5))
layout = nx.spring_layout(G, seed=0)
nx.draw_networkx_edges(G, layout, ax=ax, alpha=0.3)
nx.draw_networkx_nodes(G, layout, ax=ax, node_color=predicted, cmap="coolwarm",
                       edgecolors=["black" if v in train else "none" for v in G.nodes],
                       linewidths=2)
ax.set_title("Karate club: GAP at edge level (epsilon = 8)")
ax.axis("off")
fig.tight_layout()
plt.show()
