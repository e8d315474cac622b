"""
Privacy-utility curves of every estimator on one graph
======================================================

Every estimator fitted at the same budgets on the same synthetic graph and split. Read
the curves together with the privacy unit each one protects: the same epsilon is a much
weaker promise for one edge (GAP at edge level) than for one node with all its edges
(GAP at node level, FDP), and RGNN's local-DP epsilon (each node randomises its own
data, no trusted server) is on another scale altogether, so it is drawn as a single point
at its default budget. The dashed lines are each estimator's ``epsilon=np.inf`` fit.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split

from skdpgraph import (DPMLPClassifier, DRWClassifier, FDPClassifier, GAPClassifier,
                       RGNNClassifier)
from skdpgraph.datasets import make_csbm

start = time.perf_counter()
data = make_csbm(random_state=0)
X_train, X_test, y_train, y_test = train_test_split(
    data.nodes(), data.y, test_size=0.3, stratify=data.y, random_state=0)

# Each entry: label, privacy unit, and a factory of the estimator at a given epsilon.
# Epochs are shortened for DP-MLP and DRW so that the whole sweep runs in under a minute.
estimators = [
    ("GAP, edge level", "one edge",
     lambda eps: GAPClassifier(epsilon=eps, unit="edge", random_state=0)),
    ("GAP, node level", "one node",
     lambda eps: GAPClassifier(epsilon=eps, unit="node", random_state=0)),
    ("FDP", "one node", lambda eps: FDPClassifier(epsilon=eps, random_state=0)),
    ("DRW", "node attributes",
     lambda eps: DRWClassifier(epsilon=eps, epochs=10, random_state=0)),
    ("DP-MLP", "node attributes",
     lambda eps: DPMLPClassifier(epsilon=eps, epochs=20, random_state=0)),
]
budgets = [1.0, 2.0, 4.0, 8.0]

# %%
# The sweep
# ---------
curves = {}
for label, unit, make in estimators:
    accuracies = [make(eps).fit(X_train, y_train).score(X_test, y_test) for eps in budgets]
    non_private = make(np.inf).fit(X_train, y_train).score(X_test, y_test)
    curves[label] = (unit, accuracies, non_private)
    print(f"{label:16} ({unit}): " + ", ".join(f"{a:.3f}" for a in accuracies)
          + f"; inf: {non_private:.3f}")

rgnn = RGNNClassifier(feature_type="continuous", random_state=0).fit(X_train, y_train)
rgnn_accuracy = rgnn.score(X_test, y_test)
print(f"RGNN (local DP, epsilon {rgnn.epsilon_spent_:g} per node): {rgnn_accuracy:.3f}")

# %%
# One figure, units in the legend
# -------------------------------
fig, ax = plt.subplots(figsize=(7, 4.5))
for (label, (unit, accuracies, non_private)), color in zip(curves.items(),
                                                           plt.cm.tab10.colors):
    ax.plot(budgets, accuracies, "o-", color=color, label=f"{label} ({unit})")
    ax.axhline(non_private, color=color, ls="--", lw=0.8)
ax.plot([budgets[-1]], [rgnn_accuracy], "*", ms=14, color="black",
        label=f"RGNN, local DP (epsilon {rgnn.epsilon_spent_:g}, not to scale)")
ax.set_xscale("log", base=2)
ax.set_xlabel("epsilon")
ax.set_ylabel("test accuracy")
ax.set_title("make_csbm, 700 training nodes")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()
plt.show()
print(f"total time {time.perf_counter() - start:.1f} s")
