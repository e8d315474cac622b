"""Diverging numbers never come back as NaN probabilities: they are stopped with the cause.

``tests/test_bad_input.py`` runs every estimator on 1e30 features and on lr=1e10 through
``fit`` (refused by name, or fitted with finite probabilities). Here: a sane model queried on
1e30 features, and the two guards themselves, forced to fire on every estimator.
"""

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError

from skdpgraph import Graph
from skdpgraph.datasets import make_csbm
from tests._fast_estimators import FAST, NO_TRAINING_LOOP, make

DATA = make_csbm(n_nodes=60, n_classes=3, n_features=4, avg_degree=4, random_state=0)
Y = np.asarray(DATA.y)
TRAIN, TEST = np.arange(45), np.arange(45, 60)


def _fitted(key: str):
    return make(key, random_state=0).fit(DATA.graph.nodes(TRAIN), Y[TRAIN])


def _assert_usable(est) -> None:
    proba = est.predict_proba(DATA.graph.nodes(TEST))
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("key", list(FAST))
def test_query_with_huge_features_is_finite_or_refused(key):
    """Trained on sane features, asked about nodes with features of 1e30."""
    est = _fitted(key)
    huge = Graph(DATA.graph.edge_index, DATA.graph.features().astype(np.float64) * 1e30)
    try:
        proba = est.predict_proba(huge.nodes(TEST))
    except FloatingPointError as exc:
        assert str(exc).startswith(f"{type(est).__name__}.predict_proba: the model outputs "
                                   "non-finite values")
        assert "scale them as in training" in str(exc)
        _assert_usable(est)  # a refused query leaves the model usable
    else:
        assert np.all(np.isfinite(proba))
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("key", list(FAST))
def test_non_finite_logits_are_refused_not_returned(key, monkeypatch):
    est = _fitted(key)
    logits = est._predict_logits

    def diverged(nodes):
        out = logits(nodes).clone()
        out[0, 0] = float("nan")
        return out

    monkeypatch.setattr(est, "_predict_logits", diverged)
    with pytest.raises(FloatingPointError, match=rf"{type(est).__name__}\.predict_proba: the "
                                                 r"model outputs non-finite values for 1 of 15 "
                                                 r"queried nodes"):
        est.predict_proba(DATA.graph.nodes(TEST))
    monkeypatch.undo()
    _assert_usable(est)


@pytest.mark.parametrize("key", [key for key in FAST if key not in NO_TRAINING_LOOP])
def test_a_model_trained_to_nan_weights_is_refused_and_unfitted(key):
    est = make(key, random_state=0)
    train = est._train

    def to_nan(*args):
        train(*args)
        # GAP's vote head trains only its encoder: module_ is None there.
        module = est.module_ if est.module_ is not None else est.encoder_
        with torch.no_grad():
            next(module.parameters()).fill_(float("nan"))

    est._train = to_nan
    with pytest.raises(FloatingPointError, match=rf"{type(est).__name__}: training diverged: "
                                                 r"(module|encoder)_ has non-finite parameters\. "
                                                 r"Lower the "
                                                 r"learning rate .*scale the features"):
        est.fit(DATA.graph.nodes(TRAIN), Y[TRAIN])
    assert [name for name in vars(est) if name.endswith("_")] == []
    with pytest.raises(NotFittedError):
        est.predict(DATA.graph.nodes(TEST))
