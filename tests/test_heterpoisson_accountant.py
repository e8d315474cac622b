"""The heterpoisson accountant study (benchmarks/studies/heterpoisson/): the mixture it
accounts is the one described."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import trapezoid
from scipy.stats import norm, poisson

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location(
        "heterpoisson_accountant",
        ROOT / "benchmarks" / "studies" / "heterpoisson" / "heterpoisson_accountant.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hockey_stick(q, neighbours, sigma, epsilon):
    """delta(epsilon) of one step, integrated directly from the described mixture."""
    shifts = np.array([r + 2 * n for r in (0, 1) for n in range(40)], dtype=float)
    weights = np.array([(q if r else 1 - q) * poisson.pmf(n, q * neighbours)
                        for r in (0, 1) for n in range(40)])
    x = np.linspace(-14 * sigma, 40 + 14 * sigma, 400_001)
    mixture = norm.pdf(x[:, None], loc=shifts, scale=sigma) @ weights
    gaussian = norm.pdf(x, scale=sigma)
    return max(trapezoid(np.maximum(0, mixture - np.exp(epsilon) * gaussian), x),
               trapezoid(np.maximum(0, gaussian - np.exp(epsilon) * mixture), x))


@pytest.mark.parametrize("q, neighbours, sigma, epsilon", [(0.3, 2, 1.5, 1.0), (0.1, 5, 2.0, 0.5)])
def test_one_step_matches_a_direct_integration_of_the_mixture(q, neighbours, sigma, epsilon,
                                                              monkeypatch):
    module = _module()
    monkeypatch.setattr(module, "DISCRETISATION", 1e-2)
    pld = module.mixture_pld(sigma, q, neighbours)
    expected = _hockey_stick(q, neighbours, sigma, epsilon)
    assert pld.get_delta_for_epsilon(epsilon) == pytest.approx(expected, rel=1e-3)


def test_calibrated_noise_meets_the_target_no_less_noise_does_and_appearances_cost(monkeypatch):
    module = _module()
    monkeypatch.setattr(module, "DISCRETISATION", 1e-2)
    q, steps, delta = 0.1, 10, 1e-5
    noises = []
    for neighbours in (0, 1, 3):
        sigma = module.noise_for(2.0, q, steps, delta, neighbours)
        assert module.epsilon(sigma, q, steps, delta, neighbours) <= 2.0
        assert module.epsilon(sigma / 1.005, q, steps, delta, neighbours) > 2.0
        noises.append(sigma)
    assert noises[0] < noises[1] < noises[2]
