"""Data-parallel DP-SGD: one privacy mechanism, its work split across processes.

Every process (rank) holds the model and the whole example set. Each step:

1. every rank draws the *same* global batch from the same ``"batches"`` stream (the
   batch the accountant assumes: Poisson or fixed-size, exactly as in one process) and
   keeps its shard, positions ``rank, rank + world_size, ...`` of the batch;
2. each rank clips its own examples' gradients (Opacus ghost clipping, per example, so
   local) and sums them;
3. rank 0 alone adds the Gaussian noise to its sum (Opacus'
   ``DistributedDPOptimizerFastGradientClipping``), the sums are all-reduced and divided
   by the expected global batch size; every rank takes the same optimiser step.

So the released update is ``(sum of all clipped gradients + one noise draw) / B``, the
same random variable as in one process: the plan, its sampling and its accounting are
unchanged. Noise once, on rank 0, rather than every rank drawing ``1 / sqrt(world_size)``
of it: the single-process noise stream is reproduced draw for draw, and no rank's share
of the noise can be weakened by a misconfigured peer.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, Callable, Sequence

import torch
import torch.distributed as dist
from opacus.distributed import DifferentiallyPrivateDistributedDataParallel as DPDDP
from opacus.optimizers import DistributedDPOptimizerFastGradientClipping

from skdpgraph.privacy import DPSGDPlan
from skdpgraph.sampling import make_batch_sampler
from skdpgraph.training import (Callback, ExampleSet, Generators, InPlaceAccumulation, LossFn,
                                OneDrawNoise, OptimizerSettings, ParameterListOnce, ProgressBar,
                                Stepper, TrainingResult, TrainingStage, divergence_message,
                                make_optimizer, run_epochs)

__all__ = ["train_dpsgd_distributed"]


class _DistributedDPOptimizer(ParameterListOnce, InPlaceAccumulation, OneDrawNoise,
                              DistributedDPOptimizerFastGradientClipping):
    """Opacus' distributed optimiser with :class:`~skdpgraph.training.ParameterListOnce`,
    :class:`~skdpgraph.training.InPlaceAccumulation` and
    :class:`~skdpgraph.training.OneDrawNoise`: rank 0 alone draws the noise, as in Opacus,
    the same draw as a single-process run with the same generator."""

    draws_noise = property(lambda self: self.rank == 0)


class _ShardSampler:
    """The plan's global batch, of which this rank keeps every ``world_size``-th example."""

    def __init__(self, sampler, rank: int, world_size: int) -> None:
        self.sampler, self.rank, self.world_size = sampler, rank, world_size
        self.global_size = 0  # of the last batch
        self.local_count = 0  # examples this rank saw since the last epoch's report

    def sample(self) -> torch.Tensor:
        index = self.sampler.sample()
        self.global_size = len(index)
        shard = index[self.rank::self.world_size]
        self.local_count += len(shard)
        return shard


class _DistributedStepper(Stepper):
    """A step whose clipped gradients are summed over the ranks before the one noise draw."""

    def __init__(self, module: torch.nn.Module, plan: DPSGDPlan,
                 optimizer: torch.optim.Optimizer, noise_generator: torch.Generator | None,
                 sampler: _ShardSampler, diverged: Callable[[str], str]) -> None:
        self.sampler, self.diverged = sampler, diverged
        self.steps_done = 0
        self.bad_loss: float | None = None  # set by the loss guard; see guard_losses
        # DPDDP broadcasts rank 0's parameters, so the ranks start from one model.
        super().__init__(DPDDP(module), plan, optimizer, noise_generator)

    def _dp_optimizer(self, optimizer: torch.optim.Optimizer,
                      noise_generator: torch.Generator | None) -> torch.optim.Optimizer:
        # Opacus divides each rank's (noisy) sum by expected_batch_size, then the all-reduced
        # sum by world_size: per-rank B / world_size makes it (sum + noise) / B.
        plan, world_size = self.plan, self.sampler.world_size
        return _DistributedDPOptimizer(
            optimizer, noise_multiplier=plan.noise_multiplier * plan.sensitivity,
            max_grad_norm=plan.max_grad_norm, expected_batch_size=plan.batch_size / world_size,
            loss_reduction="mean", generator=noise_generator)

    def guard_losses(self, loss_fn: LossFn) -> LossFn:
        """``loss_fn``, but a non-finite loss is reported at the next step on every rank.

        The single-process loop raises as soon as a batch's loss is not finite; a rank that
        raised alone would leave the others blocked in the next all-reduce. So this rank's
        non-finite loss is remembered (and replaced by zeros the step never uses) and
        :meth:`step` raises it on all ranks at once.
        """
        def guarded(model: torch.nn.Module, batch) -> tuple:
            losses, correct = loss_fn(model, batch)
            total = float(losses.detach().sum())
            if not math.isfinite(total):
                self.bad_loss = total
                losses = torch.zeros_like(losses.detach())
            return losses, correct

        return guarded

    def step(self, losses: torch.Tensor | None) -> None:
        bad = torch.tensor([0.0 if self.bad_loss is None else 1.0])
        dist.all_reduce(bad, op=dist.ReduceOp.SUM)
        self.steps_done += 1
        if bad.item():
            raise FloatingPointError(self.diverged(
                f"the loss is non-finite on {int(bad.item())} rank(s) at step {self.steps_done} "
                f"of {self.plan.steps}"))
        if self.plan.private:  # the distributed optimiser all-reduces
            super().step(losses)
            return
        # Non-private: the mean over the global batch, as one process takes it.
        self.optimizer.zero_grad(set_to_none=True)
        if losses is not None:
            (losses.sum() / self.sampler.global_size).backward()
        for p in self.model.parameters():
            if p.requires_grad:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
        self.optimizer.step()

    def unwrap(self) -> torch.nn.Module:
        return super().unwrap().module  # out of DPDDP


def _state_digest(generator: torch.Generator) -> int:
    state = generator.get_state().numpy().tobytes()
    return int.from_bytes(hashlib.sha256(state).digest()[:7], "little")


def _check_same_batches(generator: torch.Generator, world_size: int) -> None:
    """Raise unless every rank's batch generator is in the same state."""
    mine = torch.tensor([_state_digest(generator)], dtype=torch.int64)
    everyone = [torch.zeros_like(mine) for _ in range(world_size)]
    dist.all_gather(everyone, mine)
    if any(int(d) != int(mine) for d in everyone):
        raise ValueError(
            "train_dpsgd_distributed: generator must be in the same state on every rank (the "
            "same 'batches' stream), so that all ranks draw the same global batch; the ranks' "
            f"generators differ (state digests {[int(d) for d in everyone]}).")


class _GlobalRecord(Callback):
    """Turns this rank's loss and accuracy in each epoch's record into the global batch's.

    It runs before every other callback, so that they (and the history) see the global
    record.
    """

    def __init__(self, sampler: _ShardSampler) -> None:
        self.sampler = sampler

    def on_epoch_end(self, module: torch.nn.Module, record: dict, **kwargs: Any) -> None:
        sampler = self.sampler
        count, sampler.local_count = sampler.local_count, 0
        accuracy = record["train_accuracy"]
        totals = torch.tensor([record["loss"] * count if count else 0.0, float(count),
                               accuracy * count if accuracy is not None else 0.0,
                               float(accuracy is not None)], dtype=torch.float64)
        dist.all_reduce(totals, op=dist.ReduceOp.SUM)
        loss_sum, count, correct, measured = totals.tolist()
        record["loss"] = loss_sum / count if count else math.nan
        record["train_accuracy"] = correct / count if measured and count else None


def train_dpsgd_distributed(module: torch.nn.Module, examples: ExampleSet, loss_fn: LossFn,
                            plan: DPSGDPlan, *, optimizer: OptimizerSettings,
                            generators: Generators, callbacks: Sequence[Callback] = (),
                            stage: TrainingStage = TrainingStage()) -> TrainingResult:
    """:func:`~skdpgraph.training.train_dpsgd` with every step split over the process group.

    Call it on every rank of an initialised ``torch.distributed`` process group with the
    same arguments; each rank computes the clipped gradients of its share of every global
    batch, rank 0 adds the step's one noise draw, and all ranks take the same step. The
    plan (sampling, steps, noise, hence epsilon) is exactly the single-process one.

    Parameters
    ----------
    module : torch.nn.Module
        The model; rank 0's initial parameters are broadcast to the others.
    examples : ExampleSet
        The whole example set, on every rank (any example can fall in any rank's shard).
    loss_fn : callable
        ``loss_fn(module, batch) -> (per_example_loss, per_example_correct or None)``.
    plan : DPSGDPlan
        Sampling, steps, clipping and noise; ``len(examples)`` must equal
        ``plan.num_examples``.
    optimizer : OptimizerSettings
        Optimiser, learning rate and weight decay.
    generators : Generators
        ``batches``: the CPU generator for batch sampling, in the same state on every rank
        (checked); ``noise``: the noise's, of which only rank 0's is drawn from.
    callbacks : sequence of Callback, default=()
        As in :func:`~skdpgraph.training.train_dpsgd`; they see records whose loss and
        accuracy are over the global batches. A
        :class:`~skdpgraph.training.ProgressBar` shows on rank 0 only.
    stage : TrainingStage, default=TrainingStage()
        As in :func:`~skdpgraph.training.train_dpsgd`.

    Returns
    -------
    TrainingResult
        On every rank: the same trained module and the same history.

    Raises
    ------
    RuntimeError
        If no ``torch.distributed`` process group is initialised.
    ValueError
        If the example set does not match the plan, or the ranks' batch generators differ.
    FloatingPointError
        If training diverges.

    Examples
    --------
    On each of ``N`` processes (e.g. started by ``torchrun --nproc-per-node N``)::

        torch.distributed.init_process_group("gloo")
        streams = RandomStreams(seed)  # the same seed on every rank
        with streams.initialisation():
            module = MLP(d, 64, k)
        result = train_dpsgd_distributed(
            module, TensorExamples(x, y), per_example_cross_entropy, plan,
            optimizer=OptimizerSettings(lr=0.01),
            generators=Generators(streams.torch("batches"), streams.torch("noise")))
    """
    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError(
            "train_dpsgd_distributed: no torch.distributed process group; call "
            "torch.distributed.init_process_group (e.g. under torchrun) on every rank first.")
    if len(examples) != plan.num_examples:
        raise ValueError(f"train_dpsgd_distributed: plan is for {plan.num_examples} examples but "
                         f"the set has {len(examples)}.")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    _check_same_batches(generators.batches, world_size)
    sampler = _ShardSampler(
        make_batch_sampler(plan.sampling, plan.num_examples, plan.batch_size,
                           generators.batches), rank, world_size)
    stepper = _DistributedStepper(
        module, plan, make_optimizer(optimizer, module.parameters()), generators.noise,
        sampler, lambda what: divergence_message(stage.description, what, optimizer.lr, plan))
    shown = [c for c in callbacks if rank == 0 or not isinstance(c, ProgressBar)]
    return run_epochs(module, stepper, sampler, examples, stepper.guard_losses(loss_fn),
                      (_GlobalRecord(sampler), *shown), stage=stage, lr=optimizer.lr)
