"""skdpgraph: differentially private graph neural networks with a scikit-learn API.

Public names load on first use (see ``skdpgraph._lazy``), so ``import skdpgraph`` does not
import torch or scikit-learn.
"""

from skdpgraph._lazy import lazy_exports

__version__ = "0.1.0"

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "estimators": ["DPGraphClassifier", "DPMLPClassifier", "DPNodeClassifier", "DRWClassifier",
                   "FDPClassifier", "GAPClassifier", "NeighbourVoteClassifier",
                   "ProGAPClassifier", "RGNNClassifier"],
    "graph": ["Graph", "Nodes"],
    "graph_collection": ["GraphCollection"],
    "privacy": ["PrivacyBudgetError", "PrivacyLedger", "PrivacyReport", "process_ledger"],
    "exceptions": ["EdgesDroppedWarning", "GraphDroppedWarning"],
    "_pipeline": ["make_graph_pipeline"],
    "_discovery": ["all_estimators"],
}, submodules=["datasets", "estimators", "exceptions", "graph", "graph_collection",
               "model_selection", "nn",
               "preprocessing", "privacy", "sampling", "training"])
