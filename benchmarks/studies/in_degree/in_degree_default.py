"""Node-level GAP and ProGAP with and without an in-degree bound, in one run.

The in-degree bound (``max_in_degree``) makes every row of the noisy aggregations covered,
so that a fitted estimator may keep the release it paid for in ``fit`` (and its saved copy
predicts like the live one). This measures what it costs in accuracy: each estimator with
its defaults, once per ``--in-degrees`` value (``None``: no bound), on the same splits and
seeds (``run.py``'s loader and fit), one JSON line per fit.

Example (from the repository root)::

    python benchmarks/studies/in_degree/in_degree_default.py --dataset facebook \
        --epsilons 8 4 --seeds 2 \
        --in-degrees None 10 --out benchmarks/studies/in_degree/in-degree-default-facebook.jsonl
"""

import argparse
import ast
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/

import run  # noqa: E402  (the benchmark harness: loader, splits, one fit)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True, choices=run.DATASETS)
    p.add_argument("--split", default=None, help="as run.py's --split")
    p.add_argument("--estimators", nargs="+", default=["gap-ndp", "progap-ndp", "dpmlp"],
                   help="names from registry.py; one without max_in_degree (the DP-MLP "
                        "reference) is fitted once per seed and budget")
    p.add_argument("--epsilons", nargs="+", type=float, default=[8.0, 4.0])
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--in-degrees", nargs="+", type=ast.literal_eval, default=[None, 10],
                   help="max_in_degree values; None leaves the in-degree unbounded")
    p.add_argument("--data-root", type=Path, default=run.REPO_ROOT.parent / "shared" / "datasets")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, required=True, help="JSON lines, appended")
    args = p.parse_args(argv)
    run.set_threads(args.threads)
    from registry import ESTIMATORS

    ds, split, split_for_seed = run.load(args)
    with open(args.out, "a", encoding="utf-8") as out:
        for seed in range(args.seeds):
            for epsilon in args.epsilons:
                for name in args.estimators:
                    bounded = "max_in_degree" in ESTIMATORS[name](epsilon, seed).get_params()
                    for in_degree in args.in_degrees if bounded else ["-"]:
                        params = {"max_in_degree": in_degree} if bounded else {}
                        record = {"dataset": args.dataset, "split": split, "estimator": name,
                                  "epsilon": epsilon, "seed": seed, "params": params}
                        record.update(run.fit_one(ESTIMATORS[name], params, epsilon, seed, ds,
                                                  split_for_seed(seed), False))
                        out.write(json.dumps(record) + "\n")
                        out.flush()
                        print(f"{name} eps={epsilon:g} seed={seed} max_in_degree={in_degree}: "
                              f"test {100 * record['test_accuracy']:.1f} "
                              f"({record['fit_seconds']:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
