import numpy as np
import pytest

from skdpgraph.datasets import train_val_test_split


@pytest.fixture
def y():
    return np.repeat(np.arange(4), [400, 300, 200, 100])


@pytest.mark.parametrize("sizes", [(0.75, 0.10), (0.5, 0.25)])
def test_parts_are_disjoint_sorted_and_cover_the_nodes(y, sizes):
    split = train_val_test_split(y, *sizes, random_state=0)
    assert list(split) == ["train", "val", "test"]
    ids = np.concatenate(list(split.values()))
    assert np.array_equal(np.sort(ids), np.arange(len(y)))
    for part in split.values():
        assert part.dtype == np.int64
        assert np.all(np.diff(part) > 0)
    assert len(split["train"]) == int(sizes[0] * len(y))
    assert len(split["val"]) == int(sizes[1] * len(y))


@pytest.mark.parametrize("sizes", [(0.75, 0.10), (0.5, 0.25), (0.1, 0.1)])
def test_stratification_keeps_class_proportions(y, sizes):
    split = train_val_test_split(y, *sizes, random_state=1)
    share = np.bincount(y) / len(y)
    for part in split.values():
        counts = np.bincount(y[part], minlength=4)
        assert np.all(np.abs(counts - share * len(part)) <= 2)


def test_without_stratification_parts_are_random(y):
    split = train_val_test_split(y, 0.5, 0.25, stratify=False, random_state=0)
    assert [len(p) for p in split.values()] == [500, 250, 250]
    assert not np.array_equal(split["train"], np.arange(500))


def test_same_seed_same_split_other_seed_other_split(y):
    a = train_val_test_split(y, 0.5, 0.25, random_state=3)
    b = train_val_test_split(y, 0.5, 0.25, random_state=3)
    c = train_val_test_split(y, 0.5, 0.25, random_state=4)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["train"], c["train"])


def test_integer_sizes_and_explicit_test_size_leave_the_rest_out(y):
    split = train_val_test_split(y, 140, 500, 100, random_state=0)
    assert [len(p) for p in split.values()] == [140, 500, 100]
    assert len(np.unique(np.concatenate(list(split.values())))) == 740


def test_string_labels_and_generator_seed():
    y = np.array(["a", "b"] * 10)
    split = train_val_test_split(y, 0.5, 0.0, random_state=np.random.default_rng(0))
    assert len(split["val"]) == 0
    assert sorted(np.unique(y[split["train"]], return_counts=True)[1]) == [5, 5]


@pytest.mark.parametrize("sizes, match", [
    ((0.8, 0.3), "more than the 1000 nodes"),
    ((1.5, 0.1), "train_size=1.5 is a fraction"),
    ((100, 2000), "val_size=2000 must be between 0"),
    ((0.5, 0.2, 0.5), "more than the 1000 nodes"),
])
def test_bad_sizes_raise(y, sizes, match):
    with pytest.raises(ValueError, match=match):
        train_val_test_split(y, *sizes)


def test_bad_types_raise(y):
    with pytest.raises(TypeError, match="train_size must be a float or an int"):
        train_val_test_split(y, True, 0.1)
    with pytest.raises(ValueError, match="y must be 1-D"):
        train_val_test_split(y.reshape(-1, 2), 0.5, 0.1)
