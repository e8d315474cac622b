"""Callbacks of the training loop, in the manner of skorch's: hooks called at fixed points.

The loop calls, in the order of its ``callbacks``, ``on_train_begin`` before the first
epoch, ``on_epoch_end`` after every epoch with that epoch's record (which a callback may
fill in: the running epsilon, a validation accuracy) and ``on_train_end`` after the last
epoch with every record. Hooks take their context as keyword arguments; a callback
accepts ``**kwargs`` for what it does not use.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from skdpgraph._progress import EpochProgress

__all__ = ["BestEpoch", "Callback", "EpsilonTracker", "History", "ProgressBar"]


class Callback:
    """Base class of the loop's callbacks; every hook does nothing.

    Attributes
    ----------
    reads_epsilon : bool
        Whether the callback reads a record's ``epsilon`` as training goes: then an
        :class:`EpsilonTracker` computes it after every epoch rather than after the loop.
        True unless a subclass says otherwise.

    Examples
    --------
    >>> class Losses(Callback):
    ...     reads_epsilon = False
    ...     def on_train_begin(self, module, **kwargs):
    ...         self.losses = []
    ...     def on_epoch_end(self, module, record, **kwargs):
    ...         self.losses.append(record["loss"])
    """

    reads_epsilon: bool = True

    def on_train_begin(self, module: nn.Module, **kwargs: Any) -> None:
        """Before the first epoch; ``kwargs`` hold ``epochs`` and ``callbacks``."""

    def on_epoch_end(self, module: nn.Module, record: dict, **kwargs: Any) -> None:
        """After every epoch, with its record; ``kwargs`` hold ``steps`` (done so far).

        ``module`` is in train mode: a callback that switches it puts it back.
        """

    def on_train_end(self, module: nn.Module, history: list[dict], **kwargs: Any) -> None:
        """After the last epoch, with every epoch's record, in order."""


class History(Callback):
    """Every epoch's record, in order: the loop's ``TrainingResult.history``.

    Examples
    --------
    >>> from skdpgraph._progress import epoch_record
    >>> history = History()
    >>> history.on_train_begin(None)
    >>> history.on_epoch_end(None, epoch_record("classifier", 1, 0.5, epsilon=1.0))
    >>> [record["loss"] for record in history.records]
    [0.5]
    """

    reads_epsilon = False

    def __init__(self) -> None:
        self.records: list[dict] = []

    def on_train_begin(self, module: nn.Module, **kwargs: Any) -> None:
        self.records = []

    def on_epoch_end(self, module: nn.Module, record: dict, **kwargs: Any) -> None:
        self.records.append(record)


class EpsilonTracker(Callback):
    """Writes the epsilon spent so far into every epoch's record.

    Live (after every epoch, ``epsilon_at(steps)``) where another callback reads it (a
    progress bar, a validation callback). Otherwise after the loop, in one pass: each
    search then runs right after the last, about three times faster than between epochs
    of tensor work, and the epochs may take a cheaper bound. The last epoch records
    ``epsilon_at``, every other ``min(bound_at(steps), epsilon_at(last))``; with ``cap``
    every record is ``min(bound_at(steps), cap)``. Both are upper bounds on the epsilon
    spent by then, since that only grows.

    Parameters
    ----------
    epsilon_at : callable
        ``epsilon_at(steps)``: the epsilon spent after ``steps`` steps, from the plan's
        accountant (e.g. a partial of a plan's ``running_epsilon``).
    bound_at : callable, optional
        ``bound_at(steps)``: a cheaper upper bound on ``epsilon_at`` (the same accountant
        on fewer RDP orders); ``epsilon_at`` itself when None.
    cap : float, optional
        An epsilon known, before training, not to be exceeded at the end of this run (the
        whole fit's, which the budget check computed); then no search on every RDP order
        runs after the loop.

    Examples
    --------
    >>> from skdpgraph._progress import epoch_record
    >>> tracker = EpsilonTracker(lambda steps: 0.5 * steps)
    >>> tracker.on_train_begin(None, callbacks=[tracker])
    >>> records = [epoch_record("classifier", e, 0.1, epsilon=float("nan")) for e in (1, 2)]
    >>> for steps, record in zip((3, 6), records):
    ...     tracker.on_epoch_end(None, record, steps=steps)
    >>> tracker.on_train_end(None, records)
    >>> [record["epsilon"] for record in records]
    [1.5, 3.0]
    """

    reads_epsilon = False

    def __init__(self, epsilon_at: Callable[[int], float], *,
                 bound_at: Callable[[int], float] | None = None,
                 cap: float | None = None) -> None:
        self.epsilon_at, self.bound_at, self.cap = epsilon_at, bound_at, cap
        self.live, self.epoch_ends = False, []

    def on_train_begin(self, module: nn.Module, *, callbacks: Sequence[Callback] = (),
                       **kwargs: Any) -> None:
        self.live = any(callback.reads_epsilon for callback in callbacks if callback is not self)
        self.epoch_ends = []

    def on_epoch_end(self, module: nn.Module, record: dict, *, steps: int,
                     **kwargs: Any) -> None:
        if self.live:
            record["epsilon"] = float(self.epsilon_at(steps))
        self.epoch_ends.append(steps)

    def on_train_end(self, module: nn.Module, history: list[dict], **kwargs: Any) -> None:
        if self.live or not history:
            return
        bound_at, bounded, cap = self.bound_at or self.epsilon_at, len(history), self.cap
        if cap is None:  # the last epoch exact, and a cap for the others
            cap = float(self.epsilon_at(self.epoch_ends[-1]))
            history[-1]["epsilon"], bounded = cap, bounded - 1
        for record, end in zip(history[:bounded], self.epoch_ends):
            record["epsilon"] = min(float(bound_at(end)), float(cap))


class ProgressBar(Callback):
    """A progress bar over the epochs with each epoch's loss and running epsilon.

    :class:`~skdpgraph._progress.EpochProgress`: a tqdm bar in a terminal or a notebook
    (it stays on screen when training ends), a few plain lines elsewhere.

    Parameters
    ----------
    description : str
        The bar's label, e.g. ``"GAPClassifier encoder"``.
    stream : file-like, default=None
        Where to write; ``sys.stderr`` when None.

    Examples
    --------
    >>> import io
    >>> from skdpgraph._progress import epoch_record
    >>> log = io.StringIO()
    >>> bar = ProgressBar("demo", stream=log)
    >>> bar.on_train_begin(None, epochs=1)
    >>> bar.on_epoch_end(None, epoch_record("classifier", 1, 0.5, epsilon=1.0))
    >>> print(log.getvalue(), end="")
    demo: epoch 1/1, loss 0.5, eps 1
    """

    def __init__(self, description: str, *, stream: Any = None) -> None:
        self.description, self.stream = description, stream

    def on_train_begin(self, module: nn.Module, *, epochs: int, **kwargs: Any) -> None:
        self.progress = EpochProgress(epochs, self.description, verbose=True, stream=self.stream)
        self._epochs = iter(self.progress)  # each epoch's end moves the bar on
        next(self._epochs, None)

    def on_epoch_end(self, module: nn.Module, record: dict, **kwargs: Any) -> None:
        self.progress.show(record)
        next(self._epochs, None)


class BestEpoch(Callback):
    """Keeps the epoch with the best accuracy on held-out nodes.

    After every epoch it records ``validation_accuracy`` on the held-out nodes and copies
    the weights when the accuracy improves; :meth:`restore` loads the best copy. The
    selection reads the held-out labels without noise: use it only where they are public
    (GAP's edge level, or a non-private fit); see the estimators' ``validation_fraction``.

    Parameters
    ----------
    inputs : Tensor or callable
        Held-out model inputs, on the module's device, or ``inputs(module)`` returning the
        held-out nodes' logits (for models that need more than one input tensor, such as
        a subgraph GNN).
    labels : ndarray of shape (n,)
        Held-out labels (encoded as class indices).

    Examples
    --------
    >>> import numpy as np, torch
    >>> from skdpgraph._progress import epoch_record
    >>> module = torch.nn.Linear(2, 2)
    >>> best = BestEpoch(torch.eye(2), np.array([0, 1]))
    >>> record = epoch_record("classifier", 1, 0.5, epsilon=1.0)
    >>> best.on_epoch_end(module, record)
    >>> record["validation_accuracy"] == best.accuracy
    True
    """

    def __init__(self, inputs: torch.Tensor | Callable[[nn.Module], torch.Tensor],
                 labels: np.ndarray) -> None:
        self.logits = inputs if callable(inputs) else (lambda module: module(inputs))
        self.labels = np.asarray(labels)
        self.accuracy, self.state = -1.0, None

    def on_epoch_end(self, module: nn.Module, record: dict, **kwargs: Any) -> None:
        with torch.no_grad():
            predicted = self.logits(module.eval()).argmax(-1).cpu().numpy()
        module.train()
        record["validation_accuracy"] = accuracy = float((predicted == self.labels).mean())
        if accuracy > self.accuracy:
            self.accuracy = accuracy
            self.state = {k: v.detach().clone() for k, v in module.state_dict().items()}

    def restore(self, module: nn.Module) -> nn.Module:
        """Load the best epoch's weights into ``module`` (unchanged if none was recorded)."""
        if self.state is not None:
            module.load_state_dict(self.state)
        return module
