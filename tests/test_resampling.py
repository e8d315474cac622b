"""Every node counts once: resampling with replacement is refused by name.

scikit-learn's ``BaggingClassifier`` turns ``Nodes`` into an array and passes each
sub-fit its bootstrap counts as ``sample_weight`` (to an estimator whose ``fit`` takes
one; with metadata routing on, to one that requests it), so the counts reach the one
check of :func:`skdpgraph._validation.check_sample_weight`.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.ensemble import BaggingClassifier

from skdpgraph import DPNodeClassifier
from skdpgraph.exceptions import GraphDroppedWarning
from skdpgraph.datasets import make_csbm
from tests._fast_estimators import make

#: Estimators whose unit is a node, and the front door at node level.
NODE_UNIT = ["DPMLP", "GAP-node", "FDP", "DRW", "RGNN"]


@pytest.fixture(scope="module")
def data():
    graph = make_csbm(n_nodes=120, n_classes=3, n_features=6, random_state=0)
    return graph.nodes()[:80], graph.y[:80]


def _bagging(base, **options):
    return BaggingClassifier(base, n_estimators=2, random_state=0, **options)


@pytest.mark.parametrize("routing", [False, True])
@pytest.mark.parametrize("name", NODE_UNIT)
def test_bootstrap_bagging_is_refused_where_the_unit_is_a_node(name, routing, data):
    with sklearn.config_context(enable_metadata_routing=routing), warnings.catch_warnings():
        warnings.simplefilter("ignore", GraphDroppedWarning)
        with pytest.raises(ValueError, match=r"sample_weight\[\d+\] = [2-9].*counts once"):
            _bagging(make(name, random_state=0), bootstrap=True).fit(*data)


def test_bootstrap_bagging_of_the_front_door_is_refused(data):
    with pytest.raises(ValueError, match="resampling with replacement"):
        _bagging(DPNodeClassifier(unit="node", epsilon=4.0, random_state=0)).fit(*data)


@pytest.mark.parametrize("name", ["DPMLP", "GAP-node"])
def test_subsampling_without_replacement_selects_rows(name, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GraphDroppedWarning)
        bag = _bagging(make(name, random_state=0), bootstrap=False, max_samples=0.5).fit(*data)
    assert all(0 < est.epsilon_spent_ <= 4.0 for est in bag.estimators_)


def test_sample_weight_selects_the_nodes_it_keeps(data):
    nodes, y = data
    keep = np.arange(len(y)) % 2 == 0
    weighted = make("DPMLP", random_state=0).fit(nodes, y, sample_weight=keep.astype(float))
    subset = make("DPMLP", random_state=0).fit(nodes[np.flatnonzero(keep)], y[keep])
    np.testing.assert_array_equal(weighted.predict_proba(nodes), subset.predict_proba(nodes))
    for bad in (2.0, 0.5):
        with pytest.raises(ValueError, match="sample_weight"):
            make("DPMLP", random_state=0).fit(nodes, y, sample_weight=np.r_[bad, keep[1:]])
