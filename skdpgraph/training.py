"""The one DP-SGD loop, shared by every estimator that trains with DP-SGD.

Each step: draw a batch with the plan's sampler, compute per-example losses, clip each
example's gradient to C on its global norm and sum (in one backward pass for models of
``nn.Linear`` layers, else with Opacus' ghost clipping), add Gaussian
noise of std ``noise_multiplier * sensitivity * C``, divide by the (expected) batch size,
take an optimiser step (Opacus ``DPOptimizerFastGradientClipping``). A non-private
plan runs the same loop with the same batches, without clipping or noise.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

import numpy as np
import torch
from opacus.grad_sample import GradSampleModuleFastGradientClipping
from opacus.optimizers import DPOptimizerFastGradientClipping
from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed
from opacus.optimizers.utils import params as opacus_params
from opacus.utils.fast_gradient_clipping_utils import DPTensorFastGradientClipping
from torch import nn

from skdpgraph._clipped_sum import ClippedSumModule
from skdpgraph._progress import EpochProgress, epoch_record
from skdpgraph.privacy import DPSGDPlan
from skdpgraph.sampling import make_batch_sampler

__all__ = ["BestEpoch", "ExampleSet", "TensorExamples", "TrainingResult", "train_dpsgd"]

#: Non-private batches larger than this run forward and backward in chunks of this many
#: examples (the same gradient): every intermediate then fits in the CPU cache, which
#: halves full-batch training time at 10^5 examples and beyond.
_CHUNK = 4096

#: ``loss_fn(module, batch) -> (per_example_loss, per_example_correct or None)``.
LossFn = Callable[[torch.nn.Module, Sequence[torch.Tensor]],
                  "tuple[torch.Tensor, torch.Tensor | None]"]


class ExampleSet(Protocol):
    """What the loop trains on: ``len()`` examples and a way to fetch a batch of them.

    ``batch(index, step)`` returns tensors whose first axis is the batch; ``step`` lets a
    set change over training (DRW-D re-samples its subgraphs). One example must be one
    privacy unit's whole contribution, as the accountant assumes.
    """

    def __len__(self) -> int: ...

    def batch(self, index: torch.Tensor, step: int) -> Sequence[torch.Tensor]: ...


class TensorExamples:
    """Examples stored as aligned tensors (first axis = example), moved to ``device``.

    Examples
    --------
    >>> import torch
    >>> data = TensorExamples(torch.zeros(5, 3), torch.arange(5))
    >>> [t.shape[0] for t in data.batch(torch.tensor([0, 4]), step=0)]
    [2, 2]
    """

    def __init__(self, *tensors: torch.Tensor, device: torch.device | str = "cpu") -> None:
        if len({t.shape[0] for t in tensors}) != 1:
            raise ValueError("TensorExamples: all tensors need the same first dimension.")
        self.tensors = tuple(t.to(device) for t in tensors)

    def __len__(self) -> int:
        return int(self.tensors[0].shape[0])

    def batch(self, index: torch.Tensor, step: int) -> tuple[torch.Tensor, ...]:
        index = index.to(self.tensors[0].device)
        return tuple(t[index] for t in self.tensors)


@dataclass
class TrainingResult:
    """The trained (unwrapped) module and the per-epoch history."""

    module: torch.nn.Module
    history: list[dict] = field(default_factory=list)


def _make_optimizer(name: str, params, lr: float, weight_decay: float) -> torch.optim.Optimizer:
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"Unknown optimizer {name!r}; use 'adam' or 'sgd'.")


class _InPlaceAccumulation:
    """Opacus' DP optimisers, without their deep copy of every gradient at every step.

    ``accumulate`` copies ``p.grad`` into ``p.summed_grad`` so that later backward passes
    cannot change it; here every step's gradients are fresh tensors that the optimiser
    replaces (``p.grad = summed_grad + noise``) before anything else could touch them, so
    the copy only costs time. Put it before the Opacus class in the bases.
    """

    def accumulate(self) -> None:
        for p in self.params:
            if p.summed_grad is not None:
                p.summed_grad.add_(p.grad)
            else:
                p.summed_grad = p.grad


class _OneDrawNoise:
    """Every parameter's noise drawn in one call, divided by the batch size in the same pass.

    Opacus draws each parameter's Gaussian separately (after allocating a tensor of zeros
    for it), then divides each gradient by the expected batch size in a second pass. Here
    one ``normal_`` covers all parameters (the same distribution: independent
    :math:`N(0, \\sigma^2 C^2)` coordinates from the noise generator, in parameter order,
    drawn already divided by the batch size), and each noisy gradient is one fused add.
    The draw fills one buffer whose per-parameter views are cut once: cutting them anew
    cost a quarter of the noise's time on small models. Each step's noisy gradients are
    those views, read by the optimiser step and dropped by ``zero_grad`` before the next
    draw overwrites them. Only the process for which :attr:`draws_noise` is true adds
    noise (rank 0 of a distributed run). Put it before the Opacus class in the bases.
    """

    draws_noise = True
    _noise_buffer: torch.Tensor | None = None
    _noise_views: list[torch.Tensor] | None = None

    def add_noise(self) -> None:
        params = self.params
        sums = [p.summed_grad for p in params]
        first = sums[0]
        if any(s.dtype != first.dtype or s.device != first.device for s in sums):
            super().add_noise()  # Opacus' own, per parameter
            DPOptimizerFastGradientClipping.scale_grad(self)
            return
        std = self.noise_multiplier * self.max_grad_norm
        divisor = (self.expected_batch_size * self.accumulated_iterations
                   if self.loss_reduction == "mean" else 1.0)
        _check_processed_flag(sums)
        if self.draws_noise:
            # (sum + std z) / divisor as (std / divisor) z + sum / divisor: the noise is
            # drawn already scaled and each parameter's gradient is one fused add into its
            # view. An absurd std gives inf noise (caught as divergence), as std * z would.
            views = self._views_like(first)
            self._noise_buffer.normal_(0.0, std / divisor, generator=self.generator)
            torch._foreach_add_(views, sums, alpha=1.0 / divisor)  # one op for every parameter
        else:
            views = torch._foreach_div(sums, divisor)
        for p, grad in zip(params, views):
            p.grad = grad
        _mark_as_processed(sums)

    def _views_like(self, like: torch.Tensor) -> list[torch.Tensor]:
        buffer = self._noise_buffer
        if buffer is None or buffer.dtype != like.dtype or buffer.device != like.device:
            params = self.params
            sizes = [p.numel() for p in params]
            buffer = torch.empty(sum(sizes), dtype=like.dtype, device=like.device)
            self._noise_buffer = buffer
            parts = buffer.split(sizes)
            self._noise_views = [part.view(p.shape) for part, p in zip(parts, params)]
        return self._noise_views

    def scale_grad(self) -> None:
        """Nothing: :meth:`add_noise` has divided by the expected batch size already."""


class _ParameterListOnce:
    """Opacus' DP optimisers, with their list of parameters built once.

    Opacus rebuilds ``params`` from the parameter groups at each use, several times a
    step; the groups never change during training. Put it before the Opacus class in the
    bases.
    """

    _params: list[nn.Parameter] | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._params = opacus_params(self)

    @property
    def params(self) -> list[nn.Parameter]:
        return self._params if self._params is not None else super().params


class _DPOptimizer(_ParameterListOnce, _InPlaceAccumulation, _OneDrawNoise,
                   DPOptimizerFastGradientClipping):
    """Opacus' ``DPOptimizerFastGradientClipping`` with :class:`_ParameterListOnce`,
    :class:`_InPlaceAccumulation` and :class:`_OneDrawNoise`."""


class _Stepper:
    """One optimisation step, private or not; hides the clipping and the noise.

    A private step computes the sum of the per-example clipped gradients, then Opacus'
    ``DPOptimizerFastGradientClipping`` adds the noise, divides by the expected batch size
    and steps. The clipped sum comes from one backward pass where every trainable
    parameter belongs to an ``nn.Linear`` (:class:`~skdpgraph._clipped_sum.ClippedSumModule`,
    all of the library's models), else from Opacus' ghost clipping: two backward passes,
    the first for every example's gradient norm, the second for the loss reweighted by
    the clipping factors ``min(1, C / norm)``, run by Opacus' own
    ``DPTensorFastGradientClipping`` (what its ``DPLossFastGradientClipping`` loss wrapper
    returns; the wrapper itself wants a ``criterion(input, target)`` where our loss
    functions take the module and the batch). Both give the same clipped sum.
    """

    def __init__(self, module: torch.nn.Module, plan: DPSGDPlan, optimizer: torch.optim.Optimizer,
                 noise_generator: torch.Generator | None) -> None:
        self.plan = plan
        if not plan.private:
            self.model, self.optimizer = module, optimizer
            return
        if ClippedSumModule.supports(module):
            self.model = ClippedSumModule(module, plan.max_grad_norm)
        else:
            self.model = GradSampleModuleFastGradientClipping(
                module, loss_reduction="sum", max_grad_norm=plan.max_grad_norm,
                use_ghost_clipping=True,
            )
        self.optimizer = self._dp_optimizer(optimizer, noise_generator)

    def _dp_optimizer(self, optimizer: torch.optim.Optimizer,
                      noise_generator: torch.Generator | None) -> torch.optim.Optimizer:
        # The noisy sum is divided by the (expected) batch size: loss_reduction="mean".
        return _DPOptimizer(
            optimizer, noise_multiplier=self.plan.noise_multiplier * self.plan.sensitivity,
            max_grad_norm=self.plan.max_grad_norm, expected_batch_size=self.plan.batch_size,
            loss_reduction="mean", generator=noise_generator,
        )

    def step(self, losses: torch.Tensor | None) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        if losses is None:  # empty Poisson batch: the noisy step still happens
            for p in self.model.parameters():
                if p.requires_grad:
                    p.grad = torch.zeros_like(p)
        elif isinstance(self.model, ClippedSumModule):
            self.model.clipped_sum(losses)
        elif self.plan.private:
            with warnings.catch_warnings():
                # Opacus' hooks fire on module outputs when inputs need no gradient: harmless.
                warnings.filterwarnings("ignore", message="Full backward hook is firing")
                DPTensorFastGradientClipping(self.model, self.optimizer, losses,
                                             loss_reduction="sum").backward()
        else:
            losses.mean().backward()
        self.optimizer.step()

    def unwrap(self) -> torch.nn.Module:
        if isinstance(self.model, ClippedSumModule):
            self.optimizer.zero_grad(set_to_none=True)
            self.model.stop_recording()
            return self.model.module
        if isinstance(self.model, GradSampleModuleFastGradientClipping):
            self.optimizer.zero_grad(set_to_none=True)
            self.model._close()
            return self.model._module
        return self.model


def train_dpsgd(module: torch.nn.Module, examples: ExampleSet, loss_fn: LossFn,
                plan: DPSGDPlan, *, lr: float, generator: torch.Generator,
                noise_generator: torch.Generator | None = None, optimizer: str = "adam",
                weight_decay: float = 0.0, epsilon_at: Callable[[int], float] | None = None,
                epsilon_bound_at: Callable[[int], float] | None = None,
                epsilon_cap: float | None = None, stage: str = "classifier",
                verbose: bool = False, description: str = "DP-SGD",
                on_epoch: Callable[[torch.nn.Module, dict], None] | None = None) -> TrainingResult:
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
    lr : float
        Learning rate.
    generator : torch.Generator
        CPU generator for batch sampling.
    noise_generator : torch.Generator, optional
        Generator for the noise, on the module's device.
    epsilon_at : callable, optional
        ``epsilon_at(steps_done)``: the epsilon spent so far, from the plan's accountant,
        for the history and the progress bar (without it, NaN: not tracked).
    epsilon_bound_at : callable, optional
        ``epsilon_bound_at(steps_done)``: a cheaper upper bound on ``epsilon_at`` (the same
        accountant on fewer RDP orders). With neither a bar nor ``on_epoch`` to show the
        running epsilon as it goes, it is computed after the loop: the last epoch records
        ``epsilon_at``, every other epoch ``min(epsilon_bound_at(steps), epsilon_at(last))``,
        also an upper bound on the epsilon spent by then, since that only grows.
    epsilon_cap : float, optional
        An epsilon known, before training, not to be exceeded at the end of this run (the
        whole fit's, which the budget check computed). With it the records computed after
        the loop are all ``min(epsilon_bound_at(steps), epsilon_cap)``, and no search on
        every RDP order runs; where this run's end is the fit's end the last record is then
        ``epsilon_cap`` itself, the exact epsilon of the fit.
    stage : str, default="classifier"
        The stage named in every history record.
    verbose : bool
        Show a progress bar over the epochs with the loss and running epsilon; it stays
        on screen when training ends.
    description : str, default="DP-SGD"
        The progress bar's label, also used in error messages.
    on_epoch : callable, optional
        ``on_epoch(module, record)`` after every epoch, with the module (in train mode: put
        it back if you switch it) and the epoch's record, whose ``validation_accuracy`` it
        may fill in. Meant for non-private plans (e.g. best-epoch selection on public
        labels); the accountant does not see what the callback reads.

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
    """
    if len(examples) != plan.num_examples:
        raise ValueError(f"train_dpsgd: plan is for {plan.num_examples} examples but the set "
                         f"has {len(examples)}.")
    sampler = make_batch_sampler(plan.sampling, plan.num_examples, plan.batch_size, generator)
    stepper = _Stepper(module, plan, _make_optimizer(optimizer, module.parameters(), lr,
                                                     weight_decay), noise_generator)
    return _run_steps(module, stepper, sampler, examples, loss_fn, plan, lr=lr,
                      epsilon_at=epsilon_at, epsilon_bound_at=epsilon_bound_at,
                      epsilon_cap=epsilon_cap, stage=stage, verbose=verbose,
                      description=description, on_epoch=on_epoch)


def _run_steps(module: torch.nn.Module, stepper: _Stepper, sampler, examples: ExampleSet,
               loss_fn: LossFn, plan: DPSGDPlan, *, lr: float,
               epsilon_at: Callable[[int], float] | None, stage: str, verbose: bool,
               description: str,
               on_epoch: Callable[[torch.nn.Module, dict], None] | None,
               epsilon_bound_at: Callable[[int], float] | None = None,
               epsilon_cap: float | None = None) -> TrainingResult:
    """The loop of :func:`train_dpsgd`, given its batch sampler and its stepper."""
    steps_per_epoch = max(1, math.ceil(plan.num_examples / plan.batch_size))
    epochs = math.ceil(plan.steps / steps_per_epoch) if plan.steps else 0
    history: list[dict] = []
    # With no bar or callback to see it as it goes, the running epsilon is computed after
    # the loop, in one pass: each search then runs right after the last, about three times
    # faster than between epochs of tensor work, and starts at the last one's best order;
    # the epochs before the last may take the cheaper bound (see epsilon_bound_at).
    live_epsilon = epsilon_at is not None and (verbose or on_epoch is not None)
    epoch_ends: list[int] = []
    step = 0
    progress = EpochProgress(epochs, description, verbose=verbose)
    stepper.model.train()
    for epoch in progress:
        loss_sum, correct_sum, count, has_correct = 0.0, 0, 0, False
        for _ in range(min(steps_per_epoch, plan.steps - step)):
            index = sampler.sample()
            losses, chunked = None, not plan.private and len(index) > _CHUNK
            if chunked:
                batch_loss, correct = _chunked_backward(stepper, loss_fn, examples, index, step)
            elif len(index):
                losses, correct = loss_fn(stepper.model, examples.batch(index, step))
                batch_loss = float(losses.detach().sum())
            if len(index):
                if not math.isfinite(batch_loss):
                    raise FloatingPointError(_diverged(
                        description, f"the loss is non-finite ({batch_loss}) at step {step + 1} "
                        f"of {plan.steps}", lr, plan))
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
        record = epoch_record(
            stage, epoch, loss_sum / count if count else math.nan,
            train_accuracy=correct_sum / count if has_correct and count else None,
            epsilon=epsilon_at(step) if live_epsilon else math.nan)
        if on_epoch is not None:
            on_epoch(module, record)
        history.append(record)
        epoch_ends.append(step)
        progress.show(record)
    if epsilon_at is not None and not live_epsilon and history:
        bound_at, bounded = epsilon_bound_at or epsilon_at, len(history)
        if epsilon_cap is None:  # the last epoch exact, and a cap for the others
            epsilon_cap = float(epsilon_at(epoch_ends[-1]))
            history[-1]["epsilon"], bounded = epsilon_cap, bounded - 1
        for record, end in zip(history[:bounded], epoch_ends):
            record["epsilon"] = min(float(bound_at(end)), float(epsilon_cap))
    module = stepper.unwrap()
    module.eval()
    if not all(bool(torch.isfinite(p).all()) for p in module.parameters()):
        raise FloatingPointError(_diverged(description, "the trained parameters are non-finite",
                                           lr, plan))
    return TrainingResult(module=module, history=history)


def _chunked_backward(stepper: _Stepper, loss_fn: LossFn, examples: ExampleSet,
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


def _diverged(description: str, what: str, lr: float, plan: DPSGDPlan) -> str:
    """The divergence message: what went non-finite and the knobs that cause it."""
    noise = ""
    if plan.private:
        std = plan.noise_multiplier * plan.sensitivity * plan.max_grad_norm
        noise = (f", or lower max_grad_norm={plan.max_grad_norm:g} (the noise std per step is "
                 f"noise_multiplier x sensitivity x max_grad_norm = {std:.3g})")
    return (f"{description}: training diverged: {what}. Lower the learning rate (lr={lr:g}), "
            f"scale the features to a moderate range (e.g. StandardScaler){noise}.")


class BestEpoch:
    """A ``train_dpsgd`` ``on_epoch`` callback that keeps the best epoch on held-out nodes.

    After every epoch it records ``validation_accuracy`` on the held-out nodes and copies
    the weights when the accuracy improves; :meth:`restore` loads the best copy. The
    selection reads the held-out labels without noise: use it only where they are public
    (GAP's edge level, or a non-private fit); see
    :meth:`~skdpgraph.estimators._base.BaseDPClassifier._validation_size`.

    Parameters
    ----------
    inputs : Tensor or callable
        Held-out model inputs, on the module's device, or ``inputs(module)`` returning the
        held-out nodes' logits (for models that need more than one input tensor, such as
        a subgraph GNN).
    labels : ndarray of shape (n,)
        Held-out labels (encoded as class indices).
    """

    def __init__(self, inputs: torch.Tensor | Callable[[nn.Module], torch.Tensor],
                 labels: np.ndarray) -> None:
        self.logits = inputs if callable(inputs) else (lambda module: module(inputs))
        self.labels = np.asarray(labels)
        self.accuracy, self.state = -1.0, None

    def __call__(self, module: nn.Module, record: dict) -> None:
        with torch.no_grad():
            predicted = self.logits(module.eval()).argmax(-1).cpu().numpy()
        module.train()
        record["validation_accuracy"] = accuracy = float((predicted == self.labels).mean())
        if accuracy > self.accuracy:
            self.accuracy = accuracy
            self.state = {k: v.detach().clone() for k, v in module.state_dict().items()}

    def restore(self, module: nn.Module) -> nn.Module:
        """Load the best epoch's weights into ``module`` (unchanged if none was recorded)."""
        if self.state is not None:
            module.load_state_dict(self.state)
        return module
