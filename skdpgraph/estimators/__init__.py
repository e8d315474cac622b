"""The estimators: one module each, all following the contract of ``_base``."""

from skdpgraph.estimators._dpmlp import DPMLPClassifier

__all__ = ["DPMLPClassifier", "DEMO_ESTIMATORS"]

#: Estimators the ``skdpgraph demo`` command trains: name -> zero-argument factory.
DEMO_ESTIMATORS = {
    "DPMLPClassifier (eps=inf)": lambda: DPMLPClassifier(epsilon=float("inf"), random_state=0),
    "DPMLPClassifier (eps=4)": lambda: DPMLPClassifier(epsilon=4.0, random_state=0),
}
