"""Command-line interface: ``skdpgraph demo|fit|predict|evaluate``.

Each subcommand is one ``add_<name>_parser(subparsers)`` function that registers its parser and
sets ``func`` (a callable ``args -> exit code``) as the parser default; ``_SUBCOMMANDS`` lists them
in help order. ``demo`` lives here; ``fit``, ``predict`` and ``evaluate`` in
:mod:`skdpgraph._cli_commands`, which reads tables with :mod:`skdpgraph._cli_tables` and writes
files with :mod:`skdpgraph._cli_files`.

Heavy imports (torch, pandas, the estimators) happen inside the subcommand, so
``skdpgraph --help`` is fast.
"""

import argparse
import math
import sys
import time


def main(argv=None) -> int:
    """Run the ``skdpgraph`` command line and return its exit code.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments without the program name; ``None`` reads ``sys.argv[1:]``.

    Returns
    -------
    code : int
        0 on success, non-zero on failure.
    """
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors: a code, like the commands
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    return args.func(args)


def _build_parser():
    parser = argparse.ArgumentParser(
        prog="skdpgraph",
        description="Differentially private graph neural networks with a scikit-learn API.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                        help="show the installed skdpgraph version and exit")
    subparsers = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND",
        help="one of the commands below; 'skdpgraph COMMAND --help' describes its options")
    for add_parser in _SUBCOMMANDS:
        add_parser(subparsers)
    return parser


def _version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skdpgraph")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


# ---------------------------------------------------------------------------------------------
# demo


def _add_demo_parser(subparsers):
    parser = subparsers.add_parser(
        "demo",
        help="train every registered estimator on the built-in synthetic graph",
        description=(
            "Train every estimator registered in skdpgraph.estimators.DEMO_ESTIMATORS on a "
            "contextual stochastic block model graph (skdpgraph.datasets.make_csbm), on a "
            "stratified 70/30 node split, and print test accuracy, the privacy budget spent, "
            "the privacy unit and the fit time of each."
        ),
    )
    parser.add_argument("--n-nodes", type=_positive_int, default=None,
                        help="number of nodes of the synthetic graph (default: make_csbm's)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed for the graph, the split and each estimator (default: 0)")
    parser.set_defaults(func=_run_demo)


def _run_demo(args):
    from sklearn.model_selection import train_test_split

    from skdpgraph.datasets import make_csbm

    estimators = _demo_estimators()
    if not estimators:
        print("No estimators are registered in skdpgraph.estimators.DEMO_ESTIMATORS; "
              "nothing to train.")
        return 1

    csbm_kwargs = {} if args.n_nodes is None else {"n_nodes": args.n_nodes}
    ds = make_csbm(random_state=args.seed, **csbm_kwargs)
    nodes = ds.nodes()
    X_train, X_test, y_train, y_test = train_test_split(
        nodes, ds.y, test_size=0.3, stratify=ds.y, random_state=args.seed
    )
    print(_describe_graph(ds.graph, ds.y, len(y_train), len(y_test)))
    print()

    headers = ["estimator", "epsilon", "accuracy", "epsilon_spent_", "delta_", "privacy unit",
               "fit s"]
    rows, failed = [], 0
    total_start = time.perf_counter()
    for name, factory in estimators.items():
        try:
            rows.append(_fit_one(name, factory, args.seed, X_train, y_train, X_test, y_test))
        except Exception as exc:  # report and carry on with the other estimators
            failed += 1
            rows.append([name, "-", "-", "-", "-", f"FAILED: {type(exc).__name__}: {exc}", "-"])
    print(_format_table(headers, rows))
    print(f"\ntotal {time.perf_counter() - total_start:.1f} s; "
          "accuracy on held-out nodes; epsilon_spent_ is an upper bound from the accountant.")
    return 1 if failed else 0


def _demo_estimators():
    """Return ``skdpgraph.estimators.DEMO_ESTIMATORS``, or ``{}`` if it does not exist yet."""
    import importlib

    try:
        module = importlib.import_module("skdpgraph.estimators")
    except ModuleNotFoundError as exc:
        if exc.name not in ("skdpgraph.estimators", "skdpgraph"):
            raise  # a real missing dependency: do not hide it
        return {}
    return dict(getattr(module, "DEMO_ESTIMATORS", {}))


def _fit_one(name, factory, seed, X_train, y_train, X_test, y_test):
    est = factory()
    if "random_state" in est.get_params(deep=False):
        est.set_params(random_state=seed)
    start = time.perf_counter()
    est.fit(X_train, y_train)
    fit_seconds = time.perf_counter() - start
    accuracy = est.score(X_test, y_test)
    return [
        name,
        _format_epsilon(est.get_params(deep=False).get("epsilon")),
        f"{accuracy:.3f}",
        _format_epsilon(getattr(est, "epsilon_spent_", None)),
        _format_delta(getattr(est, "delta_", None)),
        str(est.privacy_.unit),
        f"{fit_seconds:.1f}",
    ]


def _describe_graph(graph, y, n_train, n_test):
    import numpy as np

    parts = [f"{graph.num_nodes} nodes"]
    num_edges = getattr(graph, "num_edges", None)
    if num_edges is not None:
        parts.append(f"{num_edges} edges")
    n_features = getattr(graph, "num_features", None)
    if n_features is not None:
        parts.append(f"{n_features} features")
    parts.append(f"{len(np.unique(y))} classes")
    return (f"make_csbm graph: {', '.join(parts)}; "
            f"{n_train} training and {n_test} test nodes (stratified)")


def _format_epsilon(value):
    if value is None:
        return "-"
    value = float(value)
    return "inf" if math.isinf(value) else f"{value:.3g}"


def _format_delta(value):
    if value is None:
        return "-"
    value = float(value)
    return "0" if value == 0 else f"{value:.1e}"


def _format_table(headers, rows):
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


# Subcommands in help order; each registers its parser and sets `func`.
from skdpgraph._cli_commands import (  # noqa: E402  (light module: imports stay lazy)
    add_evaluate_parser,
    add_fit_parser,
    add_predict_parser,
)

_SUBCOMMANDS = [_add_demo_parser, add_fit_parser, add_predict_parser, add_evaluate_parser]


if __name__ == "__main__":
    sys.exit(main())
