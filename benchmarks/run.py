"""Benchmark skdpgraph estimators: accuracy, privacy spent and fit time over seeds and budgets.

Example (from the repository root)::

    python benchmarks/run.py --dataset cora --split public --estimators dpmlp \
        --epsilons 1 4 8 inf --seeds 5 --out benchmarks/results/cora-dpmlp.json

For every estimator and seed the runner also fits the ``epsilon=inf`` version of the same estimator
on the same split, and reports each private fit time as a ratio to it: absolute times on shared
machines are noisy, ratios measured in the same run are not. See ``benchmarks/README.md``.
"""

import argparse
import json
import math
import os
import platform
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DATASETS = ["cora", "facebook", "amazon_computers", "amazon_photo", "coauthor_cs", "csbm",
            "coauthor_physics", "twitch_en"]
INF = float("inf")


def parse_args(argv=None):
    from registry import ESTIMATORS

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True, choices=DATASETS)
    p.add_argument("--split", default=None,
                   help="'public' (the dataset's own split) or train/val/test percentages such "
                        "as 75/10/15 or 50/25/25; default: public if the dataset has one, "
                        "else 75/10/15")
    p.add_argument("--estimators", nargs="+", default=["dpmlp"], choices=sorted(ESTIMATORS),
                   metavar="NAME", help=f"names from registry.py: {', '.join(sorted(ESTIMATORS))}")
    p.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 4.0, 8.0, INF],
                   help="privacy budgets; 'inf' is the non-private counterpart")
    p.add_argument("--seeds", type=int, default=5,
                   help="number of seeds: FIRST_SEED, ..., FIRST_SEED + SEEDS - 1")
    p.add_argument("--first-seed", type=int, default=0,
                   help="the first seed (more seeds of a finished run: utility_table.py "
                   "merges the files)")
    p.add_argument("--data-root", type=Path, default=REPO_ROOT.parent / "shared" / "datasets")
    p.add_argument("--out", type=Path, default=None,
                   help="JSON output (default: benchmarks/results/DATASET-SPLIT.json)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch and OpenMP threads (default 1, for stable timings)")
    p.add_argument("--param", action="append", default=[], metavar="[NAME.]KEY=VALUE",
                   help="set an estimator parameter for all estimators, or for NAME only; "
                        "VALUE is a Python literal (repeatable)")
    p.add_argument("--peak-memory", action="store_true",
                   help="record the process's peak RSS after each fit (a high-water mark over "
                        "the whole run so far, not per fit)")
    p.add_argument("--warmup", action=argparse.BooleanOptionalAction, default=True,
                   help="do one untimed fit per estimator first, so one-time import and "
                        "initialisation costs do not land in the first timed fit")
    args = p.parse_args(argv)
    args.params = parse_params(args.param, args.estimators, p)
    return args


def parse_params(items, names, parser):
    """Turn ``[NAME.]KEY=VALUE`` strings into ``{estimator name: {key: value}}``."""
    import ast

    params = {name: {} for name in names}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep:
            parser.error(f"--param {item!r}: expected KEY=VALUE")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text  # a bare string such as unit=edge
        target, dot, key = key.rpartition(".")
        if dot and target not in params:
            parser.error(f"--param {item!r}: {target!r} is not among --estimators")
        for name in [target] if dot else names:
            params[name][key] = value
    return params


def set_threads(n):
    """Pin torch and OpenMP/MKL to ``n`` threads; call before the first torch import."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(n)
    import torch

    torch.set_num_threads(n)


def load(args):
    """Return the dataset and one ``seed -> {"train", "val", "test"}`` function."""
    from skdpgraph.datasets import load_dataset, load_npz_zip, make_csbm, train_val_test_split

    if args.dataset == "csbm":
        ds = make_csbm(random_state=0)
    elif args.dataset == "twitch_en":
        ds = load_twitch(args.data_root / "twitch_en")
    elif args.dataset == "coauthor_physics":
        ds = load_npz_zip(args.data_root / "coauthor_physics" / "coauthor-physics.zip",
                          "coauthor_physics")
    else:
        ds = load_dataset(args.dataset, args.data_root)
    split = args.split or ("public" if getattr(ds, "split", None) is not None else "75/10/15")
    if split == "public":
        if getattr(ds, "split", None) is None:
            sys.exit(f"{args.dataset} has no public split; pass --split 75/10/15 or similar")
        return ds, split, lambda seed: ds.split
    try:
        fractions = [float(part) / 100 for part in split.split("/")]
    except ValueError:
        fractions = []
    if len(fractions) != 3 or not math.isclose(sum(fractions), 1.0):
        sys.exit(f"--split {split!r}: expected 'public' or three percentages summing to 100")
    return ds, split, lambda seed: train_val_test_split(ds.y, *fractions, random_state=seed)


def load_twitch(folder):
    """Twitch-EN (MUSAE ENGB): ``edges.csv`` by ``new_id``, ``features.json`` (node ->
    active feature ids) as binary sparse rows, the ``mature`` column of ``target.csv``.

    Parameters
    ----------
    folder : Path
        The ``twitch_en`` folder of the shared datasets.

    Returns
    -------
    GraphDataset
        Without a standard split.
    """
    import numpy as np
    import pandas as pd
    import scipy.sparse as sp

    from skdpgraph import Graph
    from skdpgraph.datasets import GraphDataset

    edges = pd.read_csv(folder / "edges.csv")
    target = pd.read_csv(folder / "target.csv").sort_values("new_id")
    n = len(target)
    active = json.loads((folder / "features.json").read_text())
    rows = [(int(node), f) for node, ids in active.items() for f in ids]
    i, j = np.array(rows).T
    x = sp.csr_matrix((np.ones(len(i), np.float32), (i, j)), shape=(n, j.max() + 1))
    graph = Graph(edges[["from", "to"]].to_numpy().T, x, num_nodes=n)
    y = target["mature"].astype(int).to_numpy()
    return GraphDataset("twitch_en", graph, y, class_names=("False", "True"),
                        description="MUSAE Twitch ENGB; label: mature")


def fit_one(factory, params, epsilon, seed, ds, split, peak_memory):
    """Fit one estimator on ``split["train"]`` and return its record."""
    import numpy as np

    est = factory(epsilon, seed)
    est.set_params(**params)
    train = np.asarray(split["train"])
    start = time.perf_counter()
    est.fit(ds.graph.nodes(train), ds.y[train])
    fit_seconds = time.perf_counter() - start
    record = {"fit_seconds": fit_seconds}
    for part in ("test", "val"):
        if split.get(part) is not None and len(split[part]):
            ids = np.asarray(split[part])
            record[f"{part}_accuracy"] = float(est.score(ds.graph.nodes(ids), ds.y[ids]))
    privacy = getattr(est, "privacy_", None)
    record.update(
        epsilon_spent=float(getattr(est, "epsilon_spent_", math.nan)),
        delta=float(getattr(est, "delta_", math.nan)),
        privacy_unit=str(getattr(privacy, "unit", "")),
        n_train=int(len(train)),
        n_test=int(len(split["test"])),
    )
    if peak_memory:  # ru_maxrss is in KiB on Linux
        record["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return record


def run(args, ds, split_for_seed, log=print):
    """Fit every (estimator, seed, epsilon), the epsilon=inf reference included; return records."""
    from registry import ESTIMATORS

    records, finite = [], [e for e in args.epsilons if not math.isinf(e)]
    for name in args.estimators:
        factory, params = ESTIMATORS[name], args.params[name]
        if args.warmup:  # untimed; a failure here shows up again in the timed fits
            try:
                fit_one(factory, params, finite[0] if finite else INF, 0, ds, split_for_seed(0),
                        False)
            except Exception:
                pass
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            split = split_for_seed(seed)
            for epsilon in [INF] + finite:  # the reference first, then each budget
                base = {"estimator": name, "epsilon": epsilon, "seed": seed, "params": params}
                try:
                    rec = {**base, **fit_one(factory, params, epsilon, seed, ds, split,
                                             args.peak_memory)}
                except Exception as exc:  # record it and go on with the other configurations
                    rec = {**base, "error": f"{type(exc).__name__}: {exc}"}
                records.append(rec)
                log(_progress_line(rec))
    _add_time_ratios(records)
    return records


def _add_time_ratios(records):
    reference = {(r["estimator"], r["seed"]): r.get("fit_seconds")
                 for r in records if math.isinf(r["epsilon"])}
    for r in records:
        ref = reference.get((r["estimator"], r["seed"]))
        if "fit_seconds" in r and ref:
            r["time_ratio_to_inf"] = r["fit_seconds"] / ref


def summarize(records, epsilons):
    """Mean and sample std (ddof=1) over seeds, per (estimator, epsilon) in the order asked."""
    import numpy as np

    groups = defaultdict(list)
    for r in records:
        groups[(r["estimator"], r["epsilon"])].append(r)
    wanted = set(epsilons)
    summary = []
    for (name, epsilon), recs in groups.items():
        if epsilon not in wanted:
            continue  # the epsilon=inf reference was fitted for time ratios only
        ok = [r for r in recs if "error" not in r]
        row = {"estimator": name, "epsilon": epsilon, "n_runs": len(ok),
               "n_errors": len(recs) - len(ok)}
        for key in ("test_accuracy", "val_accuracy", "epsilon_spent", "fit_seconds",
                    "time_ratio_to_inf"):
            values = np.array([r[key] for r in ok if key in r], dtype=float)
            if len(values):
                row[f"{key}_mean"] = float(values.mean())
                same = np.all(values == values[0])  # also covers all-inf epsilon_spent
                row[f"{key}_std"] = 0.0 if same else float(values.std(ddof=1))
        if any("peak_rss_mb" in r for r in ok):  # a high-water mark: the max is what counts
            row["peak_rss_mb_max"] = max(r["peak_rss_mb"] for r in ok if "peak_rss_mb" in r)
        if ok:
            row["epsilon_spent_max"] = max(r["epsilon_spent"] for r in ok)
            row["privacy_unit"] = ok[0]["privacy_unit"]
        summary.append(row)
    inf_time = {row["estimator"]: row.get("fit_seconds_mean") for row in _reference_rows(groups)}
    for row in summary:  # a second, outlier-robust view of the same ratio
        if row.get("fit_seconds_mean") and inf_time.get(row["estimator"]):
            row["time_ratio_of_means"] = row["fit_seconds_mean"] / inf_time[row["estimator"]]
    order = {name: i for i, name in enumerate(dict.fromkeys(r["estimator"] for r in records))}
    summary.sort(key=lambda row: (order[row["estimator"]], epsilons.index(row["epsilon"])))
    return summary


def _reference_rows(groups):
    for (name, epsilon), recs in groups.items():
        times = [r["fit_seconds"] for r in recs if "fit_seconds" in r]
        if math.isinf(epsilon) and times:
            yield {"estimator": name, "fit_seconds_mean": sum(times) / len(times)}


def format_table(summary, peak_memory):
    headers = ["estimator", "epsilon", "runs", "test acc %", "eps spent", "fit s",
               "time / eps=inf"] + (["peak RSS MB"] if peak_memory else [])
    rows = []
    for s in summary:
        row = [s["estimator"], _num(s["epsilon"]),
               f"{s['n_runs']}" + (f" ({s['n_errors']} failed)" if s["n_errors"] else ""),
               _pm(s, "test_accuracy", 100, ".1f"), _num(s.get("epsilon_spent_mean")),
               _pm(s, "fit_seconds", 1, ".2f"), _pm(s, "time_ratio_to_inf", 1, ".2f")]
        if peak_memory:
            row.append(f"{s['peak_rss_mb_max']:.0f}" if "peak_rss_mb_max" in s else "-")
        rows.append(row)
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def environment(args):
    from importlib.metadata import PackageNotFoundError, version

    import torch

    versions = {"python": platform.python_version()}
    for dist in ("skdpgraph", "torch", "torch-geometric", "opacus", "dp-accounting",
                 "scikit-learn", "numpy", "scipy"):
        try:
            versions[dist] = version(dist)
        except PackageNotFoundError:
            versions[dist] = None
    import skdpgraph

    versions["skdpgraph"] = versions["skdpgraph"] or getattr(skdpgraph, "__version__", None)

    return {
        "versions": versions,
        "skdpgraph_path": str(Path(skdpgraph.__file__).parent),
        "torch_threads": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "platform": platform.platform(),
        "cpu_model": _cpu_model(),
        "hostname": platform.node(),
        "command": [sys.executable, *sys.argv],
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def main(argv=None):
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # for `registry`
    sys.path.insert(1, str(REPO_ROOT))  # benchmark this checkout
    args = parse_args(argv)
    set_threads(args.threads)
    env = environment(args)
    ds, split_name, split_for_seed = load(args)
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    log(f"{args.dataset} ({split_name} split), {args.seeds} seeds, {args.threads} thread(s)")
    start = time.perf_counter()
    records = run(args, ds, split_for_seed, log)
    summary = summarize(records, args.epsilons)
    env["wall_seconds"] = time.perf_counter() - start
    print(format_table(summary, args.peak_memory))

    out = args.out or REPO_ROOT / "benchmarks" / "results" / \
        f"{args.dataset}-{split_name.replace('/', '-')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    config = {"dataset": args.dataset, "split": split_name, "estimators": args.estimators,
              "epsilons": args.epsilons, "seeds": args.seeds, "first_seed": args.first_seed,
              "params": args.params,
              "threads": args.threads, "warmup": args.warmup, "data_root": str(args.data_root)}
    payload = {"config": config, "environment": env, "summary": summary, "records": records}
    out.write_text(json.dumps(_jsonable(payload), indent=2) + "\n")
    print(f"\nwrote {out}")
    return 1 if any("error" in r for r in records) else 0


def _progress_line(rec):
    head = f"  {rec['estimator']:>10s} eps={_num(rec['epsilon']):>5s} seed={rec['seed']}"
    if "error" in rec:
        return f"{head}  ERROR {rec['error']}"
    return (f"{head}  acc={100 * rec.get('test_accuracy', math.nan):5.1f}  "
            f"spent={_num(rec['epsilon_spent'])}  fit={rec['fit_seconds']:.2f}s")


def _pm(row, key, scale, fmt):
    if f"{key}_mean" not in row:
        return "-"
    return f"{scale * row[f'{key}_mean']:{fmt}} ± {scale * row[f'{key}_std']:{fmt}}"


def _num(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return "inf" if math.isinf(value) else f"{value:.3g}"


def write_rows(out, args, rows):
    """Write ``rows`` to ``out`` as JSON, with the run's arguments and environment."""
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"config": {k: str(v) for k, v in vars(args).items()},
               "environment": environment(args), "rows": rows}
    out.write_text(json.dumps(_jsonable(payload), indent=2) + "\n")


def _jsonable(obj):
    """Strict JSON: infinite and NaN floats become the strings "inf", "-inf" and "nan"."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):  # numpy scalars
        return _jsonable(obj.item())
    return obj


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


if __name__ == "__main__":
    sys.exit(main())
