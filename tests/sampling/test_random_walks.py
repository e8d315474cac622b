"""Disjoint random-walk samplers (DRW, DRW-R, DRW-D) on random graphs."""

import numpy as np
import pytest
import torch

from skdpgraph import Graph
from skdpgraph._random import keyed_generator, prediction_key
from skdpgraph.sampling import (SubgraphExamples, disjoint_random_walks, max_subgraph_size,
                                rooted_random_walks)


def _random_graph(n, p, seed):
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((n, n)) < p, 1)
    source, target = np.nonzero(upper)
    return Graph(np.vstack([source, target]), rng.normal(size=(n, 3)))


def _check_walks(graph, parts, walk_length, restarts, roots=None):
    adjacency = graph.adjacency().toarray() > 0
    table = parts.nodes
    members = table[table >= 0]
    assert len(members) == len(np.unique(members)), "a node is in two subgraphs"
    assert table.shape[1] == max_subgraph_size(walk_length, restarts)
    assert parts.sizes.max() <= 1 + restarts * walk_length
    assert np.all(table[:, 0] >= 0)
    assigned = np.zeros(graph.num_nodes, dtype=bool)
    assigned[members] = True
    for row in table:
        row = row[row >= 0]
        for column in range(1, len(row)):  # every step follows an edge
            previous = row[column - 1]
            assert adjacency[row[column], previous] or (
                restarts > 1 and adjacency[row[column], row[0]])
        if restarts == 1 and len(row) < walk_length + 1:
            # the walk stopped early: its last node had no unassigned neighbour left
            assert assigned[adjacency[row[-1]]].all()
    if roots is None:
        assert assigned.all()
    else:
        np.testing.assert_array_equal(table[:, 0], roots)


@pytest.mark.parametrize("restarts", [1, 3])
@pytest.mark.parametrize("seed", range(4))
def test_disjoint_walks_properties(restarts, seed):
    graph = _random_graph(60, 0.08, seed)
    rng = np.random.default_rng(seed)
    parts = disjoint_random_walks(graph.indptr, graph.indices, 3, restarts=restarts,
                                  generator=rng)
    _check_walks(graph, parts, 3, restarts)
    roots = rng.choice(60, 15, replace=False)
    parts = disjoint_random_walks(graph.indptr, graph.indices, 3, restarts=restarts,
                                  roots=roots, generator=rng)
    _check_walks(graph, parts, 3, restarts, roots)
    assert parts.sizes.mean() > 1.5  # the walks do grow


def test_walks_reach_full_length_on_a_path():
    graph = Graph(np.array([np.arange(9), np.arange(1, 10)]), np.zeros((10, 1)))
    parts = disjoint_random_walks(graph.indptr, graph.indices, 9, roots=np.array([0]),
                                  generator=np.random.default_rng(0))
    np.testing.assert_array_equal(parts.nodes[0], np.arange(10))


def test_same_seed_same_partition_and_bad_roots():
    graph = _random_graph(50, 0.1, 0)
    draw = [disjoint_random_walks(graph.indptr, graph.indices, 4,
                                  generator=np.random.default_rng(1)).nodes for _ in range(2)]
    np.testing.assert_array_equal(*draw)
    with pytest.raises(ValueError, match="roots must be distinct"):
        disjoint_random_walks(graph.indptr, graph.indices, 2, roots=np.array([1, 1]),
                              generator=np.random.default_rng(0))
    with pytest.raises(ValueError, match="walk_length and restarts must be >= 1"):
        disjoint_random_walks(graph.indptr, graph.indices, 0, generator=np.random.default_rng(0))


def test_drw_d_resamples_with_fixed_roots():
    graph = _random_graph(80, 0.06, 3)
    rng = np.random.default_rng(0)
    roots = np.arange(0, 80, 4)
    examples = SubgraphExamples(
        graph, lambda: disjoint_random_walks(graph.indptr, graph.indices, 3, roots=roots,
                                             generator=rng).nodes,
        torch.zeros(len(roots), dtype=torch.long), resample_every=5)
    tables = []
    for step in range(0, 20):
        examples.batch(torch.arange(4), step)
        tables.append(examples.table.copy())
    assert examples.draws == 4  # steps 0, 5, 10, 15
    assert all(np.array_equal(tables[s], tables[s - 1]) for s in range(1, 20) if s % 5)
    assert not np.array_equal(tables[0], tables[5])  # re-drawn
    for table in tables:
        np.testing.assert_array_equal(table[:, 0], roots)
    examples.draw = lambda: np.zeros((3, 4), dtype=np.int64)
    with pytest.raises(RuntimeError, match="changed the roots"):
        examples.batch(torch.arange(2), 25)


def test_rooted_walks_are_self_avoiding_and_subset_invariant():
    graph = _random_graph(40, 0.15, 2)
    adjacency = graph.adjacency().toarray() > 0
    roots = np.arange(40)
    key = prediction_key(7)

    def walks(roots, draw=0):
        return rooted_random_walks(graph.indptr, graph.indices, roots, 3, restarts=2,
                                   generator=keyed_generator(key, draw)).nodes

    full = walks(roots)
    np.testing.assert_array_equal(full[10:20], walks(roots[10:20]))
    np.testing.assert_array_equal(full, walks(roots))  # same key: same walks
    for row in full:
        row = row[row >= 0]
        assert len(row) == len(set(row))
        assert all(adjacency[row[c], row[c - 1]] or adjacency[row[c], row[0]]
                   for c in range(1, len(row)))
    assert not np.array_equal(full, walks(roots, draw=1))
