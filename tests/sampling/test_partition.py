"""Tests for METIS partitioning."""

import numpy as np
import pytest

from skdpgraph import Graph
from skdpgraph.datasets import make_csbm
from skdpgraph.sampling import metis_partition


@pytest.mark.parametrize("n_parts", [2, 16, 40])
def test_partition_covers_all_nodes_with_requested_parts(n_parts):
    g = make_csbm(n_nodes=1000, random_state=0).graph
    parts = metis_partition(g.indptr, g.indices, n_parts, seed=0)
    assert parts.shape == (1000,)
    assert parts.min() == 0 and parts.max() == n_parts - 1
    np.testing.assert_array_equal(np.unique(parts), np.arange(n_parts))
    sizes = np.bincount(parts)
    assert sizes.max() <= 1.2 * 1000 / n_parts + 2  # balanced


def test_partition_cuts_fewer_edges_than_random():
    g = make_csbm(n_nodes=1000, homophily=0.9, random_state=1).graph
    source, target = g.edge_index
    parts = metis_partition(g.indptr, g.indices, 8, seed=0)
    random = np.random.default_rng(0).integers(0, 8, 1000)
    assert (parts[source] != parts[target]).mean() < 0.7 * (random[source] != random[target]).mean()


def test_partition_seeded_small_and_directed_inputs():
    g = make_csbm(n_nodes=300, random_state=2).graph
    a = metis_partition(g.indptr, g.indices, 5, seed=3)
    np.testing.assert_array_equal(a, metis_partition(g.indptr, g.indices, 5, seed=3))
    np.testing.assert_array_equal(metis_partition(g.indptr, g.indices, 1), np.zeros(300))
    tiny = Graph([[0, 1], [1, 2]], np.eye(3))
    assert set(metis_partition(tiny.indptr, tiny.indices, 10)) <= {0, 1, 2}  # capped at n
    directed = Graph([[0, 1, 2, 3], [1, 2, 3, 0]], np.eye(4), directed=True)
    assert metis_partition(directed.indptr, directed.indices, 2, seed=0).shape == (4,)
    edgeless = Graph(np.zeros((2, 0), int), np.eye(6))
    assert metis_partition(edgeless.indptr, edgeless.indices, 3, seed=0).shape == (6,)
    with pytest.raises(ValueError, match="n_parts must be >= 1"):
        metis_partition(g.indptr, g.indices, 0)
