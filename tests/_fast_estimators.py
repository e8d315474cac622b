"""Tiny, fast configurations of every estimator, shared by the privacy attack tests."""

import skdpgraph

__all__ = ["FAST", "NO_TRAINING_LOOP", "make"]

#: One tiny configuration per estimator (GAP and ProGAP once per privacy level, FDP once per
#: inference mode). Batches hold every training node (sampling rate 1).
FAST = {
    "DPMLP": (skdpgraph.DPMLPClassifier,
              dict(epsilon=4.0, hidden_dim=8, epochs=2, batch_size=64)),
    "GAP-edge": (skdpgraph.GAPClassifier,
                 dict(epsilon=4.0, unit="edge", hops=1, hidden_dim=8, epochs=2,
                      encoder_epochs=2)),
    "GAP-node": (skdpgraph.GAPClassifier,
                 dict(epsilon=4.0, unit="node", hops=1, hidden_dim=8, epochs=2,
                      encoder_epochs=2, batch_size=64, max_degree=4)),
    "ProGAP-edge": (skdpgraph.ProGAPClassifier,
                    dict(epsilon=4.0, unit="edge", hops=2, hidden_dim=8, epochs=2,
                         encoder_epochs=2)),
    "ProGAP-node": (skdpgraph.ProGAPClassifier,
                    dict(epsilon=4.0, unit="node", hops=2, hidden_dim=8, epochs=2,
                         encoder_epochs=2, batch_size=64, max_degree=4)),
    "FDP": (skdpgraph.FDPClassifier,
            dict(epsilon=4.0, hidden_dim=8, epochs=2, batch_size=64, max_degree=2)),
    "FDP-private": (skdpgraph.FDPClassifier,
                    dict(epsilon=4.0, hidden_dim=8, epochs=2, batch_size=64, max_degree=2,
                         private_inference=True)),
    "DRW": (skdpgraph.DRWClassifier,
            dict(epsilon=4.0, hidden_dim=8, epochs=2, batch_size=64, noise_multiplier=2.0)),
    "Votes": (skdpgraph.NeighbourVoteClassifier, dict(epsilon=4.0)),
    "RGNN": (skdpgraph.RGNNClassifier,
             dict(num_sampled_features=2, epochs=2, feature_hops=2, label_hops=2, num_clusters=4,
                  hidden_dim=8, feature_type="continuous")),
}

#: Configurations that run no DP-SGD loop, so they have no ``history_``, no progress bar and
#: no optimiser step, with the reason.
NO_TRAINING_LOOP = {
    "Votes": "logistic regressions fitted by scikit-learn around one Laplace release",
}


def make(name: str, **overrides):
    """A fresh estimator ``name`` in its tiny configuration, with ``overrides``."""
    cls, params = FAST[name]
    return cls(**{**params, **overrides})
