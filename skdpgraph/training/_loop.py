"""The one DP-SGD loop, shared by every estimator that trains with DP-SGD.

Each step: draw a batch with the plan's sampler, compute per-example losses, clip each
example's gradient to C on its global norm and sum (in one backward pass for models of
``nn.Linear`` layers, else with Opacus' ghost clipping), add Gaussian
noise of std ``noise_multiplier * sensitivity * C``, divide by the (expected) batch size,
take an optimiser step (Opacus ``DPOptimizerFastGradientClipping``). A non-private
plan runs the same loop with the same batches, without clipping or noise. After every
epoch the callbacks see the epoch's record (:mod:`skdpgraph.training._callbacks`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import torch

from skdpgraph._progress import epoch_record
from skdpgraph.privacy import DPSGDPlan
from skdpgraph.sampling import make_batch_sampler
from skdpgraph.training._callbacks import Callback, History
from skdpgraph.training._examples import ExampleSet, LossFn
from skdpgraph.training._optimizers import OptimizerSettings, make_optimizer
from skdpgraph.training._stepper import Stepper

__all__ = ["Generators", "TrainingResult", "TrainingStage", "divergence_message", "run_epochs",
           "train_dpsgd"]

#: Non-private batches larger than this run forward and backward in chunks of this many
#: examples (the same gradient): every intermediate then fits in the CPU cache, which
#: halves full-batch training time at 10^5 examples and beyond.
_CHUNK = 4096


@dataclass
class TrainingResult:
    """The trained (unwrapped) module and the per-epoch history.

    Parameters
    ----------
    module : torch.nn.Module
        The trained module, in eval mode.
    history : list of dict
        One record per epoch.

    Examples
    --------
    >>> import torch
    >>> TrainingResult(torch.nn.Linear(1, 1)).history
    []
    """

    module: torch.nn.Module
    history: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Generators:
    """The random generators of a training run.

    Parameters
    ----------
    batches : torch.Generator
        CPU generator for batch sampling.
    noise : torch.Generator, optional
        Generator for the noise, on the module's device.

    Examples
    --------
    >>> from skdpgraph._random import RandomStreams
    >>> streams = RandomStreams(0)  # one independent stream per purpose
    >>> Generators(streams.torch("batches")).noise is None
    True
    """

    batches: torch.Generator
    noise: torch.Generator | None = None


@dataclass(frozen=True)
class TrainingStage:
    """What a training run is called: its stage in the history, its label in messages.

    Parameters
    ----------
    name : str, default="classifier"
        The stage named in every history record.
    description : str, default="DP-SGD"
        The run's label in error messages (and, by convention, its progress bar's).

    Examples
    --------
    >>> TrainingStage("encoder", "GAPClassifier encoder").name
    'encoder'
    """

    name: str = "classifier"
    description: str = "DP-SGD"


def train_dpsgd(module: torch.nn.Module, examples: ExampleSet, loss_fn: LossFn,
                plan: DPSGDPlan, *, optimizer: OptimizerSettings, generators: Generators,
                callbacks: Sequence[Callback] = (),
                stage: TrainingStage = TrainingStage()) -> TrainingResult:
    """Train ``module`` on ``examples`` as ``plan`` says.

    Parameters
    ----------
    module : torch.nn.Module
        Built from layers Opacus can compute per-example gradients for (``nn.Linear``
        on inputs of shape ``(batch, ..., features)`` gives one gradient per example).
    examples : ExampleSet
        The examples; ``len(examples)`` must equal ``plan.num_examples``.
    loss_fn : callable
        ``loss_fn(module, batch)`` returns the per-example losses, shape ``(batch,)``, and
        optionally a boolean tensor of per-example correct predictions (for history).
    plan : DPSGDPlan
        Sampling, steps, clipping and noise.
    optimizer : OptimizerSettings
        Optimiser, learning rate and weight decay.
    generators : Generators
        The batch sampling's generator and the noise's.
    callbacks : sequence of Callback, default=()
        Called in this order at the start, after every epoch (with the module in train
        mode and the epoch's record, which they may fill in) and at the end: an
        :class:`EpsilonTracker` for the running epsilon (without one a record's epsilon
        is NaN: not tracked), a :class:`ProgressBar`, a :class:`BestEpoch`... The
        accountant does not see what a callback reads: one that reads protected data
        belongs to a non-private plan.
    stage : TrainingStage, default=TrainingStage()
        The stage named in every record, and the label of error messages.

    Returns
    -------
    TrainingResult
        The module, unwrapped from Opacus and in eval mode, and one
        :func:`~skdpgraph._progress.epoch_record` per epoch (``train_accuracy`` None if
        ``loss_fn`` gives no correctness).

    Raises
    ------
    FloatingPointError
        If training diverges: a batch's loss or a trained parameter is not finite.

    Examples
    --------
    >>> import torch
    >>> from skdpgraph.privacy import DPSGDPlan
    >>> from skdpgraph._random import RandomStreams
    >>> from skdpgraph.training import OptimizerSettings, TensorExamples
    >>> x, y = torch.randn(20, 3), torch.randint(0, 2, (20,))
    >>> def loss(module, batch):
    ...     logits = module(batch[0])
    ...     return (torch.nn.functional.cross_entropy(logits, batch[1], reduction="none"),
    ...             logits.argmax(-1) == batch[1])
    >>> plan = DPSGDPlan("poisson", 20, 5, 8, noise_multiplier=1.0, max_grad_norm=1.0)
    >>> result = train_dpsgd(torch.nn.Linear(3, 2), TensorExamples(x, y), loss, plan,
    ...                      optimizer=OptimizerSettings(lr=0.1),
    ...                      generators=Generators(RandomStreams(0).torch("batches")))
    >>> [record["epoch"] for record in result.history]
    [1, 2]
    """
    if len(examples) != plan.num_examples:
        raise ValueError(f"train_dpsgd: plan is for {plan.num_examples} examples but the set "
                         f"has {len(examples)}.")
    sampler = make_batch_sampler(plan.sampling, plan.num_examples, plan.batch_size,
                                 generators.batches)
    stepper = Stepper(module, plan, make_optimizer(optimizer, module.parameters()),
                      generators.noise)
    return run_epochs(module, stepper, sampler, examples, loss_fn, callbacks, stage=stage,
                      lr=optimizer.lr)


def run_epochs(module: torch.nn.Module, stepper: Stepper, sampler, examples: ExampleSet,
               loss_fn: LossFn, callbacks: Sequence[Callback], *, stage: TrainingStage,
               lr: float) -> TrainingResult:
    """The loop of :func:`train_dpsgd`, given its batch sampler and its stepper.

    Parameters
    ----------
    module : torch.nn.Module
        The module the callbacks see (``stepper`` trains it, maybe wrapped).
    stepper : Stepper
        Takes each step; ``stepper.plan`` sets the steps and the batch size.
    sampler : object
        ``sampler.sample()`` returns the next batch's example indices.
    examples : ExampleSet
        As in :func:`train_dpsgd`.
    loss_fn : callable
        As in :func:`train_dpsgd`.
    callbacks : sequence of Callback
        As in :func:`train_dpsgd`.
    stage : TrainingStage
        As in :func:`train_dpsgd`.
    lr : float
        The learning rate, named in the divergence message.

    Returns
    -------
    TrainingResult
        The unwrapped module, in eval mode, and the history.

    Examples
    --------
    >>> import torch
    >>> from skdpgraph.privacy import DPSGDPlan
    >>> from skdpgraph.sampling import make_batch_sampler
    >>> from skdpgraph._random import RandomStreams
    >>> from skdpgraph.training import Stepper, TensorExamples
    >>> plan = DPSGDPlan("poisson", 4, 4, 2, noise_multiplier=None, max_grad_norm=None)
    >>> module = torch.nn.Linear(1, 1)
    >>> stepper = Stepper(module, plan, torch.optim.SGD(module.parameters(), lr=0.1), None)
    >>> sampler = make_batch_sampler("poisson", 4, 4, RandomStreams(0).torch("batches"))
    >>> data = TensorExamples(torch.ones(4, 1))
    >>> result = run_epochs(module, stepper, sampler, data,
    ...                     lambda m, b: (m(b[0]).squeeze(-1) ** 2, None), (),
    ...                     stage=TrainingStage(), lr=0.1)
    >>> len(result.history)
    2
    """
    plan = stepper.plan
    steps_per_epoch = max(1, math.ceil(plan.num_examples / plan.batch_size))
    epochs = math.ceil(plan.steps / steps_per_epoch) if plan.steps else 0
    history = History()
    callbacks = (*callbacks, history)
    for callback in callbacks:
        callback.on_train_begin(module, epochs=epochs, callbacks=callbacks)
    step = 0
    stepper.model.train()
    for epoch in range(1, epochs + 1):
        count = min(steps_per_epoch, plan.steps - step)
        loss, accuracy = _epoch(stepper, sampler, examples, loss_fn, step, count,
                                lambda what: divergence_message(stage.description, what, lr,
                                                                plan))
        step += count
        record = epoch_record(stage.name, epoch, loss, train_accuracy=accuracy,
                              epsilon=math.nan)
        for callback in callbacks:
            callback.on_epoch_end(module, record, steps=step)
    module = stepper.unwrap()
    module.eval()
    if not all(bool(torch.isfinite(p).all()) for p in module.parameters()):
        raise FloatingPointError(divergence_message(
            stage.description, "the trained parameters are non-finite", lr, plan))
    for callback in callbacks:
        callback.on_train_end(module, history.records)
    return TrainingResult(module=module, history=history.records)


def _epoch(stepper: Stepper, sampler, examples: ExampleSet, loss_fn: LossFn, step: int,
           steps: int, diverged) -> tuple[float, float | None]:
    """``steps`` steps from step ``step`` on: the epoch's mean loss and accuracy (or None)."""
    plan = stepper.plan
    loss_sum, correct_sum, count, has_correct = 0.0, 0, 0, False
    for _ in range(steps):
        index = sampler.sample()
        losses, chunked = None, not plan.private and len(index) > _CHUNK
        if chunked:
            batch_loss, correct = _chunked_backward(stepper, loss_fn, examples, index, step)
        elif len(index):
            losses, correct = loss_fn(stepper.model, examples.batch(index, step))
            batch_loss = float(losses.detach().sum())
        if len(index):
            if not math.isfinite(batch_loss):
                raise FloatingPointError(diverged(
                    f"the loss is non-finite ({batch_loss}) at step {step + 1} of {plan.steps}"))
            loss_sum += batch_loss
            count += len(index)
            if correct is not None:
                has_correct = True
                correct_sum += int(correct.sum())
        if chunked:
            stepper.optimizer.step()
        else:
            stepper.step(losses)
        step += 1
    return (loss_sum / count if count else math.nan,
            correct_sum / count if has_correct and count else None)


def _chunked_backward(stepper: Stepper, loss_fn: LossFn, examples: ExampleSet,
                      index: torch.Tensor, step: int) -> tuple[float, torch.Tensor | None]:
    """The gradient of a non-private batch's mean loss, ``_CHUNK`` examples at a time.

    Each chunk's loss sum over the batch size, back-propagated in turn, adds up to the
    gradient of the whole batch's mean (examples are independent: one example's loss
    never reads another's, as per-example clipping requires). Returns the batch's summed
    loss and its per-example correctness (or None), for the history.
    """
    stepper.optimizer.zero_grad(set_to_none=True)
    total, corrects = 0.0, []
    for part in index.split(_CHUNK):
        losses, correct = loss_fn(stepper.model, examples.batch(part, step))
        (losses.sum() / len(index)).backward()
        total += float(losses.detach().sum())
        corrects.append(correct)
    return total, None if corrects[0] is None else torch.cat(corrects)


def divergence_message(description: str, what: str, lr: float, plan: DPSGDPlan) -> str:
    """The divergence message: what went non-finite and the knobs that cause it.

    Parameters
    ----------
    description : str
        The run's label, first in the message.
    what : str
        What went non-finite, and where.
    lr : float
        The learning rate.
    plan : DPSGDPlan
        The run's plan (its clipping and noise, when private).

    Returns
    -------
    str
        The message, with the remedies.

    Examples
    --------
    >>> from skdpgraph.privacy import DPSGDPlan
    >>> plan = DPSGDPlan("poisson", 4, 2, 1, noise_multiplier=None, max_grad_norm=None)
    >>> divergence_message("toy", "the loss is nan", 0.1, plan)[:40]
    'toy: training diverged: the loss is nan.'
    """
    noise = ""
    if plan.private:
        std = plan.noise_multiplier * plan.sensitivity * plan.max_grad_norm
        noise = (f", or lower max_grad_norm={plan.max_grad_norm:g} (the noise std per step is "
                 f"noise_multiplier x sensitivity x max_grad_norm = {std:.3g})")
    return (f"{description}: training diverged: {what}. Lower the learning rate (lr={lr:g}), "
            f"scale the features to a moderate range (e.g. StandardScaler){noise}.")
