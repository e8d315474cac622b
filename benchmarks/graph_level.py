"""Graph-level DP: DPGraphClassifier's test accuracy and fit time on a graph collection.

The 10-fold protocol of Xu et al. (ICLR 2019): ``StratifiedKFold(10, shuffle=True,
random_state=0)`` over all graphs; each selected fold trains on nine tenths with the
estimator's defaults (``allow_equal_graphs=True``, since the TU collections hold graphs of
equal content that are different molecules) and tests on the rest. The node features are
the one-hot node labels alone, as in that protocol (``use_node_attributes=False``); the
structure-only reddit_threads gets the loader's degree features. One torch thread.
For every fold and seed it records the test accuracy, the fit's wall and CPU time, the wall
and CPU time per epoch (of the training loop alone), the epochs run, the epsilon and delta
spent, the private/non-private fit time ratios where both ran, and the process's peak
resident memory (``ru_maxrss``: run one epsilon per process to measure one fit's)::

    python benchmarks/graph_level.py --dataset NCI1 --epsilons inf 8 --folds 1 --seeds 0

``--epochs`` and ``--validation-fraction none`` give both fits the same work, for the fit
time ratio alone (the default non-private fit also scores a held-out tenth every epoch)::

    python benchmarks/graph_level.py --dataset NCI1 --epsilons inf 8 --seeds 0 1 \
        --epochs 5 --validation-fraction none

``--test-curve`` records every epoch's test (and training) accuracy, for Xu et al.'s own
selection rule: train on the nine tenths without a held-out part (``--validation-fraction
none``), average the test-accuracy curves over the ten folds and report that mean curve's best epoch
(``--xu-accuracy`` prints it). It selects the epoch on the test folds, so it is
optimistic; it is the rule behind the published GIN accuracies::

    python benchmarks/graph_level.py --dataset NCI1 --epsilons inf --fold-ids 0 \
        --validation-fraction none --test-curve \
        --out benchmarks/results/graph_level_curves/NCI1-fold0.json
    python benchmarks/graph_level.py --xu-accuracy benchmarks/results/graph_level_curves/NCI1-*.json

``--graph-free`` adds the graph-free DP baseline a user without a GNN would try: a
DP-MLP (``DPMLPClassifier``, defaults) on one row per graph, the sum of its node features
(for one-hot node labels, the label histogram) and its node count; one row is one graph, so
the DP-MLP's unit is the same graph.

The JSON record goes to ``benchmarks/results/graph_level-<dataset>-eps<epsilons>-<folds>
folds-<seeds>seeds[-<epochs>epochs][-noval].json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import resource
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "datasets"
#: ``[description, planned epochs, epochs run, seconds, CPU seconds]`` of every epoch loop
#: run in this process (filled by ``scaling._timed_epochs``).
EPOCH_LOOPS: list = []


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset",
                   help="a TUDataset folder under <data-root>/tu (NCI1, PROTEINS, "
                        "Mutagenicity, ENZYMES) or reddit_threads")
    p.add_argument("--epsilons", nargs="+", type=float, default=[math.inf, 8.0])
    p.add_argument("--folds", type=int, default=1, help="the first FOLDS of the 10 folds")
    p.add_argument("--fold-ids", nargs="+", type=int, default=None, metavar="K",
                   help="these folds (0 to 9) instead of the first FOLDS")
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--epochs", type=int, default=None, help="default: the estimator's")
    p.add_argument("--validation-fraction", default="auto",
                   help="the estimator's validation_fraction: auto, none or a fraction")
    p.add_argument("--set", nargs="+", default=[], metavar="NAME=VALUE",
                   help="other estimator parameters, each value in JSON (batch_size=128); "
                        "tuned runs, not the defaults' table")
    p.add_argument("--tuning-split", action="store_true",
                   help="score on a held-out tenth of each fold's training graphs "
                        "(stratified, random_state=0) instead of its test fold: for choosing "
                        "parameters without reading a test fold")
    p.add_argument("--graph-free", action="store_true",
                   help="also fit the graph-free DP-MLP baseline on per-graph summaries")
    p.add_argument("--test-curve", action="store_true",
                   help="record every epoch's test accuracy (Xu et al.'s selection rule)")
    p.add_argument("--xu-accuracy", nargs="+", metavar="RECORD",
                   help="print the best epoch of the fold-mean test curve of these records "
                        "and stop")
    p.add_argument("--xu-table", nargs="+", metavar="RECORD",
                   help="print the docs' table of --xu-accuracy for these records and stop")
    p.add_argument("--data-root", type=Path, default=DATA)
    p.add_argument("--table", nargs="+", metavar="RECORD",
                   help="print the docs' table of these graph_level records and stop")
    p.add_argument("--kernel-records", nargs="*", default=[], metavar="RECORD",
                   help="with --table: graph_kernel records for the WL kernel rows")
    p.add_argument("--time-table", nargs="+", metavar="RECORD",
                   help="print the scaling guide's table of these records and stop")
    p.add_argument("--out", type=Path, default=None)
    return p.parse_args(argv)


def load(name: str, root: Path):
    from skdpgraph.datasets import load_reddit_threads, load_tu_dataset

    if name == "reddit_threads":
        return load_reddit_threads(root / "reddit_threads")
    # Node labels only, one-hot: the input features of Xu et al.'s protocol (PROTEINS' and
    # ENZYMES' continuous node attributes are left out, as there).
    return load_tu_dataset(name, root / "tu", use_node_attributes=False)


def options(args) -> dict:
    """Estimator parameters other than the defaults that the command line sets."""
    out = {} if args.epochs is None else {"epochs": args.epochs}
    fraction = args.validation_fraction
    if fraction != "auto":
        out["validation_fraction"] = None if fraction == "none" else float(fraction)
    for setting in args.set:
        name, _, value = setting.partition("=")
        out[name] = json.loads(value)
    return out


def _test_curve(graphs, labels):
    """A training-loop callback that records the test accuracy after every epoch."""
    import torch

    from skdpgraph.nn import GraphBatches
    from skdpgraph.training import Callback

    class TestCurve(Callback):
        reads_epsilon = False

        def on_train_begin(self, module, **kwargs) -> None:
            self.accuracies = []

        def on_epoch_end(self, module, record, **kwargs) -> None:
            with torch.no_grad():
                logits = torch.cat([module.eval()(*chunk)
                                    for chunk in GraphBatches(graphs).chunks(256)])
            module.train()
            self.accuracies.append(float((logits.argmax(-1).numpy() == labels).mean()))

    return TestCurve()


def _add_callback(clf, callback) -> None:
    """Give the estimator's training loop one more callback (for the benchmark alone)."""
    stage_options = clf._stage_options

    def with_callback(plan, stage, streams, *callbacks, **kwargs):
        return stage_options(plan, stage, streams, *callbacks, callback, **kwargs)

    clf._stage_options = with_callback


def one_run(X, y, train, test, epsilon: float, seed: int, params: dict,
            test_curve: bool = False) -> dict:
    from registry import GRAPH_ESTIMATORS

    clf = GRAPH_ESTIMATORS["dpgraph"](epsilon, seed).set_params(device="cpu", **params)
    curve = None
    if test_curve:
        curve = _test_curve(X[test], np.searchsorted(np.unique(y[train]), y[test]))
        _add_callback(clf, curve)
    first_loop = len(EPOCH_LOOPS)
    start, cpu = time.perf_counter(), time.process_time()
    clf.fit(X[train], y[train])
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    stages = EPOCH_LOOPS[first_loop:]
    validation = [r["validation_accuracy"] for r in clf.history_]
    return {"model": "DPGraphClassifier", "epsilon": epsilon, "seed": seed,
            "test_accuracy": float(clf.score(X[test], y[test])),
            "fit_seconds": seconds, "fit_cpu_seconds": cpu_seconds,
            "epoch_seconds": [wall / max(run, 1) for _, _, run, wall, _ in stages],
            "epoch_cpu_seconds": [used / max(run, 1) for _, _, run, _, used in stages],
            "epochs": len(clf.history_), "training_graphs": len(train),
            "best_epoch": (int(np.nanargmax(np.array(validation, float))) + 1
                           if validation and validation[0] is not None else None),
            "epsilon_spent": clf.epsilon_spent_, "delta": clf.delta_,
            "noise_multiplier": clf.noise_multiplier_,
            **({"test_accuracy_by_epoch": curve.accuracies,
                "train_accuracy_by_epoch": [r["train_accuracy"] for r in clf.history_]}
               if curve else {})}


def xu_accuracy(paths: list[str]) -> dict:
    """Xu et al.'s figure from ``--test-curve`` records: per epsilon, the fold-mean test
    accuracy at the epoch where that mean is highest (folds and seeds pooled)."""
    curves: dict[float, list[list[float]]] = {}
    for path in paths:
        for run in json.loads(Path(path).read_text())["runs"]:
            curves.setdefault(float(run["epsilon"]), []).append(run["test_accuracy_by_epoch"])
    out = {}
    for epsilon, runs in sorted(curves.items()):
        length = min(map(len, runs))
        mean = np.mean([run[:length] for run in runs], axis=0)
        best = int(np.argmax(mean))
        out[epsilon] = {"runs": len(runs), "best_epoch": best + 1,
                        "accuracy": float(mean[best]),
                        "std_at_best_epoch": float(np.std([run[best] for run in runs], ddof=1))
                        if len(runs) > 1 else None,
                        "last_epoch_accuracy": float(mean[-1])}
    return out


def rst_xu_table(paths: list[str]) -> str:
    """The graph-level guide's table of Xu et al.'s selection rule: per data set, the
    non-private fits' fold-mean test accuracy at its best epoch (:func:`xu_accuracy`),
    beside the last epoch's and the published GIN's."""
    published = {"NCI1": "82.7", "PROTEINS": "76.2"}
    by_dataset: dict[str, list[str]] = {}
    for path in paths:
        by_dataset.setdefault(json.loads(Path(path).read_text())["dataset"], []).append(path)
    header = ["data set", "folds", "epoch picked", "accuracy there", "last epoch",
              "Xu et al.'s GIN"]
    rows = []
    for dataset, files in sorted(by_dataset.items()):
        result = xu_accuracy(files)[math.inf]
        rows.append([dataset, str(result["runs"]), str(result["best_epoch"]),
                     f"{100 * result['accuracy']:.1f} ± {100 * result['std_at_best_epoch']:.1f}",
                     f"{100 * result['last_epoch_accuracy']:.1f}",
                     published.get(dataset, "--")])
    return _rst_grid(header, rows)


def graph_free_run(X, y, train, test, epsilon: float, seed: int) -> dict:
    """DP-MLP on each graph's summed node features and node count (one row per graph)."""
    from skdpgraph import DPMLPClassifier, Graph

    rows = np.array([np.r_[g.features().sum(0), g.num_nodes] for g in X], np.float32)
    nodes = Graph(np.zeros((2, 0), np.int64), rows).nodes()
    clf = DPMLPClassifier(epsilon=epsilon, random_state=seed, device="cpu")
    start = time.perf_counter()
    clf.fit(nodes[train], y[train])
    seconds = time.perf_counter() - start
    return {"model": "graph-free DP-MLP", "epsilon": epsilon, "seed": seed,
            "test_accuracy": float(clf.score(nodes[test], y[test])), "fit_seconds": seconds,
            "epsilon_spent": clf.epsilon_spent_, "delta": clf.delta_}


def _cell(accuracies: list[float]) -> str:
    """``mean ± std (k)`` in percent over the ``k`` folds and seeds that ran (the sample
    standard deviation), or a dash."""
    if not accuracies:
        return "--"
    values = 100 * np.asarray(accuracies)
    if len(values) == 1:
        return f"{values[0]:.1f} (1)"
    return f"{values.mean():.1f} ± {values.std(ddof=1):.1f} ({len(values)})"


def rst_table(paths: list[str], kernel_paths: list[str] = ()) -> str:
    """The docs' privacy–utility table of graph_level records (and graph_kernel records).

    One row per data set and model, one column per epsilon; each cell is the mean test
    accuracy ± its standard deviation over the folds and seeds of the records, with their
    number in brackets. A later record's runs are added to an earlier one's.
    """
    cells: dict[tuple[str, str], dict[float, list[float]]] = {}
    for path in paths:
        record = json.loads(Path(path).read_text())
        models = (("runs", "DPGraphClassifier"), ("graph_free_runs", "graph-free DP-MLP"))
        for key, model in models:
            for run in record.get(key, []):
                cells.setdefault((record["dataset"], model), {}).setdefault(
                    float(run["epsilon"]), []).append(run["test_accuracy"])
    for path in kernel_paths:
        record = json.loads(Path(path).read_text())
        cells.setdefault((record["dataset"], "WL kernel + SVM"), {})[math.inf] = [
            run["test_accuracy"] for run in record["runs"]]
    epsilons = sorted({e for row in cells.values() for e in row})
    header = ["data set", "model"] + [
        "epsilon=inf" if math.isinf(e) else f"epsilon={e:g}" for e in epsilons]
    order = ["DPGraphClassifier", "graph-free DP-MLP", "WL kernel + SVM"]
    rows = [[dataset, model] + [_cell(cells[dataset, model].get(e, [])) for e in epsilons]
            for dataset, model in sorted(cells, key=lambda k: (k[0], order.index(k[1])))]
    return _rst_grid(header, rows)


def _rst_grid(header: list[str], rows: list[list[str]]) -> str:
    """A reStructuredText simple table of ``header`` and ``rows`` (lists of cells)."""
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    rule = "  ".join("=" * w for w in widths)
    lines = [rule, "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip(), rule]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines + [rule]) + "\n"


def rst_time_table(paths: list[str]) -> str:
    """The scaling guide's table: per record, each fit's CPU time per epoch and in all, and
    the process's peak resident memory (records of one fit each)."""
    header = ["data set", "epsilon", "graphs given to fit", "epochs", "CPU s / epoch",
              "fit CPU s", "peak RSS MB"]
    rows = []
    for path in paths:
        record = json.loads(Path(path).read_text())
        for run in record["runs"]:
            rows.append([record["dataset"], "inf" if math.isinf(run["epsilon"]) else
                         f"{run['epsilon']:g}", f"{run['training_graphs']:,}",
                         str(run["epochs"]), f"{run['epoch_cpu_seconds'][0]:.2f}",
                         f"{run['fit_cpu_seconds']:.0f}", f"{record['peak_rss_mb']:.0f}"])
    return _rst_grid(header, rows)


def tuning_split(train: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A fold's training graphs split nine to one (stratified, ``random_state=0``): the
    graphs that ``--tuning-split`` fits on and those it scores."""
    from sklearn.model_selection import train_test_split

    return train_test_split(train, test_size=0.1, stratify=y[train], random_state=0)


def main(argv=None) -> dict:
    import torch
    from sklearn.model_selection import StratifiedKFold

    from scaling import _timed_epochs

    args = parse_args(argv)
    if args.xu_accuracy:
        result = xu_accuracy(args.xu_accuracy)
        print(json.dumps(result, indent=1, default=str))
        return result
    if args.xu_table:
        print(rst_xu_table(args.xu_table), end="")
        return {}
    if args.table or args.time_table:
        print(rst_table(args.table, args.kernel_records) if args.table
              else rst_time_table(args.time_table), end="")
        return {}
    if args.dataset is None:
        raise SystemExit("graph_level.py: --dataset is required (or --table)")
    torch.set_num_threads(1)
    _timed_epochs(EPOCH_LOOPS, None)
    X, y = load(args.dataset, args.data_root)
    folds = list(StratifiedKFold(10, shuffle=True, random_state=0).split(np.zeros(len(y)), y))
    runs, baselines = [], []
    chosen = args.fold_ids if args.fold_ids is not None else range(args.folds)
    for fold in chosen:
        train, test = folds[fold]
        if args.tuning_split:
            train, test = tuning_split(train, y)
        for seed in args.seeds:
            for epsilon in args.epsilons:
                run = one_run(X, y, train, test, epsilon, seed, options(args), args.test_curve)
                run = {"fold": fold, **run}
                runs.append(run)
                print(json.dumps(run), flush=True)
                if args.graph_free:
                    baselines.append({"fold": fold, **graph_free_run(X, y, train, test,
                                                                     epsilon, seed)})
                    print(json.dumps(baselines[-1]), flush=True)
    pairs = [(private, plain) for plain in runs if math.isinf(plain["epsilon"])
             for private in runs if not math.isinf(private["epsilon"])
             and (private["fold"], private["seed"]) == (plain["fold"], plain["seed"])]
    record = {"dataset": args.dataset, "n_graphs": len(y), "protocol":
              "StratifiedKFold(10, shuffle=True, random_state=0)" + (
                  "; tuning split: a stratified tenth of each fold's training graphs scored"
                  if args.tuning_split else ""), "folds": list(chosen),
              "seeds": args.seeds, "epsilons": args.epsilons,
              "estimator": "DPGraphClassifier defaults, allow_equal_graphs=True, device=cpu",
              "parameters": options(args),
              "torch_threads": 1, "machine": platform.platform(), "runs": runs,
              "graph_free_runs": baselines,
              "private_over_nonprivate_fit_time": [
                  private["fit_seconds"] / plain["fit_seconds"] for private, plain in pairs],
              "private_over_nonprivate_fit_cpu_time": [
                  private["fit_cpu_seconds"] / plain["fit_cpu_seconds"]
                  for private, plain in pairs],
              "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    eps = "-".join("inf" if math.isinf(e) else f"{e:g}" for e in args.epsilons)
    tail = (f"-{args.epochs}epochs" if args.epochs else "") + (
        "-noval" if args.validation_fraction == "none" else "") + (
        "-graphfree" if args.graph_free else "") + ("-curve" if args.test_curve else "") + (
        "-tuning" if args.tuning_split else "")
    folds_name = (f"{args.folds}folds" if args.fold_ids is None
                  else "fold" + "-".join(map(str, args.fold_ids)))
    out = args.out or (HERE / "results" / f"graph_level-{args.dataset}-eps{eps}-{folds_name}"
                       f"-{len(args.seeds)}seeds{tail}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, default=str) + "\n")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
