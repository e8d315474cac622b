"""GAP fit time and peak memory on make_csbm graphs of growing size (average degree 10).

Each size runs in its own subprocess so ``ru_maxrss`` is that fit's peak. Torch is pinned
to one thread. Example::

    python benchmarks/gap_scaling.py --sizes 10000 100000 1000000 --epsilon 4 --epochs 100
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_CHILD = r"""
import json, resource, sys, time
import numpy as np, torch
torch.set_num_threads(1)
from skdpgraph import GAPClassifier
from skdpgraph.datasets import make_csbm
n, epsilon, level, epochs = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], int(sys.argv[4])
data = make_csbm(n_nodes=n, avg_degree=10.0, random_state=0)
train = np.random.default_rng(0).permutation(n)[: int(0.75 * n)]
base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
start = time.perf_counter()
clf = GAPClassifier(epsilon=epsilon, privacy_level=level, epochs=epochs, encoder_epochs=epochs,
                    device="cpu", random_state=0).fit(data.nodes()[train], data.y[train])
fit = time.perf_counter() - start
print(json.dumps({"n_nodes": n, "edges": int(data.graph.num_edges), "fit_seconds": fit,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_before_fit_mb": base_rss, "epsilon_spent": clf.epsilon_spent_}))
"""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--epsilon", type=float, default=4.0)
    parser.add_argument("--level", default="edge", choices=["edge", "node"])
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--out", default="benchmarks/results/gap-scaling.json")
    args = parser.parse_args(argv)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    rows = []
    for n in args.sizes:
        out = subprocess.run([sys.executable, "-c", _CHILD, str(n), str(args.epsilon), args.level,
                              str(args.epochs)], capture_output=True, text=True, env=env)
        if out.returncode:
            print(f"n={n}: failed\n{out.stderr[-2000:]}")
            continue
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"n={n:>9,}  edges={r['edges']:>11,}  fit {r['fit_seconds']:8.2f} s  "
              f"({r['fit_seconds'] / n * 1e6:6.2f} us/node)  peak RSS {r['peak_rss_mb']:8.0f} MB")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"args": vars(args), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
