"""Local-DP data preparation: client-side encoders and randomisers, server-side reconstruction.

The client side (:class:`CategoricalFeatureEncoder`, :class:`GRRFeatureRandomizer`,
:class:`GRRLabelRandomizer`) runs on each user's device in a deployment; the server side
(``reconstruct_*``, :func:`bag_label_proportions`) is post-processing of their reports.
"""

from skdpgraph._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "_encoder": ["CategoricalFeatureEncoder"],
    "_node_features": ["NodeFeatureTransformer", "NonPrivateStepWarning", "declared_budget"],
    "_randomizers": ["GRRFeatureRandomizer", "GRRLabelRandomizer", "client_generators",
                     "feature_schema"],
    "_reconstruction": ["bag_label_proportions", "feature_frequency_estimates",
                        "held_out_label_hops", "holdout_split",
                        "mean_propagation_operator", "noisy_label_means", "one_hot_blocks",
                        "propagate", "propagation_hops",
                        "reconstruct_features", "reconstruct_from_clients",
                        "reconstruct_labels"],
    "_sparse": ["torch_csr"],
})
