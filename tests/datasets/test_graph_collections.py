"""Collections of graphs as X: indexing, scikit-learn tools, checks, converters and loaders."""

import pickle
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import (GridSearchCV, StratifiedKFold, cross_validate,
                                     train_test_split)
from sklearn.utils import _safe_indexing

from skdpgraph import Graph, GraphCollection
from skdpgraph.datasets import load_reddit_threads, load_tu_dataset, make_graph_classification
from skdpgraph.graph_collection import check_graph_collection, find_duplicate_graphs

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"


@pytest.fixture(scope="module")
def graphs():
    return make_graph_classification(n_graphs=24, n_classes=3, random_state=0)


def _path(n, width=2, value=1.0):
    return Graph([list(range(n - 1)), list(range(1, n))], np.full((n, width), value))


def _same_content(a, b):
    return [g.fingerprint() for g in a] == [g.fingerprint() for g in b]


# -------------------------------------------------------------- indexing and sklearn
def test_collection_indexing_returns_graphs_and_collections(graphs):
    X, _ = graphs
    assert isinstance(X[3], Graph) and X[-1] is X[len(X) - 1]
    assert [g for g in X[[3, 1]]] == [X[3], X[1]]
    mask = np.arange(len(X)) % 2 == 0
    assert isinstance(X[mask], GraphCollection) and len(X[mask]) == 12
    assert [g for g in X[2:5]] == [X[2], X[3], X[4]]
    assert len(X[np.array([], dtype=int)]) == 0
    assert X.shape == (24,) and X.num_features == 4 and X.num_nodes.shape == (24,)
    with pytest.raises(IndexError, match="boolean mask has shape"):
        X[np.ones(3, dtype=bool)]
    with pytest.raises(IndexError, match="cannot index with dtype float"):
        X[np.array([0.5])]


def test_sklearn_splitters_keep_graph_collections(graphs):
    X, y = graphs
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y,
                                                        random_state=0)
    assert isinstance(X_train, GraphCollection) and len(X_train) + len(X_test) == len(X)
    assert sorted(id(g) for g in list(X_train) + list(X_test)) == sorted(id(g) for g in X)
    for train, test in StratifiedKFold(n_splits=3).split(X, y):
        assert isinstance(_safe_indexing(X, train), GraphCollection)
        assert [g for g in _safe_indexing(X, test)] == [X[i] for i in test]


class _GraphCountClassifier(ClassifierMixin, BaseEstimator):
    """Predicts from the number of edges per node: enough to run sklearn's tools."""

    def __init__(self, threshold=1.0):
        self.threshold = threshold

    def fit(self, X, y):
        assert isinstance(X, GraphCollection)
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        assert isinstance(X, GraphCollection)
        density = np.array([g.num_edges / g.num_nodes for g in X])
        return self.classes_[(density > self.threshold).astype(int) % len(self.classes_)]


def test_grid_search_cross_validate_and_clone_work_on_collections(graphs):
    X, y = graphs
    estimator = _GraphCountClassifier()
    assert clone(estimator).get_params() == {"threshold": 1.0}
    search = GridSearchCV(estimator, {"threshold": [1.0, 2.5]}, cv=3).fit(X, y)
    assert search.best_params_["threshold"] in (1.0, 2.5)
    scores = cross_validate(estimator, X, y, cv=StratifiedKFold(3))
    assert scores["test_score"].shape == (3,)


def test_pickle_round_trip_keeps_every_graph(graphs):
    X, _ = graphs
    back = pickle.loads(pickle.dumps(X))
    assert isinstance(back, GraphCollection) and len(back) == len(X)
    assert _same_content(back, X) and back.num_features == X.num_features


def test_collection_becomes_an_object_array_but_never_numbers(graphs):
    X, _ = graphs
    array = np.asarray(X)
    assert array.dtype == object and array.shape == (24,) and array[0] is X[0]
    with pytest.raises(TypeError, match="holds graphs, not numbers"):
        np.asarray(X, dtype=np.float64)


# -------------------------------------------------------------------------- checks
def test_feature_widths_that_differ_are_refused_with_both_widths():
    with pytest.raises(ValueError, match="same number of node features; graph 0 has 2 and "
                                         "graph 1 has 3"):
        GraphCollection([_path(3, 2), _path(3, 3)])
    with pytest.raises(ValueError, match="X: every graph must have the same number"):
        check_graph_collection([_path(3, 2), _path(3, 3)])


def test_items_that_are_not_graphs_or_no_graphs_are_refused():
    with pytest.raises(TypeError, match=r"graphs\[1\] must be a skdpgraph.Graph; got ndarray"):
        GraphCollection([_path(2), np.eye(2)])
    with pytest.raises(TypeError, match="got one Graph. Wrap it in a list"):
        GraphCollection(_path(2))
    with pytest.raises(ValueError, match="X holds no graphs"):
        check_graph_collection([])
    with pytest.raises(TypeError, match="X must be a GraphCollection or a list"):
        check_graph_collection("graphs")


def test_the_same_graph_object_twice_is_refused_even_when_equal_graphs_are_allowed():
    g = _path(3)
    with pytest.raises(ValueError, match=r"graphs \[0, 2\] are the same Graph object"):
        check_graph_collection([g, _path(4), g], allow_equal_graphs=True)


def test_equal_graphs_are_found_by_content_and_refused_unless_allowed():
    a, b, c = _path(3), _path(3), _path(3, value=2.0)
    relabelled = Graph([[2, 1], [1, 0]], np.ones((3, 2)))  # the same path, read backwards
    assert find_duplicate_graphs([a, c, b, relabelled]) == [[0, 2, 3]]
    assert find_duplicate_graphs([a, c]) == []
    with pytest.raises(ValueError, match=r"graphs \[0, 2\] have the same content \(1 repeated"):
        check_graph_collection([a, c, b])
    X = check_graph_collection([a, c, b], allow_equal_graphs=True)
    assert isinstance(X, GraphCollection) and len(X) == 3
    assert not hasattr(a, "fingerprint_") and not hasattr(X, "_fingerprints")


def test_graphs_without_edges_are_accepted():
    X = check_graph_collection([Graph(np.zeros((2, 0)), np.ones((3, 2))), _path(2)])
    assert X[0].num_edges == 0 and X[0].num_nodes == 3


# ---------------------------------------------------------------------- converters
def test_pyg_round_trip_and_its_bad_inputs(graphs):
    torch = pytest.importorskip("torch")
    Data = pytest.importorskip("torch_geometric.data").Data
    X, y = graphs
    data = [Data(x=torch.tensor(np.array(g.x)), edge_index=torch.tensor(np.array(g.edge_index)),
                 y=torch.tensor([label])) for g, label in zip(X, y)]
    back, labels = GraphCollection.from_pyg(data)
    assert _same_content(back, X) and labels.tolist() == y.tolist()
    with pytest.raises(ValueError, match="graph 2 has no label"):
        GraphCollection.from_pyg(data[:2] + [Data(x=data[0].x, edge_index=data[0].edge_index)])
    empty = Data(x=torch.zeros((0, 4)), edge_index=torch.zeros((2, 0), dtype=torch.long))
    with pytest.raises(ValueError, match="graph 1 has no nodes"):
        GraphCollection.from_pyg([data[0], empty])
    with pytest.raises(ValueError, match="graph 0: y holds 3 values; a graph has one label"):
        GraphCollection.from_pyg([Data(x=torch.ones((3, 1)), y=torch.zeros(3),
                                       edge_index=torch.zeros((2, 0), dtype=torch.long))])


def test_networkx_round_trip_and_its_bad_inputs(graphs):
    nx = pytest.importorskip("networkx")
    X, y = graphs
    converted = []
    for g, label in zip(X, y):
        G = nx.Graph(label=int(label))
        G.add_nodes_from((i, {"x": row}) for i, row in enumerate(g.x))
        G.add_edges_from(g.edge_index.T.tolist())
        converted.append(G)
    back, labels = GraphCollection.from_networkx(converted)
    assert _same_content(back, X) and labels.tolist() == y.tolist()
    with pytest.raises(ValueError, match="from_networkx: graph 1 has no nodes"):
        GraphCollection.from_networkx([converted[0], nx.Graph()])
    text = nx.Graph()
    text.add_node(0, x=["a", "b"])
    with pytest.raises(ValueError, match="from_networkx: graph 0: node attribute 'x' must hold "
                                         "numbers.*'a'"):
        GraphCollection.from_networkx([text])


def _tables(X, y):
    nodes = pd.concat([pd.DataFrame({"graph_id": f"g{i}", "node_id": np.arange(g.num_nodes),
                                     **{f"f{j}": g.x[:, j] for j in range(g.num_features)}})
                       for i, g in enumerate(X)], ignore_index=True)
    edges = pd.concat([pd.DataFrame({"graph_id": f"g{i}", "source": g.edge_index[0],
                                     "target": g.edge_index[1]}) for i, g in enumerate(X)],
                      ignore_index=True)
    table = pd.DataFrame({"graph_id": [f"g{i}" for i in range(len(X))], "label": y})
    return nodes, edges, table


def test_tables_round_trip(graphs):
    X, y = graphs
    back, labels = GraphCollection.from_pandas(*_tables(X, y))
    assert _same_content(back, X) and labels.tolist() == y.tolist()
    nodes, edges, table = _tables(X, y)
    reordered, labels = GraphCollection.from_pandas(nodes, edges, table.iloc[::-1])
    assert _same_content(reordered, X[::-1]) and labels.tolist() == y[::-1].tolist()
    unlabelled, none = GraphCollection.from_pandas(nodes, None)
    assert none is None and sum(g.num_edges for g in unlabelled) == 0


def test_tables_report_missing_labels_missing_nodes_and_text(graphs):
    X, y = graphs
    nodes, edges, table = _tables(X[:3], y[:3])
    missing = table.astype({"label": float})
    missing.loc[1, "label"] = np.nan
    with pytest.raises(ValueError, match="graph 'g1' has no label in column 'label'"):
        GraphCollection.from_pandas(nodes, edges, missing)
    with pytest.raises(ValueError, match="graph 'g2' has nodes but no row in the graph table"):
        GraphCollection.from_pandas(nodes, edges, table.iloc[:2])
    extra = pd.concat([table, pd.DataFrame({"graph_id": ["g9"], "label": [0]})])
    with pytest.raises(ValueError, match="graph 'g9' has no nodes in the node table"):
        GraphCollection.from_pandas(nodes, edges, extra)
    text = nodes.astype({"f1": object})
    text.loc[4, "f1"] = "high"
    with pytest.raises(ValueError, match="feature column 'f1' is not numeric \\(row 4 holds "
                                         "'high'\\)"):
        GraphCollection.from_pandas(text, edges, table)
    with pytest.raises(ValueError, match="node column 'label' looks like labels"):
        GraphCollection.from_pandas(nodes.assign(label=0), edges, table)
    stray = pd.concat([edges, pd.DataFrame({"graph_id": ["g7"], "source": [0], "target": [1]})])
    with pytest.raises(ValueError, match="edges of graph 'g7', which has no nodes"):
        GraphCollection.from_pandas(nodes, stray, table)


def test_one_class_is_accepted_by_the_data_layer(graphs):
    X, _ = graphs
    _, labels = GraphCollection.from_pandas(*_tables(X[:4], np.zeros(4, dtype=int)))
    assert labels.tolist() == [0, 0, 0, 0]  # classifiers refuse a single class in fit


# ------------------------------------------------------------------ TU format files
def _write_tu(folder, name="TOY", **replace):
    files = {  # two graphs: a triangle (nodes 1-3) and a path (nodes 4-5)
        "A": "1, 2\n2, 1\n2, 3\n3, 2\n1, 3\n3, 1\n4, 5\n5, 4\n",
        "graph_indicator": "1\n1\n1\n2\n2\n",
        "graph_labels": "3\n7\n",
        "node_labels": "5\n2\n5\n9\n2\n",
        "node_attributes": "0.5, 1\n1.5, 2\n2.5, 3\n3.5, 4\n4.5, 5\n",
    }
    files.update(replace)
    (folder / name).mkdir(exist_ok=True)
    for suffix, text in files.items():
        if text is not None:
            (folder / name / f"{name}_{suffix}.txt").write_text(text)


def test_tu_files_are_read_with_one_based_ids_and_one_hot_node_labels(tmp_path):
    _write_tu(tmp_path)
    X, y = load_tu_dataset("TOY", tmp_path)
    assert y.tolist() == [3, 7] and X.num_nodes.tolist() == [3, 2]
    assert X[0].num_edges == 6 and X[1].edge_index.tolist() == [[1, 0], [0, 1]]
    np.testing.assert_array_equal(X[1].x, [[0, 0, 1, 3.5, 4], [1, 0, 0, 4.5, 5]])
    bare, _ = load_tu_dataset("TOY", tmp_path, use_node_attributes=False)
    assert bare.num_features == 3


def test_tu_dataset_without_node_information_gets_a_constant_feature(tmp_path):
    _write_tu(tmp_path, node_labels=None, node_attributes=None)
    X, _ = load_tu_dataset("TOY", tmp_path / "TOY")
    assert X.num_features == 1 and X[0].x.tolist() == [[1.0]] * 3


@pytest.mark.parametrize("replace, message", [
    ({"A": "1, 2\n2, x\n"}, r"TOY_A\.txt, line 2: expected 2 comma-separated integer"),
    ({"A": "1, 2\n\n2, 1\n"}, r"TOY_A\.txt, line 2: expected 2 comma-separated integer"),
    ({"A": "1, 2\n3, 4\n"}, r"TOY_A\.txt, line 2: the edge joins nodes of two different graphs"),
    ({"A": "1, 6\n"}, r"TOY_A\.txt, line 1: node id outside 1\.\.5"),
    ({"graph_indicator": "1\n1\n1\n3\n2\n"},
     r"TOY_graph_indicator\.txt, line 4: graph id outside 1\.\.2"),
    ({"graph_indicator": "1\n1\n1\n1\n1\n", "A": "1, 2\n"},
     r"TOY_graph_indicator\.txt: graph 2 has no nodes"),
    ({"node_labels": "1\n2\n"}, r"TOY_node_labels\.txt has 2 lines but TOY_graph_indicator"),
    ({"node_attributes": "0.5, 1\n1.5\n2.5, 3\n3.5, 4\n4.5, 5\n"},
     r"TOY_node_attributes\.txt, line 2: expected 2 comma-separated number"),
    ({"graph_labels": "3\nseven\n"}, r"TOY_graph_labels\.txt, line 2: .*'seven'"),
])
def test_malformed_tu_lines_are_reported_with_file_and_line(tmp_path, replace, message):
    _write_tu(tmp_path, **replace)
    with pytest.raises(ValueError, match=message):
        load_tu_dataset("TOY", tmp_path)


def test_missing_tu_files_are_named(tmp_path):
    _write_tu(tmp_path, graph_labels=None)
    with pytest.raises(FileNotFoundError, match="'TOY_graph_labels.txt' not found"):
        load_tu_dataset("TOY", tmp_path)
    with pytest.raises(FileNotFoundError, match="no folder .* for dataset 'NONE'"):
        load_tu_dataset("NONE", tmp_path)


# ------------------------------------------------------------------ Reddit threads
def test_reddit_threads_get_capped_degree_one_hot_features(tmp_path):
    (tmp_path / "graphs.json").write_text(
        '{"0": [[0, 1], [0, 2], [0, 3], [3, 3]], "1": [[0, 1], [1, 2]]}')
    (tmp_path / "target.csv").write_text("id,target\n1,0\n0,1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # self-loops are dropped without a warning
        X, y = load_reddit_threads(tmp_path, max_degree=2)
    assert y.tolist() == [0, 1] and X.num_nodes.tolist() == [3, 4]
    assert X[1].x.tolist() == [[0, 0, 1], [0, 1, 0], [0, 1, 0], [0, 1, 0]]
    assert X[0].x.tolist() == [[0, 1, 0], [0, 0, 1], [0, 1, 0]]
    with pytest.raises(ValueError, match="max_degree must be an int >= 1; got 0"):
        load_reddit_threads(tmp_path, max_degree=0)


# ------------------------------------------------------------------ synthetic graphs
def test_synthetic_collection_is_seeded_balanced_and_denser_by_class():
    X, y = make_graph_classification(n_graphs=60, n_classes=3, random_state=5)
    again, y_again = make_graph_classification(n_graphs=60, n_classes=3, random_state=5)
    assert _same_content(X, again) and y.tolist() == y_again.tolist()
    assert np.bincount(y).tolist() == [20, 20, 20]
    assert check_graph_collection(X) is X
    edges_per_node = np.array([g.num_edges / 2 / g.num_nodes for g in X])
    means = [edges_per_node[y == c].mean() for c in range(3)]
    assert means[0] < 1 and means[0] < means[1] < means[2]
    sizes = X.num_nodes
    assert abs(sizes[y == 0].mean() - sizes[y == 2].mean()) < 3  # size carries no signal


@pytest.mark.parametrize("kwargs, message", [
    ({"n_classes": 1}, "n_classes must be >= 2; got 1"),
    ({"n_nodes": (1, 5)}, r"n_nodes must be a tuple .*got \(1, 5\)"),
    ({"n_graphs": 2.5}, "n_graphs must be an int"),
])
def test_synthetic_collection_refuses_bad_parameters(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        make_graph_classification(**kwargs)


# ------------------------------------------------------------------------ real data
def test_enzymes_matches_the_readme_counts():
    if not (DATA / "tu" / "ENZYMES").is_dir():
        pytest.skip(f"dataset folder {DATA / 'tu' / 'ENZYMES'} is not available")
    X, y = load_tu_dataset("ENZYMES", DATA / "tu")
    assert len(X) == 600 and int(X.num_nodes.sum()) == 19580
    assert sum(g.num_edges for g in X) == 74564  # both directions, as in ENZYMES_A.txt
    assert np.unique(y).tolist() == [1, 2, 3, 4, 5, 6]
    assert X.num_features == 3 + 18  # one-hot node labels, then the attributes
    assert find_duplicate_graphs(X) == []
