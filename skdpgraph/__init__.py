"""skdpgraph: differentially private graph neural networks with a scikit-learn API."""

from skdpgraph.estimators import (
    DPMLPClassifier,
    DPNodeClassifier,
    DRWClassifier,
    FDPClassifier,
    GAPClassifier,
    ProGAPClassifier,
    RGNNClassifier,
)
from skdpgraph.graph import Graph, Nodes
from skdpgraph.privacy import PrivacyBudgetError, PrivacyReport

__version__ = "0.1.0"

__all__ = [
    "DPMLPClassifier",
    "DPNodeClassifier",
    "DRWClassifier",
    "FDPClassifier",
    "GAPClassifier",
    "Graph",
    "Nodes",
    "PrivacyBudgetError",
    "PrivacyReport",
    "ProGAPClassifier",
    "RGNNClassifier",
]
