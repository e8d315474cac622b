"""Non-private reference for graph classification: a Weisfeiler-Lehman subtree kernel SVM.

The WL subtree kernel of Shervashidze et al. (JMLR 2011) through grakel
(``WeisfeilerLehman(n_iter=h, base_graph_kernel=VertexHistogram, normalize=True)``) with
``SVC(kernel="precomputed")``, under the 10-fold protocol of ``graph_level.py`` (Xu et al.,
ICLR 2019): ``StratifiedKFold(10, shuffle=True, random_state=0)`` over all graphs. In each
fold, ``C`` in ``10**-3 .. 10**3`` and ``h`` in ``1 .. 5`` are chosen by a stratified 3-fold
cross-validation on the training fold alone, and the SVM with the chosen pair is refitted
on the whole training fold and scored on the test fold::

    python benchmarks/graph_kernel.py --dataset NCI1 --folds 10

Node labels: for a TU dataset (read with ``use_node_attributes=False``), the discrete node
label, that is the argmax of the one-hot node-label columns; for ``reddit_threads``, which
has none, the node degree. The kernel is unsupervised, so it is computed once per ``h``
over all graphs (no label reaches it); the selection and the SVMs see only kernel rows and
labels of the training fold. ``--max-graphs N`` keeps a stratified subsample of N graphs
(``train_test_split(..., train_size=N, stratify=y, random_state=0)``) for collections too
large for a dense kernel matrix or for the SVM's selection: on the 10,000 Reddit threads,
one fold's 105 inner SVM fits take about two minutes on one core, on 5,000 about half a
minute::

    python benchmarks/graph_kernel.py --dataset reddit_threads --folds 10 --max-graphs 5000

The JSON record goes to ``benchmarks/results/graph_kernel-<dataset>-<folds>folds
[-<N>graphs].json`` (or ``--out``): per fold the test accuracy, the chosen ``h`` and ``C``,
their inner cross-validation accuracy and the fit time (selection and refit, kernel
excluded); the kernel time per ``h``; the mean and sample standard deviation (ddof=1) of
the test accuracy in percent. grakel is a benchmark extra (``pip install skdpgraph[bench]``),
not a dependency of the library.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "datasets"
C_GRID = tuple(10.0 ** k for k in range(-3, 4))
H_GRID = (1, 2, 3, 4, 5)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True,
                   help="a TUDataset folder under <data-root>/tu (NCI1, PROTEINS, "
                        "Mutagenicity, ENZYMES) or reddit_threads")
    p.add_argument("--folds", type=int, default=10, help="the first FOLDS of the 10 folds")
    p.add_argument("--max-graphs", type=int, default=None,
                   help="a stratified subsample of this many graphs (seed 0)")
    p.add_argument("--inner-folds", type=int, default=3,
                   help="stratified folds of the training fold that choose h and C")
    p.add_argument("--data-root", type=Path, default=DATA)
    p.add_argument("--out", type=Path, default=None)
    return p.parse_args(argv)


def load(name: str, root: Path):
    """The collection and its labels, read as graph_level.py reads them (TU node labels
    only, reddit_threads' degree features)."""
    from graph_level import load as load_collection

    return load_collection(name, root)


def subsample(y: np.ndarray, max_graphs: int | None) -> np.ndarray:
    """Indices of a stratified subsample of ``max_graphs`` graphs (all graphs if None)."""
    from sklearn.model_selection import train_test_split

    index = np.arange(len(y))
    if max_graphs is None or max_graphs >= len(y):
        return index
    kept, _ = train_test_split(index, train_size=max_graphs, stratify=y, random_state=0)
    return np.sort(kept)


def node_labels(graph, source: str) -> np.ndarray:
    """Discrete label of every node: ``"argmax"`` of its features, or its ``"degree"``."""
    if source == "argmax":
        return graph.features().argmax(axis=1)
    if source == "degree":
        return np.asarray(graph.in_degree())
    raise ValueError(f"node_labels: source must be 'argmax' or 'degree'; got {source!r}.")


def to_grakel(X, source: str) -> list:
    """grakel graphs (adjacency lists with every node, isolated ones too) with node labels."""
    from grakel import Graph as GrakelGraph

    graphs = []
    for graph in X:
        indptr, indices = graph.indptr, graph.indices
        adjacency = {node: indices[indptr[node]:indptr[node + 1]].tolist()
                     for node in range(graph.num_nodes)}
        labels = dict(enumerate(node_labels(graph, source).tolist()))
        graphs.append(GrakelGraph(adjacency, node_labels=labels))
    return graphs


def wl_kernels(graphs: list, heights=H_GRID) -> tuple[dict, dict]:
    """The normalised WL subtree kernel matrix over all graphs, and its time, for each h."""
    from grakel.kernels import VertexHistogram, WeisfeilerLehman

    kernels, seconds = {}, {}
    for h in heights:
        start = time.perf_counter()
        kernel = WeisfeilerLehman(n_iter=h, base_graph_kernel=VertexHistogram, normalize=True)
        kernels[h] = np.asarray(kernel.fit_transform(graphs), dtype=np.float64)
        seconds[h] = time.perf_counter() - start
    return kernels, seconds


def _svm_accuracy(kernel: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray,
                  C: float) -> float:
    from sklearn.svm import SVC

    svm = SVC(kernel="precomputed", C=C).fit(kernel[np.ix_(train, train)], y[train])
    return float(svm.score(kernel[np.ix_(test, train)], y[test]))


def select(kernels: dict, y: np.ndarray, train: np.ndarray, inner_folds: int = 3,
           C_grid=C_GRID) -> tuple[int, float, float]:
    """The ``(h, C)`` of the best mean inner-fold accuracy on ``train``, and that accuracy.

    Ties go to the smaller ``h``, then the smaller ``C`` (the first in grid order).
    """
    from sklearn.model_selection import StratifiedKFold

    inner = list(StratifiedKFold(inner_folds, shuffle=True, random_state=0)
                 .split(np.zeros(len(train)), y[train]))
    best = (None, None, -1.0)
    for h, kernel in kernels.items():
        for C in C_grid:
            score = float(np.mean([_svm_accuracy(kernel, y, train[fit], train[held], C)
                                   for fit, held in inner]))
            if score > best[2]:
                best = (h, C, score)
    return best


def fold_run(kernels: dict, y: np.ndarray, train: np.ndarray, test: np.ndarray,
             inner_folds: int = 3) -> dict[str, Any]:
    """Choose ``(h, C)`` on ``train``, refit on it and score on ``test``."""
    start = time.perf_counter()
    h, C, inner_accuracy = select(kernels, y, train, inner_folds)
    accuracy = _svm_accuracy(kernels[h], y, train, test, C)
    return {"test_accuracy": accuracy, "h": h, "C": C,
            "inner_cv_accuracy": inner_accuracy, "fit_seconds": time.perf_counter() - start}


def evaluate(X, y: np.ndarray, source: str, n_folds: int = 10, inner_folds: int = 3,
             heights=H_GRID) -> dict[str, Any]:
    """Kernels over all of ``X``, then the first ``n_folds`` of the 10-fold protocol."""
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(y)
    kernels, kernel_seconds = wl_kernels(to_grakel(X, source), heights)
    folds = list(StratifiedKFold(10, shuffle=True, random_state=0).split(np.zeros(len(y)), y))
    runs = []
    for fold, (train, test) in enumerate(folds[:n_folds]):
        runs.append({"fold": fold, **fold_run(kernels, y, train, test, inner_folds)})
        print(json.dumps(runs[-1]), flush=True)
    accuracy = 100 * np.array([run["test_accuracy"] for run in runs])
    return {"runs": runs, "kernel_seconds": kernel_seconds,
            "mean_test_accuracy_percent": float(accuracy.mean()),
            "std_test_accuracy_percent": float(accuracy.std(ddof=1)) if len(runs) > 1 else None}


def main(argv=None) -> dict:
    import grakel
    import sklearn

    args = parse_args(argv)
    X, y = load(args.dataset, args.data_root)
    n_total = len(y)
    kept = subsample(y, args.max_graphs)
    X, y = X[kept], y[kept]
    source = "degree" if args.dataset == "reddit_threads" else "argmax"
    result = evaluate(X, y, source, args.folds, args.inner_folds)
    record = {
        "dataset": args.dataset, "n_graphs": len(y), "n_graphs_in_dataset": n_total,
        "subsample": (None if len(y) == n_total else
                      f"train_test_split(range({n_total}), train_size={len(y)}, stratify=y, "
                      "random_state=0)"),
        "protocol": "StratifiedKFold(10, shuffle=True, random_state=0), first folds",
        "folds": args.folds,
        "model": "WL subtree kernel (grakel WeisfeilerLehman, VertexHistogram, normalize=True)"
                 " + SVC(kernel='precomputed')",
        "node_labels": ("node degree" if source == "degree"
                        else "argmax of the one-hot node-label columns"),
        "selection": f"StratifiedKFold({args.inner_folds}, shuffle=True, random_state=0) on "
                     f"the training fold; h in {list(H_GRID)}, C in {list(C_GRID)}",
        "fit_seconds_measures": "selection of (h, C) and the refit; the kernel is timed apart",
        "grakel": grakel.__version__, "scikit_learn": sklearn.__version__,
        "machine": platform.platform(), **result}
    tail = "" if record["subsample"] is None else f"-{len(y)}graphs"
    out = args.out or (HERE / "results" /
                       f"graph_kernel-{args.dataset}-{args.folds}folds{tail}.json")
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"mean {record['mean_test_accuracy_percent']:.2f} "
          f"std {record['std_test_accuracy_percent']} -> wrote {out}")
    return record


if __name__ == "__main__":
    main()
