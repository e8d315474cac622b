"""Discovery of the public estimators, in the manner of ``sklearn.utils.discovery``.

The one list of estimators is the public names of :mod:`skdpgraph.estimators`: a class
exported there that is a :class:`~skdpgraph.estimators.BaseDPClassifier` (the base class
aside) or the front door :class:`~skdpgraph.DPNodeClassifier` is an estimator. The command
line, the demo, the benchmarks and the tests read the estimators from here.

Each estimator declares what it trains on in its class attribute ``_data_kind``:
``"nodes"`` (the node table of one graph: one row per node, as the command line reads) or
``"graphs"`` (a collection of whole graphs, one example per graph). ``data=`` filters on
it, as scikit-learn's ``type_filter`` filters on the estimator type. The command line's
help needs the node-level names without importing the estimators; it reads them from
:data:`GRAPH_LEVEL`, which a test compares with the classes' attributes.
"""

from __future__ import annotations

import importlib

__all__ = ["DATA_KINDS", "GRAPH_LEVEL", "all_estimators", "command_name", "estimator_names"]

#: The values of an estimator's ``_data_kind`` and of ``data=``.
DATA_KINDS = ("nodes", "graphs")
#: The estimators whose ``_data_kind`` is ``"graphs"``, by name (read without imports).
GRAPH_LEVEL = frozenset({"DPGraphClassifier"})


def _check_data(data: str | None) -> None:
    if data is not None and data not in DATA_KINDS:
        raise ValueError(f"data must be one of {DATA_KINDS} or None; got {data!r}.")


def estimator_names(data: str | None = None) -> list[str]:
    """The class names of the public estimators, sorted, without importing them.

    Reads the public names of :mod:`skdpgraph` (a lazy table, so neither torch nor
    :mod:`skdpgraph.estimators` is loaded): its ``*Classifier`` names. The command line's
    help lists them; a test checks that :func:`all_estimators` finds the same classes.

    Parameters
    ----------
    data : {"nodes", "graphs"} or None, default=None
        Keep only the estimators that train on this kind of data (see
        :func:`all_estimators`); None keeps all.

    Returns
    -------
    names : list of str
        The estimator class names, sorted.

    Examples
    --------
    >>> from skdpgraph._discovery import estimator_names
    >>> estimator_names()[:2]
    ['DPGraphClassifier', 'DPMLPClassifier']
    >>> estimator_names(data="graphs")
    ['DPGraphClassifier']
    """
    _check_data(data)
    names = importlib.import_module("skdpgraph").__all__
    return sorted(n for n in names if n.endswith("Classifier") and (
        data is None or (n in GRAPH_LEVEL) == (data == "graphs")))


def all_estimators(data: str | None = None) -> list[tuple[str, type]]:
    """The public estimators of skdpgraph, as ``sklearn.utils.discovery.all_estimators``.

    An estimator is a public class of :mod:`skdpgraph.estimators` that derives from
    :class:`~skdpgraph.estimators.BaseDPClassifier` (the base class and abstract classes
    aside), or the front door :class:`~skdpgraph.DPNodeClassifier`.

    Parameters
    ----------
    data : {"nodes", "graphs"} or None, default=None
        Keep only the estimators whose class attribute ``_data_kind`` is this value, as
        scikit-learn's ``type_filter``: ``"nodes"``, those that train on the node table
        of one graph (one example per node, or per edge); ``"graphs"``, those that train
        on a collection of whole graphs (:class:`~skdpgraph.DPGraphClassifier`). None
        keeps all.

    Returns
    -------
    estimators : list of (str, type)
        ``(name, class)`` pairs, sorted by name.

    Examples
    --------
    >>> from skdpgraph import all_estimators
    >>> [name for name, _ in all_estimators(data="nodes")]  # doctest: +NORMALIZE_WHITESPACE
    ['DPMLPClassifier', 'DPNodeClassifier', 'DRWClassifier', 'FDPClassifier',
     'GAPClassifier', 'NeighbourVoteClassifier', 'ProGAPClassifier', 'RGNNClassifier']
    >>> [name for name, _ in all_estimators(data="graphs")]
    ['DPGraphClassifier']
    """
    import inspect  # here, not at the top: the command line's help reads only the names

    _check_data(data)
    package = importlib.import_module("skdpgraph.estimators")
    base, front_door = package.BaseDPClassifier, package.DPNodeClassifier
    found = []
    for name in package.__all__:
        obj = getattr(package, name)
        if not inspect.isclass(obj) or obj is base or inspect.isabstract(obj):
            continue
        if issubclass(obj, (base, front_door)) and data in (None, obj._data_kind):
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
