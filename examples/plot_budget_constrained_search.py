"""
Budget-constrained hyperparameter search
========================================

A search trains many models on the same private nodes, so the released model's guarantee is
not the ``epsilon_spent_`` of one fit. This example

1. runs ``GridSearchCV`` on a pipeline (feature scaling + DP-SGD MLP), recording every fit's
   epsilon with :func:`~skdpgraph.model_selection.privacy_scoring` and refitting the most
   accurate candidate whose fits stay within a per-fit budget
   (:func:`~skdpgraph.model_selection.refit_within_budget`); its total cost is the naive
   composition of all fits (:func:`~skdpgraph.model_selection.search_cost`);
2. runs :class:`~skdpgraph.model_selection.PrivateRandomSearch`, which trains a *random*
   number of candidates and releases only the best, and prints its cost under both bounds:
   the naive composition of its runs and the Papernot--Steinke random-repetition bound.

The figure shows the candidates against the per-fit budget and the cost of each search.
"""

import time

import matplotlib.pyplot as plt
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skdpgraph import DPMLPClassifier
from skdpgraph.datasets import make_csbm
from skdpgraph.model_selection import (
    PrivateRandomSearch,
    composition_cost,
    privacy_scoring,
    refit_within_budget,
    repeat_and_select_cost,
    search_cost,
)
from skdpgraph.preprocessing import NodeFeatureTransformer

start = time.perf_counter()
data = make_csbm(n_nodes=600, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(
    data.nodes(), data.y, test_size=0.3, stratify=data.y, random_state=0)
fast = dict(epochs=5, hidden_dim=32, batch_size=128, random_state=0)

# %%
# 1. Grid search within a per-fit budget of epsilon = 2
# ------------------------------------------------------
# The features of make_csbm are declared public here so that scaling costs nothing; on
# private features, wrap a DP scaler (one with its own ``epsilon``) instead.
pipe = Pipeline([
    ("scale", NodeFeatureTransformer(StandardScaler(), public_features=True)),
    ("clf", DPMLPClassifier(**fast)),
])
refit = refit_within_budget(2.0, estimator=pipe, X=X_train, y=y_train)  # plans the refit too
grid = GridSearchCV(pipe, {"clf__epsilon": [1.0, 2.0, 8.0], "clf__lr": [0.01, 0.05]}, cv=2,
                    scoring=privacy_scoring("accuracy"), refit=refit)
grid.fit(X_train, y_train)
chosen = grid.best_estimator_[-1]
print(f"chosen: {grid.best_params_}")
print(f"test accuracy: {grid.best_estimator_.score(X_test, y_test):.3f}; "
      f"epsilon_spent_ of the released model: {chosen.epsilon_spent_:.3f}")
print(f"total cost of the grid search (naive composition): {search_cost(grid)}")

# %%
# 2. A random number of runs: the Papernot--Steinke bound
# -------------------------------------------------------
# Searching only parameters that leave the privacy event unchanged (learning rate, width)
# keeps the bound exact. The released run's cost grows with the logarithm of the mean
# number of runs, while naive composition grows linearly: at a handful of runs the two are
# close, at 20 the random-repetition bound is far smaller.
search = PrivateRandomSearch(
    DPMLPClassifier(epsilon=2.0, **fast),
    {"lr": [0.005, 0.01, 0.05, 0.1], "hidden_dim": [16, 32, 64]},
    mean_repetitions=5.0, shape=1.0, random_state=0,
).fit(X_train, y_train)
# The number of runs stays secret (the bound covers only the selected run), so the fitted
# search does not keep it.
print(f"\nrandom search: chosen {search.best_params_}")
print(f"test accuracy: {search.score(X_test, y_test):.3f}; "
      f"one run: epsilon={search.best_estimator_.epsilon_spent_:.3f}")
print(f"random-repetition bound (P&S'22): {search.privacy_cost_}")
print(f"naive bound, 5 fixed runs:        {composition_cost([search.best_estimator_] * 5)}")
print(f"naive bound, 20 fixed runs:       {composition_cost([search.best_estimator_] * 20)}")
print(f"P&S bound, mean 20 runs:          "
      f"{repeat_and_select_cost([search.best_estimator_], mean=20.0, shape=1.0)}")

# %%
# The search and its cost in one figure
# -------------------------------------
# Left: every grid candidate's cross-validated accuracy against the epsilon one of its fits
# spent (``cv_results_`` stores it negated), with the per-fit budget of the refit rule.
# Right: what releasing one model costs under each bound.
results = grid.cv_results_
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
for lr in sorted(set(results["param_clf__lr"])):
    rows = [i for i, value in enumerate(results["param_clf__lr"]) if value == lr]
    left.plot(-results["mean_test_epsilon"][rows], results["mean_test_score"][rows], "o-",
              label=f"lr={lr}")
left.axvline(2.0, color="grey", ls="--", label="per-fit budget")
left.set_xlabel("epsilon spent by one fit")
left.set_ylabel("mean CV accuracy")
left.set_title("Grid search candidates")
left.legend()
costs = {
    "grid search\n(naive)": search_cost(grid).epsilon,
    "5 fixed runs\n(naive)": composition_cost([search.best_estimator_] * 5).epsilon,
    "mean 5 runs\n(P&S)": search.privacy_cost_.epsilon,
    "20 fixed runs\n(naive)": composition_cost([search.best_estimator_] * 20).epsilon,
    "mean 20 runs\n(P&S)": repeat_and_select_cost(
        [search.best_estimator_], mean=20.0, shape=1.0).epsilon,
}
right.bar(list(costs), list(costs.values()), color="tab:orange")
right.set_ylabel("epsilon of the released model")
right.set_title("Cost of a search")
right.tick_params(axis="x", labelsize=8)
fig.tight_layout()
plt.show()
print(f"\ntotal time {time.perf_counter() - start:.1f} s")
