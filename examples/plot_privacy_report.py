"""
Reading ``privacy_`` and the releases
=====================================

After ``fit``, ``clf.privacy_`` is a frozen :class:`~skdpgraph.privacy.PrivacyReport`: the
privacy unit, the neighbouring relation, epsilon and delta of the training run, the
accountant, the composed mechanisms, the assumptions the guarantee rests on, what
``predict`` reveals, and what is *not* covered.

Some predictions are new private releases. GAP computes noisy aggregations of the graph;
predicting on the training graph (or any graph with the same content) reuses those, at
no cost, but predicting on another graph needs fresh aggregations with fresh noise. Each
such release is appended to ``privacy_.releases``, and ``privacy_.total_epsilon`` bounds
everything the estimator has given back so far.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split

from skdpgraph import GAPClassifier, Graph
from skdpgraph.datasets import make_csbm

data = make_csbm(random_state=0)
X_train, X_test, y_train, y_test = train_test_split(
    data.nodes(), data.y, test_size=0.3, stratify=data.y, random_state=0)
clf = GAPClassifier(epsilon=4.0, random_state=0).fit(X_train, y_train)

# %%
# The report of the training run
# ------------------------------
report = clf.privacy_
print(f"unit:       {report.unit}")
print(f"relation:   {report.neighbouring_relation}")
print(f"epsilon:    {report.epsilon:g}, delta: {report.delta:.2e}")
print(f"accountant: {report.accountant}")
print(f"mechanism:  {report.mechanism}")
print(f"inference:  {report.inference}")
print("assumptions:", *report.assumptions, sep="\n  - ")
print("not covered:", *report.not_covered, sep="\n  - ")

# %%
# Predictions and releases
# ------------------------
# Test nodes of the training graph: the cached aggregations, no new release. Then two
# later snapshots of the graph, in which some edges have gone: each is a new graph, so
# one release each. Asking again about a graph already released reuses its release.
totals = [("fit", clf.privacy_.total_epsilon)]
print(f"accuracy on the training graph: {clf.score(X_test, y_test):.3f}")
totals.append(("predict, training graph", clf.privacy_.total_epsilon))
rng = np.random.default_rng(0)
for month in (1, 2):
    edges = data.graph.edge_index[:, data.graph.edge_index[0] < data.graph.edge_index[1]]
    snapshot = Graph(edges[:, rng.random(edges.shape[1]) < 0.9], data.graph.x)  # 10% gone
    accuracy = clf.score(snapshot.nodes(X_test.index), y_test)
    print(f"accuracy on snapshot {month} ({snapshot.num_edges // 2} edges): {accuracy:.3f}")
    totals.append((f"predict, snapshot {month}", clf.privacy_.total_epsilon))
clf.predict(snapshot.nodes(X_test.index))
totals.append(("snapshot 2 again", clf.privacy_.total_epsilon))

for release in clf.privacy_.releases:
    print({key: release[key] for key in ("kind", "epsilon", "delta")})
print(f"total epsilon {clf.privacy_.total_epsilon:g}, total delta "
      f"{clf.privacy_.total_delta:.2e} (basic composition)")

# %%
# The budget used up by predictions
# ---------------------------------
labels, values = zip(*totals)
fig, ax = plt.subplots(figsize=(7, 3.8))
ax.step(np.arange(len(values)), values, where="post", marker="o")
ax.set_xticks(np.arange(len(values)), labels, rotation=20, ha="right")
ax.set_ylabel("privacy_.total_epsilon")
ax.set_ylim(0, max(values) * 1.15)
ax.set_title("GAP (edge level): each new graph is a new release")
fig.tight_layout()
plt.show()
