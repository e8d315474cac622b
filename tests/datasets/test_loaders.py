import io
import json
import pickle
import shutil
import zipfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from skdpgraph.datasets import (
    GraphDataset,
    load_dataset,
    load_edge_list_csv,
    load_musae,
    load_npz,
    load_npz_zip,
    load_planetoid,
)
from skdpgraph.graph import Graph

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"


def _edges(dataset):
    """The set of undirected edges of a dataset's graph."""
    source, target = dataset.graph.edge_index
    return {(int(a), int(b)) for a, b in zip(source, target) if a < b}


# ----------------------------------------------------------------------- GraphDataset
def test_graph_dataset_validates_and_indexes():
    graph = Graph([[0, 1], [1, 2]], np.eye(3))
    data = GraphDataset("toy", graph, [0, 1, -1], split={"train": np.array([True, False, True])})
    assert data.split["train"].tolist() == [0, 2]
    assert data.labels("train").tolist() == [0, -1]
    assert data.num_classes == 2
    assert data.nodes().index.tolist() == [0, 1, 2]
    assert not data.y.flags.writeable
    with pytest.raises(ValueError, match=r"y must have shape \(3,\)"):
        GraphDataset("toy", graph, [0, 1])
    with pytest.raises(ValueError, match="y must hold integer class codes"):
        GraphDataset("toy", graph, [0.5, 1, 1])
    with pytest.raises(ValueError, match=r"split\['test'\] must hold node ids in 0..2"):
        GraphDataset("toy", graph, [0, 1, 1], split={"test": [3]})
    with pytest.raises(ValueError, match="has no split part 'val'"):
        data.nodes("val")
    with pytest.raises(ValueError, match="has no standard split"):
        GraphDataset("toy", graph, [0, 1, 1]).labels("train")
    with pytest.raises(TypeError, match="graph must be a skdpgraph.Graph"):
        GraphDataset("toy", np.eye(3), [0, 1, 1])


# ----------------------------------------------------------------------- Planetoid
def _write_planetoid(folder, prefix="toy"):
    """A 9-node Planetoid set in the raw format: 5 known nodes, test ids 5..8 with 7 missing."""
    folder.mkdir(parents=True, exist_ok=True)
    allx = sp.csr_matrix(np.arange(5 * 3).reshape(5, 3) % 2, dtype=np.float32)
    ally = np.eye(3)[[0, 1, 2, 0, 1]]
    tx = sp.csr_matrix([[9, 0, 0], [0, 9, 0], [0, 0, 9]], dtype=np.float32)
    ty = np.eye(3)[[2, 1, 0]]
    graph = defaultdict(list, {0: [1, 1, 0], 1: [0, 2], 2: [1], 5: [8], 6: [3], 8: [5]})
    items = {"x": allx[:2], "y": ally[:2], "allx": allx, "ally": ally, "tx": tx, "ty": ty,
             "graph": graph}
    for part, item in items.items():
        with open(folder / f"ind.{prefix}.{part}", "wb") as handle:
            pickle.dump(item, handle)
    (folder / f"ind.{prefix}.test.index").write_text("8\n5\n6\n")
    return allx, tx


def test_planetoid_places_test_rows_and_fills_gaps(tmp_path):
    allx, tx = _write_planetoid(tmp_path)
    data = load_planetoid(tmp_path, "toy")
    x = data.graph.x.toarray()
    assert data.graph.num_nodes == 9
    assert np.array_equal(x[:5], allx.toarray())
    assert np.array_equal(x[[8, 5, 6]], tx.toarray())  # row i of tx belongs to test.index[i]
    assert np.array_equal(x[7], np.zeros(3))  # a missing test id is an all-zero row
    assert data.y.tolist() == [0, 1, 2, 0, 1, 1, 0, 0, 2]
    assert data.split["train"].tolist() == [0, 1]
    assert data.split["val"].tolist() == [2, 3, 4]  # PyG: the next 500, here cut at test ids
    assert data.split["test"].tolist() == [5, 6, 8]
    assert _edges(data) == {(0, 1), (1, 2), (3, 6), (5, 8)}


def test_planetoid_missing_file_names_file_and_folder(tmp_path):
    _write_planetoid(tmp_path)
    (tmp_path / "ind.toy.graph").unlink()
    with pytest.raises(FileNotFoundError, match=r"'ind\.toy\.graph' not found in folder"):
        load_planetoid(tmp_path, "toy")
    with pytest.raises(FileNotFoundError, match=r"'ind\.cora\.x' not found"):
        load_planetoid(tmp_path / "nowhere")


# ----------------------------------------------------------------------- MUSAE
def _write_musae(folder):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "page_edges.csv").write_text("id_1,id_2\n0,1\n1,2\n2,2\n3,0\n")
    (folder / "page_target.csv").write_text(
        'id,facebook_id,page_name,page_type\n2,11,"Shop, Inc.",company\n0,12,Gov,government\n'
        "1,13,Show,tvshow\n3,14,Acme,company\n"
    )
    (folder / "page.json").write_text(json.dumps({"0": [0, 4], "1": [], "2": [1, 1], "3": [3]}))


def test_musae_reads_labels_features_and_edges(tmp_path):
    _write_musae(tmp_path)
    data = load_musae(tmp_path, "page")
    assert data.class_names == ("company", "government", "tvshow")
    assert data.y.tolist() == [1, 2, 0, 0]
    assert sp.issparse(data.graph.x)
    assert data.graph.x.toarray().tolist() == [
        [1, 0, 0, 0, 1], [0, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 0, 1, 0]]
    assert _edges(data) == {(0, 1), (1, 2), (0, 3)}  # the self-loop 2-2 is dropped
    assert "page_type" in data.description


def test_musae_errors(tmp_path):
    _write_musae(tmp_path)
    with pytest.raises(ValueError, match="has no column 'kind'"):
        load_musae(tmp_path, "page", target_column="kind")
    (tmp_path / "page.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"'page\.json' not found in folder"):
        load_musae(tmp_path, "page")


# ----------------------------------------------------------------------- npz
def _npz_arrays():
    adjacency = sp.csr_matrix(np.array([[0, 1, 0], [0, 1, 1], [0, 0, 0]], dtype=np.float32))
    attributes = sp.csr_matrix(np.array([[2, 0], [0, 1], [0, 0]], dtype=np.float32))
    return {
        "adj_data": adjacency.data, "adj_indices": adjacency.indices,
        "adj_indptr": adjacency.indptr, "adj_shape": np.array(adjacency.shape),
        "attr_data": attributes.data, "attr_indices": attributes.indices,
        "attr_indptr": attributes.indptr, "attr_shape": np.array(attributes.shape),
        "labels": np.array([1, 0, 1]), "class_names": np.array(["a", "b"]),
    }


def _npz_bytes(arrays):
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def test_npz_and_zipped_npz_agree(tmp_path):
    (tmp_path / "tiny.npz").write_bytes(_npz_bytes(_npz_arrays()))
    with zipfile.ZipFile(tmp_path / "tiny-graph.zip", "w") as archive:
        archive.writestr("tiny.npz", _npz_bytes(_npz_arrays()))
    plain = load_npz(tmp_path / "tiny.npz")
    zipped = load_npz_zip(tmp_path, "tiny_graph")  # folder + name -> tiny-graph.zip
    for data in (plain, zipped):
        assert data.graph.num_nodes == 3
        assert _edges(data) == {(0, 1), (1, 2)}  # symmetrised, self-loop removed
        assert data.graph.x.toarray().tolist() == [[1, 0], [0, 1], [0, 0]]  # binarised
        assert data.y.tolist() == [1, 0, 1] and data.class_names == ("a", "b")
    assert plain.name == "tiny" and zipped.name == "tiny_graph"
    counts = load_npz(tmp_path / "tiny.npz", binarize=False)
    assert counts.graph.x.toarray()[0, 0] == 2


def test_npz_errors(tmp_path):
    arrays = _npz_arrays()
    del arrays["labels"]
    (tmp_path / "bad.npz").write_bytes(_npz_bytes(arrays))
    with pytest.raises(ValueError, match=r"lacks the keys \['labels'\]"):
        load_npz(tmp_path / "bad.npz")
    with pytest.raises(FileNotFoundError, match=r"'none\.npz' not found in folder"):
        load_npz(tmp_path / "none.npz")
    with pytest.raises(FileNotFoundError, match=r"'amazon_x\.zip' or 'amazon-x\.zip' not found"):
        load_npz_zip(tmp_path, "amazon_x")
    with zipfile.ZipFile(tmp_path / "two.zip", "w") as archive:
        archive.writestr("a.npz", _npz_bytes(_npz_arrays()))
        archive.writestr("b.npz", _npz_bytes(_npz_arrays()))
    with pytest.raises(ValueError, match="holds 2 .npz members"):
        load_npz_zip(tmp_path / "two.zip")
    assert load_npz_zip(tmp_path / "two.zip", member="b.npz").name == "two"
    with pytest.raises(FileNotFoundError, match="member 'c.npz' not found"):
        load_npz_zip(tmp_path / "two.zip", member="c.npz")


# ----------------------------------------------------------------------- CSV
def test_edge_list_csv_with_features_and_labels(tmp_path):
    (tmp_path / "edges.csv").write_text("src,dst\n10,20\n20,30\n30,10\n")
    (tmp_path / "features.csv").write_text("id,f1,f2\n30,3,0.5\n10,1,0\n20,2,-1\n")
    (tmp_path / "labels.csv").write_text("node,label\n10,5\n30,10\n")
    data = load_edge_list_csv(tmp_path / "edges.csv", tmp_path / "features.csv",
                              tmp_path / "labels.csv", label_column="label")
    assert data.node_ids.tolist() == [10, 20, 30]
    assert data.graph.features().tolist() == [[1, 0], [2, -1], [3, 0.5]]
    assert data.y.tolist() == [0, -1, 1] and data.class_names == ("5", "10")
    assert _edges(data) == {(0, 1), (1, 2), (0, 2)}
    assert data.name == "edges"


def test_edge_list_csv_without_header_directed(tmp_path):
    (tmp_path / "e.tsv").write_text("b\ta\nc\tb\n")
    data = load_edge_list_csv(tmp_path / "e.tsv", delimiter="\t", header=False, directed=True)
    assert data.node_ids.tolist() == ["a", "b", "c"]
    assert data.graph.edge_index.T.tolist() == [[1, 0], [2, 1]]
    assert data.graph.features().tolist() == [[1], [1], [1]]
    assert data.y.tolist() == [-1, -1, -1]


@pytest.mark.parametrize("edges, features, labels, kwargs, match", [
    ("a,b\n1,2\n", None, None, {"target_column": "dst"}, r"edges file 'edges\.csv' has no "
                                                         r"column 'dst'"),
    ("a,b\n1,2\n1,\n", None, None, {},
     r"row 2 of the edges file 'edges\.csv' has an empty cell in column 'b'"),
    ("a,b\n1,2\n2,7\n", "id,f\n1,0\n2,1\n", None, {},
     r"row 2 of the edges file 'edges\.csv' has target 7, which is not a node id"),
    ("a,b\n1,2\n", "id,f,g\n1,0,1\n2,x,1\n", None, {},
     r"row 2, column 'f' of the features file 'features\.csv' holds 'x'"),
    ("a,b\n1,2\n", "id,f\n1,0\n2,nan\n", None, {},
     r"row 2, column 'f' of the features file 'features\.csv' holds 'nan'"),
    ("a,b\n1,2\n", "id,f\n1,0\n1,1\n", None, {},
     r"node id 1 appears twice in the features file 'features\.csv' \(rows 1 and 2\)"),
    ("a,b\n1,2\n", "id,f\n1,0\n2,1\n", "id,y\n1,a\n3,b\n", {},
     r"row 2 of the labels file 'labels\.csv' has id 3"),
    ("a,b\n1,2\n", None, "id,y\n1,a\n", {"label_column": 5}, r"has 2 columns; column position 5"),
    ("a,b\n1,2\n1,2,3\n", None, None, {},
     r"cannot parse the edges file 'edges\.csv': row 2 has 3 fields, not 2"),
    ("", None, None, {}, r"cannot parse the edges file 'edges\.csv': the file is empty"),
    ("a,b\n1,2\n", "id,f\n", None, {}, r"no node ids found in 'edges\.csv'"),
    ("a,b\n1,2,3\n", None, None, {},
     r"cannot parse the edges file 'edges\.csv': row 1 has 3 fields, not 2"),
])
def test_edge_list_csv_errors_name_file_row_and_column(tmp_path, edges, features, labels,
                                                       kwargs, match):
    (tmp_path / "edges.csv").write_text(edges)
    paths = {}
    for key, text in (("features", features), ("labels", labels)):
        if text is not None:
            paths[f"{key}_path"] = tmp_path / f"{key}.csv"
            paths[f"{key}_path"].write_text(text)
    with pytest.raises(ValueError, match=match):
        load_edge_list_csv(tmp_path / "edges.csv", **paths, **kwargs)


def test_edge_list_csv_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"'edges\.csv' not found in folder"):
        load_edge_list_csv(tmp_path / "edges.csv")
    (tmp_path / "edges.csv").write_text("a,b\n1,2\n")
    with pytest.raises(FileNotFoundError, match=r"'labels\.csv' not found"):
        load_edge_list_csv(tmp_path / "edges.csv", labels_path=tmp_path / "labels.csv")


# ----------------------------------------------------------------------- load_dataset
def test_load_dataset_dispatches_and_rejects_unknown_names(tmp_path):
    _write_planetoid(tmp_path / "cora", prefix="cora")
    assert load_dataset("Cora", root=tmp_path).graph.num_nodes == 9
    with pytest.raises(ValueError, match=r"unknown dataset 'pubmed'; known datasets are "
                                         r"\['amazon_computers', .*'cora'"):
        load_dataset("pubmed", root=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"'facebook_edges\.csv' not found"):
        load_dataset("facebook", root=tmp_path)


# ----------------------------------------------------------------------- real data
def _require_data(name):
    if not (DATA / name).is_dir():
        pytest.skip(f"dataset folder {DATA / name} is not available")


@pytest.mark.parametrize("name, nodes, edges, features, classes", [
    ("cora", 2708, 5278, 1433, 7),
    ("facebook", 22470, 170823, 4714, 4),
    ("amazon_computers", 13752, 245861, 767, 10),
    ("amazon_photo", 7650, 119081, 745, 8),
    ("coauthor_cs", 18333, 81894, 6805, 15),
])
def test_real_datasets_match_the_readme_counts(name, nodes, edges, features, classes):
    _require_data(name)
    data = load_dataset(name, root=DATA)
    assert data.graph.num_nodes == nodes
    assert data.graph.num_edges == 2 * edges  # Graph stores both directions
    assert data.graph.num_features == features
    assert data.num_classes == classes
    if name == "facebook":
        assert data.graph.x.nnz == 314583
        assert data.class_names == ("company", "government", "politician", "tvshow")


def test_cora_matches_torch_geometric_planetoid(tmp_path, monkeypatch):
    _require_data("cora")
    Planetoid = pytest.importorskip("torch_geometric.datasets").Planetoid
    raw = tmp_path / "Cora" / "raw"
    raw.mkdir(parents=True)
    for path in (DATA / "cora").glob("ind.cora.*"):
        shutil.copy(path, raw / path.name)

    def no_download(self):
        raise AssertionError("PyG tried to download")

    monkeypatch.setattr(Planetoid, "download", no_download)
    reference = Planetoid(str(tmp_path), "Cora")[0]
    data = load_planetoid(DATA / "cora")
    assert np.array_equal(data.graph.x.toarray(), reference.x.numpy())
    assert np.array_equal(data.y, reference.y.numpy())
    for part in ("train", "val", "test"):
        mask = getattr(reference, f"{part}_mask").numpy()
        assert np.array_equal(data.split[part], np.flatnonzero(mask))
    expected = reference.edge_index.numpy()
    assert _edges(data) == {(int(a), int(b)) for a, b in expected.T if a < b}
    assert data.graph.num_edges == expected.shape[1]


def test_amazon_photo_matches_torch_geometric_amazon(tmp_path, monkeypatch):
    _require_data("amazon_photo")
    Amazon = pytest.importorskip("torch_geometric.datasets").Amazon
    raw = tmp_path / "Photo" / "raw"
    raw.mkdir(parents=True)
    with zipfile.ZipFile(DATA / "amazon_photo" / "amazon-photo.zip") as archive:
        (raw / "amazon_electronics_photo.npz").write_bytes(
            archive.read("amazon_electronics_photo.npz"))
    monkeypatch.setattr(Amazon, "download", lambda self: None)
    reference = Amazon(str(tmp_path), "Photo")[0]
    data = load_dataset("amazon_photo", root=DATA)
    assert np.array_equal(data.graph.x.toarray(), reference.x.numpy())
    assert np.array_equal(data.y, reference.y.numpy())
    adjacency = sp.csr_matrix((np.ones(reference.edge_index.shape[1]),
                               tuple(reference.edge_index.numpy()[::-1])), shape=(7650, 7650))
    assert (adjacency != data.graph.adjacency()).nnz == 0
