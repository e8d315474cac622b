"""Fit time, time per epoch and peak memory of every estimator on make_csbm graphs of growing size.

Each (estimator, size) runs in its own child process with one torch thread; the child builds
``make_csbm(n, avg_degree=10)`` (``n * 5`` undirected edges, 32 dense float32 features: at
10^6 nodes the features take 128 MB against 160 MB for the 2 * 10^7 directed edge ids, so
sparse features would not change the picture), fits the estimator with its defaults on a
fixed random training fraction and reports:

* ``fit_seconds``: wall time of ``fit``, and ``fit_cpu_seconds`` its CPU time (with one thread,
  the wall time it would take on an idle machine: the machine these ran on was shared, so
  compare CPU times);
* ``epoch_seconds``: per training stage, the wall time of its epochs over their number
  (measured by timing ``skdpgraph.training.run_epochs``, the epoch loop of every
  estimator); ``steps`` is the number of DP-SGD steps where the stage has them;
* ``other_seconds``: ``fit_seconds`` minus the epoch loops (sampling, aggregation,
  partitioning, calibration);
* ``peak_rss_mb``: the child's ``ru_maxrss`` (the whole process, Python and torch included),
  and ``rss_before_fit_mb`` after the graph was built.

The parent prints a table, the per-edge growth ratio of the time per epoch and of the fit time
between consecutive sizes (1.0 is linear in edges), and writes everything as JSON.

``--max-epochs K`` stops every epoch loop after ``K`` epochs (for sizes where the defaults
would take too long; the privacy plan stays the default one); the row is then marked
``extrapolated`` and ``fit_seconds_extrapolated`` is ``other_seconds + sum(epoch_seconds *
planned epochs)`` over the stages.

Examples::

    python benchmarks/scaling.py --quick
    python benchmarks/scaling.py --sizes 10000 100000 --out benchmarks/results/scale-1e5.json
    python benchmarks/scaling.py --sizes 1000000 --estimators gap-edp
    python benchmarks/scaling.py --table benchmarks/results/scale-*.json   # the docs' table
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

#: The registry entries (benchmarks/registry.py) this benchmark fits.
ESTIMATORS = ["dpmlp", "gap-edp", "gap-ndp", "progap-edp", "drw", "fdp", "rgnn"]


def _timed_epochs(stages: list, max_epochs: int | None) -> None:
    """Wrap the training loop (``run_epochs``) to time every run, optionally stopping it early.

    Each run appends ``[description, planned epochs, epochs run, seconds, CPU seconds]`` to
    ``stages``. Stopping early runs the first ``max_epochs`` epochs of the same plan (the
    stepper's plan with fewer steps; noise multiplier and batches unchanged), so the time per
    epoch is the default plan's.
    """
    import dataclasses
    import math

    from skdpgraph.training import _llp, _loop

    original = _loop.run_epochs

    def timed(module, stepper, sampler, examples, loss_fn, callbacks, *, stage, lr):
        plan = stepper.plan
        per_epoch = max(1, math.ceil(plan.num_examples / plan.batch_size))
        planned = math.ceil(plan.steps / per_epoch) if plan.steps else 0
        if max_epochs is not None and planned > max_epochs:
            stepper.plan = dataclasses.replace(plan, steps=max_epochs * per_epoch)
        record = [stage.description, planned, 0, 0.0, 0.0]
        stages.append(record)
        start, cpu = time.perf_counter(), time.process_time()
        try:
            result = original(module, stepper, sampler, examples, loss_fn, callbacks,
                              stage=stage, lr=lr)
        finally:
            record[3:] = time.perf_counter() - start, time.process_time() - cpu
        record[2] = len(result.history)
        return result

    _loop.run_epochs = _llp.run_epochs = timed  # the DP-SGD loop's and RGNN's full-batch one


def _child(name: str, n: int, epsilon: float, train_fraction: float,
           max_epochs: int | None) -> dict:
    import resource

    import numpy as np
    import torch

    torch.set_num_threads(1)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, os.path.dirname(here)]  # registry.py, and this checkout's skdpgraph
    from registry import ESTIMATORS as REGISTRY
    from skdpgraph.datasets import make_csbm

    start = time.perf_counter()
    data = make_csbm(n_nodes=n, avg_degree=10.0, random_state=0)
    build = time.perf_counter() - start
    train = np.sort(np.random.default_rng(0).permutation(n)[: int(train_fraction * n)])
    clf = REGISTRY[name](epsilon, 0)
    if name == "rgnn":  # make_csbm's features are continuous; RGNN's default reads binary ones
        clf.set_params(feature_type="continuous")
    stages: list = []
    _timed_epochs(stages, max_epochs)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start, cpu = time.perf_counter(), time.process_time()
    clf.fit(data.nodes()[train], data.y[train])
    fit, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
    loops, loops_cpu = sum(s[3] for s in stages), sum(s[4] for s in stages)
    return {
        "estimator": name, "n_nodes": n, "edges": int(data.graph.num_edges),
        "n_train": int(train.shape[0]), "build_seconds": build, "fit_seconds": fit,
        "other_seconds": fit - loops, "fit_cpu_seconds": fit_cpu,
        "other_cpu_seconds": fit_cpu - loops_cpu,
        "stages": [{"stage": d, "planned_epochs": p, "epochs": e, "seconds": s,
                    "epoch_seconds": s / max(e, 1), "epoch_cpu_seconds": c / max(e, 1)}
                   for d, p, e, s, c in stages],
        "max_epochs": max_epochs,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_before_fit_mb": rss_before, "epsilon_spent": float(clf.epsilon_spent_),
        "train_accuracy": float(clf.score(data.nodes()[train[:10000]], data.y[train[:10000]])),
    }


def _extrapolate(row: dict) -> None:
    """Fill ``fit_seconds_extrapolated`` when a stage stopped before its planned epochs."""
    if all(s["epochs"] == s["planned_epochs"] for s in row["stages"]):
        return
    row["extrapolated"] = True
    row["fit_seconds_extrapolated"] = row["other_seconds"] + sum(
        s["epoch_seconds"] * s["planned_epochs"] for s in row["stages"])
    row["fit_cpu_seconds_extrapolated"] = row["other_cpu_seconds"] + sum(
        s["epoch_cpu_seconds"] * s["planned_epochs"] for s in row["stages"])


def _run_child(name: str, n: int, args) -> dict | None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    command = [sys.executable, os.path.abspath(__file__), "--child", name, str(n),
               str(args.epsilon), str(args.train_fraction)]
    if args.max_epochs is not None:
        command.append(str(args.max_epochs))
    load = os.getloadavg()
    out = subprocess.run(command, capture_output=True, text=True, env=env)
    if out.returncode:
        print(f"{name} n={n}: failed (exit {out.returncode})\n{out.stderr[-3000:]}", flush=True)
        return {"estimator": name, "n_nodes": n, "failed": out.stderr[-3000:]}
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["load_average_before"] = load
    row["load_average_after"] = os.getloadavg()
    _extrapolate(row)
    return row


def _print_row(row: dict) -> None:
    if "failed" in row:
        return
    epochs = "  ".join(f"{s['stage'].split()[-1][:10]} {s['epochs']}/{s['planned_epochs']}"
                       f"x{s['epoch_cpu_seconds']:.3g}s" for s in row["stages"])
    extra = (f"  [extrapolated: {row['fit_cpu_seconds_extrapolated']:.0f} s CPU]"
             if row.get("extrapolated") else "")
    print(f"{row['estimator']:<10} n={row['n_nodes']:>9,} edges={row['edges']:>10,}  "
          f"fit {row['fit_seconds']:7.1f} s wall {row['fit_cpu_seconds']:7.1f} s CPU "
          f"(other {row['other_cpu_seconds']:6.1f})  peak {row['peak_rss_mb']:6.0f} MB  "
          f"epochs(CPU): {epochs}{extra}  load {row['load_average_before'][0]:.1f}", flush=True)


def _growth(rows: list[dict]) -> list[dict]:
    """Per-edge CPU-time growth between consecutive sizes of each estimator (1.0: linear)."""
    ratios = []
    ok = [r for r in rows if "failed" not in r]
    for name in dict.fromkeys(r["estimator"] for r in ok):
        mine = sorted((r for r in ok if r["estimator"] == name), key=lambda r: r["n_nodes"])
        for small, large in zip(mine, mine[1:]):
            scale = large["edges"] / small["edges"]
            fit_small = small.get("fit_cpu_seconds_extrapolated", small["fit_cpu_seconds"])
            fit_large = large.get("fit_cpu_seconds_extrapolated", large["fit_cpu_seconds"])
            entry = {"estimator": name, "from": small["n_nodes"], "to": large["n_nodes"],
                     "fit_per_edge_ratio": fit_large / fit_small / scale,
                     "other_per_edge_ratio": (large["other_cpu_seconds"]
                                              / small["other_cpu_seconds"] / scale)}
            for a, b in zip(small["stages"], large["stages"]):
                entry[f"epoch_per_edge_ratio[{a['stage'].split()[-1]}]"] = (
                    b["epoch_cpu_seconds"] / a["epoch_cpu_seconds"] / scale)
            ratios.append(entry)
    return ratios


def rst_table(paths: list[str]) -> str:
    """An RST table of the rows in the JSON files ``paths``, with the growth ratios.

    Where two files have the same estimator and size, the later file's row is shown.
    """
    latest = {(r["estimator"], r["n_nodes"]): r for path in paths  # a later file wins
              for r in json.load(open(path))["rows"] if "failed" not in r}
    rows = list(latest.values())
    rows.sort(key=lambda r: (ESTIMATORS.index(r["estimator"]), r["n_nodes"]))
    growth = {(g["estimator"], g["to"]): g for g in _growth(rows)}
    head = ("estimator", "nodes", "edges", "fit CPU s", "CPU s / epoch", "other CPU s",
            "peak RSS MB", "epoch time / edge vs 10x smaller")
    lines = []
    for r in rows:
        fit = (f"{r['fit_cpu_seconds_extrapolated']:.0f} (extrap.)" if r.get("extrapolated")
               else f"{r['fit_cpu_seconds']:.0f}")
        epochs = " + ".join(f"{s['epoch_cpu_seconds']:.3g} x {s['planned_epochs']}"
                            for s in r["stages"])
        g = growth.get((r["estimator"], r["n_nodes"]))
        ratios = "" if g is None else " / ".join(
            f"{v:.2f}" for k, v in g.items() if k.startswith("epoch_per_edge"))
        lines.append((r["estimator"], f"{r['n_nodes']:,}", f"{r['edges']:,}", fit, epochs,
                      f"{r['other_cpu_seconds']:.1f}", f"{r['peak_rss_mb']:.0f}", ratios))
    widths = [max(len(x[i]) for x in [head] + lines) for i in range(len(head))]
    rule = "  ".join("=" * w for w in widths)
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa
    return "\n".join([rule, fmt(head), rule, *map(fmt, lines), rule])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--estimators", nargs="+", default=ESTIMATORS, choices=ESTIMATORS)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--epsilon", type=float, default=8.0)
    parser.add_argument("--train-fraction", type=float, default=0.5)
    parser.add_argument("--max-epochs", type=int, default=None,
                        help="cap every stage's epochs and extrapolate the fit time")
    parser.add_argument("--quick", action="store_true",
                        help="sizes 2000 and 20000, at most 3 epochs per stage")
    parser.add_argument("--out", default="benchmarks/results/scaling.json")
    parser.add_argument("--table", nargs="+", metavar="JSON",
                        help="print the RST table of these result files and exit")
    args = parser.parse_args(argv)
    if args.table:
        print(rst_table(args.table))
        return
    if args.quick:
        args.sizes, args.max_epochs = [2_000, 20_000], args.max_epochs or 3
    rows = []
    for n in args.sizes:
        for name in args.estimators:
            rows.append(_run_child(name, n, args))
            _print_row(rows[-1])
    ratios = _growth(rows)
    for entry in ratios:
        print("  ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in entry.items()))
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"args": vars(args), "machine": platform.platform(),
                   "cpus": os.cpu_count(), "rows": rows, "growth": ratios}, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        name, n, eps, fraction = sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), \
            float(sys.argv[5])
        cap = int(sys.argv[6]) if len(sys.argv) > 6 else None
        print(json.dumps(_child(name, n, eps, fraction, cap)))
    else:
        main()
