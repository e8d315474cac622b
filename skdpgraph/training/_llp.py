"""RGNN's full-batch training: cross-entropy plus a label-proportion term, no DP-SGD."""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from torch import nn

from skdpgraph._progress import EpochProgress, epoch_record
from skdpgraph.nn import InNeighbourMean, forward_corrected_loss, llp_loss

__all__ = ["train_llp_gnn"]


def train_llp_gnn(module: nn.Module, x, edge_index, train_index, targets, bag, proportions, *,
                  llp_weight: float, epochs: int, lr: float, max_grad_norm: float | None = None,
                  val_index=None, val_targets=None, transition=None, epsilon: float = math.nan,
                  stage: str = "classifier", verbose: bool = False,
                  description: str = "train") -> tuple[list[dict], int]:
    r"""Full-batch Adam on :math:`\mathrm{CE} + \alpha\,\mathcal{L}_{llp}` (no DP-SGD).

    With ``transition``, the targets are rows of noisy-label frequencies and the
    cross-entropy is :func:`~skdpgraph.nn.forward_corrected_loss` through that channel.

    With ``val_index``, the model is evaluated after every epoch on those nodes against
    ``val_targets`` and the parameters of the first epoch with the best score are loaded
    back into ``module`` at the end (early-stopping model selection). The score is the
    accuracy against ``val_targets``, or, with ``transition``, minus the forward-corrected
    loss of the held-out frequencies (the accuracy against their argmax is still
    recorded).

    Every array argument may be a Tensor or an array-like; it is moved to the device of
    ``module``'s parameters.

    Parameters
    ----------
    module : nn.Module
        Called as ``module(x, edge_index)``; returns logits of every node.
    x, edge_index : Tensor or array
        Node features and the ``(2, E)`` edge index.
    train_index : Tensor of int64
        Nodes with a supervised loss.
    targets : Tensor
        Their target classes (int64), or with ``transition`` their noisy-label
        frequencies, of shape ``(len(train_index), n_classes)``.
    bag, proportions
        See :func:`~skdpgraph.nn.llp_loss` (``bag`` is per training node); unused if
        ``llp_weight`` is 0.
    max_grad_norm : float or None, default=None
        Clip the global gradient norm to this value (stability only, not privacy).
    val_index, val_targets : Tensor or None
        Model-selection nodes and their targets, in the form of ``targets`` (None or
        empty: no selection).
    transition : Tensor of shape (n_classes, n_classes) or None, default=None
        Channel matrix of the label randomiser (see :func:`~skdpgraph.nn.forward_corrected_loss`);
        None: ``targets`` are classes and the loss is the plain cross-entropy.
    epsilon : float, default=nan
        The epsilon already spent on the inputs (local DP: all of it before training),
        stated in every record.
    stage : str, default="classifier"
        The stage named in every record.
    verbose : bool, default=False
        Show a progress bar with the loss and epsilon; it stays on screen when done.
    description : str, default="train"
        The progress bar's label.

    Returns
    -------
    history : list of dict
        One :func:`~skdpgraph._progress.epoch_record` per epoch (``validation_accuracy``
        None without ``val_index``).
    best_epoch : int
        The epoch (1-based) whose parameters ``module`` holds on return.
    """
    device = next(module.parameters()).device
    x, edge_index, train_index, targets, bag, proportions = (
        _tensor(a, device) for a in (x, edge_index, train_index, targets, bag, proportions))
    supervised, hard = _supervision(targets, transition, device)
    if val_index is not None and len(val_index) == 0:
        val_index = None
    if val_index is not None:
        val_index, val_targets = _tensor(val_index, device), _tensor(val_targets, device)
    optimizer = torch.optim.Adam(module.parameters(), lr=lr)
    history, best, best_epoch, best_state = [], -math.inf, epochs, None
    progress = EpochProgress(epochs, description, verbose=verbose)
    for epoch in progress:
        module.train()
        optimizer.zero_grad()
        logits = module(x, edge_index)[train_index]
        loss = supervised(logits, targets)
        if llp_weight > 0:
            loss = loss + llp_weight * llp_loss(logits.softmax(-1), bag, proportions)
        loss.backward()
        if max_grad_norm is not None:
            nn.utils.clip_grad_norm_(module.parameters(), max_grad_norm)
        optimizer.step()
        record = epoch_record(stage, epoch, float(loss.detach()), epsilon=epsilon,
                              train_accuracy=float((logits.argmax(-1) == hard(targets)).float()
                                                   .mean()))
        if val_index is not None:
            module.eval()
            with torch.no_grad():
                val_logits = module(x, edge_index)[val_index]
            record["validation_accuracy"] = float(
                (val_logits.argmax(-1) == hard(val_targets)).float().mean())
            score = (record["validation_accuracy"] if transition is None
                     else -float(supervised(val_logits, val_targets)))
            if score > best:
                best, best_epoch = score, epoch
                best_state = copy.deepcopy(module.state_dict())
        history.append(record)
        progress.show(record)
    if best_state is not None:
        module.load_state_dict(best_state)
    return history, best_epoch


def _supervision(targets, transition, device):
    """The supervised loss and the map from targets to classes (for the accuracies)."""
    if transition is None:
        return nn.functional.cross_entropy, lambda t: t
    transition = _tensor(transition, device)
    return (lambda logits, t: forward_corrected_loss(logits, t, transition),
            lambda t: t.argmax(-1))


def _tensor(value, device: torch.device) -> torch.Tensor:
    if isinstance(value, (torch.Tensor, InNeighbourMean)):
        return value.to(device)
    return torch.tensor(np.asarray(value), device=device)
