"""Discovery of the public estimators, in the manner of ``sklearn.utils.discovery``.

The one list of estimators is the public names of :mod:`skdpgraph.estimators`: a class
exported there that is a :class:`~skdpgraph.estimators.BaseDPClassifier` (the base class
aside) or the front door :class:`~skdpgraph.DPNodeClassifier` is an estimator. The command
line, the demo, the benchmarks and the tests read the estimators from here.
"""

from __future__ import annotations

import importlib

__all__ = ["all_estimators", "command_name", "estimator_names"]


def estimator_names() -> list[str]:
    """The class names of the public estimators, sorted, without importing them.

    Reads the public names of :mod:`skdpgraph` (a lazy table, so neither torch nor
    :mod:`skdpgraph.estimators` is loaded): its ``*Classifier`` names. The command line's
    help lists them; a test checks that :func:`all_estimators` finds the same classes.

    Returns
    -------
    names : list of str
        The estimator class names, sorted.

    Examples
    --------
    >>> from skdpgraph._discovery import estimator_names
    >>> estimator_names()[:2]
    ['DPMLPClassifier', 'DPNodeClassifier']
    """
    names = importlib.import_module("skdpgraph").__all__
    return sorted(n for n in names if n.endswith("Classifier"))


def all_estimators() -> list[tuple[str, type]]:
    """The public estimators of skdpgraph, as ``sklearn.utils.discovery.all_estimators``.

    An estimator is a public class of :mod:`skdpgraph.estimators` that derives from
    :class:`~skdpgraph.estimators.BaseDPClassifier` (the base class and abstract classes
    aside), or the front door :class:`~skdpgraph.DPNodeClassifier`.

    Returns
    -------
    estimators : list of (str, type)
        ``(name, class)`` pairs, sorted by name.

    Examples
    --------
    >>> from skdpgraph import all_estimators
    >>> [name for name, _ in all_estimators()]  # doctest: +NORMALIZE_WHITESPACE
    ['DPMLPClassifier', 'DPNodeClassifier', 'DRWClassifier', 'FDPClassifier',
     'GAPClassifier', 'ProGAPClassifier', 'RGNNClassifier']
    """
    import inspect  # here, not at the top: the command line's help reads only the names

    package = importlib.import_module("skdpgraph.estimators")
    base, front_door = package.BaseDPClassifier, package.DPNodeClassifier
    found = []
    for name in package.__all__:
        obj = getattr(package, name)
        if not inspect.isclass(obj) or obj is base or inspect.isabstract(obj):
            continue
        if issubclass(obj, (base, front_door)):
            found.append((name, obj))
    return sorted(found)


def command_name(class_name: str) -> str:
    """The short name of an estimator on the command line and in the benchmarks.

    Parameters
    ----------
    class_name : str
        An estimator class name, e.g. ``"GAPClassifier"``.

    Returns
    -------
    name : str
        The class name without ``Classifier``, in lower case (``"gap"``).

    Examples
    --------
    >>> from skdpgraph._discovery import command_name
    >>> command_name("ProGAPClassifier")
    'progap'
    """
    return class_name.removesuffix("Classifier").lower()
