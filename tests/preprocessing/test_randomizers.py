"""Tests for the GRR-FS and GRR transformers: wiring to the pure mechanisms, sklearn API."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from skdpgraph._random import RandomStreams
from skdpgraph.preprocessing import (CategoricalFeatureEncoder, GRRFeatureRandomizer,
                                     GRRLabelRandomizer)
from skdpgraph.preprocessing._randomizers import client_generators
from skdpgraph.privacy import grr_fs_randomize, grr_randomize


@pytest.fixture
def codes():
    return np.random.default_rng(0).integers(0, 2, size=(200, 12))


def test_feature_randomizer_is_grr_fs_with_its_stream(codes):
    rand = GRRFeatureRandomizer(epsilon_per_feature=0.7, n_sampled_features=4, random_state=3)
    out = rand.fit_transform(codes)
    rng = client_generators(RandomStreams(3))[0]
    np.testing.assert_array_equal(out, grr_fs_randomize(codes, [2] * 12, 0.7, 4, rng))
    assert rand.epsilon_ == pytest.approx(4 * 0.7)
    np.testing.assert_array_equal(rand.domain_sizes_, np.full(12, 2))


def test_feature_randomizer_seeding_and_purity(codes):
    before = codes.copy()
    rand = GRRFeatureRandomizer(epsilon_per_feature=1.0, n_sampled_features=3, random_state=0)
    first = rand.fit_transform(codes)
    np.testing.assert_array_equal(codes, before)  # input untouched
    np.testing.assert_array_equal(first, rand.fit(codes).transform(codes))  # deterministic
    other = clone(rand).set_params(random_state=1).fit_transform(codes)
    assert not np.array_equal(first, other)
    assert (first != codes).any()  # it does randomise


def test_feature_randomizer_caps_m_and_checks_domains(codes):
    rand = GRRFeatureRandomizer(epsilon_per_feature=1.0, n_sampled_features=50).fit(codes)
    assert rand.n_sampled_features_ == 12 and rand.epsilon_ == 12.0
    with pytest.raises(ValueError, match="one domain size per column"):
        GRRFeatureRandomizer(domain_sizes=[2, 2]).fit(codes)
    with pytest.raises(ValueError, match="non-negative integer category codes"):
        GRRFeatureRandomizer().fit(codes - 1)
    with pytest.raises(ValueError, match="values must lie in"):
        GRRFeatureRandomizer(domain_sizes=[2] * 12).fit(codes).transform(codes + 1)


def test_pipeline_encoder_then_randomizer():
    x = (np.random.default_rng(2).random((50, 40)) < 0.1).astype(float)
    pipe = make_pipeline(CategoricalFeatureEncoder(group_size=10),
                         GRRFeatureRandomizer(n_sampled_features=2, random_state=0))
    out = pipe.fit_transform(x)
    assert out.shape == (50, 4) and set(np.unique(out)) <= {0, 1}


def test_label_randomizer_wiring_and_label_types():
    y = np.array(["cat", "dog", "eel"] * 100)
    rand = GRRLabelRandomizer(epsilon=1.0, random_state=5)
    out = rand.fit_transform(y)
    codes = np.searchsorted(rand.classes_, y)
    rng = client_generators(RandomStreams(5))[1]
    np.testing.assert_array_equal(out, rand.classes_[grr_randomize(codes, 3, 1.0, rng)])
    assert out.dtype == y.dtype and (out != y).any()
    np.testing.assert_array_equal(GRRLabelRandomizer(epsilon=np.inf).fit_transform(y), y)


def test_label_randomizer_public_domain_and_unknown_labels():
    rand = GRRLabelRandomizer(epsilon=0.1, classes=[0, 1, 2, 3], random_state=0).fit([0, 0])
    assert set(rand.transform(np.zeros(400, int))) == {0, 1, 2, 3}
    with pytest.raises(ValueError, match="outside classes_"):
        rand.transform([7])


def test_feature_and_label_streams_are_independent():
    features, labels = client_generators(RandomStreams(11))
    a, b = features.random(1000), labels.random(1000)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.15 and not np.allclose(a[:5], b[:5])
    # and neither is a stream of another purpose of the same root
    streams = RandomStreams(11)
    others = [streams.numpy(purpose).random(5) for purpose in ("init", "split", "walks")]
    assert not any(np.allclose(a[:5], o) or np.allclose(b[:5], o) for o in others)


def test_random_state_none_is_a_fresh_release_on_every_call(codes):
    rand = GRRFeatureRandomizer(epsilon_per_feature=1.0, n_sampled_features=3).fit(codes)
    assert not np.array_equal(rand.transform(codes), rand.transform(codes))
    labels = GRRLabelRandomizer(epsilon=0.5).fit(np.arange(200) % 3)
    assert not np.array_equal(labels.transform(np.arange(200) % 3),
                              labels.transform(np.arange(200) % 3))


def _reference_grr_fs(values, gammas, eps, m, rng):
    """GRR-FS written out: full sort of the keys, one probability per entry."""
    n, d = values.shape
    gamma = np.broadcast_to(gammas, (n, d))
    sampled = rng.random((n, d)).argsort(axis=1).argsort(axis=1) < m
    p = 1.0 / (1.0 + (gamma - 1) * np.exp(-eps))
    keep = rng.random((n, d)) < p
    offset = rng.integers(0, np.maximum(gamma - 1, 1), size=(n, d))
    randomised = np.where(keep, values, offset + (offset >= values))
    return np.where(sampled, randomised, rng.integers(0, gamma, size=(n, d)))


@pytest.mark.parametrize("gammas, m", [([2, 3, 4, 5, 2, 1, 9], 3), ([4] * 32, 10), ([2, 2], 2)])
@pytest.mark.parametrize("eps", [0.3, 2.0, np.inf])
def test_grr_fs_reports_equal_the_written_out_mechanism_draw_for_draw(gammas, m, eps):
    rng = np.random.default_rng(3)
    values = np.column_stack([rng.integers(0, g, 2000) for g in gammas])
    kept = values.copy()
    reports = grr_fs_randomize(values, gammas, eps, m, np.random.default_rng(4))
    expected = _reference_grr_fs(values, np.array(gammas), eps, m, np.random.default_rng(4))
    np.testing.assert_array_equal(reports, expected)
    assert reports.dtype == np.int64
    np.testing.assert_array_equal(values, kept)
