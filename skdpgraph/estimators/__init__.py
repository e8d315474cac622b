"""The estimators: one module each, all following the contract of ``_base``."""

from skdpgraph._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "_base": ["BaseDPClassifier"],
    "_dpmlp": ["DPMLPClassifier"],
    "_drw": ["DRWClassifier"],
    "_fdp": ["FDPClassifier"],
    "_front_door": ["DPNodeClassifier"],
    "_graph_classifier": ["DPGraphClassifier"],
    "_gap": ["GAPClassifier"],
    "_neighbour_votes": ["NeighbourVoteClassifier"],
    "_progap": ["ProGAPClassifier"],
    "_rgnn": ["RGNNClassifier"],
})
