"""Where node-level GAP loses accuracy: PMA's noise, or its DP-SGD runs?

A diagnostic, NOT a private fit: it fits node-level ``GAPClassifier`` with its defaults but
multiplies the std of PMA's Gaussian noise by ``--scale`` (0 = no aggregation noise) while
the plan, the accountant and both DP-SGD runs stay as calibrated. The reported epsilon is
therefore wrong for any scale below 1; the accuracies say how much of the gap to the
non-private model the aggregation noise alone explains::

    python benchmarks/studies/gap_vote/pma_noise_diagnostic.py --dataset amazon_computers \
        --scale 0 0.5 1

Random 75/10/15 splits, seeds ``0..SEEDS-1``, fit on the training part, test accuracy in %,
one torch thread.
"""

import argparse
import os
import sys
from pathlib import Path

for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")

sys.path[:0] = [str(Path(__file__).resolve().parents[i]) for i in (3, 2)]  # repo, benchmarks/

import numpy as np  # noqa: E402
import torch  # noqa: E402
from sweep import emit_record  # noqa: E402  (benchmarks/ is on sys.path)

REPO_ROOT = Path(__file__).resolve().parents[3]


def accuracy_at_scale(dataset, scale: float, seeds: int, epsilon: float) -> list[float]:
    """Test accuracies of node-level GAP with PMA's noise std multiplied by ``scale``."""
    from skdpgraph import GAPClassifier
    from skdpgraph.datasets import train_val_test_split
    from skdpgraph.privacy._gap_plan import GAPPlan

    calibrated = GAPPlan.noise_std
    GAPPlan.noise_std = property(lambda plan: calibrated.fget(plan) * scale)
    try:
        accuracies = []
        for seed in range(seeds):
            split = train_val_test_split(dataset.y, 0.75, 0.10, random_state=seed)
            clf = GAPClassifier(epsilon=epsilon, unit="node", random_state=seed)
            clf.fit(dataset.graph.nodes(split["train"]), dataset.y[split["train"]])
            accuracies.append(100 * clf.score(dataset.graph.nodes(split["test"]),
                                              dataset.y[split["test"]]))
        return accuracies
    finally:
        GAPPlan.noise_std = calibrated


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True)
    p.add_argument("--scale", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    p.add_argument("--epsilon", type=float, default=8.0)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--data-root", type=Path, default=REPO_ROOT.parent / "shared" / "datasets")
    p.add_argument("--out", type=Path, default=None, help="append JSON lines here")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    from skdpgraph.datasets import load_dataset

    dataset = load_dataset(args.dataset, args.data_root)
    for scale in args.scale:
        accuracies = accuracy_at_scale(dataset, scale, args.seeds, args.epsilon)
        emit_record({"dataset": args.dataset, "epsilon": args.epsilon,
                     "pma_noise_scale": scale, "mean": float(np.mean(accuracies)),
                     "accuracies": accuracies, "private": scale >= 1.0}, args.out)


if __name__ == "__main__":
    main()
