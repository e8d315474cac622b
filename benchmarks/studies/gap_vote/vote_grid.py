"""Sweep GAP's vote-head constants: the encoder's share of epsilon and the vote weight.

They are module constants (``skdpgraph.privacy._gap_accounting.VOTE_ENCODER_SHARE`` and
``skdpgraph.estimators._gap_heads.VOTE_WEIGHT``), not constructor parameters, so this script
sets them before each configuration and fits node-level GAP with the given extra
parameters on the same 75/10/15 splits as ``sweep.py``::

    python benchmarks/studies/gap_vote/vote_grid.py --dataset amazon_photo --seeds 5 \\
        --out benchmarks/studies/gap_vote/gap-vote-grid-eps8.jsonl
"""

import argparse
import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/

from sweep import REPO_ROOT, emit_record, run  # noqa: E402  (sets one torch thread)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True)
    p.add_argument("--epsilon", type=float, default=8.0)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--shares", type=float, nargs="+", default=[0.5, 0.625, 0.75])
    p.add_argument("--weights", type=float, nargs="+", default=[1.5, 2.0, 2.5, 3.0])
    p.add_argument("--config", type=ast.literal_eval, default={},
                   help="extra constructor parameters (a dict literal)")
    p.add_argument("--data-root", type=Path, default=REPO_ROOT.parent / "shared" / "datasets")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    import skdpgraph.estimators._gap_heads as gap
    import skdpgraph.privacy._gap_accounting as gap_plan
    from skdpgraph.datasets import load_dataset

    dataset = load_dataset(args.dataset, args.data_root)
    config = {"unit": "node", **args.config}
    for share in args.shares:
        for weight in args.weights:
            gap_plan.VOTE_ENCODER_SHARE, gap.VOTE_WEIGHT = share, weight
            record = run(dataset, args.epsilon, args.seeds, config, "train")
            emit_record({"dataset": args.dataset, "encoder_share": share, "vote_weight": weight,
                         **record}, args.out)


if __name__ == "__main__":
    main()
