"""One optimisation step, private or not: the clipped sum, the noise, the update."""

from __future__ import annotations

import warnings

import torch
from opacus.grad_sample import GradSampleModuleFastGradientClipping
from opacus.utils.fast_gradient_clipping_utils import DPTensorFastGradientClipping

from skdpgraph.privacy import DPSGDPlan
from skdpgraph.training._clipped_sum import ClippedSumModule
from skdpgraph.training._optimizers import DPOptimizer

__all__ = ["Stepper"]


class Stepper:
    """One optimisation step, private or not; hides the clipping and the noise.

    A private step computes the sum of the per-example clipped gradients, then Opacus'
    ``DPOptimizerFastGradientClipping`` adds the noise, divides by the expected batch size
    and steps. The clipped sum comes from one backward pass where every trainable
    parameter belongs to an ``nn.Linear`` (:class:`ClippedSumModule`, all of the
    library's models), else from Opacus' ghost clipping: two backward passes,
    the first for every example's gradient norm, the second for the loss reweighted by
    the clipping factors ``min(1, C / norm)``, run by Opacus' own
    ``DPTensorFastGradientClipping`` (what its ``DPLossFastGradientClipping`` loss wrapper
    returns; the wrapper itself wants a ``criterion(input, target)`` where our loss
    functions take the module and the batch). Both give the same clipped sum.

    Parameters
    ----------
    module : torch.nn.Module
        The model to train.
    plan : DPSGDPlan
        Clipping and noise (a non-private plan: plain steps).
    optimizer : torch.optim.Optimizer
        The optimiser over ``module``'s parameters (wrapped by Opacus' when private).
    noise_generator : torch.Generator or None
        The noise's generator, on the module's device.

    Attributes
    ----------
    model : torch.nn.Module
        What the loss function calls: ``module``, or its clipping wrapper.
    optimizer : torch.optim.Optimizer
        What steps: ``optimizer``, or its DP wrapper.

    Examples
    --------
    >>> import torch
    >>> from skdpgraph.privacy import DPSGDPlan
    >>> module = torch.nn.Linear(2, 1)
    >>> plan = DPSGDPlan("poisson", 4, 2, 1, noise_multiplier=1.0, max_grad_norm=1.0)
    >>> stepper = Stepper(module, plan, torch.optim.SGD(module.parameters(), lr=0.1), None)
    >>> stepper.step(stepper.model(torch.ones(2, 2)).squeeze(-1))
    >>> stepper.unwrap() is module
    True
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
        return DPOptimizer(
            optimizer, noise_multiplier=self.plan.noise_multiplier * self.plan.sensitivity,
            max_grad_norm=self.plan.max_grad_norm, expected_batch_size=self.plan.batch_size,
            loss_reduction="mean", generator=noise_generator,
        )

    def step(self, losses: torch.Tensor | None) -> None:
        """One step on a batch's per-example ``losses`` (None: an empty batch)."""
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
        """The trained module, out of any clipping wrapper, with no gradient kept."""
        if isinstance(self.model, ClippedSumModule):
            self.optimizer.zero_grad(set_to_none=True)
            self.model.stop_recording()
            return self.model.module
        if isinstance(self.model, GradSampleModuleFastGradientClipping):
            self.optimizer.zero_grad(set_to_none=True)
            self.model._close()
            return self.model._module
        return self.model
