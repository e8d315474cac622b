"""What the loop trains on: a set of examples fetched a batch at a time, and its loss."""

from __future__ import annotations

from typing import Callable, Protocol, Sequence

import torch

__all__ = ["ExampleSet", "LossFn", "TensorExamples"]

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

    Parameters
    ----------
    *tensors : Tensor
        The examples' tensors, all with the same first dimension.
    device : torch.device or str, default="cpu"
        Where the tensors are moved.

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
