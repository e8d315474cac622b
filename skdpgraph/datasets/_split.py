"""Random node splits: train / validation / test node ids, optionally stratified."""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from skdpgraph._random import public_generator

__all__ = ["train_val_test_split"]


def _resolve_size(size: Any, n: int, what: str) -> int:
    """Turn a fraction in [0, 1] or a count in [0, n] into a count of nodes."""
    if isinstance(size, (bool, np.bool_)):
        raise TypeError(f"train_val_test_split: {what} must be a float or an int; got {size!r}.")
    if isinstance(size, Integral):
        if not 0 <= size <= n:
            raise ValueError(
                f"train_val_test_split: {what}={size} must be between 0 and the number of "
                f"nodes ({n})."
            )
        return int(size)
    if isinstance(size, Real):
        if not 0.0 <= size <= 1.0:
            raise ValueError(
                f"train_val_test_split: {what}={size} is a fraction and must be in [0, 1]; pass "
                "an int for a count of nodes."
            )
        return int(np.floor(float(size) * n + 1e-9))
    raise TypeError(f"train_val_test_split: {what} must be a float or an int; got {size!r}.")


def _stratified_order(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random order of the nodes in which every prefix holds each class in proportion.

    Each class is shuffled, and its ``k``-th member gets the key ``(k + u_c) / n_c`` with one
    uniform offset ``u_c`` per class (systematic sampling). Sorting by the key interleaves the
    classes so that any prefix of length ``m`` holds ``m * n_c / n`` members of class ``c``, up
    to one, which makes consecutive blocks stratified with exact total sizes.
    """
    _, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
    codes = codes.ravel()
    shuffled = rng.permutation(len(y))
    by_class = shuffled[np.argsort(codes[shuffled], kind="stable")]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(len(y)) - np.repeat(starts, counts)
    offset = rng.random(len(counts))
    class_of = codes[by_class]
    key = (rank + offset[class_of]) / counts[class_of]
    return by_class[np.argsort(key, kind="stable")]


def train_val_test_split(y: Any, train_size: float | int, val_size: float | int,
                         test_size: float | int | None = None, *, stratify: bool = True,
                         random_state: Any = None) -> dict[str, np.ndarray]:
    """Split node ids into disjoint train, validation and test parts.

    Parameters
    ----------
    y : array-like of shape (n_nodes,)
        Labels of all nodes (any hashable values; ``-1`` is an ordinary value here).
    train_size, val_size : float or int
        A float in [0, 1] is a fraction of the nodes (rounded down), an int is a count.
    test_size : float, int or None, default=None
        Same convention; ``None`` puts all remaining nodes in the test part.
    stratify : bool, default=True
        If True, every part holds each class in the proportion of ``y``, up to about one
        node per class and part. If False, the parts are plain random subsets.
    random_state : int, numpy Generator or None, default=None
        Seeds the shuffle; the same seed gives the same split.

    Returns
    -------
    split : dict of str to ndarray of int64
        ``{"train": ids, "val": ids, "test": ids}``, each sorted. Nodes in none of the
        parts (when the sizes add up to less than ``n_nodes``) are left out.

    Raises
    ------
    ValueError
        If a size is out of range or the sizes add up to more than ``n_nodes``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpgraph.datasets import train_val_test_split
    >>> y = np.repeat([0, 1], 10)
    >>> split = train_val_test_split(y, 0.5, 0.25, random_state=0)
    >>> {part: len(ids) for part, ids in split.items()}
    {'train': 10, 'val': 5, 'test': 5}
    >>> np.bincount(y[split["train"]]).tolist()
    [5, 5]
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"train_val_test_split: y must be 1-D; got shape {y.shape}.")
    n = y.shape[0]
    n_train = _resolve_size(train_size, n, "train_size")
    n_val = _resolve_size(val_size, n, "val_size")
    n_test = n - n_train - n_val if test_size is None else _resolve_size(test_size, n, "test_size")
    if n_train + n_val + n_test > n or n_test < 0:
        raise ValueError(
            f"train_val_test_split: the parts hold {n_train} + {n_val} + "
            f"{n_test if test_size is not None else n - n_train - n_val} nodes, more than the "
            f"{n} nodes in y. Reduce train_size, val_size or test_size."
        )
    rng = public_generator(random_state)
    order = _stratified_order(y, rng) if stratify and n else rng.permutation(n)
    bounds = np.cumsum([0, n_train, n_val, n_test])
    return {part: np.sort(order[bounds[i]:bounds[i + 1]]).astype(np.int64)
            for i, part in enumerate(("train", "val", "test"))}
