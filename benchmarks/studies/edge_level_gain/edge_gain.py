"""Where the graph's gain goes at edge level: GCN, MLP and edge-level GAP, with ablations.

Edge level protects one undirected edge; node features and labels are public. This study
measures, on the same splits and seeds (the benchmark harness's loader and fit):

- ``headline``: a plain non-private PyG GCN (``gcn.py``), the graph-free DP-MLP at
  ``epsilon=inf`` (defaults) and the edge-level estimator of the front door
  (``DPNodeClassifier(unit="edge")``, registry name ``dpnode-edge``) at each budget;
- ``ablate``: edge-level GAP (registry name ``gap-edp``) with one public parameter changed
  at a time (hops, width, epochs, what is aggregated, ...), at each budget;
- ``propagate`` and ``noise``: see ``propagation.py``;
- ``objpert``: objective perturbation on propagated public rows, see
  ``objective_perturbation.py``;
- ``stack``: public stacking and one private vote release, see ``public_stacking.py``.

One JSON line per fit, appended to ``--out``. Examples (from the repository root)::

    python benchmarks/studies/edge_level_gain/edge_gain.py headline --dataset cora \\
        --split public --seeds 5 --out benchmarks/studies/edge_level_gain/headline.jsonl
    python benchmarks/studies/edge_level_gain/edge_gain.py ablate --dataset cora \\
        --split public --seeds 5 --out benchmarks/studies/edge_level_gain/ablate.jsonl
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import graphs  # noqa: E402  (loaders and splits; puts benchmarks/ on the path)
import run  # noqa: E402

#: ``ablate``: a name -> the GAP parameters it changes from the defaults.
ABLATIONS = {
    "default": {},
    "hops=1": {"hops": 1},
    "hops=3": {"hops": 3},
    "hops=4": {"hops": 4},
    "aggregate=embeddings": {"aggregate": "embeddings"},
    "aggregate=predictions": {"aggregate": "predictions"},
    "hidden_dim=16": {"hidden_dim": 16},
    "hidden_dim=256": {"hidden_dim": 256},
    "encoder_layers=1": {"encoder_layers": 1},
    "epochs=300": {"epochs": 300, "encoder_epochs": 300},
    "epochs=30": {"epochs": 30, "encoder_epochs": 30},
    "dropout=0": {"dropout": 0.0},
    "combine=sum": {"combine": "sum"},
    "activation=relu": {"activation": "relu"},
}


def parse_args(argv=None):
    """The command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=["headline", "gcn", "ablate", "propagate", "noise",
                                       "objpert", "stack"])
    p.add_argument("--dataset", required=True, choices=graphs.DATASETS)
    p.add_argument("--split", default=None, help="as run.py's --split")
    p.add_argument("--epsilons", nargs="+", type=float, default=[math.inf, 4.0, 1.0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--ablations", nargs="+", default=list(ABLATIONS), choices=list(ABLATIONS))
    p.add_argument("--rows", nargs="+", default=None,
                   help="propagate and noise: the public rows (see propagation.public_rows)")
    p.add_argument("--norms", nargs="+", default=None, choices=["gcn", "pma", "laplace-l1"],
                   help="propagate: the aggregations (see propagation.py); default: all")
    p.add_argument("--hops", nargs="+", type=int, default=None,
                   help="propagate: the numbers of hops (default 1 2 3)")
    p.add_argument("--reg", type=float, default=1.0,
                   help="objpert: the L2 regularisation of the summed loss before calibration")
    p.add_argument("--train-rows", nargs="+", default=None, choices=["crossfit", "onehot"],
                   help="stack: the training nodes' released rows (default: both)")
    p.add_argument("--noises", nargs="+", default=None, choices=["laplace", "gaussian"],
                   help="stack: the release's noise (default: both)")
    p.add_argument("--stage1-fallback", action="store_true",
                   help="stack: stage 1's own predictions as a candidate of stage 3")
    p.add_argument("--gcn-hidden", nargs="+", type=int, default=[64])
    p.add_argument("--gcn-features", nargs="+", default=["normalized"],
                   choices=["normalized", "raw"],
                   help="the GCN's input: row-normalised (Kipf and Welling) or raw features")
    p.add_argument("--data-root", type=Path,
                   default=run.REPO_ROOT.parent / "shared" / "datasets")
    p.add_argument("--out", type=Path, required=True, help="JSON lines, appended")
    return p.parse_args(argv)


def gcn(ds, split_for_seed, args, emit, seeds=None):
    """The GCN anchor of each ``--gcn-hidden`` width and ``--gcn-features`` input."""
    from gcn import fit_gcn

    for seed in seeds or range(args.first_seed, args.first_seed + args.seeds):
        for hidden in args.gcn_hidden:
            for features in args.gcn_features:
                suffix = "" if features == "normalized" else f"-{features}"
                emit({"model": f"gcn-{hidden}{suffix}", "epsilon": math.inf, "seed": seed,
                      **fit_gcn(ds.graph, ds.y, split_for_seed(seed), seed, hidden=hidden,
                                normalize=features == "normalized")})


def headline(ds, split_for_seed, args, emit):
    """GCN anchor(s), DP-MLP at inf and the front door's edge estimator at each budget."""
    from registry import ESTIMATORS

    for seed in range(args.first_seed, args.first_seed + args.seeds):
        split = split_for_seed(seed)
        gcn(ds, split_for_seed, args, emit, seeds=[seed])
        emit({"model": "dpmlp", "epsilon": math.inf, "seed": seed,
              **run.fit_one(ESTIMATORS["dpmlp"], {}, math.inf, seed, ds, split, False)})
        for epsilon in args.epsilons:
            emit({"model": "dpnode-edge", "epsilon": epsilon, "seed": seed, **run.fit_one(
                ESTIMATORS["dpnode-edge"], {}, epsilon, seed, ds, split, False)})


def ablate(ds, split_for_seed, args, emit):
    """Edge-level GAP with one parameter changed at a time (``ABLATIONS``)."""
    from registry import ESTIMATORS

    for seed in range(args.first_seed, args.first_seed + args.seeds):
        split = split_for_seed(seed)
        for name in args.ablations:
            for epsilon in args.epsilons:
                emit({"model": "gap-edp", "ablation": name, "params": ABLATIONS[name],
                      "epsilon": epsilon, "seed": seed, **run.fit_one(
                          ESTIMATORS["gap-edp"], ABLATIONS[name], epsilon, seed, ds, split,
                          False)})


def main(argv=None):
    """Run one command on one graph, appending its records to ``--out``."""
    args = parse_args(argv)
    run.set_threads(1)
    ds, split_name, split_for_seed = graphs.load(args.dataset, args.split, args.data_root)
    common = {"dataset": args.dataset, "split": split_name}
    with open(args.out, "a", encoding="utf-8") as out:
        def emit(record):
            record = {**common, "command": args.command, **record}
            out.write(json.dumps(run._jsonable(record)) + "\n")
            out.flush()
            accuracy = record.get("test_accuracy")
            print(f"{time.strftime('%H:%M:%S')} " + " ".join(
                f"{k}={record[k]}" for k in ("model", "ablation", "rows", "train_rows", "noise",
                                             "hops", "epsilon", "seed") if k in record)
                  + (f" test {100 * accuracy:.1f}" if accuracy is not None else ""), flush=True)

        if args.command in ("propagate", "noise"):
            import propagation

            getattr(propagation, args.command)(ds, split_for_seed, args, emit)
        elif args.command == "objpert":
            import objective_perturbation

            objective_perturbation.objpert(ds, split_for_seed, args, emit)
        elif args.command == "stack":
            import public_stacking

            public_stacking.stack(ds, split_for_seed, args, emit)
        else:
            globals()[args.command](ds, split_for_seed, args, emit)


if __name__ == "__main__":
    main()
