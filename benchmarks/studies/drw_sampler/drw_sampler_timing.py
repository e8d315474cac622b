"""Time the disjoint random-walk samplers on make_csbm graphs of 10^4..10^6 nodes.

    OMP_NUM_THREADS=1 python benchmarks/studies/drw_sampler/drw_sampler_timing.py \
        [--sizes 10000 100000 1000000]

Prints one row per graph size and sampler: seconds per full partition (median of
``--repeats``), the number of subgraphs and their mean size. ``roots=all`` is the paper's
procedure (every node in a subgraph); ``roots=50%`` starts walks from half of the nodes
(a 50% training split), as DRWClassifier does.
"""

import argparse
import time

import numpy as np

from skdpgraph.datasets import make_csbm
from skdpgraph.sampling import disjoint_random_walks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--walk-length", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'nodes':>9} {'edges':>10} {'sampler':>7} {'roots':>7} {'seconds':>8} "
          f"{'subgraphs':>9} {'mean size':>9}")
    for n in args.sizes:
        graph = make_csbm(n_nodes=n, random_state=0).graph
        rng = np.random.default_rng(0)
        half = rng.choice(n, n // 2, replace=False)
        for name, restarts in (("drw", 1), ("drw-r", 2)):
            for label, roots in (("all", None), ("50%", half)):
                times = []
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    parts = disjoint_random_walks(graph.indptr, graph.indices, args.walk_length,
                                                  restarts=restarts, roots=roots, generator=rng)
                    times.append(time.perf_counter() - start)
                print(f"{n:>9} {graph.num_edges:>10} {name:>7} {label:>7} "
                      f"{np.median(times):>8.3f} {len(parts):>9} {parts.sizes.mean():>9.2f}")


if __name__ == "__main__":
    main()
