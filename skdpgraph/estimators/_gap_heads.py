"""The heads of the GAP family: what follows the encoder, and the release it makes.

A head states the stages it composes (for the plan), trains what it trains after the
encoder, makes its release on a graph and turns that release into logits. GAP's trained
head (the paper's classifier), GAP's vote head (noisy neighbour votes, no second run) and
ProGAP's progressive stages are the three; the estimators hold one as ``head_``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from skdpgraph.nn import (GAPClassificationModule, ProgressiveStage, class_log_probabilities,
                          class_probabilities, embed_nodes, hop_inputs, stack_hops,
                          with_known_labels)
from skdpgraph.privacy import (PMARelease, progressive_stages, trained_head_stages,
                               vote_head_stages)

__all__ = ["ProgressiveHead", "TrainedHead", "VoteHead", "VOTE_WEIGHT"]

#: Vote head: each noisy count is weighted by this many noise standard deviations (chosen
#: once on the shared graphs; see "How the defaults were chosen").
VOTE_WEIGHT = 2.0


def known_labels(clf: Any, nodes: Any, y: np.ndarray):
    """``(index, labels)`` of the fitted nodes for :func:`with_known_labels`, or None
    unless ``clf`` aggregates labels."""
    if clf.aggregate_ != "labels":
        return None
    return (torch.from_numpy(np.array(nodes.index, dtype=np.int64)),
            torch.from_numpy(np.array(y, dtype=np.int64)))


def aggregated_rows(clf: Any, module: Any, graph: Any, labelled: Any = None) -> torch.Tensor:
    """What PMA sums (before its row normalisation): ``module``'s embeddings, or its class
    probabilities, with the ``labelled`` nodes' labels in place if given (``aggregate``)."""
    if clf.aggregate_ == "embeddings":
        return embed_nodes(module, graph)
    return with_known_labels(class_probabilities(module, graph), labelled)


class _Head:
    """What every head shares: its name, its release's name and the encoder's stage name."""

    name: str
    kind: str
    #: The encoder's ``stage`` in ``history_`` (None: ``"encoder"``).
    encoder_stage: str | None = None
    #: Whether the head's networks take the DP-MLP baseline's shape (one 64-wide layer,
    #: batches of 1024) at node level (see "How the defaults were chosen").
    mlp_shaped_at_node_level = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def logits(self, clf: Any, nodes: Any, released: torch.Tensor) -> torch.Tensor:
        return clf.module_(hop_inputs(clf.encoder_, nodes, released))


class TrainedHead(_Head):
    """GAP's classifier network on each node's own embedding and its K aggregations."""

    name, kind = "trained", "PMA aggregations"
    stages = staticmethod(trained_head_stages)

    def fit(self, clf: Any, graph: Any, nodes: Any, y: np.ndarray, held: Any, plan: Any,
            streams: Any) -> list:
        """Release the aggregations of ``graph``, then train the classifier on them."""
        aggregations = self.release(clf, graph, streams, known_labels(clf, nodes, y))
        clf._cache_release(graph, self.kind, aggregations, keep_in_pickle=plan.own_rows_covered)
        classes = len(clf.classes_)
        clf.module_, history = clf._stage(
            lambda: GAPClassificationModule(clf.hidden_dim_, classes, hops=clf.hops_,
                                            combine=clf.combine, activation=clf.activation,
                                            dropout=clf.dropout_,
                                            in_dim=clf._input_width(classes)),
            plan, "classifier", lambda part: hop_inputs(clf.encoder_, part, aggregations),
            nodes, y, held, streams)
        return history

    def release(self, clf: Any, graph: Any, streams: Any, labelled: Any = None) -> torch.Tensor:
        """One PMA release on ``graph`` as planned (fresh streams for every release);
        ``labelled``: the fitted nodes' ``(index, labels)`` when fitting on ``graph``."""
        rows = aggregated_rows(clf, clf.encoder_, graph, labelled).to(clf.device_)
        return PMARelease.of(clf._plan_).aggregate(graph.adjacency(), rows, streams).cpu()


class VoteHead(_Head):
    """GAP's vote head: no second run; the encoder's log-probabilities plus noisy votes.

    PMA counts the encoder's predicted classes over in-neighbours (the fitted nodes vote
    for their label with ``aggregate="labels"``), and a node's logits are its own
    log-probabilities plus :data:`VOTE_WEIGHT` x its noisy counts / the noise std
    (:func:`~skdpgraph.privacy.noisy_neighbour_votes`).
    """

    name, kind = "vote", "PMA neighbour votes"
    stages = staticmethod(vote_head_stages)
    mlp_shaped_at_node_level = True

    def fit(self, clf: Any, graph: Any, nodes: Any, y: np.ndarray, held: Any, plan: Any,
            streams: Any) -> list:
        """No classifier: the fit's paid vote release serves ``predict``."""
        clf.module_ = None
        votes = self.release(clf, graph, streams, known_labels(clf, nodes, y))
        clf._cache_release(graph, self.kind, votes, keep_in_pickle=plan.own_rows_covered)
        return []

    def release(self, clf: Any, graph: Any, streams: Any, labelled: Any = None) -> torch.Tensor:
        """One vote release on ``graph`` as planned (fresh streams for every release)."""
        own = class_log_probabilities(clf.encoder_, graph).to(clf.device_)
        return PMARelease.of(clf._plan_).votes(graph.adjacency(), own, VOTE_WEIGHT, streams,
                                               labelled).cpu()

    def logits(self, clf: Any, nodes: Any, released: torch.Tensor) -> torch.Tensor:
        index = np.array(nodes.index, dtype=np.int64)  # a writable copy for torch
        own = class_log_probabilities(clf.encoder_, nodes.graph, index)
        return own + released[torch.from_numpy(index)]


class ProgressiveHead(_Head):
    """ProGAP's stages: each learns on the noisy one-hop aggregations of the last.

    Stage ``i`` (``1..K``) reads the node's own encoder embedding and the ``i``
    aggregations released so far; the first ``K - 1`` are ``stages_``, the last is
    ``module_``. Each stage aggregates its embedding, or with ``aggregate="labels"`` its
    class probabilities with the fitted nodes' labels in place.
    """

    name, kind, encoder_stage = "progressive", "ProGAP aggregations", "stage 0"
    stages = staticmethod(progressive_stages)
    mlp_shaped_at_node_level = True

    def fit(self, clf: Any, graph: Any, nodes: Any, y: np.ndarray, held: Any, plan: Any,
            streams: Any) -> list:
        """Train stages ``1..K`` between the one-hop releases; cache the release."""
        history, classes = [], len(clf.classes_)

        def fit_stage(index: int, aggregations: torch.Tensor) -> torch.nn.Module:
            last = index == clf.hops_
            module, records = clf._stage(
                lambda: ProgressiveStage(
                    clf.hidden_dim_, classes, parts=index + 1, combine=clf.combine,
                    activation=clf.activation, dropout=clf.dropout_,
                    in_dim=clf._input_width(classes),
                    embedding=clf.aggregate_ == "embeddings" and not last),
                plan, "classifier" if last else "encoder",
                lambda part: hop_inputs(clf.encoder_, part, aggregations), nodes, y, held,
                streams, index=0 if last else index, name=f"stage {index}")
            history.extend(records)
            return module

        clf.stages_ = []
        released = self.release(clf, graph, streams, known_labels(clf, nodes, y), fit_stage)
        clf._cache_release(graph, self.kind, released, keep_in_pickle=plan.own_rows_covered)
        return history

    def release(self, clf: Any, graph: Any, streams: Any, labelled: Any = None,
                fit_stage: Any = None) -> torch.Tensor:
        """The stages' aggregations on ``graph`` (one release), training stages if fitting.

        With ``fit_stage(index, aggregations)``, stage ``index`` is trained (on the
        aggregations released so far) just before its embedding is needed; without it the
        fitted stages are used. Returns a Tensor of shape (num_nodes, hops, width).
        """
        release, fitting = PMARelease.of(clf._plan_), fit_stage is not None
        adjacency = release.bounded(graph.adjacency(), streams)
        own = embed_nodes(clf.encoder_, graph).to(clf.device_)
        noise = streams.torch("noise", clf.device_) if clf._plan_.private else None
        embedding = aggregated_rows(clf, clf.encoder_, graph, labelled).to(clf.device_)
        aggregations = []
        for index in range(1, clf.hops_ + 1):
            aggregations.append(release.aggregate_once(adjacency, embedding, noise).cpu())
            if index == clf.hops_:
                break
            released = torch.stack(aggregations, dim=1)
            if fitting:
                clf.stages_.append(fit_stage(index, released).cpu())
            stage = clf.stages_[index - 1].to(clf.device_).eval()
            with torch.no_grad():
                stacked = stack_hops(own, released.to(clf.device_))
                embedding = (with_known_labels(stage(stacked).softmax(-1), labelled)
                             if clf.aggregate_ != "embeddings" else stage.embed(stacked))
            clf.stages_[index - 1] = stage.cpu()
        released = torch.stack(aggregations, dim=1)
        if fitting:
            clf.module_ = fit_stage(clf.hops_, released)
        return released
