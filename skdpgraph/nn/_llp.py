"""Learning from label proportions: the bag-level loss of RGNN and its full-batch loop."""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from torch import nn

from skdpgraph._progress import EpochProgress, epoch_record

__all__ = ["llp_loss", "train_llp_gnn"]


def llp_loss(probs: torch.Tensor, bag: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    r"""Mean KL divergence between target and predicted bag label proportions.

    .. math::

        \mathcal{L}_{llp} = \frac{1}{|B|}\sum_{r \in B}
            \mathrm{KL}(\tilde b_r \,\|\, \hat b_r), \qquad
        \hat b_r = \frac{1}{|C_r|}\sum_{v \in C_r} \hat y_v,

    over the bags :math:`B` that hold at least one node; empty bags are skipped.

    Parameters
    ----------
    probs : Tensor of shape (n, n_classes)
        Predicted class probabilities of the (training) nodes.
    bag : Tensor of int64 of shape (n,)
        Bag of each node, in ``0..n_bags - 1``.
    target : Tensor of shape (n_bags, n_classes)
        Target proportions :math:`\tilde b_r` (rows of empty bags are ignored).

    Returns
    -------
    Tensor
        A scalar; zero if every bag is empty.

    Examples
    --------
    >>> import torch
    >>> from skdpgraph.nn import llp_loss
    >>> probs = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> float(llp_loss(probs, torch.tensor([0, 0]), torch.tensor([[0.5, 0.5]])))
    0.0
    """
    n_bags, n_classes = target.shape
    sums = probs.new_zeros(n_bags, n_classes).index_add(0, bag, probs)
    counts = torch.bincount(bag, minlength=n_bags).to(probs.dtype)
    nonempty = counts > 0
    if not bool(nonempty.any()):
        return probs.sum() * 0.0
    predicted = sums[nonempty] / counts[nonempty, None]
    target = target[nonempty].to(probs.dtype)
    kl = torch.xlogy(target, target) - target * torch.log(predicted.clamp_min(1e-12))
    return kl.sum(dim=1).mean()


def train_llp_gnn(module: nn.Module, x, edge_index, train_index, targets, bag, proportions, *,
                  llp_weight: float, epochs: int, lr: float, max_grad_norm: float | None = None,
                  val_index=None, val_targets=None, epsilon: float = math.nan,
                  stage: str = "classifier", verbose: bool = False,
                  description: str = "train") -> tuple[list[dict], int]:
    r"""Full-batch Adam on :math:`\mathrm{CE} + \alpha\,\mathcal{L}_{llp}` (no DP-SGD).

    With ``val_index``, the model is evaluated after every epoch on those nodes against
    ``val_targets`` and the parameters of the first epoch with the best accuracy are
    loaded back into ``module`` at the end (early-stopping model selection).

    Every array argument may be a Tensor or an array-like; it is moved to the device of
    ``module``'s parameters.

    Parameters
    ----------
    module : nn.Module
        Called as ``module(x, edge_index)``; returns logits of every node.
    x, edge_index : Tensor or array
        Node features and the ``(2, E)`` edge index.
    train_index, targets : Tensor of int64
        Nodes with a supervised loss and their target classes.
    bag, proportions
        See :func:`llp_loss` (``bag`` is per training node); unused if ``llp_weight`` is 0.
    max_grad_norm : float or None, default=None
        Clip the global gradient norm to this value (stability only, not privacy).
    val_index, val_targets : Tensor of int64 or None
        Model-selection nodes and their targets (None or empty: no selection).
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
    if val_index is not None and len(val_index) == 0:
        val_index = None
    if val_index is not None:
        val_index, val_targets = _tensor(val_index, device), _tensor(val_targets, device)
    optimizer = torch.optim.Adam(module.parameters(), lr=lr)
    history, best, best_epoch, best_state = [], -1.0, epochs, None
    progress = EpochProgress(epochs, description, verbose=verbose)
    for epoch in progress:
        module.train()
        optimizer.zero_grad()
        logits = module(x, edge_index)[train_index]
        loss = nn.functional.cross_entropy(logits, targets)
        if llp_weight > 0:
            loss = loss + llp_weight * llp_loss(logits.softmax(-1), bag, proportions)
        loss.backward()
        if max_grad_norm is not None:
            nn.utils.clip_grad_norm_(module.parameters(), max_grad_norm)
        optimizer.step()
        record = epoch_record(stage, epoch, float(loss.detach()), epsilon=epsilon,
                              train_accuracy=float((logits.argmax(-1) == targets).float().mean()))
        if val_index is not None:
            module.eval()
            with torch.no_grad():
                predicted = module(x, edge_index)[val_index].argmax(-1)
            record["validation_accuracy"] = float((predicted == val_targets).float().mean())
            if record["validation_accuracy"] > best:
                best, best_epoch = record["validation_accuracy"], epoch
                best_state = copy.deepcopy(module.state_dict())
        history.append(record)
        progress.show(record)
    if best_state is not None:
        module.load_state_dict(best_state)
    return history, best_epoch


def _tensor(value, device: torch.device) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    return torch.tensor(np.asarray(value), device=device)
