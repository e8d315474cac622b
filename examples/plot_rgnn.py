"""
RGNN: local DP, the data never leaves the device unrandomised
=============================================================

:class:`~skdpgraph.RGNNClassifier` works under *local* differential privacy: each node
randomises its own features (GRR-FS on ``m`` sampled features) and each training node
its label (generalised randomised response) before anything is collected. The server
sees only the reports; it reconstructs neighbourhood feature and label frequencies over
the public graph and trains a graph network with a label-proportion loss.

Its epsilon is per node and needs no trust in the server, so it is not comparable with
the central-DP estimators' epsilon. This example fits it with its default budget and
compares it with a non-private model trained on the raw data.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import ConfusionMatrixDisplay
from sklearn.model_selection import train_test_split

from skdpgraph import DPMLPClassifier, RGNNClassifier
from skdpgraph.datasets import make_csbm

data = make_csbm(random_state=0)
X_train, X_test, y_train, y_test = train_test_split(
    data.nodes(), data.y, test_size=0.3, stratify=data.y, random_state=0)

# %%
# Fit with the default budget
# ---------------------------
# By default every node spends epsilon_x on each of m = 10 sampled features and
# epsilon_y on its label: ``epsilon_spent_`` is m * epsilon_x + epsilon_y per node.
# CSBM features are continuous: the public schema says so (``feature_type``), and each
# feature is cut into 4 bins over the public ``feature_range``.
rgnn = RGNNClassifier(feature_type="continuous", random_state=0).fit(X_train, y_train)
print(f"RGNN accuracy {rgnn.score(X_test, y_test):.3f}, "
      f"epsilon_spent_ = {rgnn.epsilon_spent_:g} per node ({rgnn.privacy_.unit})")
print(rgnn.privacy_.mechanism)

reference = DPMLPClassifier(epsilon=np.inf, random_state=0).fit(X_train, y_train)
print(f"non-private MLP on the raw features: {reference.score(X_test, y_test):.3f}")

# %%
# Predictions under local DP
# --------------------------
# ``predict`` on the training graph reuses the reconstruction made in ``fit``; on another
# graph it is a new randomised collection, recorded in ``privacy_.releases``.
fig, ax = plt.subplots(figsize=(5, 4.5))
ConfusionMatrixDisplay.from_predictions(y_test, rgnn.predict(X_test), ax=ax, colorbar=False)
ax.set_title(f"RGNN, local DP (epsilon = {rgnn.epsilon_spent_:g} per node)")
fig.tight_layout()
plt.show()
