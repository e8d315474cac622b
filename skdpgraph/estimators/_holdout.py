"""The validation split of a fit: how many training nodes ``validation_fraction`` holds
out, where the labels allow it, and the split itself."""

from __future__ import annotations

import math

import numpy as np

from skdpgraph._random import RandomStreams
from skdpgraph.graph import Nodes

__all__ = ["ValidationSplit"]


class ValidationSplit:
    """Mix-in of :class:`~skdpgraph.estimators.BaseDPClassifier`: the validation split.

    Examples
    --------
    >>> from skdpgraph import DPMLPClassifier
    >>> DPMLPClassifier(epsilon=float("inf"))._validation_size(1000)
    100
    """

    #: Held out by ``validation_fraction="auto"`` where labels are public...
    _AUTO_VALIDATION_FRACTION = 0.1
    #: ...from this many training nodes on (at least 50 held out). Below, selecting on a few
    #: dozen nodes costs more than it gains: GAP at edge level on Cora's public split (140
    #: training nodes, epsilon=8, 5 seeds) scores 41.2 with 14 held out, 47.4 without.
    _AUTO_VALIDATION_MIN_NODES = 500

    def _labels_public(self) -> bool:
        """Whether this fit may read the training labels freely: only a non-private fit.

        ``epsilon=inf`` with a given ``noise_multiplier`` is a private fit (its epsilon is
        reported), so its labels stay protected.
        """
        return math.isinf(self.epsilon) and getattr(self, "noise_multiplier", None) is None

    def _validation_size(self, n: int) -> int:
        """How many of the ``n`` training nodes ``validation_fraction`` holds out (0: none).

        Raises ``ValueError`` for an explicit fraction where the labels are protected, or
        one that leaves no node to train on.
        """
        name, fraction = type(self).__name__, self.validation_fraction
        public = self._labels_public()
        if isinstance(fraction, str):  # "auto"
            fraction = (self._AUTO_VALIDATION_FRACTION
                        if public and n >= self._AUTO_VALIDATION_MIN_NODES else None)
        elif fraction is not None and not public:
            raise ValueError(
                f"{name}: validation_fraction={fraction} would select epochs on training labels "
                "that this fit protects, without accounting for it; use validation_fraction="
                "'auto' or None (epsilon=inf, or GAP's edge level, makes the labels public).")
        held = math.ceil(fraction * n) if fraction else 0
        if held >= n:
            raise ValueError(f"{name}: validation_fraction={self.validation_fraction} holds out "
                             f"all {n} training nodes, leaving none to train on.")
        return held

    @staticmethod
    def _holdout(nodes: Nodes, y: np.ndarray, held: int, streams: RandomStreams):
        """``((fit nodes, labels), (held-out nodes, labels) or None)``: ``held`` nodes out.

        Stratified where every class fits in both parts; the split comes from the
        ``"split"`` stream.
        """
        from sklearn.model_selection import train_test_split

        if not held:
            return (nodes, y), None
        counts = np.bincount(y)[np.bincount(y) > 0]
        stratify = counts.min() >= 2 and min(held, len(y) - held) >= len(counts)
        fit, out = train_test_split(np.arange(len(y)), test_size=held,
                                    random_state=streams.integer("split"),
                                    stratify=y if stratify else None)
        return (nodes[fit], y[fit]), (nodes[out], y[out])
