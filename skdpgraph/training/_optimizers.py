"""The optimiser: its settings, and Opacus' DP optimisers made cheaper per step.

The three mix-ins change how Opacus' ``DPOptimizerFastGradientClipping`` (and its
distributed variant) computes a step, never what it computes: the same clipped sum, the
same Gaussian noise from the same generator, the same division by the expected batch size.
Put them before the Opacus class in the bases.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from opacus.optimizers import DPOptimizerFastGradientClipping
from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed
from opacus.optimizers.utils import params as opacus_params
from torch import nn

__all__ = ["DPOptimizer", "InPlaceAccumulation", "OneDrawNoise", "OptimizerSettings",
           "ParameterListOnce", "make_optimizer"]


@dataclass(frozen=True)
class OptimizerSettings:
    """The optimiser of a training run: its name, learning rate and weight decay.

    Parameters
    ----------
    lr : float
        Learning rate.
    name : {"adam", "sgd"}, default="adam"
        ``torch.optim.Adam`` or ``torch.optim.SGD``.
    weight_decay : float, default=0.0
        L2 penalty, as in ``torch.optim``.

    Examples
    --------
    >>> import torch
    >>> settings = OptimizerSettings(lr=0.1, name="sgd")
    >>> type(make_optimizer(settings, torch.nn.Linear(2, 1).parameters())).__name__
    'SGD'
    """

    lr: float
    name: str = "adam"
    weight_decay: float = 0.0


def make_optimizer(settings: OptimizerSettings, params) -> torch.optim.Optimizer:
    """The ``torch.optim`` optimiser that ``settings`` names, over ``params``.

    Parameters
    ----------
    settings : OptimizerSettings
        Name, learning rate and weight decay.
    params : iterable of Parameter
        The parameters to optimise.

    Returns
    -------
    torch.optim.Optimizer
        A fresh optimiser over ``params``.

    Raises
    ------
    ValueError
        If ``settings.name`` is neither ``"adam"`` nor ``"sgd"``.

    Examples
    --------
    >>> import torch
    >>> make_optimizer(OptimizerSettings(lr=0.01), torch.nn.Linear(2, 1).parameters())
    Adam (...)
    """
    if settings.name == "adam":
        return torch.optim.Adam(params, lr=settings.lr, weight_decay=settings.weight_decay)
    if settings.name == "sgd":
        return torch.optim.SGD(params, lr=settings.lr, weight_decay=settings.weight_decay)
    raise ValueError(f"Unknown optimizer {settings.name!r}; use 'adam' or 'sgd'.")


class InPlaceAccumulation:
    """Opacus' DP optimisers, without their deep copy of every gradient at every step.

    ``accumulate`` copies ``p.grad`` into ``p.summed_grad`` so that later backward passes
    cannot change it; here every step's gradients are fresh tensors that the optimiser
    replaces (``p.grad = summed_grad + noise``) before anything else could touch them, so
    the copy only costs time. Put it before the Opacus class in the bases.

    Examples
    --------
    >>> from opacus.optimizers import DPOptimizerFastGradientClipping
    >>> class Optimizer(InPlaceAccumulation, DPOptimizerFastGradientClipping):
    ...     pass
    """

    def accumulate(self) -> None:
        """Add this step's clipped sum into ``summed_grad`` without copying it."""
        for p in self.params:
            if p.summed_grad is not None:
                p.summed_grad.add_(p.grad)
            else:
                p.summed_grad = p.grad


class OneDrawNoise:
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

    Examples
    --------
    >>> from opacus.optimizers import DPOptimizerFastGradientClipping
    >>> class Optimizer(OneDrawNoise, DPOptimizerFastGradientClipping):
    ...     pass
    """

    draws_noise = True
    _noise_buffer: torch.Tensor | None = None
    _noise_views: list[torch.Tensor] | None = None

    def add_noise(self) -> None:
        """Set every ``p.grad`` to ``(summed_grad + noise) / expected batch size``."""
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


class ParameterListOnce:
    """Opacus' DP optimisers, with their list of parameters built once.

    Opacus rebuilds ``params`` from the parameter groups at each use, several times a
    step; the groups never change during training. Put it before the Opacus class in the
    bases.

    Parameters
    ----------
    *args, **kwargs
        Those of the Opacus optimiser it precedes.

    Examples
    --------
    >>> from opacus.optimizers import DPOptimizerFastGradientClipping
    >>> class Optimizer(ParameterListOnce, DPOptimizerFastGradientClipping):
    ...     pass
    """

    _params: list[nn.Parameter] | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._params = opacus_params(self)

    @property
    def params(self) -> list[nn.Parameter]:
        """The trainable parameters of every group, in order."""
        return self._params if self._params is not None else super().params


class DPOptimizer(ParameterListOnce, InPlaceAccumulation, OneDrawNoise,
                  DPOptimizerFastGradientClipping):
    """Opacus' ``DPOptimizerFastGradientClipping``, made cheaper per step.

    With :class:`ParameterListOnce`, :class:`InPlaceAccumulation` and
    :class:`OneDrawNoise`; it takes Opacus' arguments.

    Parameters
    ----------
    *args, **kwargs
        Those of ``DPOptimizerFastGradientClipping``.

    Examples
    --------
    >>> import torch
    >>> module = torch.nn.Linear(2, 1)
    >>> optimizer = DPOptimizer(torch.optim.SGD(module.parameters(), lr=0.1),
    ...                         noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=4)
    >>> len(optimizer.params)
    2
    """
