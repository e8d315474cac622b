"""CPU time per edge of the sparse neighbour mean that RGNN's GNN runs at every epoch.

RGNN's epochs are full-graph SAGE passes: one product of the row-normalised in-adjacency
(:class:`skdpgraph.nn.InNeighbourMean`, torch CSR) with a dense matrix of 16 columns per
layer, forward and backward. This script times that product alone on ``make_csbm`` graphs
of growing size, in the graph's own (random) node order and in two orders chosen from the
structure alone (reverse Cuthill--McKee, and METIS parts of about 4096 nodes), to show
where the time per edge goes up::

    python benchmarks/sparse_product.py --sizes 100000 300000 1000000 2000000

One torch thread; CPU time per product, the median of ``--repeats``, divided by the number
of edges (stored nonzeros).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run as runner  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--width", type=int, default=16, help="columns of the dense matrix")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--orders", nargs="+", default=["given", "rcm", "metis"],
                   choices=["given", "rcm", "metis"])
    p.add_argument("--out", type=Path, default=None)
    return p.parse_args(argv)


def node_order(adjacency, how):
    """A permutation of the nodes from the structure alone."""
    import numpy as np

    n = adjacency.shape[0]
    if how == "given":
        return np.arange(n)
    if how == "rcm":
        from scipy.sparse.csgraph import reverse_cuthill_mckee

        return reverse_cuthill_mckee(adjacency.tocsr(), symmetric_mode=True)
    from skdpgraph.sampling import metis_partition

    parts = metis_partition(adjacency.indptr, adjacency.indices, max(2, n // 4096), seed=0)
    return np.argsort(parts, kind="stable")


def time_product(mean, dense, repeats):
    """Median CPU seconds of ``mean.matrix @ dense`` over ``repeats`` (after 2 warm-ups)."""
    for _ in range(2):
        mean.matrix @ dense
    times = []
    for _ in range(repeats):
        start = time.process_time()
        mean.matrix @ dense
        times.append(time.process_time() - start)
    return statistics.median(times)


def main(argv=None):
    args = parse_args(argv)
    runner.set_threads(1)
    import torch

    from skdpgraph.datasets import make_csbm
    from skdpgraph.nn import InNeighbourMean

    rows = []
    for n in args.sizes:
        adjacency = make_csbm(n_nodes=n, random_state=0).graph.adjacency().tocsr()
        dense = torch.randn(n, args.width, generator=torch.Generator().manual_seed(0))
        for how in args.orders:
            start = time.perf_counter()
            order = node_order(adjacency, how)
            order_seconds = time.perf_counter() - start
            mean = InNeighbourMean(adjacency[order][:, order])
            seconds = time_product(mean, dense, args.repeats)
            rows.append({"n_nodes": n, "edges": int(adjacency.nnz), "order": how,
                         "product_cpu_seconds": seconds,
                         "ns_per_edge": 1e9 * seconds / adjacency.nnz,
                         "dense_mb": n * args.width * 4 / 2**20,
                         "order_seconds": order_seconds})
            print(f"n={n:>9,d} edges={adjacency.nnz:>11,d} order={how:>5s}: "
                  f"{1e3 * seconds:8.1f} ms per product, {rows[-1]['ns_per_edge']:6.1f} ns per "
                  f"edge (dense rows {rows[-1]['dense_mb']:.0f} MB; ordering "
                  f"{order_seconds:.1f} s)", flush=True)
            del mean
    if args.out:
        runner.write_rows(args.out, args, rows)


if __name__ == "__main__":
    main()
