"""CSV tables and command lines shared by the CLI tests (tests/test_cli*.py)."""

import pandas as pd

from skdpgraph.datasets import make_csbm

N_NODES, N_LABELLED = 120, 100


def write_tables(directory):
    """Write ``nodes.csv`` and ``edges.csv`` of a small CSBM graph under ``directory``.

    Rows 0-69 have ``split=train``, 70-99 ``split=test``; the last 20 rows have no label (and
    an empty split cell). Returns ``(paths, nodes, edges)``.
    """
    data = make_csbm(n_nodes=N_NODES, n_features=4, random_state=0)
    nodes = pd.DataFrame(data.graph.features(), columns=["a", "b", "c", "d"])
    nodes.insert(0, "id", [f"n{i}" for i in range(N_NODES)])
    labels = data.y.astype(object)
    labels[N_LABELLED:] = None
    nodes["label"] = labels
    edges = pd.DataFrame({"source": nodes["id"].to_numpy()[data.graph.edge_index[0]],
                          "target": nodes["id"].to_numpy()[data.graph.edge_index[1]]})
    paths = {"nodes": directory / "nodes.csv", "edges": directory / "edges.csv",
             "model": directory / "model.joblib", "dir": directory}
    nodes.to_csv(paths["nodes"], index=False)
    edges.to_csv(paths["edges"], index=False)
    return paths, nodes, edges


def add_split(paths, nodes):
    """Add the ``split`` column (train / test / empty) to the node table; return the table."""
    split = ["train"] * 70 + ["test"] * 30 + [""] * (N_NODES - N_LABELLED)
    nodes = nodes.assign(split=split)
    nodes.to_csv(paths["nodes"], index=False)
    return nodes


def fit_args(paths, *extra, estimator="dpmlp"):
    """A fast ``skdpgraph fit`` command line on the tables of :func:`write_tables`."""
    return ["fit", "--nodes", str(paths["nodes"]), "--edges", str(paths["edges"]),
            "--estimator", estimator, "--epsilon", "3", "--param", "epochs=2",
            "--param", "hidden_dim=8", "--random-state", "0", "--model", str(paths["model"]),
            *extra]


def table_args(paths):
    """``--nodes --edges --model`` of a ``predict`` or ``evaluate`` command line."""
    return ["--nodes", str(paths["nodes"]), "--edges", str(paths["edges"]),
            "--model", str(paths["model"])]
