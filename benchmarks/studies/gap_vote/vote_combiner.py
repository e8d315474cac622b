"""Could a trained stage combine node-level GAP's votes better than its fixed rule?

A diagnostic behind "ProGAP or GAP" in the defaults guide. Node-level GAP's vote head
predicts ``argmax(own log-probabilities + votes)``, a fixed rule. A progressive (ProGAP)
stage after it would instead *learn* a classifier on the same inputs: each node's own
log-probabilities and its noisy neighbour votes. This script fits node-level GAP with its
defaults, takes those two inputs (the encoder's output and the vote release paid in
``fit``), and compares on the test nodes:

- ``rule``: the vote head's prediction (checked to equal ``predict``);
- ``learned``: a logistic regression on ``[own, votes]`` trained on the training nodes
  **without noise**, an upper bound for any private linear stage on these inputs (it is not
  private: a diagnostic, never a release);
- ``encoder``: the encoder alone (``argmax own``).

Same 75/10/15 splits as ``sweep.py``::

    python benchmarks/studies/gap_vote/vote_combiner.py --dataset amazon_computers --seeds 5 \\
        --out benchmarks/studies/gap_vote/vote-combiner-gap-node-eps8.jsonl
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/

from sweep import REPO_ROOT, emit_record  # noqa: E402  (sets one torch thread)

import numpy as np  # noqa: E402
import torch  # noqa: E402


def compare(dataset, epsilon: float, seed: int) -> dict:
    """Test accuracy (%) of the rule, the learned combiner and the encoder on one split."""
    from sklearn.linear_model import LogisticRegression

    from skdpgraph import GAPClassifier
    from skdpgraph.datasets import train_val_test_split
    from skdpgraph.estimators._gap import _VOTES
    from skdpgraph.nn._gap import class_log_probabilities

    split = train_val_test_split(dataset.y, 0.75, 0.10, random_state=seed)
    train, test = np.asarray(split["train"]), np.asarray(split["test"])
    graph = dataset.graph
    est = GAPClassifier(unit="node", epsilon=epsilon, random_state=seed)
    est.fit(graph.nodes(train), dataset.y[train])
    own = class_log_probabilities(est.encoder_, graph)
    votes = est._cached(graph, _VOTES)  # the release paid in fit, kept in memory
    rule = est.classes_[(own + votes).argmax(1).numpy()]
    if not np.array_equal(rule[test], est.predict(graph.nodes(test))):
        raise RuntimeError("the rule recomputed here differs from the vote head's predict")
    inputs = torch.cat([own, votes], dim=1).numpy()
    learned = LogisticRegression(max_iter=5000).fit(inputs[train], dataset.y[train])

    def accuracy(predicted):
        return 100 * float(np.mean(predicted == dataset.y[test]))

    return {"rule": accuracy(rule[test]), "learned": accuracy(learned.predict(inputs[test])),
            "encoder": accuracy(est.classes_[own[test].argmax(1).numpy()])}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True)
    p.add_argument("--epsilon", type=float, default=8.0)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--data-root", type=Path, default=REPO_ROOT.parent / "shared" / "datasets")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)

    from skdpgraph.datasets import load_dataset

    dataset = load_dataset(args.dataset, args.data_root)
    runs = [compare(dataset, args.epsilon, seed) for seed in range(args.seeds)]
    record = {"dataset": args.dataset, "epsilon": args.epsilon, "seeds": args.seeds}
    for key in runs[0]:
        values = [run[key] for run in runs]
        record[key] = {"mean": float(np.mean(values)), "std": float(np.std(values)),
                       "values": values}
    emit_record(record, args.out)


if __name__ == "__main__":
    main()
