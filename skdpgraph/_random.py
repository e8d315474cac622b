"""The one place that creates random generators: independent streams, one per purpose.

A fit draws one root :class:`numpy.random.SeedSequence` (from ``random_state``, or from the
operating system when it is None) and spawns an independent child sequence for every
purpose. No stream serves two purposes: the uniforms that pick DP-SGD batches are never
the numbers that initialise the weights, so the released weights say nothing about which
examples were sampled. Asking twice for the same purpose gives two independent streams
(two DP-SGD runs in one fit each get their own batches and their own noise).

Nothing here is meant to outlive a fit: a fitted estimator keeps no seed, generator or
sequence, because its holder could otherwise replay training. Randomness needed after
``fit`` comes from :func:`release_streams` (each later release gets fresh streams) or from
:func:`prediction_key` (an opaque key with entropy of its own, independent of training).
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from typing import Any, Iterator

import numpy as np
import torch

__all__ = ["PURPOSES", "RandomStreams", "release_streams", "prediction_key", "keyed_generator",
           "public_generator"]

#: Every purpose a stream can serve; the position is the spawn key, so it never changes.
PURPOSES = (
    "init",        # parameter initialisation and dropout (torch's global generator, forked)
    "batches",     # DP-SGD batch sampling
    "noise",       # DP noise (DP-SGD, aggregation perturbation, private inference)
    "walks",       # random walks and subgraph sampling
    "degree",      # degree bounding and star sampling
    "clients",     # local randomisers (GRR, GRR-FS)
    "split",       # hold-out splits, METIS seeds and other data-independent choices
    "prediction",  # randomness used to answer queries (never a privacy noise)
    "release",     # noise of a release made after fit
)


def _root_sequence(random_state: Any) -> np.random.SeedSequence:
    """The root sequence of ``random_state``: OS entropy for None."""
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, (bool, np.bool_)):
        raise TypeError(
            f"random_state must be None, an int or a RandomState; got {random_state!r}.")
    if isinstance(random_state, (int, np.integer)):
        return np.random.SeedSequence(int(random_state))
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(random_state.randint(0, 2**63 - 1, dtype=np.int64).item())
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(0, 2**63 - 1)))
    raise TypeError(f"random_state must be None, an int or a RandomState; got {random_state!r}.")


def _torch_seed(sequence: np.random.SeedSequence) -> int:
    return int(sequence.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


class RandomStreams:
    """Independent random streams for one fit (or one release), spawned from one root.

    Parameters
    ----------
    random_state : None, int, RandomState or SeedSequence
        None draws the root entropy from the operating system.
    key : tuple of int, default=()
        Extra spawn key: streams of a later release use ``("release", index)`` so that they
        differ from training's and from every other release's.

    Examples
    --------
    >>> streams = RandomStreams(0)
    >>> a, b = streams.numpy("walks"), streams.numpy("walks")
    >>> bool(a.random() != b.random())  # two requests, two independent streams
    True
    >>> RandomStreams(0).numpy("walks").random() == RandomStreams(0).numpy("walks").random()
    True
    """

    def __init__(self, random_state: Any = None, *, key: tuple[int, ...] = ()) -> None:
        root = _root_sequence(random_state)
        self._root = np.random.SeedSequence(root.entropy,
                                            spawn_key=tuple(root.spawn_key) + tuple(key))
        self._used = {purpose: 0 for purpose in PURPOSES}

    def sequence(self, purpose: str) -> np.random.SeedSequence:
        """A fresh child sequence for ``purpose`` (never handed out twice)."""
        if purpose not in self._used:
            raise ValueError(f"RandomStreams: unknown purpose {purpose!r}; use one of {PURPOSES}.")
        index = self._used[purpose]
        self._used[purpose] += 1
        return np.random.SeedSequence(
            self._root.entropy,
            spawn_key=tuple(self._root.spawn_key) + (PURPOSES.index(purpose), index))

    def numpy(self, purpose: str) -> np.random.Generator:
        """A numpy generator on a fresh stream for ``purpose``."""
        return np.random.default_rng(self.sequence(purpose))

    def torch(self, purpose: str, device: torch.device | str = "cpu") -> torch.Generator:
        """A torch generator on ``device`` on a fresh stream for ``purpose``."""
        return torch.Generator(device=device).manual_seed(_torch_seed(self.sequence(purpose)))

    def integer(self, purpose: str) -> int:
        """A 31-bit integer seed on a fresh stream, for libraries that take only an int."""
        return int(self.sequence(purpose).generate_state(1)[0] >> 1)

    @contextlib.contextmanager
    def initialisation(self) -> Iterator[None]:
        """Seed torch's global generator from the ``"init"`` stream for a block.

        Parameter initialisation and dropout draw from torch's global generator; the
        caller's global state is restored afterwards. That generator is process-wide, so
        the block holds a process-wide lock: fits in threads (joblib's threading backend,
        Dask with threads) take turns in it rather than draw from each other's seeds.
        """
        with _GLOBAL_TORCH_GENERATOR, torch.random.fork_rng(devices=[]):
            torch.manual_seed(_torch_seed(self.sequence("init")))
            yield


#: Held while torch's process-wide generator is seeded for one fit (re-entrant: a fit's
#: stages open their own initialisation blocks inside the fit's).
_GLOBAL_TORCH_GENERATOR = threading.RLock()


def public_generator(random_state: Any) -> np.random.Generator:
    """A generator for randomness that touches no private data (synthetic graphs, splits).

    Accepts None, an int, a SeedSequence, a Generator (returned as is) or a RandomState.

    Examples
    --------
    >>> int(public_generator(0).integers(10)) == int(public_generator(0).integers(10))
    True
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError) as error:
        raise ValueError(
            "random_state must be None, an int, a numpy SeedSequence or Generator; "
            f"got {random_state!r}.") from error


def release_streams(random_state: Any, content: str) -> RandomStreams:
    """Streams for a release after fit on data with fingerprint ``content``.

    With ``random_state=None`` the entropy is fresh from the operating system. With a seed
    the streams are keyed by ``("release", content)``: apart from training's streams and
    from a release on any other data, so no two releases on different graphs share noise
    (where differences would cancel it), not even from two copies of one pickle. A
    release repeated on the same content gives the same output, which reveals nothing new
    (it is still recorded and charged: an upper bound).
    """
    words = tuple(int(content[i:i + 8], 16) for i in range(0, min(len(content), 32), 8))
    return RandomStreams(random_state, key=(PURPOSES.index("release"),) + words)


def prediction_key(random_state: Any) -> int:
    """A 128-bit key for deterministic prediction-time randomness (e.g. DRW's walks).

    With ``random_state=None`` it is fresh OS entropy, unrelated to the training streams,
    so keeping it in a fitted estimator lets nobody replay training. With a seed it is
    derived from the ``"prediction"`` purpose, which training never uses.
    """
    if random_state is None:
        return secrets.randbits(128)
    sequence = RandomStreams(random_state).sequence("prediction")
    return int.from_bytes(sequence.generate_state(4).tobytes(), "little")


def keyed_generator(key: int, *words: int) -> np.random.Generator:
    """A numpy generator determined by a :func:`prediction_key` and extra words."""
    return np.random.default_rng([int(w) for w in words] + [key >> (32 * i) & 0xFFFFFFFF
                                                            for i in range(4)])
