"""GAP at edge level with its defaults: test accuracy at delta = 1/(10 E) and 1/(10 P).

E is the number of undirected edges (it is protected at edge level), P = N(N-1)/2 the
number of possible edges of the N public nodes (the default). Both deltas are passed
explicitly, so the comparison runs on any version of the library. 75/10/15 split as
``benchmarks/run.py`` makes it, epsilon 1 and 4, seeds 0 and 1, one torch thread::

    PYTHONPATH=. python benchmarks/studies/default_delta/default_delta_cost.py amazon_photo
"""

import json
import sys
import time

import numpy as np
import torch

from skdpgraph import GAPClassifier
from skdpgraph.datasets import load_dataset, train_val_test_split
from skdpgraph._validation import possible_edges


def main(name: str, root: str = "../shared/datasets", out: str | None = None) -> None:
    torch.set_num_threads(1)
    ds = load_dataset(name, root)
    graph = ds.graph
    edges = graph.num_edges // (1 if graph.directed else 2)
    deltas = {"1/(10 E)": 1 / (10 * edges),
              "1/(10 P)": 1 / (10 * possible_edges(graph.num_nodes, graph.directed))}
    print(f"{name}: N={graph.num_nodes}, E={edges}, deltas {deltas}", flush=True)
    rows = []
    for epsilon in (1.0, 4.0):
        for seed in (0, 1):
            split = train_val_test_split(ds.y, 0.75, 0.10, 0.15, random_state=seed)
            train, test = np.asarray(split["train"]), np.asarray(split["test"])
            for rule, delta in deltas.items():
                start = time.perf_counter()
                clf = GAPClassifier(epsilon=epsilon, delta=delta, random_state=seed).fit(
                    graph.nodes(train), ds.y[train])
                rows.append(dict(dataset=name, epsilon=epsilon, seed=seed, rule=rule,
                                 delta=delta, noise_multiplier=clf.noise_multiplier_,
                                 test_accuracy=clf.score(graph.nodes(test), ds.y[test]),
                                 fit_seconds=time.perf_counter() - start))
                print(rows[-1], flush=True)
    for epsilon in (1.0, 4.0):
        for rule in deltas:
            mine = [r for r in rows if r["epsilon"] == epsilon and r["rule"] == rule]
            scores = ", ".join(f"{100 * r['test_accuracy']:.2f}" for r in mine)
            print(f"epsilon={epsilon:g} delta={rule}: sigma={mine[0]['noise_multiplier']:.4f}, "
                  f"mean {100 * np.mean([r['test_accuracy'] for r in mine]):.2f} ({scores})")
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
