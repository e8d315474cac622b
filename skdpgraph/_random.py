"""One seed, explicit generators: no global random state is touched."""

from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np
import torch
from sklearn.utils import check_random_state

__all__ = ["Seeds", "make_seeds", "torch_seeded"]


class Seeds:
    """Generators derived from one ``random_state``.

    Attributes
    ----------
    seed : int
        The integer seed everything derives from.
    numpy : numpy.random.Generator
        For numpy-side sampling (graph samplers, randomised response).
    torch : torch.Generator
        A CPU generator for batch sampling.
    """

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)
        self.numpy = np.random.default_rng(self.seed)
        self.torch = torch.Generator().manual_seed(self.seed)

    def torch_on(self, device: torch.device | str, offset: int = 1) -> torch.Generator:
        """A new generator on ``device`` (for noise), seeded from ``seed + offset``."""
        return torch.Generator(device=device).manual_seed(self.seed + offset)


def make_seeds(random_state: int | np.random.RandomState | None) -> Seeds:
    """Seeds from a scikit-learn ``random_state`` (None draws a fresh seed from the OS)."""
    if random_state is None:
        return Seeds(int(np.random.SeedSequence().generate_state(1)[0]))
    return Seeds(int(check_random_state(random_state).randint(np.iinfo(np.int32).max)))


@contextlib.contextmanager
def torch_seeded(seed: int) -> Iterator[None]:
    """Run a block with torch's global RNG seeded, restoring the caller's state after.

    Parameter initialisation and dropout draw from torch's global generator; this makes
    them reproducible without changing the random state the caller sees.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
