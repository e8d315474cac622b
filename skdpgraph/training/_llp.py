"""RGNN's full-batch training: cross-entropy plus a label-proportion term, no DP-SGD.

The loop is :func:`~skdpgraph.training.run_epochs` on a non-private plan of one example
(the whole graph) and one step per epoch, with callbacks for the training accuracy and the
held-out epoch selection.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from torch import nn

from skdpgraph.nn import InNeighbourMean, forward_corrected_loss, llp_loss
from skdpgraph.privacy import DPSGDPlan
from skdpgraph.training._callbacks import Callback, EpsilonTracker, ProgressBar
from skdpgraph.training._loop import TrainingStage, run_epochs
from skdpgraph.training._optimizers import OptimizerSettings, make_optimizer
from skdpgraph.training._stepper import Stepper

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
    bag : Tensor or array
        See :func:`~skdpgraph.nn.llp_loss`.
    proportions : Tensor or array
        See :func:`~skdpgraph.nn.llp_loss` (``bag`` is per training node); unused if
        ``llp_weight`` is 0.
    llp_weight : float
        The weight :math:`\alpha` of the label-proportion term.
    epochs : int
        Epochs, one full-batch step each.
    lr : float
        Adam's learning rate.
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
    objective = _Objective(lambda: module(x, edge_index)[train_index], supervised, hard,
                           targets, (llp_weight, bag, proportions))
    callbacks = [EpsilonTracker(lambda steps: epsilon), objective]
    selection = None
    if val_index is not None and len(val_index):
        val_index = _tensor(val_index, device)
        selection = _HeldOutSelection(
            lambda: module(x, edge_index)[val_index], supervised, hard,
            _tensor(val_targets, device), by_loss=transition is not None)
        callbacks.append(selection)
    if verbose:
        callbacks.append(ProgressBar(description))
    # One step per epoch on one example, the whole graph: a non-private full-batch plan.
    plan = DPSGDPlan("without_replacement", 1, 1, epochs, noise_multiplier=None,
                     max_grad_norm=None)
    stepper = _FullBatchStepper(module, plan, make_optimizer(OptimizerSettings(lr=lr),
                                                             module.parameters()),
                                max_grad_norm)
    history = run_epochs(module, stepper, _WholeGraph(), _WholeGraph(), objective, callbacks,
                         stage=TrainingStage(stage, description), lr=lr).history
    if selection is None:
        return history, epochs
    module.load_state_dict(selection.state)
    return history, selection.epoch


class _WholeGraph:
    """The example set and sampler of full-batch training: one example, always drawn."""

    def __len__(self) -> int:
        return 1

    def batch(self, index: torch.Tensor, step: int) -> tuple:
        return ()

    def sample(self) -> torch.Tensor:
        return torch.zeros(1, dtype=torch.int64)


class _FullBatchStepper(Stepper):
    """A plain step on the whole-graph loss, its gradient norm clipped to ``max_grad_norm``
    (stability only) when given."""

    def __init__(self, module: nn.Module, plan: DPSGDPlan, optimizer: torch.optim.Optimizer,
                 max_grad_norm: float | None) -> None:
        super().__init__(module, plan, optimizer, None)
        self.max_grad_norm = max_grad_norm

    def step(self, losses: torch.Tensor | None) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        losses.backward()
        if self.max_grad_norm is not None:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        self.optimizer.step()


class _Objective(Callback):
    """The loss of the whole graph (supervised plus ``llp_weight`` times the bags' term), as
    the loop's ``loss_fn``; as a callback it writes the step's training accuracy into the
    epoch's record."""

    reads_epsilon = False

    def __init__(self, logits, supervised, hard, targets, llp) -> None:
        self.logits, self.supervised, self.hard, self.targets = logits, supervised, hard, targets
        self.llp_weight, self.bag, self.proportions = llp
        self.accuracy = math.nan

    def __call__(self, model: nn.Module, batch) -> tuple[torch.Tensor, None]:
        logits = self.logits()
        loss = self.supervised(logits, self.targets)
        if self.llp_weight > 0:
            loss = loss + self.llp_weight * llp_loss(logits.softmax(-1), self.bag,
                                                     self.proportions)
        self.accuracy = float((logits.argmax(-1) == self.hard(self.targets)).float().mean())
        return loss, None

    def on_epoch_end(self, module: nn.Module, record: dict, **kwargs) -> None:
        record["train_accuracy"] = self.accuracy


class _HeldOutSelection(Callback):
    """The epoch with the best held-out score: accuracy, or minus the held-out loss
    (``by_loss``); it keeps the first best epoch's parameters."""

    reads_epsilon = False

    def __init__(self, logits, supervised, hard, targets, *, by_loss: bool) -> None:
        self.logits, self.supervised, self.hard, self.targets = logits, supervised, hard, targets
        self.by_loss = by_loss
        self.best, self.epoch, self.state = -math.inf, None, None

    def on_epoch_end(self, module: nn.Module, record: dict, **kwargs) -> None:
        module.eval()
        with torch.no_grad():
            logits = self.logits()
        module.train()
        record["validation_accuracy"] = float(
            (logits.argmax(-1) == self.hard(self.targets)).float().mean())
        score = (-float(self.supervised(logits, self.targets)) if self.by_loss
                 else record["validation_accuracy"])
        if score > self.best:
            self.best, self.epoch = score, record["epoch"]
            self.state = copy.deepcopy(module.state_dict())


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
