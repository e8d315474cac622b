"""Pipelines: a tabular transformer before a graph estimator must not drop the graph silently."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from tests._fast_estimators import FAST, make
from skdpgraph import Graph, GraphDroppedWarning, make_graph_pipeline
from skdpgraph.datasets import make_csbm
from skdpgraph.preprocessing import NodeFeatureTransformer, NonPrivateStepWarning

DATA = make_csbm(n_nodes=60, n_classes=3, n_features=4, avg_degree=4, random_state=0)
Y = np.asarray(DATA.y)
TRAIN, TEST = np.arange(45), np.arange(45, 60)
EDGE_USING = [key for key in FAST if key != "DPMLP"]


def _name(key: str) -> str:
    return FAST[key][0].__name__


@pytest.mark.parametrize("key", EDGE_USING)
def test_plain_pipeline_warns_that_the_graph_is_dropped(key):
    pipe = make_pipeline(StandardScaler(), make(key, random_state=0))
    with pytest.warns(GraphDroppedWarning, match=rf"{_name(key)}\.fit received a plain ndarray, "
                                                 r"not skdpgraph Nodes: .*graph without edges.*"
                                                 r"NodeFeatureTransformer.*make_graph_pipeline"):
        pipe.fit(DATA.graph.nodes(TRAIN), Y[TRAIN])
    with pytest.warns(GraphDroppedWarning, match=rf"{_name(key)}\.predict received a plain"):
        pipe.predict(DATA.graph.nodes(TEST))


def test_feature_only_estimator_does_not_warn():
    pipe = make_pipeline(StandardScaler(), make("DPMLP", random_state=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphDroppedWarning)
        pipe.fit(DATA.graph.nodes(TRAIN), Y[TRAIN]).predict(DATA.graph.nodes(TEST))


def test_nodes_input_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphDroppedWarning)
        make("GAP-edge", random_state=0).fit(DATA.graph.nodes(TRAIN), Y[TRAIN])


@pytest.mark.parametrize("key", EDGE_USING)
def test_graph_pipeline_keeps_the_graph(key):
    """Same seed: the pipeline gives exactly what fitting on the scaled graph gives."""
    pipe = make_graph_pipeline(StandardScaler(), make(key, random_state=0), public_features=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphDroppedWarning)
        pipe.fit(DATA.graph.nodes(TRAIN), Y[TRAIN])
        piped = pipe.predict_proba(DATA.graph.nodes(TEST))
        piped_score = pipe.score(DATA.graph.nodes(TEST), Y[TEST])

    scaled_x = StandardScaler().fit(DATA.graph.x[TRAIN]).transform(DATA.graph.x)
    scaled = Graph(DATA.graph.edge_index, scaled_x)
    assert scaled.num_edges == DATA.graph.num_edges > 0
    est = make(key, random_state=0).fit(scaled.nodes(TRAIN), Y[TRAIN])
    np.testing.assert_array_equal(piped, est.predict_proba(scaled.nodes(TEST)))
    assert piped_score == est.score(scaled.nodes(TEST), Y[TEST])


def test_graph_pipeline_is_an_ordinary_pipeline():
    pipe = make_graph_pipeline(StandardScaler(), make("GAP-edge", random_state=0),
                               public_features=True)
    assert isinstance(pipe, Pipeline)
    assert pipe.get_params()["standardscaler__transformer__with_mean"] is True
    copy = clone(pipe)
    assert copy.get_params().keys() == pipe.get_params().keys()
    search = GridSearchCV(pipe, {"standardscaler__transformer__with_mean": [True, False]}, cv=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphDroppedWarning)
        search.fit(DATA.graph.nodes(TRAIN), Y[TRAIN])
    best = search.best_estimator_
    assert isinstance(best.named_steps["standardscaler"], NodeFeatureTransformer)
    restored = pickle.loads(pickle.dumps(best))
    np.testing.assert_array_equal(restored.predict(DATA.graph.nodes(TEST)),
                                  best.predict(DATA.graph.nodes(TEST)))


def test_graph_pipeline_wraps_only_plain_transformers():
    already = NodeFeatureTransformer(PCA(2), public_features=True)
    final = make("GAP-edge")
    pipe = make_graph_pipeline(StandardScaler(), already, "passthrough", StandardScaler(), final)
    assert [name for name, _ in pipe.steps] == [
        "standardscaler-1", "nodefeaturetransformer", "passthrough", "standardscaler-2",
        "gapclassifier"]
    first, second, third, fourth, last = (step for _, step in pipe.steps)
    assert isinstance(first, NodeFeatureTransformer)
    assert isinstance(first.transformer, StandardScaler) and first.public_features == "auto"
    assert second is already and third == "passthrough" and last is final
    assert isinstance(fourth, NodeFeatureTransformer)


def test_graph_pipeline_states_that_a_fitted_scaler_is_not_private():
    pipe = make_graph_pipeline(StandardScaler(), make("GAP-node", random_state=0),
                               public_features=False)
    with pytest.warns(NonPrivateStepWarning, match="StandardScaler on private node features"):
        pipe.fit(DATA.graph.nodes(TRAIN), Y[TRAIN])
