"""The randomness module: independent streams per purpose, nothing replayable after fit."""

import numpy as np
import pytest
import torch

from skdpgraph._random import (
    PURPOSES, RandomStreams, keyed_generator, prediction_key, public_generator, release_streams,
)


def _first_uniforms(generator: torch.Generator, n: int = 4000) -> np.ndarray:
    return torch.rand(n, generator=generator).numpy()


def test_every_purpose_gets_its_own_stream():
    streams = RandomStreams(0)
    draws = {p: _first_uniforms(streams.torch(p)) for p in PURPOSES}
    for i, a in enumerate(PURPOSES):
        for b in PURPOSES[i + 1:]:
            # Independent uniforms: correlation ~ N(0, 1/4000); 0.1 is > 6 standard errors.
            assert abs(np.corrcoef(draws[a], draws[b])[0, 1]) < 0.1, (a, b)
            assert not np.allclose(draws[a], draws[b])


def test_asking_twice_gives_a_new_independent_stream():
    streams = RandomStreams(0)
    first, second = _first_uniforms(streams.torch(
        "batches")), _first_uniforms(streams.torch("batches"))
    assert abs(np.corrcoef(first, second)[0, 1]) < 0.1


def test_initialisation_stream_is_not_the_batch_stream():
    """The leak of the old code: init uniforms equal to the sampler's uniforms."""
    streams = RandomStreams(0)
    with streams.initialisation():
        init = torch.rand(4000).numpy()
    batches = _first_uniforms(streams.torch("batches"))
    assert abs(np.corrcoef(init, batches)[0, 1]) < 0.1


def test_initialisation_restores_global_state():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    with RandomStreams(0).initialisation():
        torch.rand(10)
    assert torch.equal(torch.rand(3), expected)


def test_same_seed_same_streams_and_none_draws_from_os():
    assert np.array_equal(_first_uniforms(RandomStreams(7).torch("noise")),
                          _first_uniforms(RandomStreams(7).torch("noise")))
    assert not np.array_equal(_first_uniforms(RandomStreams(None).torch("noise")),
                              _first_uniforms(RandomStreams(None).torch("noise")))
    rs = np.random.RandomState(3)
    assert RandomStreams(rs).integer("split") != RandomStreams(rs).integer("split")


def test_release_streams_never_replay_training_noise():
    a, b = "ab" * 32, "cd" * 32  # two content fingerprints
    training = _first_uniforms(RandomStreams(0).torch("noise"))
    release = _first_uniforms(release_streams(0, a).torch("noise"))
    other_data = _first_uniforms(release_streams(0, b).torch("noise"))
    for x, y in [(training, release), (release, other_data)]:
        assert abs(np.corrcoef(x, y)[0, 1]) < 0.1
    # With a seed, the same release on the same content is reproducible (reveals nothing new).
    assert np.array_equal(release, _first_uniforms(release_streams(0, a).torch("noise")))
    assert not np.array_equal(_first_uniforms(release_streams(None, a).torch("noise")),
                              _first_uniforms(release_streams(None, a).torch("noise")))


def test_prediction_key_is_fresh_without_a_seed_and_deterministic_with_one():
    assert prediction_key(None) != prediction_key(None)
    assert prediction_key(5) == prediction_key(5) != prediction_key(6)
    a = keyed_generator(prediction_key(5), 1, 2).random(3)
    assert np.array_equal(a, keyed_generator(prediction_key(5), 1, 2).random(3))
    assert not np.array_equal(a, keyed_generator(prediction_key(5), 1, 3).random(3))


def test_prediction_key_is_not_a_training_seed():
    """A key derived for prediction reproduces none of the training streams."""
    key = prediction_key(0)
    training = {p: RandomStreams(0).integer(p) for p in PURPOSES}
    assert key not in training.values()
    for candidate in (key, key & 0xFFFFFFFF, key >> 96):
        assert not np.array_equal(_first_uniforms(RandomStreams(candidate).torch("batches")),
                                  _first_uniforms(RandomStreams(0).torch("batches")))


@pytest.mark.parametrize("bad", [True, "seed", 1.5])
def test_bad_random_state_is_refused(bad):
    with pytest.raises(TypeError, match="random_state"):
        RandomStreams(bad)


def test_unknown_purpose_is_refused():
    with pytest.raises(ValueError, match="unknown purpose"):
        RandomStreams(0).numpy("weights")


def test_public_generator_accepts_the_usual_forms():
    g = np.random.default_rng(0)
    assert public_generator(g) is g
    assert public_generator(np.random.RandomState(0)).integers(10) >= 0
    with pytest.raises(ValueError, match="random_state"):
        public_generator("x")


def test_fits_in_threads_are_reproducible_and_independent():
    # torch's global generator is process-wide: two fits initialising at once in threads
    # would draw from each other's seeds (and restore each other's saved state).
    from concurrent.futures import ThreadPoolExecutor

    from skdpgraph import DPMLPClassifier
    from skdpgraph.datasets import make_csbm

    data = make_csbm(n_nodes=200, random_state=0)
    X, y = data.nodes(), data.y

    def weights(seed):
        est = DPMLPClassifier(epsilon=8.0, hidden_dim=32, epochs=3, batch_size=64,
                              dropout=0.2, random_state=seed).fit(X, y)
        return torch.cat([p.detach().ravel() for p in est.module_.parameters()])

    expected = {seed: weights(seed) for seed in (0, 1)}
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(weights, [0, 1] * 8))
    for seed, got in zip([0, 1] * 8, results):
        torch.testing.assert_close(got, expected[seed], rtol=0, atol=0)
