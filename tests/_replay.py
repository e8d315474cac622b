"""Test support for seed-replay checks: what a fitted estimator keeps, and replaying it."""

import numpy as np
import torch

__all__ = ["Replay", "kept_integers"]


class Replay(np.random.RandomState):
    """A ``random_state`` whose every draw is ``seed``: the fit's root becomes ``seed``.

    The pre-spine ``make_seeds`` turned it into ``Seeds(seed)`` (the seed the old estimator
    kept), ``RandomStreams`` into ``SeedSequence(seed)``: either way it replays a fit whose
    root was ``seed``.
    """

    def __init__(self, seed):
        super().__init__(0)
        self.value = int(seed)

    def randint(self, *args, **kwargs):
        return np.int64(self.value)


def kept_integers(obj, found, seen, depth=0):
    """Every integer ``obj`` holds: attributes, containers, integer arrays, hex strings."""
    if depth > 12 or isinstance(obj, (bool, float, type(None))) or id(obj) in seen:
        return
    if isinstance(obj, (int, np.integer)):
        found.add(abs(int(obj)))
    elif isinstance(obj, str):
        if len(obj) >= 8 and all(c in "0123456789abcdefABCDEF" for c in obj):
            found.add(int(obj, 16))
    elif isinstance(obj, np.ndarray):
        if obj.dtype.kind in "iu" and obj.size <= 256:
            found.update(abs(int(v)) for v in obj.ravel())
    elif not isinstance(obj, torch.Tensor):
        seen.add(id(obj))
        items = (obj.values() if isinstance(obj, dict) else obj
                 if isinstance(obj, (list, tuple, set)) else vars(obj).values()
                 if hasattr(obj, "__dict__") else ())
        for item in list(items):
            kept_integers(item, found, seen, depth + 1)
