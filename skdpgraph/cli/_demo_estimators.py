"""The estimators ``skdpgraph demo`` trains: each registered estimator in its demo settings."""

from __future__ import annotations

import functools
from typing import Callable

from skdpgraph._discovery import all_estimators

__all__ = ["DEMO_SETTINGS", "GRAPH_DEMO_SETTINGS", "demo_estimators"]

_INF = float("inf")

#: The demo's settings of each node-level estimator (``all_estimators(data="nodes")``):
#: class name -> {label: parameters}.
DEMO_SETTINGS: dict[str, dict[str, dict]] = {
    "DPMLPClassifier": {"eps=inf": dict(epsilon=_INF), "eps=4": dict(epsilon=4.0)},
    "DPNodeClassifier": {"edge, eps=4": dict(unit="edge", epsilon=4.0)},
    "DRWClassifier": {"eps=8, DRW": dict(epsilon=8.0, epochs=10, hidden_dim=64)},
    "FDPClassifier": {"eps=8, K=1": dict(epsilon=8.0)},
    "GAPClassifier": {"edge, eps=inf": dict(epsilon=_INF), "edge, eps=4": dict(epsilon=4.0),
                      "node, eps=8": dict(epsilon=8.0, unit="node")},
    "NeighbourVoteClassifier": {"edge, eps=4": dict(epsilon=4.0)},
    "ProGAPClassifier": {"edge, eps=4": dict(epsilon=4.0)},
    # The demo's CSBM features are continuous.
    "RGNNClassifier": {"eps_x=1, m=10, eps_y=3": dict(feature_type="continuous")},
}


#: The demo's settings of each graph-level estimator (``all_estimators(data="graphs")``),
#: small enough to train in a second on the demo's collection.
GRAPH_DEMO_SETTINGS: dict[str, dict[str, dict]] = {
    "DPGraphClassifier": {
        f"eps={label}": dict(epsilon=epsilon, epochs=10, batch_size=32, hidden_dim=16)
        for label, epsilon in (("inf", _INF), ("8", 8.0))},
}


def demo_estimators(data: str = "nodes") -> dict[str, Callable[[], object]]:
    """The demo's estimators, in registry order: ``"Class (label)"`` -> factory.

    Parameters
    ----------
    data : {"nodes", "graphs"}, default="nodes"
        The node-level estimators (:data:`DEMO_SETTINGS`), or the graph-level ones
        (:data:`GRAPH_DEMO_SETTINGS`).

    Returns
    -------
    estimators : dict of str to callable
        A zero-argument factory of each unfitted estimator, seeded with ``random_state=0``.
    """
    settings = {"nodes": DEMO_SETTINGS, "graphs": GRAPH_DEMO_SETTINGS}[data]
    return {f"{name} ({label})": functools.partial(cls, random_state=0, **params)
            for name, cls in all_estimators(data=data)
            for label, params in settings[name].items()}
