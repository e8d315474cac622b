"""Dropout whose mask is drawn faster on the CPU."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["UniformDropout"]


class UniformDropout(nn.Dropout):
    """``nn.Dropout`` with its mask drawn as ``uniform >= p``: the same distribution, faster.

    Each entry is kept with probability ``1 - p`` and scaled by ``1 / (1 - p)`` in training,
    as ``nn.Dropout`` does. On the CPU, torch's ``bernoulli_`` took 2.5x as long as
    ``rand`` for masks of 10^5 x 64: with dropout, the masks were a quarter of an RGNN
    epoch and more than half of an edge-level GAP encoder epoch. Other devices use
    ``nn.Dropout``'s own kernel. The masks draw from torch's global generator, as
    ``nn.Dropout``'s do.

    Parameters
    ----------
    p : float, default=0.5
        The probability that an entry is zeroed.
    inplace : bool, default=False
        Whether to change the input in place.

    Examples
    --------
    >>> import torch
    >>> drop = UniformDropout(0.5)
    >>> sorted(set(drop(torch.ones(1000)).tolist()))
    [0.0, 2.0]
    >>> drop.eval()(torch.ones(3)).tolist()
    [1.0, 1.0, 1.0]
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        if x.device.type != "cpu" or self.inplace:
            return super().forward(x)
        if self.p >= 1:
            return x * 0.0
        return x * (torch.rand_like(x) >= self.p) * (1.0 / (1.0 - self.p))
