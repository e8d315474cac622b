"""
Training on a GPU
=================

Every estimator takes ``device``: ``"auto"`` (the default) trains on the GPU when PyTorch
sees one and on the CPU otherwise, ``"cpu"`` and ``"cuda"`` force a choice, and the
device used is stored in ``device_``. The noise is drawn by a generator on that device,
so CPU and GPU fits with the same ``random_state`` differ; the privacy accounting does not
depend on the device.

The fitted model is moved to the CPU at the end of ``fit``: it pickles after GPU training
and loads on a machine without one. This example times the same fit on each
available device and round-trips the model through ``joblib``. Install a CUDA build of
PyTorch to see the GPU bar; on a CPU-only machine the figure shows the CPU alone.
"""

import io
import time

import joblib
import matplotlib.pyplot as plt
import torch
from sklearn.model_selection import train_test_split

from skdpgraph import GAPClassifier
from skdpgraph.datasets import make_csbm

data = make_csbm(n_nodes=5000, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(
    data.nodes(), data.y, test_size=0.3, stratify=data.y, random_state=0)

devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
print("CUDA available:", torch.cuda.is_available())

# %%
# The same node-level fit on each device
# --------------------------------------
# The first fit on a device pays one-time start-up costs (CUDA context, kernels), so
# each device gets an untimed warm-up fit.
seconds = {}
for device in devices:
    GAPClassifier(epsilon=8.0, unit="node", epochs=1, device=device,
                  random_state=0).fit(X_train, y_train)
    start = time.perf_counter()
    clf = GAPClassifier(epsilon=8.0, unit="node", device=device,
                        random_state=0).fit(X_train, y_train)
    seconds[device] = time.perf_counter() - start
    print(f"{device}: fit {seconds[device]:.1f} s on {clf.device_}, "
          f"accuracy {clf.score(X_test, y_test):.3f}, epsilon {clf.epsilon_spent_:.3f}")

# %%
# Pickle after GPU training, load anywhere
# ----------------------------------------
buffer = io.BytesIO()
joblib.dump(clf, buffer)
buffer.seek(0)
loaded = joblib.load(buffer)
print(f"reloaded model trained on {loaded.device_}: accuracy {loaded.score(X_test, y_test):.3f}")

# %%
# Fit time per device
# -------------------
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.bar(list(seconds), list(seconds.values()), color=["tab:blue", "tab:green"][:len(seconds)])
ax.set_ylabel("fit time (s)")
ax.set_title("GAPClassifier, node level, 5000 nodes")
fig.tight_layout()
plt.show()
