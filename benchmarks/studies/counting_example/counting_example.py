"""What the README's ledger example spends: a grid search of DP-MLP inside a ledger.

``DPMLPClassifier(epsilon=4.0, random_state=0)`` on ``make_csbm(random_state=0)``'s training
part, ``GridSearchCV`` over ``lr`` in ``[0.01, 0.1]`` with ``cv=3`` (7 fits: 2 candidates on 3
folds, then the refit), inside ``with PrivacyLedger() as ledger``. Records the ledger's RDP
total and the sum of the fits' own epsilons (basic composition), one torch thread::

    PYTHONPATH=. python benchmarks/studies/counting_example/counting_example.py
"""

import argparse
import json
from pathlib import Path

import torch
from sklearn.model_selection import GridSearchCV, train_test_split

from skdpgraph import DPMLPClassifier, PrivacyLedger
from skdpgraph.datasets import make_csbm

OUT = Path(__file__).resolve().parent / "counting-readme-search.json"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    ds = make_csbm(random_state=0)
    X_tr, _, y_tr, _ = train_test_split(ds.nodes(), ds.y, stratify=ds.y, random_state=0)
    clf = DPMLPClassifier(epsilon=4.0, random_state=0)
    with PrivacyLedger() as ledger:
        GridSearchCV(clf, {"lr": [0.01, 0.1]}, cv=3).fit(X_tr, y_tr)
    total = ledger.total()
    fits = [entry.spend.epsilon for entry in ledger.entries]
    record = {"example": "README ledger: GridSearchCV(DPMLPClassifier(epsilon=4.0, "
                         "random_state=0), {'lr': [0.01, 0.1]}, cv=3) on make_csbm(random_state=0)",
              "releases": len(fits), "fit_epsilons": fits, "sum_of_epsilons": sum(fits),
              "ledger_epsilon": total.epsilon, "ledger_delta": total.delta,
              "ledger_total": str(total)}
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(record)


if __name__ == "__main__":
    main()
