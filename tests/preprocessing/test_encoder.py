"""Tests for the client-side CategoricalFeatureEncoder."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from skdpgraph.preprocessing import CategoricalFeatureEncoder


def test_or_groups_match_a_direct_computation():
    rng = np.random.default_rng(0)
    x = (rng.random((30, 53)) < 0.05).astype(float)
    codes = CategoricalFeatureEncoder(group_size=5).fit_transform(x)
    expected = np.stack([x[:, j:j + 5].max(axis=1) for j in range(0, 53, 5)], axis=1)
    np.testing.assert_array_equal(codes, expected)
    assert codes.shape == (30, 11)  # ceil(53 / 5); the last block has 3 columns


def test_cora_shape_and_sparse_input_agree():
    rng = np.random.default_rng(1)
    x = sp.random(40, 1433, density=0.01, random_state=1, format="csr")
    x.data[:] = 1.0
    enc = CategoricalFeatureEncoder(group_size=25).fit(x)
    np.testing.assert_array_equal(enc.domain_sizes_, np.full(58, 2))
    np.testing.assert_array_equal(enc.transform(x), enc.transform(x.toarray()))
    assert rng is not None


def test_binary_without_grouping_keeps_columns():
    x = np.array([[0, 1, 1], [1, 0, 0]])
    np.testing.assert_array_equal(CategoricalFeatureEncoder().fit_transform(x), x)


def test_continuous_columns_are_binned_equal_width():
    x = np.array([[0.0, -2.0], [0.49, 0.0], [0.5, 1.0], [1.0, 2.0]])
    enc = CategoricalFeatureEncoder(feature_type="continuous", n_bins=2).fit(x)
    np.testing.assert_array_equal(enc.transform(x), [[0, 0], [0, 1], [1, 1], [1, 1]])
    public = CategoricalFeatureEncoder(feature_type="continuous", n_bins=4,
                                       feature_range=(0.0, 1.0)).fit(x)
    codes = public.transform(np.array([[-5.0, 0.3], [5.0, 0.8]]))  # out of range: clipped
    np.testing.assert_array_equal(codes, [[0, 1], [3, 3]])
    np.testing.assert_array_equal(public.bin_edges_, np.tile(np.linspace(0, 1, 5), (2, 1)))


@pytest.mark.parametrize("feature_range", [(1.0, 1.0), (2.0, -1.0), (0.0, np.inf), (0.0,)])
def test_feature_range_must_be_an_increasing_finite_pair(feature_range):
    with pytest.raises(ValueError, match="feature_range must be"):
        CategoricalFeatureEncoder(feature_type="continuous", feature_range=feature_range).fit(
            np.array([[0.5], [2.0]]))


def test_input_not_modified_and_clone():
    x = np.array([[0.0, 1.0], [1.0, 1.0]])
    before = x.copy()
    enc = CategoricalFeatureEncoder(group_size=2)
    enc.fit_transform(x)
    np.testing.assert_array_equal(x, before)
    assert clone(enc).get_params() == enc.get_params()


def test_grouping_continuous_features_raises():
    with pytest.raises(ValueError, match="group_size=2.*feature_type='continuous'"):
        CategoricalFeatureEncoder(feature_type="continuous", group_size=2).fit(np.eye(2))


@pytest.mark.parametrize("sparse", [False, True])
def test_binary_schema_refuses_other_values_by_name(sparse):
    x = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 0.5]])
    given = sp.csr_matrix(x) if sparse else x
    match = r"feature_type='binary'.*X\[2, 1\] = 0.5"
    with pytest.raises(ValueError, match=match):
        CategoricalFeatureEncoder().fit(given)
    enc = CategoricalFeatureEncoder().fit(x[:2])
    with pytest.raises(ValueError, match=match):
        enc.transform(given)
    assert enc.domain_sizes_.tolist() == [2, 2]  # from the schema, never from the values


@pytest.mark.parametrize("n_bins, feature_range", [(4, (-1.5, 1.5)), (5, None), (2, (0.0, 1.0))])
def test_bin_codes_count_the_interior_edges_at_or_below_each_value(n_bins, feature_range):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, 7))
    enc = CategoricalFeatureEncoder(feature_type="continuous", n_bins=n_bins,
                                    feature_range=feature_range).fit(x)
    x[:5] = enc.bin_edges_[:, 1:2].T  # values exactly on an edge go to the upper bin
    inner = enc.bin_edges_[:, 1:-1]
    expected = (x[:, :, None] >= inner[None, :, :]).sum(axis=2)  # the (n, d, bins) formula
    codes = enc.transform(x)
    np.testing.assert_array_equal(codes, expected)
    assert codes.dtype == np.int64 and set(np.unique(codes)) <= set(range(n_bins))
    assert (codes[:5] >= 1).all()
