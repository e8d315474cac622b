"""Graph-level DP: DPGraphClassifier's test accuracy and fit time on a graph collection.

The 10-fold protocol of Xu et al. (ICLR 2019): ``StratifiedKFold(10, shuffle=True,
random_state=0)`` over all graphs; each selected fold trains on nine tenths with the
estimator's defaults (``allow_equal_graphs=True``, since the TU collections hold graphs of
equal content that are different molecules) and tests on the rest. One torch thread.
For every fold and seed it records the test accuracy, the fit time, the epochs run, the
epsilon and delta spent, and the private/non-private fit time ratio where both ran::

    python benchmarks/graph_level.py --dataset NCI1 --epsilons inf 8 --folds 1 --seeds 0

The JSON record goes to ``benchmarks/results/graph_level-<dataset>-<epsilons>-<folds>
folds-<seeds>seeds.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "datasets"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True,
                   help="a TUDataset folder under <data-root>/tu (NCI1, PROTEINS, "
                        "Mutagenicity, ENZYMES) or reddit_threads")
    p.add_argument("--epsilons", nargs="+", type=float, default=[math.inf, 8.0])
    p.add_argument("--folds", type=int, default=1, help="the first FOLDS of the 10 folds")
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--data-root", type=Path, default=DATA)
    p.add_argument("--out", type=Path, default=None)
    return p.parse_args(argv)


def load(name: str, root: Path):
    from skdpgraph.datasets import load_reddit_threads, load_tu_dataset

    if name == "reddit_threads":
        return load_reddit_threads(root / "reddit_threads")
    return load_tu_dataset(name, root / "tu")


def one_run(X, y, train, test, epsilon: float, seed: int) -> dict:
    from skdpgraph import DPGraphClassifier

    clf = DPGraphClassifier(epsilon=epsilon, allow_equal_graphs=True, random_state=seed,
                            device="cpu")
    start = time.perf_counter()
    clf.fit(X[train], y[train])
    seconds = time.perf_counter() - start
    validation = [r["validation_accuracy"] for r in clf.history_]
    return {"epsilon": epsilon, "seed": seed, "test_accuracy": float(clf.score(X[test], y[test])),
            "fit_seconds": seconds, "epochs": len(clf.history_),
            "best_epoch": (int(np.nanargmax(np.array(validation, float))) + 1
                           if validation and validation[0] is not None else None),
            "epsilon_spent": clf.epsilon_spent_, "delta": clf.delta_,
            "noise_multiplier": clf.noise_multiplier_}


def main(argv=None) -> dict:
    import torch
    from sklearn.model_selection import StratifiedKFold

    args = parse_args(argv)
    torch.set_num_threads(1)
    X, y = load(args.dataset, args.data_root)
    folds = list(StratifiedKFold(10, shuffle=True, random_state=0).split(np.zeros(len(y)), y))
    runs = []
    for fold, (train, test) in enumerate(folds[:args.folds]):
        for seed in args.seeds:
            for epsilon in args.epsilons:
                run = {"fold": fold, **one_run(X, y, train, test, epsilon, seed)}
                runs.append(run)
                print(json.dumps(run), flush=True)
    ratios = [private["fit_seconds"] / plain["fit_seconds"]
              for plain in runs if math.isinf(plain["epsilon"])
              for private in runs if not math.isinf(private["epsilon"])
              and (private["fold"], private["seed"]) == (plain["fold"], plain["seed"])]
    record = {"dataset": args.dataset, "n_graphs": len(y), "protocol":
              "StratifiedKFold(10, shuffle=True, random_state=0), first folds", "folds":
              args.folds, "seeds": args.seeds, "epsilons": args.epsilons,
              "estimator": "DPGraphClassifier defaults, allow_equal_graphs=True, device=cpu",
              "torch_threads": 1, "machine": platform.platform(), "runs": runs,
              "private_over_nonprivate_fit_time": ratios}
    eps = "-".join("inf" if math.isinf(e) else f"{e:g}" for e in args.epsilons)
    out = args.out or (HERE / "results" / f"graph_level-{args.dataset}-eps{eps}-{args.folds}"
                       f"folds-{len(args.seeds)}seeds.json")
    out.write_text(json.dumps(record, indent=1, default=str) + "\n")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
