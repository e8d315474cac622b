"""The ``skdpgraph`` command line: ``skdpgraph demo|fit|predict|evaluate``.

:func:`main` builds the parser (:mod:`~skdpgraph.cli._main`); ``demo`` trains the registered
estimators (:mod:`~skdpgraph.cli._demo`); ``fit``, ``predict`` and ``evaluate`` are declared in
:mod:`~skdpgraph.cli._parsers` and run in :mod:`~skdpgraph.cli._commands`, which read tables
with :mod:`~skdpgraph.cli._tables` and write files with :mod:`~skdpgraph.cli._files`.

Heavy imports (torch, pandas, the estimators) happen inside a command, so
``skdpgraph --help`` is fast.
"""

from skdpgraph.cli._main import main

__all__ = ["main"]
