"""What RGNN's GNN reads: the reconstructed features, their scaling, the graph's form.

All of it is post-processing of the GRR-FS feature reports and of the public structure
and schema: no privacy cost.
"""

from __future__ import annotations

import math
import warnings
from typing import Callable

import numpy as np
import torch

from skdpgraph._deprecation import REMOVED_IN
from skdpgraph.graph import Graph
from skdpgraph.nn import InNeighbourMean
from skdpgraph.preprocessing import (client_generators, mean_propagation_operator,
                                     propagation_hops, reconstruct_from_clients)
from skdpgraph.privacy import grr_fs_epsilon

__all__ = ["ReconstructedFeatures", "as_float", "gnn_structure", "reconstruction_rounds",
           "resolved_standardize", "schema_assumption", "standardization"]


class ReconstructedFeatures:
    """The feature side of :class:`~skdpgraph.RGNNClassifier`, mixed into it.

    The server's reconstruction of every node's features from its GRR-FS reports, its
    cache as the fit's release, a new recorded release for another graph, and the
    standardisation the GNN reads. It uses the estimator's ``feature_hops``,
    ``standardize`` and ``randomize`` and the fitted ``feature_encoder_``,
    ``domain_sizes_``, ``num_sampled_features_`` and ``epsilon_per_feature_``.
    """

    @property
    def n_sampled_features_(self) -> int:
        """Former name of ``num_sampled_features_``."""
        warnings.warn(f"RGNNClassifier: the attribute 'n_sampled_features_' was renamed "
                      f"'num_sampled_features_' and will be removed in {REMOVED_IN}.",
                      FutureWarning, stacklevel=2)
        return self.num_sampled_features_

    def _fit_inputs(self, graph: Graph, rng, operator, searched) -> np.ndarray:
        """Reconstruct the training graph's features from its clients' reports (cached as
        this fit's release) and fit their standardisation; returns the GNN's input."""
        self.feature_hops_ = reconstruction_rounds(self.feature_hops, self.epsilon_per_feature_,
                                                   searched)
        self.reconstructed_x_ = self._reconstructed(graph, rng, operator, self.feature_hops_)
        self._cache_release(graph, "features", self.reconstructed_x_)
        self.standardize_ = resolved_standardize(self.standardize, self.epsilon_per_feature_)
        self.feature_mean_, self.feature_scale_ = standardization(self.reconstructed_x_,
                                                                  self.standardize_)
        return self._inputs(self.reconstructed_x_)

    def _inputs(self, x: np.ndarray) -> np.ndarray:
        """The GNN's input: ``x`` standardised with the fitted shift and scale."""
        if not self.standardize_:
            return x
        return ((x - self.feature_mean_) / self.feature_scale_).astype(np.float32, copy=False)

    def _reconstructed(self, graph: Graph, rng, operator=None, hops=None) -> np.ndarray:
        operator = mean_propagation_operator(graph) if operator is None else operator
        if hops is None:
            hops = reconstruction_rounds(self.feature_hops, self.epsilon_per_feature_,
                                         lambda: propagation_hops(operator))
        return reconstruct_from_clients(graph, self.feature_encoder_, self.domain_sizes_,
                                        self.epsilon_per_feature_, self.num_sampled_features_,
                                        hops, rng, operator=operator)

    def _features(self, graph: Graph) -> np.ndarray:
        """Cached (same content), a new recorded release, or (randomize=False) reconstructed."""
        cached = self._cached(graph, "features")
        if cached is not None or not self.randomize:
            return cached if cached is not None else self._reconstructed(graph, None)
        eps = grr_fs_epsilon(self.num_sampled_features_, self.epsilon_per_feature_)
        return self._release(graph, "features", lambda s: self._reconstructed(
            graph, client_generators(s)[0]), lambda: {"epsilon": eps, "delta": 0.0,
                                                      "mechanism": "GRR-FS of every node"})


def as_float(value: float | None) -> float | None:
    """A budget part as a Python float (a NumPy scalar's rounding would differ), or None."""
    return None if value is None else float(value)


def reconstruction_rounds(setting: int | str, epsilon: float, searched: Callable[[], int]) -> int:
    """Reconstruction rounds: the setting, or for ``"auto"`` ``searched()`` (0 if exact)."""
    if setting != "auto":
        return int(setting)
    return 0 if np.isinf(epsilon) else searched()


def resolved_standardize(standardize: bool | str, epsilon_per_feature: float) -> bool:
    """``standardize``, with ``"auto"`` true only for exact (non-randomised) reports."""
    if standardize == "auto":
        return math.isinf(epsilon_per_feature)
    return bool(standardize)


def standardization(x: np.ndarray, standardize: bool) -> tuple[np.ndarray, np.ndarray]:
    """Column means and standard deviations of ``x`` (constant columns get scale 1)."""
    if not standardize:
        return np.zeros(x.shape[1], np.float32), np.ones(x.shape[1], np.float32)
    mean = x.mean(axis=0, dtype=np.float64)
    scale = x.std(axis=0, dtype=np.float64)
    scale[scale <= 1e-12] = 1.0
    return mean.astype(np.float32), scale.astype(np.float32)


def gnn_structure(graph: Graph, conv: str) -> torch.Tensor | InNeighbourMean:
    """The graph as the GNN reads it: the same messages, in the fastest form for ``conv``.

    SAGE's mean is an :class:`~skdpgraph.nn.InNeighbourMean`: sparse products with the
    row-normalised in-adjacency and its stored transpose, with no per-edge message tensor
    (which at 10^7 edges and 128 features took 5 GB and 3x the time). GCN (whose
    normalisation builds sparse tensors that warn) and GAT (which weighs every edge) keep
    ``edge_index``.
    """
    if conv == "sage":
        return InNeighbourMean(graph.adjacency())
    return torch.tensor(graph.edge_index)


def schema_assumption(randomize: bool, feature_type: str, feature_range) -> str:
    """The report's statement of the public feature schema."""
    if not randomize:
        return ("the features are GRR-FS reports; their domain sizes are read from the "
                "reports (post-processing)")
    if feature_type == "binary":
        return ("the feature schema is public and stated by the user: feature_type="
                "'binary' (values 0 or 1; any other value is refused), never read from "
                "the data")
    return ("the feature schema is public and stated by the user: feature_type="
            f"'continuous', 4 bins over feature_range={tuple(feature_range)} (values "
            "outside go to the end bins), never read from the data")
