"""Training progress: the one per-epoch record and the one progress bar of every estimator.

Every training loop (:func:`~skdpgraph.training.train_dpsgd`,
:func:`~skdpgraph.training.train_llp_gnn`) builds its epochs' records with
:func:`epoch_record` and shows them with :class:`EpochProgress`, so that ``history_`` has
the same columns for every estimator and stage and ``pandas.DataFrame(clf.history_)``
plots any of them. The
module sits below every layer (like ``_random.py``): the training package and the
benchmarks use it.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Iterator

from tqdm.auto import tqdm

__all__ = ["HISTORY_COLUMNS", "EpochProgress", "epoch_record"]

#: The keys of every ``history_`` record, in order.
HISTORY_COLUMNS = ("stage", "epoch", "loss", "train_accuracy", "validation_accuracy", "epsilon")


def epoch_record(stage: str, epoch: int, loss: float, *, epsilon: float,
                 train_accuracy: float | None = None,
                 validation_accuracy: float | None = None) -> dict[str, Any]:
    """One epoch of ``history_``: the keys of :data:`HISTORY_COLUMNS`, in that order.

    Parameters
    ----------
    stage : str
        The training stage (``"encoder"``, ``"classifier"``).
    epoch : int
        1-based epoch within the stage.
    loss : float
        Mean training loss over the epoch (NaN when no example was seen).
    epsilon : float
        Epsilon spent so far, from the plan's accountant (``inf`` when not private, NaN
        when the loop was given no accountant).
    train_accuracy, validation_accuracy : float or None, default=None
        None when not measured (no correctness given, no validation split).

    Returns
    -------
    dict

    Examples
    --------
    >>> epoch_record("classifier", 1, 0.5, epsilon=1.25)
    {'stage': 'classifier', 'epoch': 1, 'loss': 0.5, 'train_accuracy': None, \
'validation_accuracy': None, 'epsilon': 1.25}
    """
    return {"stage": stage, "epoch": int(epoch), "loss": float(loss),
            "train_accuracy": None if train_accuracy is None else float(train_accuracy),
            "validation_accuracy": (None if validation_accuracy is None
                                    else float(validation_accuracy)),
            "epsilon": float(epsilon)}


def _format_epsilon(epsilon: float) -> str:
    if math.isnan(epsilon):
        return "?"
    return "inf" if math.isinf(epsilon) else f"{epsilon:.3g}"


def _redraws_in_place(stream: Any) -> bool:
    """Whether a progress bar can redraw itself: a terminal, or a notebook widget."""
    notebook = sys.modules.get("tqdm.notebook")
    if notebook is not None and issubclass(tqdm, notebook.tqdm_notebook):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


class EpochProgress:
    """One stage's progress: a tqdm bar in a terminal, a few plain lines elsewhere.

    Iterating gives the epoch numbers ``1..epochs``. In a terminal or a notebook the bar
    shows each record's loss and epsilon and stays on screen when the stage ends
    (``leave=True``); it is closed even if training fails. Into a file or a pipe, where a
    redrawn bar piles up as one line per epoch, it writes one plain line when the stage
    ends, and one in between at most every :attr:`LINE_INTERVAL` seconds. With
    ``verbose=False`` nothing is printed.

    Parameters
    ----------
    epochs : int
        Epochs in the stage.
    description : str
        Shown before the bar, e.g. ``"GAPClassifier encoder"``.
    verbose : bool
        Show the progress.
    stream : file-like, default=None
        Where to write; ``sys.stderr`` (read at each stage) when None.

    Examples
    --------
    >>> progress = EpochProgress(2, "demo", verbose=False)
    >>> for epoch in progress:
    ...     progress.show(epoch_record("classifier", epoch, 0.5, epsilon=1.0))
    >>> progress.shown
    2
    >>> import io
    >>> log = io.StringIO()  # not a terminal: plain lines
    >>> progress = EpochProgress(3, "demo", verbose=True, stream=log)
    >>> for epoch in progress:
    ...     progress.show(epoch_record("classifier", epoch, 0.5, epsilon=1.0))
    >>> print(log.getvalue(), end="")
    demo: epoch 3/3, loss 0.5, eps 1
    """

    #: Seconds between two plain lines within one stage.
    LINE_INTERVAL = 30.0

    def __init__(self, epochs: int, description: str, *, verbose: bool,
                 stream: Any = None) -> None:
        stream = sys.stderr if stream is None else stream
        self._plain = bool(verbose) and not _redraws_in_place(stream)
        self._epochs, self._description, self._stream = epochs, description, stream
        self._last_line = time.monotonic()
        self._bar = tqdm(range(1, epochs + 1), desc=description, unit="epoch", leave=True,
                         disable=not verbose or self._plain, file=stream)
        self.shown = 0

    def __iter__(self) -> Iterator[int]:
        return iter(self._bar)

    def show(self, record: dict[str, Any]) -> None:
        """Show the loss and running epsilon of the epoch just finished."""
        loss, epsilon = f"{record['loss']:.4g}", _format_epsilon(record["epsilon"])
        self.shown += 1
        if not self._plain:
            self._bar.set_postfix(loss=loss, eps=epsilon)
            return
        now = time.monotonic()
        if record["epoch"] >= self._epochs or now - self._last_line >= self.LINE_INTERVAL:
            self._last_line = now
            print(f"{self._description}: epoch {record['epoch']}/{self._epochs}, loss {loss}, "
                  f"eps {epsilon}", file=self._stream, flush=True)
