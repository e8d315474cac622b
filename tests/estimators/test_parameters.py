"""Constructor parameters: former names keep working for one release, one ``__init__`` style,
and invalid values are refused by name."""

import ast
import inspect
import textwrap
import warnings

import numpy as np
import pytest
from sklearn.base import clone

import skdpgraph
from skdpgraph import DPNodeClassifier, DRWClassifier, RGNNClassifier
from skdpgraph._deprecation import DEPRECATED, REMOVED_IN
from skdpgraph.datasets import make_csbm

DRW_FAST = dict(epsilon=4.0, epochs=2, hidden_dim=8, batch_size=64, random_state=0)
RGNN_FAST = dict(epochs=2, feature_hops=1, label_hops=1, ensemble_size=1, hidden_dim=8,
                 feature_type="continuous", random_state=0)

#: (class, former name, current name, a value other than the default, fast parameters)
RENAMED = [
    (DRWClassifier, "sampler", "subgraph_sampler", "drw-d", DRW_FAST),
    (RGNNClassifier, "n_sampled_features", "num_sampled_features", 3, RGNN_FAST),
    (RGNNClassifier, "n_clusters", "num_clusters", 3, RGNN_FAST),
]
IDS = [f"{cls.__name__}.{old}" for cls, old, *_ in RENAMED]


@pytest.fixture(scope="module")
def data():
    dataset = make_csbm(n_nodes=160, random_state=0)
    return dataset.nodes()[:100], dataset.y[:100], dataset.nodes()[100:]


def _fitted_outputs(estimator, data):
    X, y, queries = data
    estimator.fit(X, y)
    history = [(r["stage"], r["epoch"], r["loss"], r["epsilon"]) for r in estimator.history_]
    return estimator.predict_proba(queries), estimator.epsilon_spent_, history


@pytest.mark.parametrize("cls, old, new, value, fast", RENAMED, ids=IDS)
def test_a_former_name_warns_and_fits_as_the_current_one(cls, old, new, value, fast, data):
    current = _fitted_outputs(cls(**{new: value}, **fast), data)
    with pytest.warns(FutureWarning, match=rf"'{old}' was renamed '{new}'.*removed in "
                                           rf"{REMOVED_IN}"):
        former = _fitted_outputs(cls(**{old: value}, **fast), data)
    np.testing.assert_array_equal(former[0], current[0])
    assert former[1:] == current[1:]


@pytest.mark.parametrize("cls, old, new, value, fast", RENAMED, ids=IDS)
def test_the_current_name_alone_does_not_warn(cls, old, new, value, fast, data):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        cls(**{new: value}, **fast).fit(*data[:2])


@pytest.mark.parametrize("cls, old, new, value, fast", RENAMED, ids=IDS)
def test_setting_both_names_is_refused(cls, old, new, value, fast, data):
    with pytest.raises(ValueError, match=rf"{old}=.* and {new}=.* are both set"):
        cls(**{old: value, new: value}, **fast).fit(*data[:2])


@pytest.mark.parametrize("cls, old, new, value, fast", RENAMED, ids=IDS)
def test_clone_and_get_params_keep_both_names(cls, old, new, value, fast):
    estimator = cls(**{old: value})
    params = clone(estimator).get_params()
    assert params[old] == value
    assert params[new] == inspect.signature(cls).parameters[new].default
    assert cls().get_params()[old] == DEPRECATED
    assert clone(estimator.set_params(**{old: DEPRECATED, new: value})).get_params()[new] == value


def test_the_former_fitted_attribute_name_warns(data):
    clf = RGNNClassifier(num_sampled_features=3, **RGNN_FAST).fit(*data[:2])
    with pytest.warns(FutureWarning, match="'n_sampled_features_' was renamed"):
        assert clf.n_sampled_features_ == clf.num_sampled_features_ == 3


ESTIMATOR_CLASSES = [skdpgraph.DPMLPClassifier, skdpgraph.DRWClassifier,
                     skdpgraph.FDPClassifier, skdpgraph.RGNNClassifier,
                     skdpgraph.DPNodeClassifier]


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=lambda cls: cls.__name__)
def test_init_takes_keyword_only_parameters_and_stores_each_on_its_own_line(cls):
    signature = inspect.signature(cls.__init__)
    parameters = [p for p in signature.parameters.values() if p.name != "self"]
    assert all(p.kind is p.KEYWORD_ONLY for p in parameters)
    body = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__))).body[0].body
    stored = [(s.targets[0].attr, s.value.id) for s in body
              if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Attribute)
              and isinstance(s.value, ast.Name)]
    assert len(stored) == len(body), "__init__ only assigns each parameter, one per line"
    assert stored == [(p.name, p.name) for p in parameters]


@pytest.mark.parametrize("name, value", [("unit", "street"), ("epsilon", -1.0),
                                         ("delta", 2.0), ("verbose", "loud")])
def test_the_front_door_refuses_an_invalid_value_by_name(name, value, data):
    with pytest.raises(ValueError, match=rf"The '{name}' parameter of DPNodeClassifier must"):
        DPNodeClassifier(**{name: value}).fit(*data[:2])
