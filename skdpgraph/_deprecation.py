"""Renamed constructor parameters: the old name keeps working, with a ``FutureWarning``.

A renamed parameter stays in ``__init__`` under its old name with the default
:data:`DEPRECATED`, so ``get_params``, ``clone`` and grid searches over either name keep
working for one release. ``fit`` reads the value through :func:`renamed_parameter`, which
warns when the old name was set and refuses both names set at once.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["DEPRECATED", "REMOVED_IN", "renamed_parameter"]

#: The default of a parameter kept only under its old name.
DEPRECATED = "deprecated"

#: The release that drops the old names.
REMOVED_IN = "0.3"


def renamed_parameter(estimator: Any, old: str, new: str, *, default: Any = None) -> Any:
    """The value of parameter ``new``, read from ``old`` (with a warning) when that was set.

    Parameters
    ----------
    estimator : object
        The estimator whose parameters are read (it is not modified).
    old, new : str
        The parameter's former and current names.
    default : object, default=None
        The value ``new`` holds when the user left it at its default: setting ``old`` is
        refused only when ``new`` differs from it.

    Returns
    -------
    object
        ``getattr(estimator, old)`` if the old name was set, else ``getattr(estimator, new)``.

    Raises
    ------
    ValueError
        If both names were set.

    Examples
    --------
    >>> class Model:
    ...     def __init__(self, unit="edge", privacy_level=DEPRECATED):
    ...         self.unit, self.privacy_level = unit, privacy_level
    >>> renamed_parameter(Model(unit="node"), "privacy_level", "unit", default="edge")
    'node'
    """
    old_value = getattr(estimator, old)
    if isinstance(old_value, str) and old_value == DEPRECATED:
        return getattr(estimator, new)
    new_value = getattr(estimator, new)
    if new_value is not default and new_value != default:
        raise ValueError(
            f"{type(estimator).__name__}: {old}={old_value!r} and {new}={new_value!r} are both "
            f"set; {old!r} is the former name of {new!r}: set {new!r} only.")
    warnings.warn(
        f"{type(estimator).__name__}: the parameter {old!r} was renamed {new!r} and the old "
        f"name will be removed in {REMOVED_IN}; use {new}={old_value!r}.",
        FutureWarning, stacklevel=3)
    return old_value
