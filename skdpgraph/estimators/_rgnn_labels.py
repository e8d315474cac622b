"""RGNN's supervision from the noisy label reports: the loss, the targets, the label rounds.

Everything here is post-processing of the GRR label reports and of the public structure:
it costs no privacy.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

from skdpgraph._random import RandomStreams
from skdpgraph.nn import GNN
from skdpgraph.training import train_llp_gnn
from skdpgraph.preprocessing import (bag_label_proportions, held_out_label_hops, holdout_split,
                                     noisy_label_means, reconstruct_labels)
from skdpgraph.privacy import grr_probabilities, label_transition_matrix

__all__ = ["LabelSupervision", "choose_label_hops", "label_targets", "resolved_label_loss"]


class LabelSupervision:
    """The label side of :class:`~skdpgraph.RGNNClassifier`, mixed into it.

    The split of the label reports into training and validation positions, and one GNN
    fitted to them with the label-proportion loss. It uses the estimator's network and
    training parameters and the fitted ``label_loss_`` and ``device_``.
    """

    def _validation_split(self, y: np.ndarray, streams: RandomStreams):
        """Positions ``(train, val)`` of the reports, as every estimator splits its nodes."""
        held = self._validation_size(len(y))
        if not held:  # the split stream is spent either way: METIS' seed is the next one
            streams.sequence("split")
            return np.arange(len(y)), np.arange(0)
        (train, _), (val, _) = self._holdout(np.arange(len(y)), y, held, streams)
        return np.sort(train), np.sort(val)

    def _fit_gnn(self, inputs, structure, operator, parts, index, noisy, n_classes, eps_y,
                 hops, train, val, *, stage, epsilon=math.nan):
        """One GNN fitted to the reports at positions ``train``, its epoch chosen on ``val``.

        The label targets are smoothed over ``hops`` rounds among the reports at ``train``
        and ``val`` only: a node held out of both never feeds them.
        """
        reporting = np.concatenate([train, val])
        targets, transition = label_targets(operator, index[reporting], noisy[reporting],
                                            n_classes, eps_y, hops, self.label_loss_)
        bag, proportions = bag_label_proportions(parts[index[train]], noisy[train], n_classes,
                                                 eps_y)
        module = GNN(inputs.shape[1], self.hidden_dim, n_classes, num_layers=self.num_layers,
                     conv=self.conv, dropout=self.dropout).to(self.device_)
        history, best_epoch = train_llp_gnn(
            module, inputs, structure, index[train], targets[:len(train)], bag, proportions,
            llp_weight=self.llp_weight, epochs=self.epochs, lr=self.lr,
            max_grad_norm=self.max_grad_norm, val_index=index[val],
            val_targets=targets[len(train):], transition=transition, epsilon=epsilon,
            stage=stage, verbose=bool(self.verbose),
            description=f"{type(self).__name__} {stage}")
        return module, history, best_epoch


def resolved_label_loss(label_loss: str, epsilon_labels: float, n_classes: int) -> str:
    """``label_loss``, with ``"auto"`` resolved from the public budget and class count.

    ``"forward"`` where GRR keeps a label with probability below one half (most reports
    flipped), else ``"reconstructed"``.
    """
    if label_loss != "auto":
        return label_loss
    keep = grr_probabilities(epsilon_labels, n_classes)[0]
    return "forward" if keep < 0.5 else "reconstructed"


def label_targets(operator, index: np.ndarray, noisy: np.ndarray, n_classes: int,
                  epsilon_labels: float, hops: int, label_loss: str):
    """Per-node targets and the channel of the loss (None: plain cross-entropy).

    ``label_loss`` is ``"forward"`` (the ``hops``-round frequencies of noisy labels, fitted
    through the GRR channel) or ``"reconstructed"`` (the argmax of their de-biased
    version); with ``epsilon_labels=inf`` the labels themselves.
    """
    if np.isinf(epsilon_labels):
        return noisy, None
    if label_loss == "forward":
        return (noisy_label_means(operator, index, noisy, n_classes, hops),
                label_transition_matrix(epsilon_labels, n_classes))
    return reconstruct_labels(operator, index, noisy, n_classes, epsilon_labels,
                              hops).argmax(axis=1), None


def choose_label_hops(fit_gnn: Callable, logits: Callable, operator, index: np.ndarray,
                      noisy: np.ndarray, train: np.ndarray, val: np.ndarray, *,
                      max_hops: int, n_classes: int,
                      streams: RandomStreams) -> tuple[int, dict]:
    r"""Rounds of label means for ``label_hops="auto"``, and the held-out scores.

    A part of the labelled nodes is held out: the validation nodes, or without any a
    fifth of the training nodes drawn for this choice only. Their reports feed nothing
    below.

    1. Do label means hurt the classifier? One GNN is fitted with ``max_hops`` rounds
       and one with none, and each is scored by how often its predicted class equals a
       held-out node's noisy label: under GRR that rate is :math:`q + (p - q)\,a` for a
       GNN of accuracy :math:`a`, so the higher rate is the more accurate GNN. 0 is
       taken when its rate is ahead by more than two standard errors of the paired
       differences.
    2. Otherwise, the rounds up to ``max_hops`` whose label means of the other reports
       best predict the held-out reports
       (:func:`~skdpgraph.preprocessing.held_out_label_hops`).

    Parameters
    ----------
    fit_gnn : callable
        ``fit_gnn(hops, train, val, stage=...)`` returns ``(module, history, best_epoch)``.
    logits : callable
        ``logits(module)``: the module's logits of every node of the graph.
    operator : sparse matrix
        The mean propagation operator of the public graph.
    index : ndarray of int
        Graph node of each report.
    noisy : ndarray of int
        The label reports.
    train, val : ndarray of int
        Positions of the training and validation reports.
    max_hops : int
        The spread rule's rounds.
    n_classes : int
    streams : RandomStreams
        The fit's streams: the fifth is drawn from ``"split"``, the GNNs initialised from
        their own block of ``"init"``.

    Returns
    -------
    hops : int
    rates : dict
        The agreement rate of the GNN fitted with each candidate.
    """
    if len(val) == 0:
        kept, held = holdout_split(len(train), 0.2, streams.numpy("split"))
        train, val = train[kept], train[held]
    agrees = {}
    with streams.initialisation():  # its own stream: the fit that follows is unchanged
        for hops in (0, max_hops):
            module = fit_gnn(hops, train, val[:0], stage=f"label_hops={hops}")[0]
            with torch.no_grad():
                predicted = logits(module.eval())[torch.as_tensor(index[val])]
            agrees[hops] = (predicted.argmax(-1).cpu().numpy() == noisy[val]).astype(float)
    rates = {hops: float(agree.mean()) for hops, agree in agrees.items()}
    if _clearly_ahead(agrees[0] - agrees[max_hops]):
        return 0, rates
    return held_out_label_hops(operator, index[train], noisy[train], index[val],
                               noisy[val], n_classes, max_hops), rates


def _clearly_ahead(gain: np.ndarray) -> bool:
    """Whether the mean of paired differences exceeds two of its standard errors."""
    if gain.size < 2:
        return False
    standard_error = gain.std(ddof=1) / math.sqrt(gain.size)
    return bool(gain.mean() > 2 * standard_error)
