"""PMA: noise level, normalisation, sensitivity; GAP's node-level event against a by-hand sum."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from opacus.accountants.analysis.rdp import compute_rdp as opacus_rdp
from opacus.accountants.analysis.rdp import get_privacy_spent

from skdpgraph.privacy import (
    PMARelease, PrivacyBudgetError, compute_epsilon, compute_rdp, gap_node_event,
    noisy_neighbour_votes, noisy_sum_aggregation, plan_dpsgd, pma_sensitivity,
    private_multi_hop_aggregation, progressive_stages, row_normalize, sum_in_neighbours,
)
from skdpgraph.sampling import bound_out_degree


def random_adjacency(rng, n, p, directed):
    dense = rng.random((n, n)) < p
    np.fill_diagonal(dense, False)
    if not directed:
        dense = dense | dense.T
    return sp.csr_matrix(dense.astype(np.float32))


def unit_rows(rng, n, d):
    return row_normalize(torch.from_numpy(rng.normal(size=(n, d)).astype(np.float32)))


def test_noise_has_the_requested_std():
    rng = np.random.default_rng(0)
    adjacency = random_adjacency(rng, 400, 0.05, directed=False)
    x = unit_rows(rng, 400, 64)
    noisy = noisy_sum_aggregation(adjacency, x, 2.5, torch.Generator().manual_seed(0))
    noise = (noisy - sum_in_neighbours(adjacency, x)).double().numpy().ravel()  # 25,600 draws
    assert abs(noise.mean()) < 5 * 2.5 / np.sqrt(noise.size)
    assert noise.std() == pytest.approx(2.5, rel=0.02)
    # Fails for a wrong scale: a variance off by 10% is far outside the sampling error.
    assert abs(noise.std() - 2.5 * np.sqrt(1.1)) > 0.05


def test_pma_rows_have_unit_norm_and_hops_chain():
    rng = np.random.default_rng(1)
    adjacency = random_adjacency(rng, 50, 0.1, directed=True)
    x = torch.from_numpy(rng.normal(size=(50, 8)).astype(np.float32)) * 7
    out = private_multi_hop_aggregation(adjacency, x, 3, 0.3, torch.Generator().manual_seed(4))
    assert out.shape == (50, 3, 8)
    torch.testing.assert_close(out.norm(dim=-1), torch.ones(50, 3))
    # Hop 1 is rownorm(A rownorm(x) + noise) drawn from the same generator.
    hop1 = row_normalize(noisy_sum_aggregation(adjacency, row_normalize(x), 0.3,
                                               torch.Generator().manual_seed(4)))
    torch.testing.assert_close(out[:, 0], hop1)


def test_pma_without_noise_is_the_normalised_sum():
    adjacency = sp.csr_matrix(np.array([[0, 1, 1], [1, 0, 0], [0, 0, 0]], dtype=np.float32))
    out = private_multi_hop_aggregation(adjacency, torch.eye(3) * 3, 1, 0.0, None)
    expected = torch.tensor([[0, 1, 1], [1, 0, 0], [0, 0, 0]], dtype=torch.float32)
    torch.testing.assert_close(out[:, 0], row_normalize(expected))


@pytest.mark.parametrize("directed", [False, True])
def test_removing_one_edge_moves_the_aggregation_by_at_most_the_sensitivity(directed):
    rng = np.random.default_rng(2)
    bound = pma_sensitivity("edge", directed=directed)
    worst = 0.0
    for trial in range(30):  # randomised property test on small graphs
        adjacency = random_adjacency(rng, 12, 0.3, directed).tolil()
        target, source = (np.array(a) for a in adjacency.nonzero())
        pick = rng.integers(len(target))
        neighbour = adjacency.copy()
        neighbour[target[pick], source[pick]] = 0
        if not directed:
            neighbour[source[pick], target[pick]] = 0
        x = unit_rows(rng, 12, 5)
        change = (sum_in_neighbours(adjacency.tocsr(), x)
                  - sum_in_neighbours(neighbour.tocsr(), x)).norm()
        worst = max(worst, float(change))
    assert worst <= bound + 1e-5
    assert worst == pytest.approx(bound, abs=1e-5)  # attained: the bound is not loose


@pytest.mark.parametrize("max_degree", [1, 3, 6])
def test_removing_one_node_moves_other_rows_by_at_most_sqrt_d(max_degree):
    rng = np.random.default_rng(3)
    bound = pma_sensitivity("node", directed=False, max_degree=max_degree)
    for trial in range(30):
        adjacency = bound_out_degree(random_adjacency(rng, 15, 0.4, False), max_degree, rng)
        v = rng.integers(15)
        isolated = adjacency.tolil()
        isolated[v, :] = 0
        isolated[:, v] = 0
        x = unit_rows(rng, 15, 4)
        change = sum_in_neighbours(adjacency, x) - sum_in_neighbours(isolated.tocsr(), x)
        others = np.arange(15) != v
        assert float(change[others].norm()) <= bound + 1e-5
    # Without the bound the same check fails: a hub of out-degree 14 moves 14 rows.
    hub = sp.csr_matrix((np.ones(14), (np.arange(1, 15), np.zeros(14))), shape=(15, 15))
    change = sum_in_neighbours(hub, unit_rows(rng, 15, 4))[1:].norm()
    assert float(change) > pma_sensitivity("node", directed=False, max_degree=6)


def test_pma_validates():
    adjacency = sp.csr_matrix((3, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="hops must be >= 1"):
        private_multi_hop_aggregation(adjacency, torch.ones(3, 2), 0, 1.0, None)
    with pytest.raises(ValueError, match="a generator is required"):
        private_multi_hop_aggregation(adjacency, torch.ones(3, 2), 1, 1.0, None)
    with pytest.raises(ValueError, match="node level needs max_degree"):
        pma_sensitivity("node", directed=False)


def test_node_event_matches_a_by_hand_rdp_sum():
    sigma, hops, n, delta = 1.7, 3, 2000, 1e-5
    common = dict(epsilon=8.0, delta=delta, sampling="poisson", num_examples=n, batch_size=128,
                  max_grad_norm=1.0, noise_multiplier=sigma)
    encoder = plan_dpsgd(steps=80, **common)
    classifier = plan_dpsgd(steps=150, **{**common, "batch_size": 64})
    orders = np.arange(2, 64, dtype=float)
    by_hand = (opacus_rdp(q=128 / n, noise_multiplier=sigma, steps=80, orders=orders)
               + hops * orders / (2 * sigma**2)
               + opacus_rdp(q=64 / n, noise_multiplier=sigma, steps=150, orders=orders))
    event = gap_node_event(sigma, hops, encoder, classifier)
    np.testing.assert_allclose(compute_rdp(event, orders=orders), by_hand, rtol=1e-6)
    eps_by_hand, _ = get_privacy_spent(orders=orders, rdp=by_hand, delta=delta)
    assert compute_epsilon(event, delta, orders=orders) == pytest.approx(eps_by_hand, rel=1e-6)
    # Equal sampling rates: the two runs are merged into one of 230 steps, same curve.
    merged = gap_node_event(sigma, hops, encoder, plan_dpsgd(steps=150, **common))
    by_hand_equal = (opacus_rdp(q=128 / n, noise_multiplier=sigma, steps=230, orders=orders)
                     + hops * orders / (2 * sigma**2))
    np.testing.assert_allclose(compute_rdp(merged, orders=orders), by_hand_equal, rtol=1e-6)
    # Each run carries its own multiplier: a vote-head plan (no classifier) with the encoder
    # at 2 sigma, and a trained-head plan whose runs share a rate but not a multiplier.
    loud = plan_dpsgd(steps=80, **{**common, "noise_multiplier": 2 * sigma})
    vote = gap_node_event(sigma, hops, loud)
    np.testing.assert_allclose(compute_rdp(vote, orders=orders), opacus_rdp(
        q=128 / n, noise_multiplier=2 * sigma, steps=80, orders=orders)
        + hops * orders / (2 * sigma**2), rtol=1e-6)
    unmerged = gap_node_event(sigma, hops, loud, plan_dpsgd(steps=150, **common))
    np.testing.assert_allclose(compute_rdp(unmerged, orders=orders), opacus_rdp(
        q=128 / n, noise_multiplier=2 * sigma, steps=80, orders=orders)
        + hops * orders / (2 * sigma**2)
        + opacus_rdp(q=128 / n, noise_multiplier=sigma, steps=150, orders=orders), rtol=1e-6)
    shuffled = plan_dpsgd(steps=80, **{**common, "sampling": "without_replacement"})
    with pytest.raises(ValueError, match="Poisson sampling"):
        gap_node_event(sigma, hops, shuffled)


# ---------------------------------------------------------------- in-degree bound: own row charged
@pytest.mark.parametrize("max_degree, max_in_degree", [(1, 1), (3, 2), (6, 4), (5, 9)])
def test_with_both_bounds_removing_one_node_moves_all_rows_by_at_most_the_sensitivity(
        max_degree, max_in_degree):
    from skdpgraph.sampling._degree import bound_in_degree

    rng = np.random.default_rng(5)
    bound = pma_sensitivity("node", directed=False, max_degree=max_degree,
                            max_in_degree=max_in_degree)
    assert bound == pytest.approx(np.sqrt(max_in_degree**2 + max_degree))
    for trial in range(30):  # randomised property test, own row included this time
        adjacency = bound_in_degree(bound_out_degree(random_adjacency(rng, 15, 0.4, False),
                                                     max_degree, rng), max_in_degree, rng)
        v = rng.integers(15)
        isolated = adjacency.tolil()
        isolated[v, :] = 0
        isolated[:, v] = 0
        x = unit_rows(rng, 15, 4)
        change = sum_in_neighbours(adjacency, x) - sum_in_neighbours(isolated.tocsr(), x)
        assert float(change.norm()) <= bound + 1e-5


@pytest.mark.parametrize("max_degree, max_in_degree", [(1, 1), (4, 3), (9, 2)])
def test_the_worst_case_attains_sqrt_of_d_in_squared_plus_d(max_degree, max_in_degree):
    # Node 0 has D_in in-neighbours that all carry the same unit row (its own row sums to
    # norm D_in) and D out-neighbours (each loses one unit row): the change, computed on
    # the dense matrices, is sqrt(D_in^2 + D) exactly.
    n = 1 + max_in_degree + max_degree
    dense = np.zeros((n, n), dtype=np.float32)
    dense[0, 1:1 + max_in_degree] = 1  # in-edges of node 0 (row = target)
    dense[1 + max_in_degree:, 0] = 1  # out-edges of node 0
    x = np.zeros((n, 3), dtype=np.float32)
    x[:, 0] = 1
    removed = dense.copy()
    removed[0, :] = removed[:, 0] = 0
    change = np.linalg.norm(dense @ x - removed @ x)
    expected = pma_sensitivity("node", directed=True, max_degree=max_degree,
                               max_in_degree=max_in_degree)
    assert change == pytest.approx(expected, rel=1e-6)
    # The sqrt(D) bound alone (own row held fixed) is exceeded as soon as D_in > 0.
    assert change > pma_sensitivity("node", directed=True, max_degree=max_degree)


def test_in_degree_bound_validates():
    with pytest.raises(ValueError, match="max_in_degree must be >= 1"):
        pma_sensitivity("node", directed=False, max_degree=3, max_in_degree=0)


# ---------------------------------------------------------------- GAPPlan
def _gap_plan(**kwargs):
    from skdpgraph.privacy import plan_gap

    common = dict(epsilon=4.0, delta=1e-5, privacy_level="node", hops=2, directed=False,
                  num_examples=500, batch_size=50, epochs=3, encoder_epochs=2,
                  max_grad_norm=1.0, max_degree=10)
    return plan_gap(**{**common, **kwargs})


def test_gap_plan_is_a_checked_privacy_plan_with_a_consistent_running_epsilon():
    from skdpgraph.privacy import PrivacyPlan, check_plan

    plan = _gap_plan()
    assert isinstance(plan, PrivacyPlan)
    spent = check_plan(plan, 4.0, 1e-5, context="test")
    assert 0.99 * 4.0 <= spent <= 4.0
    # The accountant's value is the RDP sum of its parts, computed here independently.
    sigma, orders = plan.noise_multiplier, np.arange(2, 128, dtype=float)
    by_hand = (opacus_rdp(q=0.1, noise_multiplier=sigma, steps=20 + 30, orders=orders)
               + 2 * orders / (2 * sigma**2))
    eps_by_hand, _ = get_privacy_spent(orders=orders, rdp=by_hand, delta=1e-5)
    assert spent <= eps_by_hand * (1 + 1e-6) and spent == pytest.approx(eps_by_hand, rel=0.05)
    running = ([plan.running_epsilon(1e-5, "encoder", t) for t in range(0, 21, 5)]
               + [plan.running_epsilon(1e-5, "classifier", t) for t in range(0, 31, 5)])
    assert running == sorted(running) and running[0] == 0.0
    assert running[-1] == pytest.approx(spent, rel=1e-12)
    assert plan.events and plan.dp_event() is not None
    with pytest.raises(PrivacyBudgetError, match="more than the budget"):
        check_plan(plan, 3.0, 1e-5, context="test")


def test_gap_plan_edge_level_and_non_private():
    from skdpgraph.privacy import check_plan

    edge = _gap_plan(privacy_level="edge", batch_size=500)
    assert not edge.encoder.private and not edge.classifier.private
    assert edge.epsilon(1e-5) == pytest.approx(4.0, rel=1e-6) == edge.release_epsilon(1e-5)
    assert edge.running_epsilon(1e-5, "encoder", 10) == 0.0  # the encoder reads no edge
    assert edge.own_rows_covered and edge.not_covered(1e-5) == ()
    off = _gap_plan(epsilon=np.inf)
    assert not off.private and off.noise_std == 0.0 and check_plan(off, np.inf, 1e-5,
                                                                   context="t") == np.inf


@pytest.mark.parametrize("max_in_degree", [None, 3])
def test_gap_plan_aggregate_bounds_degrees_and_draws_noise_of_the_planned_std(max_in_degree):
    from skdpgraph._random import RandomStreams
    from skdpgraph.sampling._degree import bound_in_degree

    plan = _gap_plan(max_degree=2, max_in_degree=max_in_degree)
    assert plan.own_rows_covered == (max_in_degree is not None)
    rng = np.random.default_rng(6)
    adjacency, x = random_adjacency(rng, 40, 0.3, False), unit_rows(rng, 40, 6)
    out = PMARelease.of(plan).aggregate(adjacency, x, RandomStreams(1))
    # The same streams, by hand: "degree" bounds out- then in-degree, "noise" draws the noise.
    streams = RandomStreams(1)
    degree = streams.numpy("degree")
    bounded = bound_out_degree(adjacency, 2, degree)
    if max_in_degree is not None:
        bounded = bound_in_degree(bounded, max_in_degree, degree)
    expected = private_multi_hop_aggregation(bounded, x, 2, plan.noise_std,
                                             streams.torch("noise"))
    torch.testing.assert_close(out, expected)
    assert plan.noise_std == pytest.approx(plan.noise_multiplier * plan.sensitivity)


# ---------------------------------------------------------------- ProGAP (progressive plan)
def test_progressive_node_plan_composes_k_plus_one_runs_and_k_one_hop_gaussians():
    from skdpgraph.privacy import check_plan

    plan = _gap_plan(stages=progressive_stages, hops=3)
    assert plan.encoder_runs == 3
    spent = check_plan(plan, 4.0, 1e-5, context="test")
    assert 0.99 * 4.0 <= spent <= 4.0
    # Independently: 3 stage runs of 20 steps, the last stage's 30 steps, 3 Gaussians.
    sigma, orders = plan.noise_multiplier, np.arange(2, 128, dtype=float)
    by_hand = (opacus_rdp(q=0.1, noise_multiplier=sigma, steps=3 * 20 + 30, orders=orders)
               + 3 * orders / (2 * sigma**2))
    eps_by_hand, _ = get_privacy_spent(orders=orders, rdp=by_hand, delta=1e-5)
    assert spent <= eps_by_hand * (1 + 1e-6) and spent == pytest.approx(eps_by_hand, rel=0.05)
    # The same budget buys GAP (one encoder run) less noise than ProGAP (three).
    assert _gap_plan(hops=3).noise_multiplier < sigma
    # Running epsilon: stage i starts after i runs and i aggregations; it only grows.
    running = [plan.running_epsilon(1e-5, f"encoder {i}", t)
               for i in range(3) for t in (0, 10, 20)]
    running += [plan.running_epsilon(1e-5, "classifier", t) for t in (0, 15, 30)]
    assert running == sorted(running) and running[0] == 0.0
    assert running[-1] == pytest.approx(spent, rel=1e-12)
    sigma_only = get_privacy_spent(orders=orders, rdp=opacus_rdp(
        q=0.1, noise_multiplier=sigma, steps=20 + 10, orders=orders) + orders / (2 * sigma**2),
        delta=1e-5)[0]
    assert running[4] == pytest.approx(sigma_only, rel=0.05)  # stage 1 after 10 steps
    assert plan.running_epsilon(1e-5, "encoder", 10) == running[1]  # run 0
    with pytest.raises(ValueError, match="index"):
        plan.running_epsilon(1e-5, "encoder 3", 0)
    with pytest.raises(ValueError, match="stage must be"):
        plan.running_epsilon(1e-5, "classifier 1", 0)
    with pytest.raises(ValueError, match="progressive"):
        PMARelease.of(plan).aggregate(sp.csr_matrix((4, 4)), torch.ones(4, 2), None)


def test_progressive_edge_plan_costs_what_gap_costs():
    from scipy.stats import norm

    from skdpgraph.privacy._gaussian_accounting import gaussian_epsilon

    gap = _gap_plan(privacy_level="edge", batch_size=500, hops=3)
    progap = _gap_plan(privacy_level="edge", batch_size=500, hops=3, stages=progressive_stages)
    assert progap.noise_multiplier == gap.noise_multiplier
    assert progap.epsilon(1e-5) == pytest.approx(4.0, rel=1e-6)
    # Three one-hop Gaussians at sigma = one Gaussian at sigma / sqrt(3) (sensitivity 1):
    # the analytic curve of Balle & Wang (2018), written out here.
    mu = np.sqrt(3) / progap.noise_multiplier
    eps = progap.epsilon(1e-5)
    delta = norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    assert delta == pytest.approx(1e-5, rel=1e-4)
    assert [progap.running_epsilon(1e-5, f"encoder {i}", 5) for i in range(3)] == [
        0.0, *(pytest.approx(gaussian_epsilon(progap.noise_multiplier, 1e-5, count=i))
               for i in (1, 2))]
    bounded = PMARelease.of(progap).bounded(sp.csr_matrix(np.ones((3, 3))), None)  # unchanged
    assert (bounded != sp.csr_matrix(np.ones((3, 3)))).nnz == 0


def test_row_normalize_matches_autograd_of_the_plain_expression():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 3, 5, generator=g, dtype=torch.float64)
    x[1, 2] = 0.0  # a zero row: below the floor, its gradient is g / floor
    x[4, 0] = 1e-14  # a tiny row, also below the floor
    upstream = torch.randn(6, 3, 5, generator=g, dtype=torch.float64)
    grads = []
    for fn in (row_normalize, lambda t: t / t.norm(dim=-1, keepdim=True).clamp_min(1e-12)):
        leaf = x.clone().requires_grad_(True)
        out = fn(leaf)
        out.backward(upstream)
        grads.append((out.detach(), leaf.grad))
    torch.testing.assert_close(grads[0][0], grads[1][0], rtol=0, atol=0)  # same forward
    torch.testing.assert_close(grads[0][1], grads[1][1])
    assert torch.autograd.gradcheck(row_normalize, (x[[0, 2, 3, 5]].clone().requires_grad_(),))


# ---------------------------------------------------------------- the vote head's mechanism
def _by_hand_votes(adjacency, own, hops, std, weight, seed, labels=None):
    """numpy: L_k = L_{k-1} + weight * (A onehot(c_{k-1}) + noise) / std, where c_{k-1} is
    argmax L_{k-1}, or the label for the nodes that ``labels`` ({node: label}) lists."""
    generator = torch.Generator().manual_seed(seed)
    dense, logits = adjacency.toarray(), own.numpy().astype(np.float64)
    for _ in range(hops):
        classes = [(labels or {}).get(node, c) for node, c in enumerate(logits.argmax(1))]
        predicted = np.eye(logits.shape[1])[classes]
        noise = torch.randn(logits.shape, generator=generator).numpy()
        counts = dense @ predicted + std * noise
        logits = logits + weight * counts / std
    return logits - own.numpy()


@pytest.mark.parametrize("hops", [1, 2])
@pytest.mark.parametrize("with_labels", [False, True])
def test_noisy_neighbour_votes_match_a_numpy_computation(hops, with_labels):
    rng = np.random.default_rng(0)
    adjacency = bound_out_degree(sp.random(40, 40, density=0.2, random_state=0, format="csr"),
                                 3, rng)
    own = torch.log_softmax(torch.from_numpy(rng.normal(size=(40, 4))).float() * 3, -1)
    labels = {int(node): int(rng.integers(4)) for node in rng.choice(40, 25, replace=False)}
    labelled = (torch.tensor(list(labels)), torch.tensor(list(labels.values())))
    votes = noisy_neighbour_votes(adjacency, own, hops, 0.7, 2.0,
                                  torch.Generator().manual_seed(5),
                                  labelled if with_labels else None)
    expected = _by_hand_votes(adjacency, own, hops, 0.7, 2.0, 5, labels if with_labels else None)
    np.testing.assert_allclose(votes.numpy(), expected, rtol=1e-4, atol=1e-4)
    if with_labels:  # the labels changed the votes: most labels differ from the prediction
        assert not np.allclose(expected, _by_hand_votes(adjacency, own, hops, 0.7, 2.0, 5))


def test_noisy_neighbour_votes_put_weight_standard_deviations_of_noise_in_every_logit():
    """Whatever the noise std (sigma * Delta), a node without in-neighbours gets votes
    N(0, weight^2): the weight is in noise standard deviations."""
    empty = sp.csr_matrix((5000, 5000))
    own = torch.zeros(5000, 3)
    for std in (0.1, 30.0):
        votes = noisy_neighbour_votes(empty, own, 1, std, 2.0, torch.Generator().manual_seed(1))
        assert votes.std().item() == pytest.approx(2.0, rel=0.03)
        assert abs(votes.mean().item()) < 0.05


@pytest.mark.parametrize("with_labels", [False, True])
def test_removing_one_node_moves_the_other_rows_vote_counts_by_at_most_sqrt_d(with_labels):
    """The counts sum one-hot rows, a node's label or its prediction, so one node of
    out-degree <= D moves the other nodes' rows by <= sqrt(D) in L2 (PMA's sensitivity)."""
    rng = np.random.default_rng(1)
    max_degree, n = 4, 60
    adjacency = bound_out_degree(sp.random(n, n, density=0.3, random_state=1, format="csr"),
                                 max_degree, rng).tocsr()
    own = torch.from_numpy(rng.normal(size=(n, 5)) * 50).float().log_softmax(-1)
    std, tiny = 1e-3, torch.Generator().manual_seed(0)
    # Half the nodes are labelled, each with a label other than its prediction.
    index = torch.arange(0, n, 2)
    labelled = (index, (own[index].argmax(-1) + 1) % 5) if with_labels else None

    def counts(matrix):  # weight = std: votes = counts + N(0, std^2)
        return noisy_neighbour_votes(matrix, own, 1, std, std, tiny.manual_seed(0),
                                     labelled).numpy()

    def worst_change(release) -> float:
        """The largest L2 move of the other nodes' rows when one node is isolated."""
        worst = 0.0
        for v in range(n):
            isolated = adjacency.tolil()
            isolated[v, :] = 0
            isolated[:, v] = 0
            change = release(adjacency) - release(isolated.tocsr())
            worst = max(worst, np.linalg.norm(np.delete(change, v, axis=0)))
        return worst

    assert 1.0 < worst_change(counts) <= np.sqrt(max_degree) + 1e-4
    # A broken variant whose rows have norm 2 (votes counted twice) exceeds the bound.
    assert worst_change(lambda matrix: 2 * counts(matrix)) > np.sqrt(max_degree) + 1e-4
    if with_labels:  # and so does one where a labelled node votes for its label and for
        # its prediction (rows of norm sqrt(2)).
        predictions = np.eye(5)[own.argmax(-1).numpy()]
        predictions[np.setdiff1d(np.arange(n), index.numpy())] = 0

        def both(matrix):
            return counts(matrix) + matrix @ predictions

        assert worst_change(both) > np.sqrt(max_degree) + 1e-4


def test_noisy_neighbour_votes_refuse_a_noiseless_or_hopless_call():
    own = torch.zeros(3, 2)
    adjacency = sp.csr_matrix((3, 3))
    with pytest.raises(ValueError, match="hops must be >= 1"):
        noisy_neighbour_votes(adjacency, own, 0, 1.0, 2.0, torch.Generator())
    with pytest.raises(ValueError, match="noise_std and weight must be > 0"):
        noisy_neighbour_votes(adjacency, own, 1, 0.0, 2.0, torch.Generator())
