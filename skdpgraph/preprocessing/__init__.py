"""Local-DP data preparation: client-side encoders and randomisers, server-side reconstruction.

The client side (:class:`CategoricalFeatureEncoder`, :class:`GRRFeatureRandomizer`,
:class:`GRRLabelRandomizer`) runs on each user's device in a deployment; the server side
(``reconstruct_*``, :func:`bag_label_proportions`) is post-processing of their reports.
"""

from skdpgraph.preprocessing._encoder import CategoricalFeatureEncoder
from skdpgraph.preprocessing._node_features import (
    NodeFeatureTransformer,
    NonPrivateStepWarning,
    declared_budget,
)
from skdpgraph.preprocessing._randomizers import GRRFeatureRandomizer, GRRLabelRandomizer
from skdpgraph.preprocessing._reconstruction import (
    bag_label_proportions,
    feature_frequency_estimates,
    holdout_split,
    propagation_hops,
    mean_propagation_operator,
    one_hot_blocks,
    propagate,
    reconstruct_features,
    reconstruct_labels,
)

__all__ = [
    "CategoricalFeatureEncoder",
    "GRRFeatureRandomizer",
    "GRRLabelRandomizer",
    "NodeFeatureTransformer",
    "NonPrivateStepWarning",
    "bag_label_proportions",
    "feature_frequency_estimates",
    "declared_budget",
    "holdout_split",
    "propagation_hops",
    "mean_propagation_operator",
    "one_hot_blocks",
    "propagate",
    "reconstruct_features",
    "reconstruct_labels",
]
