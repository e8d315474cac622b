import io

import numpy as np
import pandas as pd
import pickle
import pytest
import scipy.sparse as sp
import torch
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.utils import _safe_indexing

from skdpgraph import Graph, Nodes

EDGES = np.array([[0, 1, 1, 2, 3], [1, 2, 0, 3, 3]])  # a duplicate (1-0 vs 0-1) and a self-loop
X = np.arange(12, dtype=float).reshape(4, 3)


def test_undirected_graph_symmetrises_and_cleans():
    g = Graph(EDGES, X)
    pairs = set(map(tuple, g.edge_index.T.tolist()))
    assert pairs == {(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)}
    assert g.num_edges == 6 and g.num_nodes == 4 and g.num_features == 3
    assert g.in_degree().tolist() == [1, 2, 2, 1]
    A = g.adjacency()
    np.testing.assert_array_equal((A @ np.ones(4)), g.in_degree())


def test_directed_graph_keeps_direction():
    g = Graph([[0, 1], [1, 2]], X[:3], directed=True)
    A = g.adjacency().toarray()
    assert A[1, 0] == 1 and A[0, 1] == 0  # A[target, source]
    assert g.in_degree().tolist() == [0, 1, 1]


def test_graph_is_immutable_and_does_not_alias_inputs():
    x = X.copy()
    edges = EDGES.copy()
    g = Graph(edges, x)
    x[0, 0] = 99.0
    edges[0, 0] = 3
    assert g.x[0, 0] == 0.0
    np.testing.assert_array_equal(edges, np.array([[3, 1, 1, 2, 3], [1, 2, 0, 3, 3]]))
    with pytest.raises(ValueError, match="read-only"):
        g.x[0, 0] = 1.0
    with pytest.raises(AttributeError, match="immutable"):
        g.directed = True


def test_converters_agree():
    reference = Graph(EDGES, X)
    adjacency = sp.coo_matrix((np.ones(5), (EDGES[0], EDGES[1])), shape=(4, 4))
    from_scipy = Graph.from_scipy(adjacency, X)
    nx = pytest.importorskip("networkx")
    G = nx.Graph()
    G.add_nodes_from((i, {"x": X[i]}) for i in range(4))
    G.add_edges_from(EDGES.T.tolist())
    from_nx = Graph.from_networkx(G)
    from torch_geometric.data import Data
    from_pyg = Graph.from_pyg(Data(x=torch.tensor(X), edge_index=torch.tensor(EDGES)),
                              directed=False)
    nodes = pd.DataFrame({"id": ["a", "b", "c", "d"], "f0": X[:, 0], "f1": X[:, 1], "f2": X[:, 2]})
    edges = pd.DataFrame({"source": ["a", "b", "b", "c", "d"], "target": ["b", "c", "a", "d", "d"]})
    from_pd = Graph.from_pandas(nodes, edges)
    for other in (from_scipy, from_nx, from_pyg, from_pd):
        np.testing.assert_array_equal(other.edge_index, reference.edge_index)
        np.testing.assert_array_equal(other.features(), reference.features())


def test_from_networkx_needs_only_the_graph_interface():
    """networkx is optional: any object with ``nodes``, ``edges()``, ``is_directed()`` works."""
    class Table:
        nodes = {"a": {"x": [1.0]}, "b": {"x": [2.0]}, "c": {"x": [3.0]}}

        def edges(self):
            return [("a", "b"), ("b", "c")]

        def is_directed(self):
            return True

    g = Graph.from_networkx(Table())
    assert g.directed and g.edge_index.tolist() == [[0, 1], [1, 2]]
    assert g.features().ravel().tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("edge_index, x, match", [
    ([[0, 1], [1, 4]], X, "edge_index has node id 4 but num_nodes is 4"),
    ([[0, -1], [1, 2]], X, "edge_index has node id -1"),
    ([[0, 1, 2]], X, r"edge_index must have shape \(2, num_edges\)"),
    ([[0.5, 1], [1, 2]], X, "integer node ids"),
    ([[0], [1]], np.array([[0.0, np.nan]] * 4), "NaN or infinite values \\(first in row 0\\)"),
    ([[0], [1]], np.array([[0.0], [1.0], [np.inf], [1.0]]),
     "NaN or infinite values \\(first in row 2\\)"),
    ([[0], [1]], np.zeros((0, 3)), "empty"),
    ([[0], [1]], np.zeros(4), "must be 2-D"),
])
def test_invalid_graphs_name_the_problem(edge_index, x, match):
    with pytest.raises(ValueError, match=match):
        Graph(edge_index, x)


def test_from_pandas_errors_name_row_and_column():
    nodes = pd.DataFrame({"id": [1, 2], "f": [0.1, 0.2]})
    with pytest.raises(ValueError, match="edge row 1 has target 7"):
        Graph.from_pandas(nodes, pd.DataFrame({"source": [1, 2], "target": [2, 7]}))
    with pytest.raises(ValueError, match="edge table has no column 'target'"):
        Graph.from_pandas(nodes, pd.DataFrame({"source": [1], "dst": [2]}))
    bad = pd.DataFrame({"id": [1, 2], "f": ["0.1", "abc"]})
    with pytest.raises(ValueError,
                       match="feature column 'f' is not numeric \\(row 1 holds 'abc'\\)"):
        Graph.from_pandas(bad, pd.DataFrame({"source": [1], "target": [2]}), feature_columns=["f"])


def test_from_pandas_never_takes_the_label_column_as_a_feature():
    """The trap: 32 features and a label column gave 33 features (the label leaked)."""
    rng = np.random.default_rng(0)
    features = {f"f{i}": rng.normal(size=6) for i in range(32)}
    nodes = pd.DataFrame({"id": np.arange(6), **features, "label": [0, 1, 0, 1, 1, 0]})
    edges = pd.DataFrame({"source": [0, 1, 2], "target": [1, 2, 3]})
    with pytest.raises(ValueError, match=r"column 'label' looks like labels, so it is not used as "
                                         r"a feature.*label_column='label'.*feature_columns="):
        Graph.from_pandas(nodes, edges)
    graph, y = Graph.from_pandas(nodes, edges, label_column="label")
    assert graph.num_features == 32
    np.testing.assert_array_equal(graph.features(), nodes[list(features)].to_numpy(np.float32))
    assert y.tolist() == [0, 1, 0, 1, 1, 0]
    y[0] = 7  # the returned labels are a copy, not a view of the caller's table
    assert nodes["label"].iloc[0] == 0
    chosen = Graph.from_pandas(nodes, edges, feature_columns=["f0", "f1"])
    assert isinstance(chosen, Graph) and chosen.num_features == 2


@pytest.mark.parametrize("column", ["label", "Label", "node_label", "y", "target", "class"])
def test_from_pandas_refuses_every_label_like_column_by_default(column):
    nodes = pd.DataFrame({"id": [1, 2], "f": [0.1, 0.2], column: [0, 1]})
    with pytest.raises(ValueError, match=rf"column '{column}' looks like labels"):
        Graph.from_pandas(nodes, pd.DataFrame({"source": [1], "target": [2]}))


def test_from_pandas_label_column_errors():
    nodes = pd.DataFrame({"id": [1, 2], "f": [0.1, 0.2], "label": [0, 1]})
    edges = pd.DataFrame({"source": [1], "target": [2]})
    with pytest.raises(ValueError, match=r"node table has no label column 'y' \(columns: "
                                         r"\['id', 'f', 'label'\]\)"):
        Graph.from_pandas(nodes, edges, label_column="y")
    with pytest.raises(ValueError, match="'label' is both the label_column and in feature_columns"):
        Graph.from_pandas(nodes, edges, label_column="label", feature_columns=["f", "label"])


@pytest.mark.parametrize("nodes, kwargs, match", [
    (pd.DataFrame({"id": [1, 2], "f": ["1.2.3", "2"]}), {"feature_columns": ["f"]},
     r"feature column 'f' is not numeric \(row 0 holds '1\.2\.3'\)"),
    (pd.DataFrame({"id": [1, 2], "f": ["1.2.3", "2"]}), {},
     r"feature column 'f' is not numeric \(row 0 holds '1\.2\.3'\)"),
    (pd.DataFrame({"id": [1, 2], "f": ["2", None]}), {}, r"feature column 'f' is empty in row 1"),
    (pd.read_csv(io.StringIO("id,f\n")), {},
     r"the node table has no rows \(columns: \['id', 'f'\]\); at least one node is required"),
    (pd.read_csv(io.StringIO("id,f\n")), {"feature_columns": ["f"]}, r"the node table has no rows"),
    (pd.DataFrame({"id": [1, 2]}), {}, r"no feature columns: the node table has only \['id'\]"),
    (pd.DataFrame({"id": [1, 2], "f": [0.0, 1.0]}), {"feature_columns": "f"},
     r"feature_columns must be a list of column names; got str 'f'"),
    (pd.DataFrame({"id": [1.0, np.nan], "f": [0.0, 1.0]}), {},
     r"column 'id' has no node id in row 1"),
    (pd.DataFrame({"id": [1, 1], "f": [0.0, 1.0]}), {},
     r"column 'id' has duplicate node ids \(e\.g\. 1 in rows \[0, 1\]\)"),
])
def test_from_pandas_turns_crashes_into_clear_errors(nodes, kwargs, match):
    edges = pd.read_csv(io.StringIO("source,target\n"))  # a header-only edge table is fine
    with pytest.raises(ValueError, match=r"^Graph\.from_pandas: " + match):
        Graph.from_pandas(nodes, edges, **kwargs)


def test_from_pandas_reads_numbers_written_as_text_and_header_only_edges():
    nodes = pd.DataFrame({"id": ["a", "b"], "f": ["1.5", " -2e1 "]})
    graph = Graph.from_pandas(nodes, pd.read_csv(io.StringIO("source,target\n")))
    assert graph.num_edges == 0 and graph.features().ravel().tolist() == [1.5, -20.0]


def test_nodes_indexing_returns_nodes_of_the_same_graph():
    g = Graph(EDGES, X)
    nodes = g.nodes()
    assert len(nodes) == 4 and nodes.shape == (4, 3)
    sub = nodes[np.array([3, 1])]
    assert isinstance(sub, Nodes) and sub.graph is g and sub.index.tolist() == [3, 1]
    assert sub[[1]].index.tolist() == [1]
    assert nodes[np.array([True, False, True, False])].index.tolist() == [0, 2]
    assert nodes[1:3].index.tolist() == [1, 2]
    assert _safe_indexing(nodes, np.array([2, 0])).index.tolist() == [2, 0]
    np.testing.assert_array_equal(np.asarray(sub), X[[3, 1]])
    with pytest.raises(IndexError, match="out of range"):
        nodes[[7]]
    with pytest.raises(ValueError, match="boolean mask has length 2 but there are 4 nodes"):
        nodes[np.array([True, False])]


def test_nodes_through_sklearn_splitters():
    rng = np.random.default_rng(0)
    g = Graph(rng.integers(0, 40, size=(2, 80)), rng.normal(size=(40, 2)))
    y = np.repeat([0, 1], 20)
    X_tr, X_te, y_tr, y_te = train_test_split(g.nodes(), y, stratify=y, test_size=0.25,
                                              random_state=0)
    assert isinstance(X_tr, Nodes) and X_tr.graph is g
    assert sorted(np.concatenate([X_tr.index, X_te.index]).tolist()) == list(range(40))
    np.testing.assert_array_equal(y[X_te.index], y_te)
    for train, test in StratifiedKFold(3).split(g.nodes(), y):
        assert g.nodes()[train].graph is g


def test_graph_pickles_with_its_uid():
    g = Graph(EDGES, sp.csr_matrix(X))
    clone = pickle.loads(pickle.dumps(g))
    assert clone.uid == g.uid
    assert Graph(EDGES, X).uid != g.uid
    np.testing.assert_array_equal(clone.features(), X.astype(np.float32))


def test_api_reference_lists_every_public_class_and_function():
    """doc/api.rst names every public class and function of each subpackage."""
    import importlib
    import inspect
    import pathlib
    import re

    text = (pathlib.Path(__file__).parents[1] / "doc" / "api.rst").read_text()
    for name in ["skdpgraph", "skdpgraph.model_selection", "skdpgraph.preprocessing",
                 "skdpgraph.datasets", "skdpgraph.privacy", "skdpgraph.sampling", "skdpgraph.nn"]:
        module = importlib.import_module(name)
        public = [n for n in module.__all__
                  if inspect.isclass(getattr(module, n)) or inspect.isfunction(getattr(module, n))]
        missing = [n for n in public if not re.search(rf"^\s+{re.escape(n)}\s*$", text, re.M)]
        assert missing == [], f"doc/api.rst does not list {name}.{missing}"
