"""Docstring fragments that several public objects share, written once.

A docstring names a fragment with a line holding only ``{{name}}``; :func:`fill_doc`
replaces that line with the fragment, indented as the marker was. Fragments are
registered with :func:`register_fragments`, so each package keeps the text of its own
parameters (the estimators' common parameters live in ``skdpgraph.estimators``).
"""

from __future__ import annotations

import re
import textwrap
from typing import TypeVar

__all__ = ["fill_doc", "register_fragments"]

T = TypeVar("T")

_FRAGMENTS: dict[str, str] = {}
_MARKER = re.compile(r"^(?P<indent>[ \t]*)\{\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}\}[ \t]*$",
                     re.MULTILINE)


def register_fragments(**fragments: str) -> None:
    """Make ``fragments`` (name -> text) available to :func:`fill_doc`.

    Parameters
    ----------
    **fragments : str
        Each fragment's text; its common indentation is removed.

    Raises
    ------
    ValueError
        If a name is registered twice with a different text.
    """
    for name, text in fragments.items():
        text = textwrap.dedent(text).strip("\n")
        if _FRAGMENTS.get(name, text) != text:
            raise ValueError(f"register_fragments: fragment {name!r} is already registered "
                             "with another text.")
        _FRAGMENTS[name] = text


def fill_doc(obj: T) -> T:
    """Replace each ``{{name}}`` line of ``obj.__doc__`` with its registered fragment.

    Parameters
    ----------
    obj : class or function
        The object whose docstring is filled in place.

    Returns
    -------
    class or function
        ``obj`` itself, so that this works as a decorator.

    Raises
    ------
    KeyError
        If the docstring names a fragment nobody registered.

    Examples
    --------
    >>> register_fragments(example_seed='''
    ...     seed : int
    ...         The seed.''')
    >>> @fill_doc
    ... def f(seed):
    ...     '''Parameters
    ...     ----------
    ...     {{example_seed}}
    ...     '''
    >>> "The seed." in f.__doc__
    True
    """
    if obj.__doc__:
        obj.__doc__ = _MARKER.sub(_filled, obj.__doc__)
    return obj


def _filled(match: re.Match) -> str:
    name = match.group("name")
    if name not in _FRAGMENTS:
        raise KeyError(f"fill_doc: no docstring fragment named {name!r}; register it with "
                       "register_fragments.")
    return textwrap.indent(_FRAGMENTS[name], match.group("indent"))
