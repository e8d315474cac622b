"""DP-SGD overhead: each estimator's private fit time over its non-private fit, in one run.

Example (from the repository root)::

    python benchmarks/overhead.py --dataset amazon_computers --repeats 2 --profile

For every estimator the private fit (``--epsilon``, default 8) and the non-private fit
(``epsilon=inf``) use the estimator's defaults, the same seed and so the same schedule:
the same number of DP-SGD steps over the same batches (both draw them from the
``"batches"`` stream of the same seed; ``epsilon=inf`` runs the same loop without
clipping or noise). ``validation_fraction`` is set to None for both, because ``"auto"``
holds out nodes (and selects epochs) only where the labels are public, which would give
the two fits different schedules. Node-level GAP's private default, the vote head, has no
``epsilon=inf`` form (``head="auto"`` trains a classifier there), so its non-private side
is :func:`vote_counterpart_fit`: the same encoder and schedule without clipping or noise,
then exact vote counts. The fits alternate (private, non-private, non-private,
private, ...) after one untimed warm-up of each, so drifting machine load hits both alike.

The warm-up also fills the accountant's caches (RDP curves, calibrated multipliers), so
the timed private fits do not calibrate again, as in a grid search where many fits share a
budget. Then ``--repeats`` more private fits run, each after clearing those caches, as a
first fit in a fresh process would: their median time over the median non-private fit is
the "cold ratio". Every ratio is of medians, which a burst of load from elsewhere on the
machine moves less than it moves means.

Besides the whole fit, the time spent inside ``train_dpsgd`` (the DP-SGD loop, every
stage) is recorded, and each record says how many steps the loop took, so the two fits'
schedules can be checked to match. ``--profile`` adds a cProfile breakdown (top functions
by cumulative and own time) of one private DP-MLP fit. Target: every private
fit at most 1.3x the non-private one. RGNN is not here: it trains without DP-SGD (its
privacy is local, spent before training).
"""

import argparse
import contextlib
import cProfile
import io
import json
import math
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # run.py and registry.py
sys.path.insert(1, str(HERE.parent))  # benchmark this checkout

import run as runner  # noqa: E402

DEFAULT_ESTIMATORS = ["dpmlp", "gap-edp", "gap-ndp", "progap-edp", "progap-ndp", "drw", "fdp"]
TARGET_RATIO = 1.3
#: Estimator modules that call ``train_dpsgd``; the loop time is measured by wrapping it there.
LOOP_MODULES = ["skdpgraph.estimators._dpmlp", "skdpgraph.estimators._gap",
                "skdpgraph.estimators._drw", "skdpgraph.estimators._fdp"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True, choices=runner.DATASETS)
    p.add_argument("--split", default="75/10/15", help="as in run.py (seed 0's split)")
    p.add_argument("--estimators", nargs="+", default=DEFAULT_ESTIMATORS)
    p.add_argument("--epsilon", type=float, default=8.0)
    p.add_argument("--repeats", type=int, default=2, help="timed fits of each kind")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--profile", action="store_true",
                   help="cProfile one private DP-MLP fit and store the top functions")
    p.add_argument("--data-root", type=Path,
                   default=runner.REPO_ROOT.parent / "shared" / "datasets")
    p.add_argument("--out", type=Path, default=None,
                   help="JSON output (default: benchmarks/results/overhead-DATASET.json)")
    p.add_argument("--label", default="", help="stored in the JSON (e.g. 'before', 'after')")
    return p.parse_args(argv)


class LoopTimer:
    """Wraps ``train_dpsgd`` where the estimators call it; adds up its time and steps."""

    def __init__(self):
        self.seconds, self.steps = 0.0, 0

    def reset(self):
        self.seconds, self.steps = 0.0, 0

    @contextlib.contextmanager
    def installed(self):
        import importlib

        modules = [importlib.import_module(name) for name in LOOP_MODULES]
        originals = [module.train_dpsgd for module in modules]

        def timed(original):
            def wrapper(module, examples, loss_fn, plan, **kwargs):
                start = time.perf_counter()
                try:
                    return original(module, examples, loss_fn, plan, **kwargs)
                finally:
                    self.seconds += time.perf_counter() - start
                    self.steps += plan.steps
            return wrapper

        for module, original in zip(modules, originals):
            module.train_dpsgd = timed(original)
        try:
            yield self
        finally:
            for module, original in zip(modules, originals):
                module.train_dpsgd = original


def clear_accountant_caches():
    """Forget every cached RDP curve and noise calibration, as in a fresh process."""
    from skdpgraph.privacy import _dpsgd_plan, _fdp_plan, _gap_plan, _gaussian_accounting

    for cached in (_dpsgd_plan._one_step_curve, _dpsgd_plan._calibrated_noise_multiplier,
                   _fdp_plan._calibrated, _gap_plan._calibrated_node_multiplier,
                   _gaussian_accounting.gaussian_epsilon):
        cached.cache_clear()


def vote_counterpart_fit(seed, ds, train):
    """The vote head's non-private counterpart, built by hand: ``epsilon=inf`` has no vote head.

    Node-level GAP's vote head (the private ``gap-ndp`` default) trains its encoder with
    DP-SGD, then adds each node's in-neighbours' noisy vote counts to its own
    log-probabilities. Its counterpart here trains the same encoder (same network, Poisson
    batches of the same rate from a ``"batches"`` stream of the same seed, same number of
    steps) without clipping or noise, then counts the votes exactly. Only the encoder run is
    timed as the loop. Nothing else of ``fit`` (input checks, the report) runs here, so the
    ratio it gives errs high.
    """
    import numpy as np
    import torch

    import skdpgraph.estimators._gap as gap
    from registry import ESTIMATORS
    from skdpgraph._random import RandomStreams
    from skdpgraph.estimators._gap_heads import VOTE_WEIGHT
    from skdpgraph.nn import GAPEncoder, class_log_probabilities
    from skdpgraph.privacy import plan_dpsgd, steps_for_epochs
    from skdpgraph.training import Generators, OptimizerSettings, TrainingStage

    est = ESTIMATORS["gap-ndp"](8.0, seed)  # only its resolved defaults are read
    classes, y = np.unique(ds.y[train], return_inverse=True)
    n, batch, epochs = len(train), 1024, 50
    est._resolve_defaults()
    assert (est.head_.name, est.encoder_layers_, est.hidden_dim_) == ("vote", 1, 64), \
        "defaults changed"
    streams = RandomStreams(seed)
    plan = plan_dpsgd(epsilon=math.inf, delta=1e-5, sampling="poisson", num_examples=n,
                      batch_size=batch, steps=steps_for_epochs(epochs, n, batch),
                      max_grad_norm=est.max_grad_norm)
    with streams.initialisation():
        encoder = GAPEncoder(ds.graph.num_features, 64, len(classes), num_layers=1,
                             activation=est.activation, dropout=0.0)
    encoder = gap.train_dpsgd(  # through the estimator module, so the LoopTimer sees it
        encoder, gap.TensorExamples(torch.from_numpy(np.asarray(ds.graph.nodes(train))),
                                    torch.from_numpy(y)),
        gap.per_example_cross_entropy, plan, optimizer=OptimizerSettings(lr=est.lr),
        generators=Generators(streams.torch("batches")), stage=TrainingStage("encoder")).module
    own = class_log_probabilities(encoder, ds.graph)
    votes = torch.from_numpy(np.asarray(ds.graph.adjacency() @ np.eye(len(classes))[
        own.argmax(-1).numpy()], dtype=np.float32))
    return own + VOTE_WEIGHT * votes


def fit(name, epsilon, seed, ds, train, timer):
    from registry import ESTIMATORS

    if name == "gap-ndp" and math.isinf(epsilon):
        timer.reset()
        start = time.perf_counter()
        vote_counterpart_fit(seed, ds, train)
        return {"estimator": name, "epsilon": epsilon, "fit_seconds": time.perf_counter() - start,
                "loop_seconds": timer.seconds, "loop_steps": timer.steps,
                "epsilon_spent": math.inf, "counterpart": "vote_counterpart_fit"}
    est = ESTIMATORS[name](epsilon, seed)
    if "validation_fraction" in est.get_params():
        est.set_params(validation_fraction=None)
    timer.reset()
    start = time.perf_counter()
    est.fit(ds.graph.nodes(train), ds.y[train])
    seconds = time.perf_counter() - start
    return {"estimator": name, "epsilon": epsilon, "fit_seconds": seconds,
            "loop_seconds": timer.seconds, "loop_steps": timer.steps,
            "epsilon_spent": float(est.epsilon_spent_)}


def run(args, ds, train, log, save=lambda records: None):
    """Every estimator's fits; ``save(records)`` after each estimator (a run cut short keeps
    what it measured)."""
    timer = LoopTimer()
    records = []
    with timer.installed():
        for name in args.estimators:
            for epsilon in (args.epsilon, math.inf):  # warm-up, untimed
                fit(name, epsilon, args.seed, ds, train, timer)
            order = [args.epsilon, math.inf]
            for repeat in range(args.repeats):
                for epsilon in order:
                    rec = {**fit(name, epsilon, args.seed, ds, train, timer), "repeat": repeat}
                    records.append(rec)
                    log(f"  {name:>11s} eps={runner._num(epsilon):>3s} fit "
                        f"{rec['fit_seconds']:6.2f}s  loop {rec['loop_seconds']:6.2f}s  "
                        f"steps {rec['loop_steps']}")
                order.reverse()
            for _ in range(args.repeats):  # private fits that calibrate from scratch
                clear_accountant_caches()
                rec = {**fit(name, args.epsilon, args.seed, ds, train, timer), "repeat": "cold"}
                records.append(rec)
                log(f"  {name:>11s} eps={runner._num(args.epsilon):>3s} fit "
                    f"{rec['fit_seconds']:6.2f}s  (accountant caches cleared first)")
            save(records)
    return records


def summarize(records, epsilon):
    import numpy as np

    rows = []
    for name in dict.fromkeys(r["estimator"] for r in records):
        cold = [r for r in records if r["estimator"] == name and r["repeat"] == "cold"]
        private = [r for r in records if r["estimator"] == name and r["epsilon"] == epsilon
                   and r["repeat"] != "cold"]
        public = [r for r in records if r["estimator"] == name and math.isinf(r["epsilon"])]
        row = {"estimator": name, "repeats": len(private),
               "same_steps": {r["loop_steps"] for r in private} ==
               {r["loop_steps"] for r in public}, "loop_steps": private[0]["loop_steps"]}
        for key in ("fit_seconds", "loop_seconds"):  # medians: robust to a burst of load
            mine = float(np.median([r[key] for r in private]))
            base = float(np.median([r[key] for r in public]))
            row[f"private_{key}"], row[f"nonprivate_{key}"] = mine, base
            row[f"{key.split('_')[0]}_ratio"] = mine / base if base else math.nan
        if cold:
            row["cold_private_fit_seconds"] = float(np.median([r["fit_seconds"] for r in cold]))
            row["cold_fit_ratio"] = (row["cold_private_fit_seconds"]
                                     / row["nonprivate_fit_seconds"])
        row["meets_target"] = row["fit_ratio"] <= TARGET_RATIO
        rows.append(row)
    return rows


def format_table(rows):
    headers = ["estimator", "steps", "private fit s", "inf fit s", "fit ratio",
               "private loop s", "inf loop s", "loop ratio", f"<= {TARGET_RATIO}",
               "cold private fit s", "cold ratio"]
    lines = [[r["estimator"], str(r["loop_steps"]) + ("" if r["same_steps"] else " (differ!)"),
              f"{r['private_fit_seconds']:.2f}", f"{r['nonprivate_fit_seconds']:.2f}",
              f"{r['fit_ratio']:.2f}", f"{r['private_loop_seconds']:.2f}",
              f"{r['nonprivate_loop_seconds']:.2f}", f"{r['loop_ratio']:.2f}",
              "yes" if r["meets_target"] else "no",
              f"{r['cold_private_fit_seconds']:.2f}" if "cold_fit_ratio" in r else "",
              f"{r['cold_fit_ratio']:.2f}" if "cold_fit_ratio" in r else ""] for r in rows]
    widths = [max(len(c) for c in col) for col in zip(headers, *lines)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in lines]
    return "\n".join(line.rstrip() for line in out)


def profile_dpmlp(args, ds, train, top=25):
    """cProfile one private DP-MLP fit; the top functions by cumulative and by own time."""
    from registry import ESTIMATORS

    est = ESTIMATORS["dpmlp"](args.epsilon, args.seed).set_params(validation_fraction=None)
    profiler = cProfile.Profile()
    profiler.enable()
    est.fit(ds.graph.nodes(train), ds.y[train])
    profiler.disable()
    report = {}
    for key in ("cumulative", "tottime"):
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats(key).print_stats(top)
        report[key] = stream.getvalue().splitlines()
    return report


def main(argv=None):
    import numpy as np

    args = parse_args(argv)
    runner.set_threads(args.threads)
    env = runner.environment(args)
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    args.seeds = 1
    ds, split_name, split_for_seed = runner.load(args)
    train = np.asarray(split_for_seed(args.seed)["train"])
    log(f"{args.dataset} ({split_name}, {len(train)} training nodes), eps={args.epsilon} vs "
        f"inf, {args.repeats} repeats, {args.threads} thread(s)")
    out = args.out or HERE / "results" / f"overhead-{args.dataset}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    config = {"dataset": args.dataset, "split": split_name, "seed": args.seed,
              "epsilon": args.epsilon, "repeats": args.repeats, "threads": args.threads,
              "label": args.label, "params": {"validation_fraction": None}}
    start = time.perf_counter()

    def save(records, **extra):
        env["wall_seconds"] = time.perf_counter() - start
        payload = {"config": config, "environment": env,
                   "summary": summarize(records, args.epsilon), "records": records, **extra}
        out.write_text(json.dumps(runner._jsonable(payload), indent=2) + "\n")

    records = run(args, ds, train, log, save)
    print(format_table(summarize(records, args.epsilon)))
    if args.profile:
        profile = profile_dpmlp(args, ds, train)
        save(records, dpmlp_profile=profile)
        print("\n".join(profile["tottime"][:45]))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
