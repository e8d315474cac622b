"""How much noise HeterPoisson-style node-level DP-SGD needs, against DP-MLP at the same budget.

HeterPoisson (Xiang, Wang and Wang, "Preserving node-level privacy in graph neural networks",
IEEE S&P 2024) samples each training node as a root with probability ``q`` and each of a
root's neighbours ``u`` with probability ``min(1, M / outdeg(u))``, so a node appears as a
neighbour in about Poisson(``q M``) sampled subgraphs whatever its degree. Each subgraph's
gradient is clipped to ``C``. Removing a node removes its own subgraph when it is a root (a
shift of ``C``) and changes each subgraph it appears in by up to ``2 C``: one DP-SGD step is a
mixture of Gaussians whose shift is ``C (r + 2 n)``, ``r ~ Bernoulli(q)``, ``n ~ Poisson(q M)``
(the authors' accountant models the appearances the same way; it does not model that removing
a node also changes its neighbours' sampling probabilities, so the figures here are lower
bounds for a complete accounting). We use Gaussian noise and dp-accounting's privacy loss
distribution of that mixture (both adjacency directions), not the paper's symmetric
multivariate Laplace noise, whose accountant uses the one-dimensional marginal.

For the same sampling rate and number of steps as DP-MLP's defaults, the script prints the
noise multiplier each needs for ``--epsilon`` and the epsilon for which DP-MLP's own Poisson
subsampled Gaussian would use the HeterPoisson multiplier: the budget DP-MLP would have with
that much noise. A reading aid, not a method of the library.

Usage (from the repository root)::

    python benchmarks/studies/heterpoisson/heterpoisson_accountant.py --nodes 22470 --epsilon 8
"""
from __future__ import annotations

import argparse
import json
import math

import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy.stats import poisson

DISCRETISATION = 1e-3


def mixture_pld(sigma: float, q: float, neighbours: int) -> pld.PrivacyLossDistribution:
    """One step's privacy loss: DP-MLP's subsampled Gaussian when ``neighbours`` is 0."""
    if neighbours == 0:
        return pld.from_gaussian_mechanism(
            sigma, sampling_prob=q, value_discretization_interval=DISCRETISATION)
    rate = q * neighbours
    most = int(poisson.ppf(1 - 1e-12, rate)) + 1
    shifts, probabilities = [], []
    for root, p_root in ((0, 1 - q), (1, q)):
        for appearances in range(most + 1):
            shifts.append(root + 2 * appearances)
            probabilities.append(p_root * poisson.pmf(appearances, rate))
    probabilities = np.asarray(probabilities) / np.sum(probabilities)
    return pld.from_mixture_gaussian_mechanism(
        sigma, shifts, list(probabilities), value_discretization_interval=DISCRETISATION)


def epsilon(sigma: float, q: float, steps: int, delta: float, neighbours: int) -> float:
    return mixture_pld(sigma, q, neighbours).self_compose(steps).get_epsilon_for_delta(delta)


def noise_for(target: float, q: float, steps: int, delta: float, neighbours: int) -> float:
    """Smallest multiplier (to 0.1%, rounded up) whose epsilon is at most ``target``."""
    low, high = 0.2, 100.0
    while high / low > 1.001:
        middle = math.sqrt(low * high)
        if epsilon(middle, q, steps, delta, neighbours) <= target:
            high = middle
        else:
            low = middle
    return high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=22470, help="graph size (Facebook: 22470)")
    parser.add_argument("--train-fraction", type=float, default=0.75)
    parser.add_argument("--batch-size", type=int, default=1024, help="DP-MLP's default")
    parser.add_argument("--epochs", type=int, default=50, help="DP-MLP's default")
    parser.add_argument("--epsilon", type=float, default=8.0)
    parser.add_argument("--delta", type=float, default=None, help="default 1 / (10 nodes)")
    parser.add_argument("--neighbours", type=int, nargs="+", default=[1, 3, 5], help="M")
    args = parser.parse_args()
    delta = args.delta if args.delta is not None else 1 / (10 * args.nodes)
    train = int(args.train_fraction * args.nodes)
    q = args.batch_size / train
    steps = int(round(args.epochs / q))
    baseline = noise_for(args.epsilon, q, steps, delta, 0)
    print(json.dumps({"sampler": "DP-MLP", "q": round(q, 5), "steps": steps, "delta": delta,
                      "epsilon": args.epsilon, "noise_multiplier": round(baseline, 3)}))
    for neighbours in args.neighbours:
        sigma = noise_for(args.epsilon, q, steps, delta, neighbours)
        same_noise = epsilon(sigma, q, steps, delta, 0)
        print(json.dumps({"sampler": "HeterPoisson", "M": neighbours, "epsilon": args.epsilon,
                          "noise_multiplier": round(sigma, 3),
                          "ratio_to_dp_mlp": round(sigma / baseline, 2),
                          "dp_mlp_epsilon_at_this_noise": round(same_noise, 2)}), flush=True)


if __name__ == "__main__":
    main()
