"""Learning from label proportions: the bag-level loss of RGNN and its full-batch loop."""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from torch import nn

from skdpgraph._progress import EpochProgress, epoch_record
from skdpgraph.nn._gnn import InNeighbourMean

__all__ = ["forward_corrected_loss", "llp_loss", "train_llp_gnn"]


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


def forward_corrected_loss(logits: torch.Tensor, frequencies: torch.Tensor,
                           transition: torch.Tensor) -> torch.Tensor:
    r"""Cross-entropy of noisy-label frequencies against the model's predicted reports.

    .. math::

        \mathcal{L}_{fwd} = -\frac{1}{n}\sum_v \sum_j \lambda_{vj}
            \log\,(\hat y_v P)_j,

    where :math:`\hat y_v` is the softmax of the logits and :math:`P` the channel matrix
    of the randomiser (:math:`P_{ij}` = P(report j | true i)): the *forward* loss
    correction of Patrini et al. (CVPR 2017), here against soft frequencies
    :math:`\lambda_v` of the noisy labels (one-hot: a node's own report). Its minimiser
    over :math:`\hat y_v` satisfies :math:`\hat y_v P = \lambda_v` when that is
    feasible, so the model learns de-biased class probabilities without ever inverting
    :math:`P` (no clamping of negative estimates).

    Parameters
    ----------
    logits : Tensor of shape (n, n_classes)
    frequencies : Tensor of shape (n, n_classes)
        Rows sum to one.
    transition : Tensor of shape (n_classes, n_classes)
        Row-stochastic channel matrix.

    Returns
    -------
    Tensor
        A scalar.

    Examples
    --------
    >>> import torch
    >>> from skdpgraph.nn import forward_corrected_loss
    >>> P = torch.tensor([[0.75, 0.25], [0.25, 0.75]])
    >>> logits = torch.tensor([[10.0, -10.0]])  # predicts class 0: reports 0 w.p. 0.75
    >>> round(float(forward_corrected_loss(logits, torch.tensor([[1.0, 0.0]]), P)), 4)
    0.2877
    """
    reports = logits.softmax(-1) @ transition.to(logits.dtype)
    return -(frequencies.to(logits.dtype) * torch.log(reports.clamp_min(1e-12))).sum(1).mean()


def train_llp_gnn(module: nn.Module, x, edge_index, train_index, targets, bag, proportions, *,
                  llp_weight: float, epochs: int, lr: float, max_grad_norm: float | None = None,
                  val_index=None, val_targets=None, transition=None, epsilon: float = math.nan,
                  stage: str = "classifier", verbose: bool = False,
                  description: str = "train") -> tuple[list[dict], int]:
    r"""Full-batch Adam on :math:`\mathrm{CE} + \alpha\,\mathcal{L}_{llp}` (no DP-SGD).

    With ``transition``, the targets are rows of noisy-label frequencies and the
    cross-entropy is :func:`forward_corrected_loss` through that channel.

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
        See :func:`llp_loss` (``bag`` is per training node); unused if ``llp_weight`` is 0.
    max_grad_norm : float or None, default=None
        Clip the global gradient norm to this value (stability only, not privacy).
    val_index, val_targets : Tensor or None
        Model-selection nodes and their targets, in the form of ``targets`` (None or
        empty: no selection).
    transition : Tensor of shape (n_classes, n_classes) or None, default=None
        Channel matrix of the label randomiser (see :func:`forward_corrected_loss`);
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
