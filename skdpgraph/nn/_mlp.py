"""Multi-layer perceptrons built from ``nn.Linear`` (Opacus computes their per-example grads)."""

from __future__ import annotations

import torch
from torch import nn

from skdpgraph.nn._dropout import UniformDropout

__all__ = ["MLP", "make_activation"]

_ACTIVATIONS = {"relu": nn.ReLU, "selu": nn.SELU, "tanh": nn.Tanh, "elu": nn.ELU, "gelu": nn.GELU}


def make_activation(name: str) -> nn.Module:
    """The activation module called ``name`` (relu, selu, tanh, elu, gelu).

    Parameters
    ----------
    name : {"relu", "selu", "tanh", "elu", "gelu"}
        The activation.

    Returns
    -------
    module : torch.nn.Module
        A new activation module.
    """
    try:
        return _ACTIVATIONS[name]()
    except KeyError:
        raise ValueError(
            f"Unknown activation {name!r}; use one of {sorted(_ACTIVATIONS)}.") from None


class MLP(nn.Module):
    """``num_layers`` linear layers with an activation (and dropout) between them.

    Parameters
    ----------
    in_dim, hidden_dim, out_dim : int
        Input, hidden and output widths.
    num_layers : int, default=2
        Number of linear layers (1 gives a linear model).
    activation : str, default="relu"
        The activation between layers (see :func:`make_activation`).
    dropout : float, default=0.0
        Dropout before every hidden linear layer.
    activate_last : bool, default=False
        Apply the activation after the last layer too (for encoders).

    Notes
    -----
    Shapes: x : Tensor of shape (..., in_dim)  ->  Tensor of shape (..., out_dim)

    Examples
    --------
    >>> import torch
    >>> MLP(4, 8, 3)(torch.zeros(5, 4)).shape
    torch.Size([5, 3])
    """

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, *, num_layers: int = 2,
                 activation: str = "relu", dropout: float = 0.0,
                 activate_last: bool = False) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"MLP: num_layers must be >= 1; got {num_layers}.")
        widths = [in_dim] + [hidden_dim] * (num_layers - 1) + [out_dim]
        layers: list[nn.Module] = []
        for i, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:])):
            if i > 0:
                layers.append(make_activation(activation))
                if dropout:
                    layers.append(UniformDropout(dropout))
            layers.append(nn.Linear(fan_in, fan_out))
        if activate_last:
            layers.append(make_activation(activation))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)
