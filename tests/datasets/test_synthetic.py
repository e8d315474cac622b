import pickle

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skdpgraph.datasets import GraphDataset, make_csbm, train_val_test_split
from skdpgraph.graph import Graph


def _edge_homophily(data):
    source, target = data.graph.edge_index
    return np.mean(data.y[source] == data.y[target])


def test_shapes_types_and_balanced_classes():
    data = make_csbm(n_nodes=500, n_classes=5, n_features=7, random_state=0)
    assert isinstance(data, GraphDataset) and isinstance(data.graph, Graph)
    assert data.name == "csbm" and data.split is None
    assert data.graph.num_nodes == 500 and data.graph.num_features == 7
    assert not data.graph.directed
    assert data.y.dtype == np.int64 and data.y.shape == (500,)
    assert data.num_classes == 5
    assert np.array_equal(np.bincount(data.y), [100] * 5)
    assert data.graph.x.dtype == np.float32


def test_same_seed_same_graph_other_seed_other_graph():
    a, b = make_csbm(n_nodes=300, random_state=7), make_csbm(n_nodes=300, random_state=7)
    c = make_csbm(n_nodes=300, random_state=8)
    assert np.array_equal(a.graph.edge_index, b.graph.edge_index)
    assert np.array_equal(a.graph.x, b.graph.x) and np.array_equal(a.y, b.y)
    assert not np.array_equal(a.y, c.y)


@pytest.mark.parametrize("homophily", [0.0, 0.25, 0.8, 1.0])
@pytest.mark.parametrize("avg_degree", [3.0, 10.0])
def test_degree_and_homophily_are_achieved(homophily, avg_degree):
    data = make_csbm(n_nodes=2000, avg_degree=avg_degree, homophily=homophily, random_state=0)
    graph = data.graph
    assert graph.num_edges / graph.num_nodes == pytest.approx(avg_degree, abs=1e-9)
    assert _edge_homophily(data) == pytest.approx(homophily, abs=1e-3)
    # per node: degrees and within-class shares are as promised on average
    source, target = graph.edge_index
    same = np.bincount(target, weights=data.y[source] == data.y[target], minlength=2000)
    degree = graph.in_degree()
    assert np.mean(same[degree > 0] / degree[degree > 0]) == pytest.approx(homophily, abs=0.02)
    for c in range(4):
        assert degree[data.y == c].mean() == pytest.approx(avg_degree, rel=0.05)


def test_simple_undirected_graph():
    graph = make_csbm(n_nodes=100, avg_degree=20.0, random_state=1).graph
    source, target = graph.edge_index
    assert np.all(source != target)
    adjacency = graph.adjacency()
    assert (adjacency != adjacency.T).nnz == 0
    assert graph.num_edges == 2000  # no pair was lost to duplicates


def test_class_means_are_two_signals_apart():
    data = make_csbm(n_nodes=20000, n_classes=3, n_features=8, feature_signal=1.5,
                     avg_degree=1.0, random_state=0)
    x = data.graph.features()
    centroids = np.stack([x[data.y == c].mean(axis=0) for c in range(3)])
    distances = np.linalg.norm(centroids[:, None] - centroids[None], axis=-1)
    assert distances[np.triu_indices(3, 1)] == pytest.approx(3.0, abs=0.1)
    noise = x - centroids[data.y]
    assert noise.std() == pytest.approx(1.0, abs=0.02)


def test_graph_beats_features_at_the_defaults():
    data = make_csbm(random_state=0)
    x = data.graph.features()
    degree = np.maximum(data.graph.in_degree(), 1)[:, None]
    with_neighbours = np.hstack([x, data.graph.adjacency() @ x / degree])
    split = train_val_test_split(data.y, 0.5, 0.0, random_state=0)
    scores = []
    for features in (x, with_neighbours):
        model = LogisticRegression(max_iter=500).fit(features[split["train"]],
                                                     data.y[split["train"]])
        scores.append(model.score(features[split["test"]], data.y[split["test"]]))
    assert 0.5 < scores[0] < 0.8
    assert scores[1] > 0.85 and scores[1] > scores[0] + 0.15


def test_large_graph_is_fast_enough():
    data = make_csbm(n_nodes=200_000, random_state=0)
    assert data.graph.num_edges == 2_000_000


@pytest.mark.parametrize("kwargs, error, match", [
    ({"n_classes": 1}, ValueError, "n_classes must be >= 2"),
    ({"n_nodes": 5, "n_classes": 3}, ValueError, "n_nodes must be >= 6"),
    ({"homophily": 1.2}, ValueError, r"homophily must be in \[0.0, 1.0\]"),
    ({"avg_degree": -1.0}, ValueError, "avg_degree must be in"),
    ({"feature_signal": float("nan")}, ValueError, "feature_signal must be >= 0"),
    ({"n_features": 2.5}, TypeError, "n_features must be an int"),
    ({"random_state": "seed"}, ValueError, "random_state must be"),
])
def test_bad_parameters_raise(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_csbm(**kwargs)


def test_impossible_degree_raises():
    with pytest.raises(ValueError, match="avg_degree is too high"):
        make_csbm(n_nodes=8, n_classes=4, avg_degree=6.0, homophily=1.0, random_state=0)


def test_dataset_pickles():
    data = make_csbm(n_nodes=50, random_state=0)
    copy = pickle.loads(pickle.dumps(data))
    assert np.array_equal(copy.y, data.y)
    assert np.array_equal(copy.graph.edge_index, data.graph.edge_index)
