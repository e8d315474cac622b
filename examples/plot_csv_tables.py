"""
Your own graph from CSV tables
==============================

Real graphs usually arrive as tables: one file of edges, one of node features, one of
labels, with node ids that may be strings. Two ways to read them:

* :func:`skdpgraph.datasets.load_edge_list_csv` reads the three files directly and
  returns a :class:`~skdpgraph.datasets.GraphDataset` (labels coded, unlabelled nodes
  marked ``-1``, the original ids kept);
* :meth:`skdpgraph.Graph.from_pandas` builds the graph from data frames you have already
  cleaned;
* the ``skdpgraph`` command trains, predicts and evaluates on the tables without Python
  (the last section, and :ref:`command_line`).

To stay self-contained, the example first writes a synthetic graph to CSV files in a
temporary folder, with string ids and with a third of the labels missing.
"""

import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.metrics import ConfusionMatrixDisplay
from sklearn.model_selection import train_test_split

from skdpgraph import GAPClassifier, Graph
from skdpgraph.datasets import load_edge_list_csv, make_csbm

folder = Path(tempfile.mkdtemp())
source = make_csbm(n_nodes=600, random_state=0)
ids = np.array([f"user{i:04d}" for i in range(source.graph.num_nodes)])
names = np.array(["art", "music", "sport", "travel"])

features = [f"f{j}" for j in range(source.graph.num_features)]
nodes_table = pd.DataFrame(source.graph.x, columns=features)
nodes_table.insert(0, "id", ids)
nodes_table.to_csv(folder / "nodes.csv", index=False)
# The graph stores both directions of each undirected edge; the file lists each edge once.
source_ids, target_ids = source.graph.edge_index[:, source.graph.edge_index[0]
                                                 < source.graph.edge_index[1]]
edges_table = pd.DataFrame({"source": ids[source_ids], "target": ids[target_ids]})
edges_table.to_csv(folder / "edges.csv", index=False)
labelled = np.random.default_rng(0).random(len(ids)) < 2 / 3
pd.DataFrame({"id": ids[labelled], "interest": names[source.y[labelled]]}).to_csv(
    folder / "labels.csv", index=False)
print(sorted(p.name for p in folder.iterdir()))
print(edges_table.head(3))

# %%
# Read the files
# --------------
# Columns are chosen by name (``header=True``); every other column of the node file is a
# feature. Nodes without a label row get ``-1``.
data = load_edge_list_csv(folder / "edges.csv", folder / "nodes.csv", folder / "labels.csv",
                          source_column="source", target_column="target", id_column="id",
                          label_column="interest")
print(data)
print("classes:", data.class_names, "| unlabelled nodes:", int((data.y == -1).sum()))

# %%
# Train on the labelled nodes
# ---------------------------
# The unlabelled nodes stay in the graph: GAP aggregates over them.
labelled_ids = np.flatnonzero(data.y >= 0)
X_train, X_test, y_train, y_test = train_test_split(
    data.graph.nodes(labelled_ids), data.y[labelled_ids], test_size=0.3,
    stratify=data.y[labelled_ids], random_state=0)
clf = GAPClassifier(epsilon=4.0, random_state=0).fit(X_train, y_train)
print(f"test accuracy {clf.score(X_test, y_test):.3f} at epsilon {clf.epsilon_spent_:g} "
      f"({clf.privacy_.unit})")

# %%
# The same graph from data frames
# -------------------------------
# ``Graph.from_pandas`` takes the node table (row order is the numbering) and the edge
# table; ids are matched by value. It numbers the nodes in table order, while the loader
# sorted the string ids, which here is the same order.
graph = Graph.from_pandas(pd.read_csv(folder / "nodes.csv"), pd.read_csv(folder / "edges.csv"))
print(graph.num_nodes, graph.num_edges, np.array_equal(graph.x, data.graph.x))

# %%
# The same tables on the command line
# -----------------------------------
# The ``skdpgraph`` command reads one node table with a label column (empty cells are
# unlabelled nodes) and, here, a split column that says which labelled rows to train on
# and which to score:
table = nodes_table.merge(pd.read_csv(folder / "labels.csv"), on="id", how="left")
table["split"] = np.select([np.isin(table["id"], data.node_ids[X_train.index]),
                            table["interest"].notna()], ["train", "test"], "")
table.to_csv(folder / "nodes_labelled.csv", index=False)
print(table[["id", "f0", "interest", "split"]].head(3))

# %%
# Then, in a shell (``--estimator gap`` is :class:`~skdpgraph.GAPClassifier`, as above;
# ``dpmlp``, ``drw``... name the others):
#
# .. code-block:: bash
#
#    skdpgraph fit --nodes nodes_labelled.csv --edges edges.csv --label-column interest \
#        --split-column split --estimator gap --epsilon 4 \
#        --model model.joblib --report-json fit-report.json
#    skdpgraph predict --nodes nodes_labelled.csv --edges edges.csv --label-column interest \
#        --model model.joblib --output predictions.csv
#    skdpgraph evaluate --nodes nodes_labelled.csv --edges edges.csv --label-column interest \
#        --split-column split --model model.joblib --report-json evaluate-report.json
#
# ``fit`` prints the privacy report and saves the model; ``predict`` writes each unlabelled
# node's id, predicted class and class probabilities; ``evaluate`` prints the accuracy on
# the ``test`` rows. On the graph the model was fitted on, the fit's paid release is
# reused; a new graph is a new release, recorded in the model file's privacy report
# (``--report-json`` writes it as JSON).

# %%
# Predictions per class
# ---------------------
# ``y`` holds label codes; ``class_names`` maps them back to the labels of the file.
class_names = np.asarray(data.class_names)
fig, ax = plt.subplots(figsize=(5, 4.5))
ConfusionMatrixDisplay.from_predictions(class_names[y_test], class_names[clf.predict(X_test)],
                                        ax=ax, colorbar=False)
ax.set_title("GAP (edge level, epsilon = 4) on CSV tables")
fig.tight_layout()
plt.show()
shutil.rmtree(folder)
