"""Lazy public names for the package ``__init__`` files (PEP 562).

``import skdpgraph`` must stay fast: torch, scikit-learn, Opacus and pandas take seconds to
load, and ``skdpgraph --help`` needs none of them. Each ``__init__`` therefore declares where
its public names live, and a name's module is imported the first time the name is used
(``skdpgraph.GAPClassifier``, ``from skdpgraph import Graph``).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Iterable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, origins: Mapping[str, Iterable[str]], *, submodules: Iterable[str] = (),
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``(__all__, __getattr__, __dir__)`` for a package that loads its names on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    origins : mapping of str to iterable of str
        Module (relative to ``package``) -> the public names it defines.
    submodules : iterable of str, default=()
        Submodules reachable as attributes (``skdpgraph.datasets``) without importing them
        first; they are loaded on first access.

    Returns
    -------
    all : list of str
        The public names, sorted: the package's ``__all__``.
    getattr : callable
        The module ``__getattr__``: imports the name's module, caches the name in the
        package namespace, and raises ``AttributeError`` for unknown names.
    dir : callable
        The module ``__dir__``: the namespace plus every lazy name and submodule.

    Examples
    --------
    >>> __all__, __getattr__, __dir__ = lazy_exports(
    ...     "skdpgraph", {"graph": ["Graph", "Nodes"]})
    >>> __all__
    ['Graph', 'Nodes']
    >>> __getattr__("Graph").__name__
    'Graph'
    """
    home = {name: module for module, names in origins.items() for name in names}
    submodules = frozenset(submodules)
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        if name in home:
            value = getattr(importlib.import_module(f"{package}.{home[name]}"), name)
        elif name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(home) | submodules)

    return sorted(home), __getattr__, __dir__
