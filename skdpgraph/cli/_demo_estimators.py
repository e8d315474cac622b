"""The estimators ``skdpgraph demo`` trains: each node-level estimator in its demo settings."""

from __future__ import annotations

import functools
from typing import Callable

from skdpgraph._discovery import all_estimators

__all__ = ["DEMO_SETTINGS", "demo_estimators"]

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
    "ProGAPClassifier": {"edge, eps=4": dict(epsilon=4.0)},
    # The demo's CSBM features are continuous.
    "RGNNClassifier": {"eps_x=1, m=10, eps_y=3": dict(feature_type="continuous")},
}


def demo_estimators() -> dict[str, Callable[[], object]]:
    """The demo's estimators, in registry order: ``"Class (label)"`` -> factory.

    Returns
    -------
    estimators : dict of str to callable
        A zero-argument factory of each unfitted estimator, seeded with ``random_state=0``.
    """
    return {f"{name} ({label})": functools.partial(cls, random_state=0, **params)
            for name, cls in all_estimators(data="nodes")
            for label, params in DEMO_SETTINGS[name].items()}
