"""What a privacy ledger and ``privacy_spent`` report for common scikit-learn workflows.

Calibration of GAP, permutation importance over arrays (each predict on an array is a new
release), node-level ProGAP cross-validated with ``privacy_scoring`` on arrays, and bootstrap
bagging (refused)::

    python benchmarks/workflow_privacy_costs.py
"""

import warnings

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import BaggingClassifier
from sklearn.inspection import permutation_importance
from sklearn.model_selection import cross_validate

from skdpgraph import DPMLPClassifier, GAPClassifier, PrivacyLedger, ProGAPClassifier
from skdpgraph.datasets import make_csbm
from skdpgraph.model_selection import privacy_scoring, privacy_spent


def main() -> None:
    warnings.simplefilter("ignore")
    data = make_csbm(n_nodes=400, random_state=0)
    X, y = data.nodes(), data.y

    with PrivacyLedger() as ledger:
        calibrated = CalibratedClassifierCV(GAPClassifier(epsilon=2, random_state=0), cv=3)
        calibrated.fit(X, y)
    print(f"CalibratedClassifierCV(GAP eps=2, cv=3): privacy_spent "
          f"{privacy_spent(calibrated).epsilon:.3f}, ledger {ledger.total().epsilon:.3f} "
          f"over {len(ledger.entries)} fits")

    gap = GAPClassifier(epsilon=2, random_state=0).fit(X[:300], y[:300])
    with PrivacyLedger() as ledger:
        permutation_importance(gap, np.asarray(X[300:]), y[300:], n_repeats=2, random_state=0)
    releases = gap.privacy_.releases
    print(f"permutation_importance(GAP eps=2) on arrays: {len(releases)} releases recorded, "
          f"{len(ledger.entries)} in the ledger, total {ledger.total().epsilon:.3f} "
          f"(their epsilons add up to {sum(r['epsilon'] for r in releases):.3f})")

    progap = ProGAPClassifier(epsilon=4, unit="node", epochs=3, encoder_epochs=3,
                              random_state=0)
    folds = cross_validate(progap, np.asarray(X), y, cv=3, return_estimator=True,
                           scoring=privacy_scoring("accuracy"))
    print("node-level ProGAP, CV on arrays: scorer epsilons",
          np.round(-folds["test_epsilon"], 3).tolist(), "training epsilons",
          [round(e.privacy_.epsilon, 3) for e in folds["estimator"]], "totals",
          [round(e.privacy_.total_epsilon, 3) for e in folds["estimator"]])

    try:
        BaggingClassifier(DPMLPClassifier(epsilon=4), bootstrap=True).fit(X, y)
    except ValueError as exc:
        print(f"BaggingClassifier(bootstrap=True): refused: {str(exc)[:120]}...")


if __name__ == "__main__":
    main()
