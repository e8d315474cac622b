import pickle
import warnings

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

from skdpgraph import Graph
from skdpgraph.preprocessing import NodeFeatureTransformer, NonPrivateStepWarning, declared_budget


@pytest.fixture
def graph():
    rng = np.random.default_rng(0)
    return Graph([[0, 1, 2, 3], [1, 2, 3, 4]], rng.normal(3.0, 2.0, size=(6, 3)))


def test_train_and_test_nodes_share_one_transformed_graph(graph):
    step = NodeFeatureTransformer(StandardScaler(), public_features=True)
    train = step.fit_transform(graph.nodes([0, 1, 2]))
    test = step.transform(graph.nodes([3, 4, 5]))
    assert test.graph is train.graph
    assert train.graph.uid != graph.uid
    np.testing.assert_array_equal(train.graph.edge_index, graph.edge_index)
    np.testing.assert_array_equal(test.index, [3, 4, 5])
    # fitted on the given (training) nodes only, applied to every node
    expected = StandardScaler().fit(graph.x[:3]).transform(graph.x)
    np.testing.assert_allclose(train.graph.x, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(train).mean(axis=0), 0.0, atol=1e-5)


def test_pca_changes_the_feature_count(graph):
    step = NodeFeatureTransformer(PCA(n_components=2), public_features=True)
    out = step.fit(graph.nodes()).transform(graph.nodes([1]))
    assert out.shape == (1, 2) and out.graph.num_edges == graph.num_edges


def test_uid_is_stable_across_pickling_but_the_cache_is_not_kept(graph):
    step = NodeFeatureTransformer(StandardScaler(), public_features=True).fit(graph.nodes())
    uid = step.transform(graph.nodes()).graph.uid
    assert "_cache" not in step.__getstate__()
    restored = pickle.loads(pickle.dumps(step))
    again = restored.transform(pickle.loads(pickle.dumps(graph)).nodes([0]))
    assert again.graph.uid == uid
    refitted = NodeFeatureTransformer(StandardScaler(), public_features=True).fit(graph.nodes())
    assert refitted.transform(graph.nodes()).graph.uid != uid  # another fit, another graph


def test_warns_on_private_features_without_a_budget(graph):
    with pytest.warns(NonPrivateStepWarning, match="StandardScaler on private node features"):
        step = NodeFeatureTransformer(StandardScaler()).fit(graph.nodes())
    assert step.privacy_budget_ is None


def test_dp_transformer_declares_its_budget(graph):
    class DPScaler(StandardScaler):  # the diffprivlib convention: epsilon + accountant
        def __init__(self, epsilon=1.0, accountant=None):
            super().__init__()
            self.epsilon = epsilon
            self.accountant = accountant

    with warnings.catch_warnings():
        warnings.simplefilter("error", NonPrivateStepWarning)
        step = NodeFeatureTransformer(DPScaler(epsilon=0.3)).fit(graph.nodes())
    assert step.privacy_budget_ == (0.3, 0.0)
    assert declared_budget(StandardScaler()) is None


def test_feature_count_mismatch(graph):
    step = NodeFeatureTransformer(StandardScaler(), public_features=True).fit(graph.nodes())
    with pytest.raises(ValueError, match="X has 2 features, but NodeFeatureTransformer is "
                                         "expecting 3"):
        step.transform(np.zeros((2, 2)))
