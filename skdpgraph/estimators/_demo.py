"""The estimators the ``skdpgraph demo`` command trains."""

from skdpgraph.estimators._dpmlp import DPMLPClassifier
from skdpgraph.estimators._drw import DRWClassifier
from skdpgraph.estimators._fdp import FDPClassifier
from skdpgraph.estimators._gap import GAPClassifier
from skdpgraph.estimators._progap import ProGAPClassifier
from skdpgraph.estimators._rgnn import RGNNClassifier

__all__ = ["DEMO_ESTIMATORS"]

#: Estimators the ``skdpgraph demo`` command trains: name -> zero-argument factory.
DEMO_ESTIMATORS = {
    "DPMLPClassifier (eps=inf)": lambda: DPMLPClassifier(epsilon=float("inf"), random_state=0),
    "DPMLPClassifier (eps=4)": lambda: DPMLPClassifier(epsilon=4.0, random_state=0),
    "GAPClassifier (edge, eps=inf)": lambda: GAPClassifier(epsilon=float("inf"), random_state=0),
    "GAPClassifier (edge, eps=4)": lambda: GAPClassifier(epsilon=4.0, random_state=0),
    "ProGAPClassifier (edge, eps=4)": lambda: ProGAPClassifier(epsilon=4.0, random_state=0),
    "GAPClassifier (node, eps=8)": lambda: GAPClassifier(epsilon=8.0, unit="node",
                                                         random_state=0),
    "DRWClassifier (eps=8, DRW)": lambda: DRWClassifier(epsilon=8.0, epochs=10, hidden_dim=64,
                                                        random_state=0),
    "FDPClassifier (eps=8, K=1)": lambda: FDPClassifier(epsilon=8.0, random_state=0),
    "RGNNClassifier (eps_x=1, m=10, eps_y=3)": lambda: RGNNClassifier(
        feature_type="continuous", random_state=0),  # the demo's CSBM features
}
