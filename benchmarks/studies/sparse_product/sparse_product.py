"""CPU time per edge of the sparse neighbour mean that RGNN's GNN runs at every epoch.

RGNN's epochs are full-graph SAGE passes: one product of the row-normalised in-adjacency
(:class:`skdpgraph.nn.InNeighbourMean`, torch CSR) with a dense matrix of 16 columns per
layer, forward and backward. This script times that product alone on ``make_csbm`` graphs
of growing size, in the graph's own (random) node order and in two orders chosen from the
structure alone (reverse Cuthill--McKee, and METIS parts of about 4096 nodes), to show
where the time per edge goes up::

    python benchmarks/studies/sparse_product/sparse_product.py --sizes 100000 300000 1000000 2000000

``--kernels ours pyg`` also times PyG's own neighbour mean on the same graph and dense
matrix, as a message-passing layer runs it without torch-sparse: gather the source rows
(``x[edge_index[0]]``), then ``torch_geometric.nn.aggr.MeanAggregation`` onto the targets.
That is the anchor for the growth per edge: a library's own kernel on the same graphs.

One torch thread; CPU time per product, the median of ``--repeats``, divided by the number
of edges (stored nonzeros).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCHMARKS))
import run as runner  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--width", type=int, default=16, help="columns of the dense matrix")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--orders", nargs="+", default=["given", "rcm", "metis"],
                   choices=["given", "rcm", "metis"])
    p.add_argument("--kernels", nargs="+", default=["ours"], choices=["ours", "pyg"],
                   help="ours: InNeighbourMean's CSR product; pyg: PyG's gather + mean")
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


def time_product(product, repeats):
    """Median CPU seconds of ``product()`` over ``repeats`` (after 2 warm-ups)."""
    for _ in range(2):
        product()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        product()
        times.append(time.process_time() - start)
    return statistics.median(times)


def neighbour_mean(adjacency, dense, kernel):
    """``product()`` computing each node's mean over its in-neighbours' rows of ``dense``."""
    import numpy as np
    import torch

    if kernel == "ours":
        from skdpgraph.nn import InNeighbourMean

        matrix = InNeighbourMean(adjacency).matrix
        return lambda: matrix @ dense
    from torch_geometric.nn.aggr import MeanAggregation

    coo = adjacency.tocoo()  # row i's entries are node i's in-neighbours (as InNeighbourMean)
    source = torch.from_numpy(coo.col.astype(np.int64))
    target = torch.from_numpy(coo.row.astype(np.int64))
    mean, n = MeanAggregation(), adjacency.shape[0]
    return lambda: mean(dense.index_select(0, source), target, dim_size=n)


def main(argv=None):
    args = parse_args(argv)
    runner.set_threads(1)
    import torch

    from skdpgraph.datasets import make_csbm

    rows = []
    for n in args.sizes:
        adjacency = make_csbm(n_nodes=n, random_state=0).graph.adjacency().tocsr()
        dense = torch.randn(n, args.width, generator=torch.Generator().manual_seed(0))
        for how in args.orders:
            start = time.perf_counter()
            order = node_order(adjacency, how)
            order_seconds = time.perf_counter() - start
            ordered = adjacency[order][:, order]
            for kernel in args.kernels:
                product = neighbour_mean(ordered, dense, kernel)
                seconds = time_product(product, args.repeats)
                rows.append({"n_nodes": n, "edges": int(adjacency.nnz), "order": how,
                             "kernel": kernel, "product_cpu_seconds": seconds,
                             "ns_per_edge": 1e9 * seconds / adjacency.nnz,
                             "dense_mb": n * args.width * 4 / 2**20,
                             "order_seconds": order_seconds})
                print(f"n={n:>9,d} edges={adjacency.nnz:>11,d} order={how:>5s} "
                      f"kernel={kernel:>4s}: {1e3 * seconds:8.1f} ms per product, "
                      f"{rows[-1]['ns_per_edge']:6.1f} ns per edge (dense rows "
                      f"{rows[-1]['dense_mb']:.0f} MB; ordering {order_seconds:.1f} s)",
                      flush=True)
                del product
    if args.out:
        runner.write_rows(args.out, args, rows)


if __name__ == "__main__":
    main()
