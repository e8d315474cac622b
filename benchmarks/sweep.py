"""Compare estimator configurations on one shared dataset: the sweep behind the defaults.

Each configuration is a Python dict literal of constructor parameters, optionally with
``"estimator"`` (a class name of :mod:`skdpgraph`, default ``GAPClassifier``). Every
configuration is fitted on the same random 75/10/15 splits (seeds ``0..SEEDS-1``), on the
training part only (an estimator's own ``validation_fraction`` holds out part of it), and
scored on the test part; one JSON line per configuration is printed and appended to
``--out``::

    python benchmarks/sweep.py --dataset amazon_computers --epsilon 4 --seeds 2 \\
        --config "{}" --config "{'hidden_dim': 64}" --out benchmarks/results/sweep.jsonl

``--fit-on train+val`` fits on the training and validation parts together instead, with
``validation_fraction`` set to the validation part's share (the authors' protocol: train on
75%, select epochs on 10%). One torch thread; times are for context only.
"""

import argparse
import ast
import json
import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]


def run(dataset, epsilon: float, seeds: int, config: dict, fit_on: str,
        split_name: str = "75/10/15") -> dict:
    """Fit one configuration on every seed's split; return its summary record."""
    import skdpgraph
    from skdpgraph.datasets import train_val_test_split

    params = dict(config)
    cls = getattr(skdpgraph, params.pop("estimator", "GAPClassifier"))
    accuracies, seconds = [], []
    for seed in range(seeds):
        split = (dataset.split if split_name == "public"
                 else train_val_test_split(dataset.y, 0.75, 0.10, random_state=seed))
        fit = split["train"]
        if fit_on == "train+val":
            fit = np.concatenate([split["train"], split["val"]])
            params["validation_fraction"] = len(split["val"]) / len(fit)
        start = time.perf_counter()
        est = cls(epsilon=epsilon, random_state=seed, **params)
        est.fit(dataset.graph.nodes(fit), dataset.y[fit])
        seconds.append(time.perf_counter() - start)
        accuracies.append(100 * est.score(dataset.graph.nodes(split["test"]),
                                          dataset.y[split["test"]]))
    return {"estimator": cls.__name__, "epsilon": epsilon, "config": config, "fit_on": fit_on,
            "split": split_name,
            "mean": float(np.mean(accuracies)), "std": float(np.std(accuracies)),
            "accuracies": accuracies, "fit_seconds": float(np.mean(seconds))}


def emit_record(record: dict, out: Path | None) -> None:
    """Print ``record`` as one JSON line and append it to ``out`` (if given)."""
    line = json.dumps(record)
    print(line, flush=True)
    if out is not None:
        with open(out, "a") as file:
            file.write(line + "\n")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True)
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--config", action="append", default=[], type=ast.literal_eval,
                   help="a dict literal of parameters (repeatable); default: one {}")
    p.add_argument("--fit-on", choices=["train", "train+val"], default="train")
    p.add_argument("--split", choices=["75/10/15", "public"], default="75/10/15",
                   help="'public': the dataset's own split (Cora's 140 training nodes) on "
                        "every seed; the seed then only changes the estimator's randomness")
    p.add_argument("--data-root", type=Path, default=REPO_ROOT.parent / "shared" / "datasets")
    p.add_argument("--out", type=Path, default=None, help="append JSON lines here")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    from skdpgraph.datasets import load_dataset

    dataset = load_dataset(args.dataset, args.data_root)
    for config in args.config or [{}]:
        record = {"dataset": args.dataset, **run(dataset, args.epsilon, args.seeds, config,
                                                 args.fit_on, args.split)}
        emit_record(record, args.out)


if __name__ == "__main__":
    main()
