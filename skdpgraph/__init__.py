"""skdpgraph: differentially private graph neural networks with a scikit-learn API."""

from skdpgraph.estimators import DPMLPClassifier, GAPClassifier
from skdpgraph.estimators import FDPClassifier
from skdpgraph.estimators import RGNNClassifier
from skdpgraph.estimators import DRWClassifier
from skdpgraph.graph import Graph, Nodes
from skdpgraph.privacy import PrivacyBudgetError, PrivacyReport

__version__ = "0.1.0"

__all__ = ["DPMLPClassifier", "Graph", "Nodes", "PrivacyBudgetError", "PrivacyReport"]
__all__ += ["RGNNClassifier"]
__all__ += ["DRWClassifier"]
__all__ += ["FDPClassifier"]
__all__ += ["GAPClassifier"]
