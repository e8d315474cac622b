"""``skdpgraph demo``: every registered estimator on built-in synthetic data.

The node-level estimators train on the nodes of a contextual stochastic block model graph,
the graph-level ones on a collection of small graphs; each row gives held-out accuracy, the
budget spent and the privacy unit.
"""

from __future__ import annotations

import argparse
import math
import time

__all__ = ["add_demo_parser"]


def add_demo_parser(subparsers) -> None:
    """Register ``skdpgraph demo``."""
    parser = subparsers.add_parser(
        "demo",
        help="train every registered estimator on built-in synthetic data",
        description=(
            "Train every estimator of skdpgraph.all_estimators(data='nodes'), in the demo's "
            "settings, on a contextual stochastic block model graph "
            "(skdpgraph.datasets.make_csbm), on a stratified 70/30 node split, and every "
            "estimator of skdpgraph.all_estimators(data='graphs') on a collection of small "
            "graphs (skdpgraph.datasets.make_graph_classification), on a stratified 70/30 "
            "graph split; print test accuracy, the privacy budget spent, the privacy unit and "
            "the fit time of each."
        ),
    )
    parser.add_argument("--n-nodes", type=_positive_int, default=None,
                        help="number of nodes of the synthetic graph (default: make_csbm's)")
    parser.add_argument("--n-graphs", type=_positive_int, default=200,
                        help="number of graphs of the synthetic collection (default: 200)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed for the data, the splits and each estimator (default: 0)")
    parser.set_defaults(func=_run_demo)


def _node_data(args):
    """The CSBM graph's description and its stratified node split."""
    from sklearn.model_selection import train_test_split

    from skdpgraph.datasets import make_csbm

    csbm_kwargs = {} if args.n_nodes is None else {"n_nodes": args.n_nodes}
    ds = make_csbm(random_state=args.seed, **csbm_kwargs)
    split = train_test_split(ds.nodes(), ds.y, test_size=0.3, stratify=ds.y,
                             random_state=args.seed)
    return _describe_graph(ds.graph, ds.y, len(split[2]), len(split[3])), split


def _graph_data(args):
    """The synthetic collection's description and its stratified graph split."""
    import numpy as np
    from sklearn.model_selection import train_test_split

    from skdpgraph.datasets import make_graph_classification

    X, y = make_graph_classification(n_graphs=args.n_graphs, random_state=args.seed)
    split = train_test_split(X, y, test_size=0.3, stratify=y, random_state=args.seed)
    return (f"make_graph_classification collection: {len(X)} graphs, "
            f"{int(X.num_nodes.sum())} nodes, {X.num_features} features, "
            f"{len(np.unique(y))} classes; {len(split[2])} training and {len(split[3])} test "
            "graphs (stratified)"), split


def _run_demo(args):
    from skdpgraph.cli._demo_estimators import demo_estimators

    data = {"nodes": _node_data(args), "graphs": _graph_data(args)}
    for description, _ in data.values():
        print(description)
    print()

    headers = ["estimator", "epsilon", "accuracy", "epsilon_spent_", "delta_", "privacy unit",
               "fit s"]
    rows, failed = [], 0
    total_start = time.perf_counter()
    for kind, (_, split) in data.items():
        for name, factory in demo_estimators(kind).items():
            try:
                rows.append(_fit_one(name, factory, args.seed, *split))
            except Exception as exc:  # report and carry on with the other estimators
                failed += 1
                rows.append([name, "-", "-", "-", "-", f"FAILED: {type(exc).__name__}: {exc}",
                             "-"])
    print(_format_table(headers, rows))
    print(f"\ntotal {time.perf_counter() - total_start:.1f} s; "
          "accuracy on held-out nodes (graph-level rows: held-out graphs); epsilon_spent_ is "
          "an upper bound from the accountant.")
    return 1 if failed else 0


def _fit_one(name, factory, seed, X_train, X_test, y_train, y_test):
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
