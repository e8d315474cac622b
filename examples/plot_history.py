"""
Training curves from ``history_``
=================================

Every fitted estimator keeps ``history_``: one record per epoch with the keys ``stage``,
``epoch``, ``loss``, ``train_accuracy``, ``validation_accuracy`` (None without a
validation split) and ``epsilon``, the budget spent so far according to the accountant
(an upper bound; without a progress bar, the accountant's cheaper bound on the integer
RDP orders, capped by the fit's epsilon, which the last epoch shows).
``pandas.DataFrame(clf.history_)`` turns it into one table.

By default ``history_`` keeps only what the guarantee covers: the loss and training
accuracy, computed without noise on the private training nodes, are None. Passing
``private_diagnostics=True`` keeps them, and ``privacy_.not_covered`` then says they are
**not** covered: use them to debug and tune on data you may look at, and do not publish
them.

GAP at node level with its trained head (``head="trained"``, the GAP paper's; the default
vote head trains only the encoder) trains in two stages, an encoder and then a classifier,
both with DP-SGD; the epsilon column shows the budget being used up across both and the
noisy aggregation between them, and the last epoch shows ``epsilon_spent_``.
"""

import matplotlib.pyplot as plt
import pandas as pd
from sklearn.model_selection import train_test_split

from skdpgraph import DPMLPClassifier, GAPClassifier
from skdpgraph.datasets import make_csbm

data = make_csbm(random_state=0)
X_train, X_test, y_train, y_test = train_test_split(
    data.nodes(), data.y, test_size=0.3, stratify=data.y, random_state=0)

gap = GAPClassifier(epsilon=8.0, unit="node", head="trained", epochs=20,
                    random_state=0).fit(X_train, y_train)

# %%
# What the fitted estimator keeps by default
# ------------------------------------------
# The running epsilon; the loss and training accuracy are None.
print(pd.DataFrame(gap.history_).groupby("stage", sort=False).tail(2).to_string())
print("epsilon_spent_:", gap.epsilon_spent_)

# %%
# Noise-free diagnostics, asked for
# ---------------------------------
# The same fits with ``private_diagnostics=True``: the loss and training accuracy are
# kept, and stated as not covered.
gap = GAPClassifier(epsilon=8.0, unit="node", head="trained", epochs=20,
                    random_state=0, private_diagnostics=True).fit(X_train, y_train)
mlp = DPMLPClassifier(epsilon=8.0, epochs=40, random_state=0,
                      private_diagnostics=True).fit(X_train, y_train)
gap_history = pd.DataFrame(gap.history_)
mlp_history = pd.DataFrame(mlp.history_)
print(gap_history.groupby("stage", sort=False).tail(2).to_string())
print("not covered:", gap.privacy_.not_covered)

# %%
# Loss, training accuracy and epsilon spent
# -----------------------------------------
# Records come in training order, so the row number counts epochs across the stages.
fig, axes = plt.subplots(1, 3, figsize=(11, 3.5))
for name, history in (("GAP node", gap_history), ("DP-MLP", mlp_history)):
    for stage, rows in history.groupby("stage", sort=False):
        label = f"{name}, {stage}"
        axes[0].plot(rows.index + 1, rows["loss"], label=label)
        axes[1].plot(rows.index + 1, rows["train_accuracy"], label=label)
    axes[2].plot(history.index + 1, history["epsilon"], label=name)
axes[2].axhline(8.0, color="grey", ls="--", lw=0.8, label="budget")
for ax, title in zip(axes, ("training loss", "training accuracy", "epsilon spent so far")):
    ax.set_title(title)
    ax.set_xlabel("epoch (over all stages)")
axes[0].legend(fontsize=8)
axes[2].legend(fontsize=8)
fig.tight_layout()
plt.show()
