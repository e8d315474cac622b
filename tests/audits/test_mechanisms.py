"""Mechanism-level privacy audits: run each noise-adding step of the library many times.

Every audit builds two neighbouring inputs ``D`` and ``D'`` under the unit of the estimator
that uses the mechanism, runs the library's own mechanism on each many times, and turns the
outputs into an empirical lower bound on epsilon (``_lower_bounds``: a threshold or
likelihood-ratio region, Clopper--Pearson intervals, alpha = 0.05). The bound must stay
below the epsilon the library reports; a deliberately broken variant (built here) must
push it above the epsilon that variant claims, which shows the audit has power.

Trials are vectorised through the real code: many independent copies of the small
neighbouring dataset are laid side by side in one call (disjoint graph components for
PMA and FDP's release, one embedding row per copy for DP-SGD, one row per user for GRR),
so each call gives many independent runs of the mechanism.

Sizes: the fast subset (default test command) uses fewer trials and, where the issue's
broken variant needs more trials than the fast budget allows (DP-SGD, noise halved), a
grosser version of the same bug (noise quartered); the full audits (``-m audit``) use
10^6 trials per input (4 x 10^6 for PMA's edge level, where the broken variant is only a
factor sqrt(2) off) and exactly the issue's broken variants.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from skdpgraph import Graph
from skdpgraph._random import RandomStreams
from skdpgraph.privacy import (
    compute_epsilon,
    gaussian_epsilon,
    grr_fs_epsilon,
    grr_fs_paper_epsilon,
    grr_fs_randomize,
    grr_fs_worst_case_log_ratio,
    grr_randomize,
    noisy_neighbour_votes,
    noisy_sum_aggregation,
    plan_dpsgd,
    plan_neighbour_votes,
    pma_sensitivity,
    poisson_dpsgd_event,
    private_multi_hop_aggregation,
    release_neighbour_votes,
    row_normalize,
    without_replacement_dpsgd_event,
)
from skdpgraph.privacy._accountant import REPLACE_ONE
from skdpgraph.sampling import make_batch_sampler
from skdpgraph.training import (Generators, OptimizerSettings, Stepper, make_optimizer,
                                train_dpsgd)
from tests.audits._lower_bounds import epsilon_lower_bound, epsilon_lower_bound_from_counts
from tests.audits.report import AuditRow

DELTA = 1e-5
ALPHA = 0.05

#: One test per audit and size; the full size carries the ``audit`` marker.
SIZES = [pytest.param(False, id="fast"), pytest.param(True, id="full", marks=pytest.mark.audit)]


def _size(full: bool) -> str:
    return "full" if full else "fast"


# ---------------------------------------------------------------------------- DP-SGD
#: One DP-SGD step: clip to C, sum, add N(0, (sigma * sensitivity * C)^2), divide by B.
DPSGD_CLIP = 0.5
#: The canary's per-example gradient has norm 10 C: the audit also checks it is clipped.
DPSGD_CANARY = 10 * DPSGD_CLIP
DPSGD_CHUNK = 50_000  # copies of the dataset per call (one embedding row each)


class _Copies:
    """``count`` independent copies of the audited dataset's canary; copy ``t`` is row ``t``.

    Example ``t`` is the canary of copy ``t``: its loss is ``gradient * w_t``, so its
    per-example gradient is ``gradient * e_t`` (norm ``|gradient|``, whatever the weights)
    and it touches only row ``t``. Under Poisson sampling each copy's canary joins the batch
    independently with the plan's rate, so one step over the ``count`` copies is ``count``
    independent steps of the audited dataset, each read off its own row. The other examples
    of the audited dataset have gradient 0: they add nothing to the clipped sum, whether or
    not they are sampled, and are left out.
    """

    def __init__(self, count: int) -> None:
        self.count = count

    def __len__(self) -> int:
        return self.count

    def batch(self, index: torch.Tensor, step: int) -> tuple[torch.Tensor]:
        return (index,)


def _canary_loss(gradient: float):
    def loss_fn(module, batch):
        return module(batch[0]).squeeze(-1) * gradient, None
    return loss_fn


def _zero_rows(count: int) -> torch.nn.Embedding:
    """A ``count x 1`` embedding at 0 (no draw from torch's global generator)."""
    return torch.nn.Embedding.from_pretrained(torch.zeros(count, 1), freeze=False)


def _poisson_scores(plan, trials: int, gradient: float, streams: RandomStreams) -> np.ndarray:
    """``trials`` runs of one Poisson DP-SGD step through :func:`train_dpsgd`.

    The score of a run is its row of the update, in units of C: ``+1 + noise`` when the
    canary was sampled in ``D``, ``noise`` otherwise (noise std ``sigma``).
    """
    per_copy = plan.num_examples
    scores = []
    for start in range(0, trials, DPSGD_CHUNK):
        count = min(DPSGD_CHUNK, trials - start)
        copies = dataclasses.replace(plan, num_examples=count,
                                     batch_size=count * plan.batch_size // per_copy)
        assert copies.sample_rate == plan.sample_rate and copies.noise_std == plan.noise_std
        result = train_dpsgd(_zero_rows(count), _Copies(count), _canary_loss(gradient), copies,
                             optimizer=OptimizerSettings(lr=1.0, name="sgd"),
                             generators=Generators(streams.torch("batches"),
                                                   streams.torch("noise")))
        update = -result.module.weight.detach()[:, 0].double() * copies.batch_size
        scores.append((update / plan.max_grad_norm).numpy())
    return np.concatenate(scores)


def _without_replacement_scores(plan, trials: int, gradient: float,
                                streams: RandomStreams) -> np.ndarray:
    """``trials`` runs of one fixed-size DP-SGD step through the loop's ``Stepper``.

    Fixed-size batches of copies laid side by side would not be independent, so every copy
    draws its own batch with the library's sampler (example 0 is the canary, or in ``D'``
    its replacement) and the union of the sampled canaries is one step of ``Stepper``
    (Opacus' clipping and the plan's noise), divided by the plan's batch size as in
    :func:`train_dpsgd`.
    """
    sampler = make_batch_sampler(plan.sampling, plan.num_examples, plan.batch_size,
                                 streams.torch("batches"))
    scores = []
    for start in range(0, trials, DPSGD_CHUNK):
        count = min(DPSGD_CHUNK, trials - start)
        sampled = torch.stack([sampler.sample() for _ in range(count)])
        rows = (sampled == 0).any(dim=1).nonzero().flatten()
        module = _zero_rows(count)
        sgd = make_optimizer(OptimizerSettings(lr=1.0, name="sgd"), module.parameters())
        stepper = Stepper(module, plan, sgd, streams.torch("noise"))
        stepper.model.train()
        stepper.step(stepper.model(rows).squeeze(-1) * gradient if len(rows) else None)
        module = stepper.unwrap()
        update = -module.weight.detach()[:, 0].double() * plan.batch_size
        scores.append((update / plan.max_grad_norm).numpy())
    return np.concatenate(scores)


def _dpsgd_audit(sampling, num_examples, batch_size, sigma, seed, full, fast_trials) -> AuditRow:
    plan = plan_dpsgd(epsilon=1.0, delta=DELTA, sampling=sampling, num_examples=num_examples,
                      batch_size=batch_size, steps=1, max_grad_norm=DPSGD_CLIP,
                      noise_multiplier=sigma)  # the given multiplier is used as is
    reported = plan.epsilon(DELTA)
    trials = 1_000_000 if full else fast_trials
    divisor = 2 if full else 4
    broken = dataclasses.replace(plan, noise_multiplier=sigma / divisor)
    streams = RandomStreams(seed)
    if sampling == "poisson":  # D: the canary; D': without it (a zero-gradient stand-in)
        run, neighbour_gradient, unit = _poisson_scores, 0.0, "example (add/remove)"
    else:  # D': the canary replaced by an example whose gradient points the other way
        run, neighbour_gradient, unit = _without_replacement_scores, -DPSGD_CANARY, \
            "example (replace-one)"
    honest = epsilon_lower_bound(run(plan, trials, DPSGD_CANARY, streams),
                                 run(plan, trials, neighbour_gradient, streams),
                                 delta=DELTA, alpha=ALPHA)
    attacked = epsilon_lower_bound(run(broken, trials, DPSGD_CANARY, streams),
                                   run(broken, trials, neighbour_gradient, streams),
                                   delta=DELTA, alpha=ALPHA)
    name = "DP-SGD step, Poisson" if sampling == "poisson" else "DP-SGD step, fixed-size"
    return AuditRow(
        mechanism=f"{name} q={plan.sample_rate:g} sigma={sigma:g}", unit=unit,
        reported=reported, lower_bound=honest.epsilon, trials=honest.trials,
        broken=f"noise / {divisor}", broken_claim=reported,
        broken_lower_bound=attacked.epsilon, broken_trials=attacked.trials, size=_size(full))


def audit_dpsgd_poisson(full: bool = False) -> AuditRow:
    return _dpsgd_audit("poisson", 2, 1, 1.5, seed=11, full=full, fast_trials=50_000)


def audit_dpsgd_fixed_size(full: bool = False) -> AuditRow:
    # Fewer fast trials: every copy calls the sampler once (about 10 us a call).
    return _dpsgd_audit("without_replacement", 20, 19, 1.5, seed=12, full=full,
                        fast_trials=25_000)


@pytest.mark.parametrize("full", SIZES)
def test_dpsgd_poisson_step(full, audit_table):
    row = audit_dpsgd_poisson(full)
    audit_table.append(row)
    # The plan's epsilon is the Poisson subsampled Gaussian's, computed independently.
    assert row.reported == pytest.approx(
        compute_epsilon(poisson_dpsgd_event(1.5, 0.5, 1), DELTA), rel=1e-12)
    assert row.valid, row
    assert row.has_power, row


@pytest.mark.parametrize("full", SIZES)
def test_dpsgd_fixed_size_step(full, audit_table):
    row = audit_dpsgd_fixed_size(full)
    audit_table.append(row)
    assert row.reported == pytest.approx(compute_epsilon(
        without_replacement_dpsgd_event(1.5, 20, 19, 1), DELTA, relation=REPLACE_ONE), rel=1e-12)
    assert row.valid, row
    assert row.has_power, row


# ---------------------------------------------------------------------------- GAP's PMA
PMA_CHUNK = 1_000_000  # components per call


def _edge_component_scores(components, noise_std, with_edge, generator):
    """One PMA hop on ``components`` disjoint copies of the 3-node graph ``u - w - v``.

    ``D`` adds the undirected edge ``u - v`` (two directed entries). Inputs are unit rows
    ``e1`` (u), ``e2`` (v), ``(e1 + e2) / sqrt(2)`` (w). The score projects the hop's rows of
    ``u`` and ``v``, minus their mean under ``D'``, on the rows the edge adds: mean 2 under
    ``D``, 0 under ``D'``, noise std ``sqrt(2) * noise_std``.
    """
    u, v, w = (3 * np.arange(components) + i for i in range(3))
    sources = [w, w] + ([v, u] if with_edge else [])
    targets = [u, v] + ([u, v] if with_edge else [])
    adjacency = _adjacency(np.concatenate(targets), np.concatenate(sources), 3 * components)
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]).repeat(components, 1)
    x = row_normalize(x)
    out = noisy_sum_aggregation(adjacency, x, noise_std, generator).double()
    common = x[w].double()  # what w adds to u and to v in both graphs
    return ((out[u] - common) @ x[v][0].double() + (out[v] - common) @ x[u][0].double()).numpy()


def _node_component_scores(components, noise_std, out_degree, with_node_edges, generator):
    """One PMA hop on ``components`` copies of a star: node ``s`` and ``out_degree`` targets.

    ``D``: ``s`` has out-edges to all its targets; ``D'``: ``s`` has none (its own row, with
    no in-edges, is the same in both). The score projects the targets' rows on ``s``'s input
    row: mean ``out_degree`` under ``D``, noise std ``sqrt(out_degree) * noise_std``.
    """
    size = out_degree + 1
    star = size * np.arange(components)
    targets = (star[:, None] + np.arange(1, size)).ravel()
    adjacency = _adjacency(targets if with_node_edges else np.zeros(0, int),
                           np.repeat(star, out_degree) if with_node_edges else np.zeros(0, int),
                           size * components)
    x = row_normalize(torch.tensor([[0.6, 0.8]]).repeat(size * components, 1))
    out = noisy_sum_aggregation(adjacency, x, noise_std, generator).double()
    direction = x[0].double()
    return (out[targets] @ direction).reshape(components, out_degree).sum(axis=1).numpy()


def _adjacency(targets, sources, size):
    return sp.csr_matrix((np.ones(len(targets), dtype=np.float32), (targets, sources)),
                         shape=(size, size))


def _chunked(trials, sample, chunk=PMA_CHUNK):
    """``sample(count)`` on chunks of at most ``chunk`` copies, concatenated."""
    return np.concatenate([sample(min(chunk, trials - start))
                           for start in range(0, trials, chunk)])


def _pma_family_row(full: bool, trials: int, sample, variants, **row) -> AuditRow:
    """The audit row of a PMA-family mechanism: for the honest variant, then the broken
    one, ``trials`` runs of ``sample(count, variant, on_d)`` on ``D`` and on ``D'`` (in
    chunks), turned into an empirical lower bound; ``row`` names the rest of the row."""
    results = [epsilon_lower_bound(*[_chunked(trials, lambda c, v=variant, d=on_d: sample(c, v, d))
                                     for on_d in (True, False)], delta=DELTA, alpha=ALPHA)
               for variant in variants]
    return AuditRow(lower_bound=results[0].epsilon, trials=results[0].trials,
                    broken_claim=row["reported"], broken_lower_bound=results[1].epsilon,
                    broken_trials=results[1].trials, size=_size(full), **row)


def audit_pma_edge(full: bool = False) -> AuditRow:
    sigma = 1.5
    reported = gaussian_epsilon(sigma, DELTA)  # one hop: GAPPlan.release_epsilon with K=1
    honest_std = sigma * pma_sensitivity("edge", directed=False)
    broken_std = sigma * pma_sensitivity("edge", directed=True)  # one directed edge: 1
    streams = RandomStreams(21)
    return _pma_family_row(
        full, 4_000_000 if full else 1_000_000,
        lambda c, std, edge: _edge_component_scores(c, std, edge, streams.torch("noise")),
        (honest_std, broken_std), mechanism=f"GAP PMA hop sigma={sigma:g}",
        unit="undirected edge", reported=reported, broken="directed-edge sensitivity (1)")


def audit_pma_node(full: bool = False) -> AuditRow:
    sigma, max_degree = 1.5, 4
    reported = gaussian_epsilon(sigma, DELTA)
    std = sigma * pma_sensitivity("node", directed=False, max_degree=max_degree)
    streams = RandomStreams(22)
    # Broken: the degree bound not enforced, a node of out-degree 4D under sensitivity sqrt(D).
    return _pma_family_row(
        full, 1_000_000 if full else 200_000,
        lambda c, degree, edges: _node_component_scores(c, std, degree, edges,
                                                        streams.torch("noise")),
        (max_degree, 4 * max_degree), mechanism=f"GAP PMA hop sigma={sigma:g} D={max_degree}",
        unit="node (out-degree <= D, own row fixed)", reported=reported,
        broken="degree bound off (out-degree 4D)")


def _vote_component_scores(components, noise_std, out_degree, with_node, generator,
                           copies=1):
    """One vote hop of the vote head on ``components`` copies of a star whose centre ``s``
    is a fitted node: it votes for its label (class 0) although its own features predict
    class 1.

    ``D``: ``s`` has out-edges to its ``out_degree`` targets; ``D'``: ``s`` is removed (no
    edges; nobody else votes). The score sums the targets' class-0 vote counts: mean
    ``out_degree`` under ``D``, noise std ``sqrt(out_degree) * noise_std``. ``copies=2`` is
    the broken variant: ``s`` enters the graph twice (a duplicated record, two nodes with
    the same label and edges), so one person's vote is counted twice.
    """
    size = out_degree + copies
    first = size * np.arange(components)
    centres = (first[:, None] + np.arange(copies)).ravel()
    targets = (first[:, None] + np.arange(copies, size)).ravel()
    sources = np.repeat(centres, out_degree)
    receivers = np.tile(targets.reshape(components, out_degree), (1, copies)).ravel()
    adjacency = _adjacency(receivers if with_node else np.zeros(0, int),
                           sources if with_node else np.zeros(0, int), size * components)
    own = torch.tensor([[-2.0, -0.2]]).repeat(size * components, 1)  # predicts class 1
    labelled = (torch.from_numpy(centres), torch.zeros(len(centres), dtype=torch.long))
    votes = noisy_neighbour_votes(adjacency, own, 1, noise_std, noise_std, generator, labelled)
    return votes[targets, 0].double().reshape(components, out_degree).sum(axis=1).numpy()


def audit_vote_labels_node(full: bool = False) -> AuditRow:
    sigma, max_degree = 1.5, 4
    reported = gaussian_epsilon(sigma, DELTA)  # one hop: the vote release with K=1
    std = sigma * pma_sensitivity("node", directed=False, max_degree=max_degree)
    streams = RandomStreams(23)
    return _pma_family_row(
        full, 1_000_000 if full else 200_000,
        lambda c, copies, node: _vote_component_scores(c, std, max_degree, node,
                                                       streams.torch("noise"), copies),
        (1, 2), mechanism=f"GAP vote hop with labels sigma={sigma:g} D={max_degree}",
        unit="node with its label (out-degree <= D)", reported=reported,
        broken="the labelled node entered twice")


def test_pma_release_is_the_audited_hop():
    """GAP releases ``private_multi_hop_aggregation``: with one hop, the normalised audited hop."""
    adjacency = _adjacency(np.array([0, 1, 2, 2]), np.array([1, 0, 0, 1]), 3)
    x = torch.tensor([[3.0, 4.0], [1.0, 0.0], [0.0, 2.0]])
    released = private_multi_hop_aggregation(adjacency, x, 1, 0.7,
                                             RandomStreams(5).torch("noise"))[:, 0]
    hop = noisy_sum_aggregation(adjacency, row_normalize(x), 0.7, RandomStreams(5).torch("noise"))
    torch.testing.assert_close(released, row_normalize(hop))


# ---------------------------------------------------------------------------- GRR, GRR-FS
def _grr_log_likelihood(outputs, inputs, domain, epsilon):
    """``log P(y | x)`` of GRR, from its definition (keep ``e^eps / (e^eps + k - 1)``)."""
    domain = np.asarray(domain, dtype=float)
    keep = math.exp(epsilon) / (math.exp(epsilon) + domain - 1)
    return np.where(outputs == inputs, np.log(keep), np.log((1 - keep) / (domain - 1)))


def _grr_fs_log_likelihood(outputs, inputs, domains, epsilon, sampled):
    """``log P(y | x)`` of GRR-FS for every row of ``outputs``, by enumerating the subsets."""
    domains = np.asarray(domains)
    terms = []
    for subset in itertools.combinations(range(len(domains)), sampled):
        chosen = np.isin(np.arange(len(domains)), subset)
        per_feature = np.where(chosen, _grr_log_likelihood(outputs, inputs, domains, epsilon),
                               -np.log(domains))
        terms.append(per_feature.sum(axis=-1))
    return np.logaddexp.reduce(terms, axis=0) - math.log(len(terms))


def _likelihood_region(candidates, log_p_d, log_p_dprime):
    """The candidate outputs of largest likelihood ratio ``P(y | D') / P(y | D)``."""
    ratio = log_p_dprime - log_p_d
    return candidates[ratio >= ratio.max() - 1e-12]


def _count_rows_in(outputs, region):
    return int(np.sum((outputs[:, None, :] == region[None, :, :]).all(axis=-1).any(axis=1)))


def _discrete_bound(outputs_d, outputs_dprime, region):
    return epsilon_lower_bound_from_counts(
        _count_rows_in(outputs_d, region), len(outputs_d),
        _count_rows_in(outputs_dprime, region), len(outputs_dprime),
        delta=0.0, alpha=ALPHA, direction="S:D'>D")


def audit_grr(full: bool = False) -> AuditRow:
    """GRR on one label (RGNN's labels): ``D`` = label 0, ``D'`` = label 1, any two labels.

    Broken: a row of 3 entries randomised with ``epsilon`` each but accounted as ``epsilon``
    (composition forgotten); its true loss is ``3 epsilon``.
    """
    epsilon, domain, width = 1.0, 4, 3
    trials = 1_000_000 if full else 100_000
    rng = RandomStreams(31)
    bounds = []
    for entries in (1, width):
        x, x_prime = np.zeros((trials, entries), int), np.ones((trials, entries), int)
        candidates = np.array(list(itertools.product(range(domain), repeat=entries)))
        region = _likelihood_region(
            candidates,
            _grr_log_likelihood(candidates, x[:1], domain, epsilon).sum(axis=1),
            _grr_log_likelihood(candidates, x_prime[:1], domain, epsilon).sum(axis=1))
        bounds.append(_discrete_bound(grr_randomize(x, domain, epsilon, rng.numpy("clients")),
                                      grr_randomize(x_prime, domain, epsilon,
                                                    rng.numpy("clients")), region))
    return AuditRow(
        mechanism=f"GRR eps={epsilon:g} k={domain}", unit="one label (local DP)",
        reported=epsilon, lower_bound=bounds[0], trials=2 * trials,
        broken=f"{width} entries accounted as one", broken_claim=epsilon,
        broken_lower_bound=bounds[1], broken_trials=2 * trials, size=_size(full))


GRR_FS = dict(domains=(2, 3, 2, 2), epsilon=1.0, sampled=2)


def audit_grr_fs(full: bool = False) -> AuditRow:
    """GRR-FS on one feature vector: ``D``, ``D'`` differ in every feature (local DP).

    The same runs audit both accountings: the bound must stay below ``grr_fs_epsilon``
    (m eps_x) and exceed the paper's amplified value (Theorem 1 of RGNN).
    """
    domains, epsilon, sampled = GRR_FS["domains"], GRR_FS["epsilon"], GRR_FS["sampled"]
    trials = 1_000_000 if full else 100_000
    rng = RandomStreams(32)
    x = np.zeros((trials, len(domains)), int)
    x_prime = np.ones((trials, len(domains)), int)
    candidates = np.array(list(itertools.product(*(range(g) for g in domains))))
    region = _likelihood_region(
        candidates, _grr_fs_log_likelihood(candidates, x[:1], domains, epsilon, sampled),
        _grr_fs_log_likelihood(candidates, x_prime[:1], domains, epsilon, sampled))
    bound = _discrete_bound(
        grr_fs_randomize(x, domains, epsilon, sampled, rng.numpy("clients")),
        grr_fs_randomize(x_prime, domains, epsilon, sampled, rng.numpy("clients")), region)
    return AuditRow(
        mechanism=f"GRR-FS eps_x={epsilon:g} m={sampled} d={len(domains)}",
        unit="one feature vector (local DP)",
        reported=grr_fs_epsilon(sampled, epsilon), lower_bound=bound, trials=2 * trials,
        broken="paper's amplified epsilon",
        broken_claim=grr_fs_paper_epsilon(len(domains), sampled, epsilon),
        broken_lower_bound=bound, broken_trials=2 * trials, size=_size(full))


def test_grr_fs_likelihood_is_independent_of_the_library():
    """The region's likelihoods agree with the library's exact worst case, m eps_x."""
    domains, epsilon, sampled = GRR_FS["domains"], GRR_FS["epsilon"], GRR_FS["sampled"]
    outputs = np.ones((1, len(domains)), int)
    ratio = (_grr_fs_log_likelihood(outputs, outputs, domains, epsilon, sampled)
             - _grr_fs_log_likelihood(outputs, 0 * outputs, domains, epsilon, sampled))
    assert ratio[0] == pytest.approx(sampled * epsilon)
    assert grr_fs_worst_case_log_ratio(domains, epsilon, sampled) == pytest.approx(ratio[0])


# ---------------------------------------------------------------------------- FDP inference
FDP_CHUNK = 200_000  # copies per release call


def _fdp_inference():
    module = pytest.importorskip("skdpgraph.privacy._neighbour_sums",
                                 reason="FDP's private inference release is not in the tree")
    return module


def _fdp_component_scores(release, components, max_degree, hidden, noise_multiplier,
                          present, generator):
    """FDP's release on ``components`` copies of: node ``x``, the ``K`` stars it feeds, and its
    own star of ``K`` in-neighbours.

    ``D``: ``x`` is in the stars of ``s_1..s_K`` and its own star holds ``u_1..u_K``; ``D'``:
    ``x`` replaced by an isolated node (all those star entries gone). Every encoding has
    norm ``10 sqrt(H)`` along ``e1`` (clipped to ``sqrt(H)``), so the released rows move by
    exactly the sensitivity. The score projects the release on that move.
    """
    k = max_degree
    nodes, rows = 2 * k + 1, k + 1  # per copy: x, s_1..s_K, u_1..u_K; rows of x, s_1..s_K
    node0, row0 = nodes * np.arange(components), rows * np.arange(components)
    if present:
        own = (np.repeat(row0, k), (node0[:, None] + np.arange(k + 1, 2 * k + 1)).ravel())
        feeds = ((row0[:, None] + np.arange(1, k + 1)).ravel(), np.repeat(node0, k))
        row_index, column_index = np.concatenate([own[0], feeds[0]]), np.concatenate(
            [own[1], feeds[1]])
    else:
        row_index = column_index = np.zeros(0, int)
    star_rows = sp.csr_matrix((np.ones(len(row_index)), (row_index, column_index)),
                              shape=(rows * components, nodes * components))
    encodings = torch.zeros(nodes * components, hidden)
    encodings[:, 0] = 10 * math.sqrt(hidden)
    released = release(encodings, star_rows, noise_multiplier=noise_multiplier,
                       max_degree=k, generator=generator)
    sums = released.sums[:, 0].astype(float).reshape(components, rows)
    counts = released.counts.astype(float).reshape(components, rows)
    move_sum = math.sqrt(hidden) * np.array([k] + [1] * k)
    move_count = np.array([k] + [1] * k, dtype=float)
    return sums @ move_sum + counts @ move_count


def audit_fdp_inference(full: bool = False) -> AuditRow:
    fdp = _fdp_inference()
    sigma, max_degree, hidden = 1.5, 3, 8
    reported = fdp.inference_release_epsilon(sigma, DELTA)
    # Broken: the node's own star not charged, sensitivity sqrt(K (H + 1)) instead of
    # sqrt(K (K + 1) (H + 1)): the noise is sqrt(K + 1) = 2 times too small.
    broken_sigma = sigma * math.sqrt(max_degree * (hidden + 1)) / fdp.inference_sensitivity(
        max_degree, hidden)
    trials = 1_000_000 if full else 200_000
    streams = RandomStreams(41)
    results = []
    for multiplier in (sigma, broken_sigma):
        scores = [_chunked(trials, lambda c, present=present: _fdp_component_scores(
            fdp.release_neighbour_sums, c, max_degree, hidden, multiplier, present,
            streams.torch("noise")), chunk=FDP_CHUNK) for present in (True, False)]
        results.append(epsilon_lower_bound(*scores, delta=DELTA, alpha=ALPHA))
    return AuditRow(
        mechanism=f"FDP inference release sigma={sigma:g} K={max_degree} H={hidden}",
        unit="node (replaced by an isolated node)",
        reported=reported, lower_bound=results[0].epsilon, trials=results[0].trials,
        broken="own star not charged", broken_claim=reported,
        broken_lower_bound=results[1].epsilon, broken_trials=results[1].trials,
        size=_size(full))


# ---------------------------------------------------------------------------- neighbour votes
VOTES_CHUNK = 200_000  # components per call


def _vote_release_scores(components, epsilon, with_edge, generator, broken=False):
    """The neighbour-vote release on ``components`` copies of ``u - w - v``.

    ``u`` is a training node whose label (class 0) votes and is not a receiver; ``v``
    (class 1 by its row) and ``w`` receive. ``D`` adds the undirected edge ``u - v``, which
    feeds ``v``'s sum with ``u``'s row in full and ``u``'s sum with nothing. The score
    reads both ends where the edge could land, ``v``'s class 0 and ``u``'s class 1: it is
    1 higher under ``D`` than under ``D'``, plus two Laplace draws. ``broken``: every node
    receives every edge in full (the unsplit sums at the split sums' scale): 2 higher.
    """
    u, w, v = (3 * np.arange(components) + i for i in range(3))
    pairs = [(w, u), (w, v)] + ([(u, v)] if with_edge else [])
    edges = np.hstack([np.vstack(pair) for pair in pairs])
    graph = Graph(edges, np.zeros((3 * components, 1), np.float32), num_nodes=3 * components)
    rows = np.tile([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]], (components, 1))
    receivers = np.tile([False, True, True], components)
    plan = plan_neighbour_votes(epsilon, 2, directed=False)
    if broken:
        noise = generator.laplace(0.0, plan.scale, (3 * components, 2))
        out = np.asarray(graph.adjacency().astype(np.float64) @ rows) + noise
    else:
        out = release_neighbour_votes(graph, rows, plan, generator, receivers)
    return out[v, 0] + out[u, 1]


def audit_votes_edge(full: bool = False) -> AuditRow:
    epsilon = 1.0
    reported = plan_neighbour_votes(epsilon, 2, directed=False).epsilon()
    streams = RandomStreams(23)
    trials = 2_000_000 if full else 400_000
    results = [epsilon_lower_bound(*[
        _chunked(trials, lambda c, d=on_d, b=broken: _vote_release_scores(
            c, epsilon, d, streams.numpy("noise"), b), chunk=VOTES_CHUNK)
        for on_d in (True, False)], delta=DELTA, alpha=ALPHA) for broken in (False, True)]
    return AuditRow(mechanism=f"neighbour-vote release epsilon={epsilon:g}, split edges",
                    unit="undirected edge", reported=reported, lower_bound=results[0].epsilon,
                    trials=results[0].trials, broken="unsplit edges (L1 sensitivity 2)",
                    broken_claim=reported, broken_lower_bound=results[1].epsilon,
                    broken_trials=results[1].trials, size=_size(full))


#: Every audit, in table order (``report.py`` runs them all).
AUDITS = {
    "dpsgd-poisson": audit_dpsgd_poisson,
    "dpsgd-fixed-size": audit_dpsgd_fixed_size,
    "pma-edge": audit_pma_edge,
    "pma-node": audit_pma_node,
    "vote-labels-node": audit_vote_labels_node,
    "votes-edge": audit_votes_edge,
    "grr": audit_grr,
    "grr-fs": audit_grr_fs,
    "fdp-inference": audit_fdp_inference,
}


@pytest.mark.parametrize("full", SIZES)
@pytest.mark.parametrize("name", [name for name in AUDITS if not name.startswith("dpsgd")])
def test_audit_bound_is_valid_and_has_power(name, full, audit_table):
    # The DP-SGD audits have their own tests above: they also check the reported epsilon.
    row = AUDITS[name](full)
    audit_table.append(row)
    assert row.valid, row
    assert row.has_power, row
