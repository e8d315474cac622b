"""A speed anchor: each estimator's fit time over a plain non-private PyG model's, in one run.

Example (from the repository root)::

    python benchmarks/pyg_anchor.py --dataset amazon_computers --seeds 2

For every estimator (default settings, ``epsilon=8`` and ``epsilon=inf``) the anchor is the
model a PyG user would write for the same task, of the same width and epochs, fitted on the
same training nodes in the same process with the same threads:

- GAP, ProGAP, DRW, FDP, RGNN: a GCN, full batch: ``L`` ``GCNConv`` layers of the
  estimator's width with ReLU (``L`` = GAP's and ProGAP's resolved ``hops``, DRW's and
  RGNN's ``num_layers``, FDP's one hop), a linear classifier, cross-entropy on the training
  nodes over the whole graph, Adam, one step per epoch;
- DP-MLP: an MLP of the same width and depth, Adam, the estimator's epochs in shuffled
  batches of its ``batch_size`` (the same number of steps).

The anchor trains for as many epochs as the estimator trains models in all: GAP its
encoder's and its classifier's, ProGAP each of its K + 1 stages', RGNN each of its
``ensemble_size`` GNNs' (``ratio``). The time the anchor took to reach the classifier's
epochs alone is recorded too (``ratio_classifier_epochs``: the estimator against one model
trained once, the reading of earlier runs). The anchor's time includes turning the graph
into tensors. Ratios, not absolute times, are what to read on a shared machine.
Targets: edge-level GAP at most 1.2x its GCN, the others within 2x.
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # run.py and registry.py
sys.path.insert(1, str(HERE.parent))  # benchmark this checkout

import run as runner  # noqa: E402


def _gap_like(est, n_train):
    """GAP and ProGAP: ``hops`` GCN layers of the resolved width, defaults resolved as the
    estimator does (``hops``, width and epochs depend on the privacy level); epochs: the
    encoder's and the classifier's (ProGAP: K encoder stages and the last one; GAP's vote
    head: its encoder's alone)."""
    est._resolve_defaults()
    if est.head_.name == "vote":
        encoder = est.encoder_epochs_
        return dict(layers=est.hops_, hidden=est.hidden_dim_, classifier_epochs=encoder,
                    epochs=encoder)
    encoders = est.hops_ if est.head_.name == "progressive" else 1
    return dict(layers=est.hops_, hidden=est.hidden_dim_, classifier_epochs=est.epochs_,
                epochs=est.epochs_ + encoders * est.encoder_epochs_)


def _one_model(layers_of, epochs_of=lambda est, n_train: est.epochs):
    """Estimators that train one model: its depth, width and epochs."""
    return lambda est, n_train: dict(layers=layers_of(est), hidden=est.hidden_dim,
                                     classifier_epochs=epochs_of(est, n_train),
                                     epochs=epochs_of(est, n_train))


#: estimator name in registry.py -> (anchor kind, its settings from the estimator's defaults,
#: the issue's target ratio).
ANCHORS = {
    "gap-edp": ("gcn", _gap_like, 1.2),
    "gap-ndp": ("gcn", _gap_like, 2.0),
    "progap-edp": ("gcn", _gap_like, 2.0),
    "progap-ndp": ("gcn", _gap_like, 2.0),
    "drw": ("gcn", _one_model(lambda est: est.num_layers), 2.0),
    # FDP's default epochs make a fixed number of steps on the training nodes
    "fdp": ("gcn", _one_model(lambda est: 1, lambda est, n_train: est._epochs(
        n_train, min(int(est.batch_size), n_train))), 2.0),
    "rgnn": ("gcn", lambda est, n_train: dict(layers=est.num_layers, hidden=est.hidden_dim,
                                              classifier_epochs=est.epochs,
                                              epochs=est.ensemble_size * est.epochs), 2.0),
    "dpmlp": ("mlp", lambda est, n_train: dict(layers=est.num_layers, hidden=est.hidden_dim,
                                               classifier_epochs=est.epochs, epochs=est.epochs,
                                               batch_size=est.batch_size), 2.0),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True, choices=runner.DATASETS)
    p.add_argument("--split", default="75/10/15", help="as in run.py")
    p.add_argument("--estimators", nargs="+", default=list(ANCHORS), choices=list(ANCHORS))
    p.add_argument("--epsilons", nargs="+", type=float, default=[8.0, math.inf])
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--data-root", type=Path,
                   default=runner.REPO_ROOT.parent / "shared" / "datasets")
    p.add_argument("--out", type=Path, default=None,
                   help="JSON output (default: benchmarks/results/pyg-anchor-DATASET.json)")
    return p.parse_args(argv)


def make_anchor(kind, in_dim, n_classes, *, layers, hidden, **_):
    import torch
    from torch import nn
    from torch_geometric.nn import GCNConv

    class GCN(nn.Module):
        def __init__(self):
            super().__init__()
            widths = [in_dim] + [hidden] * layers
            self.convs = nn.ModuleList(GCNConv(a, b) for a, b in zip(widths[:-1], widths[1:]))
            self.head = nn.Linear(hidden, n_classes)

        def forward(self, x, edge_index):
            for conv in self.convs:
                x = torch.relu(conv(x, edge_index))
            return self.head(x)

    if kind == "gcn":
        return GCN()
    widths = [in_dim] + [hidden] * (layers - 1) + [n_classes]
    mlp = []
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        mlp += ([nn.ReLU()] if i else []) + [nn.Linear(a, b)]
    return nn.Sequential(*mlp)


def fit_anchor(kind, settings, graph, y, train, seed, lr=0.01):
    """Fit the anchor on ``train``; return (seconds, seconds when ``classifier_epochs`` were
    done, its model, the feature and edge tensors)."""
    import numpy as np
    import torch

    torch.manual_seed(seed)
    start = time.perf_counter()
    x = torch.from_numpy(graph.features())
    edge_index = torch.from_numpy(np.asarray(graph.edge_index, dtype=np.int64))
    labels = torch.from_numpy(np.asarray(y, dtype=np.int64))
    index = torch.from_numpy(np.asarray(train, dtype=np.int64))
    model = make_anchor(kind, x.shape[1], int(labels.max()) + 1, **settings)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = torch.nn.functional.cross_entropy
    model.train()
    at_classifier_epochs = None
    for epoch in range(settings["epochs"]):
        if epoch == settings["classifier_epochs"]:
            at_classifier_epochs = time.perf_counter() - start
        if kind == "gcn":
            optimizer.zero_grad()
            loss_fn(model(x, edge_index)[index], labels[index]).backward()
            optimizer.step()
            continue
        for batch in torch.randperm(len(index)).split(settings["batch_size"]):
            optimizer.zero_grad()
            loss_fn(model(x[index[batch]]), labels[index[batch]]).backward()
            optimizer.step()
    seconds = time.perf_counter() - start
    return seconds, at_classifier_epochs or seconds, model, x, edge_index


def anchor_accuracy(kind, model, x, edge_index, y, test):
    import numpy as np
    import torch

    model.eval()
    with torch.no_grad():
        logits = model(x, edge_index) if kind == "gcn" else model(x)
    test = np.asarray(test)
    return float((logits[test].argmax(1).numpy() == np.asarray(y)[test]).mean())


def warm_up(names):
    """One untimed fit of each estimator and anchor on a small graph: imports, JIT, caches."""
    import numpy as np

    from registry import ESTIMATORS
    from skdpgraph.datasets import make_csbm

    ds = make_csbm(n_nodes=200, n_features=16, random_state=0)
    train = np.arange(150)
    for name in names:
        est = ESTIMATORS[name](8.0, 0)
        est.fit(ds.graph.nodes(train), ds.y[train])
        kind, settings, _ = ANCHORS[name]
        fit_anchor(kind, settings(est, len(train)), ds.graph, ds.y, train, 0)


def run(args, log):
    import numpy as np

    from registry import ESTIMATORS

    ds, split_name, split_for_seed = runner.load(args)
    warm_up(args.estimators)
    records = []
    for seed in range(args.seeds):
        split = split_for_seed(seed)
        train, test = np.asarray(split["train"]), np.asarray(split["test"])
        for name in args.estimators:
            kind, settings, target = ANCHORS[name]
            anchor = settings(ESTIMATORS[name](8.0, seed), len(train))
            seconds, one_model, model, x, edge_index = fit_anchor(kind, anchor, ds.graph, ds.y,
                                                                  train, seed)
            base = {"estimator": name, "seed": seed, "anchor": kind, "anchor_settings": anchor,
                    "anchor_seconds": seconds, "anchor_classifier_epochs_seconds": one_model,
                    "target_ratio": target,
                    "anchor_test_accuracy": anchor_accuracy(kind, model, x, edge_index, ds.y,
                                                            test)}
            del model, x, edge_index
            log(f"  {name:>8s} seed={seed} {kind} anchor {seconds:.2f}s")
            for epsilon in args.epsilons:
                rec = {**base, "epsilon": epsilon}
                try:
                    rec.update(runner.fit_one(ESTIMATORS[name], {}, epsilon, seed, ds, split,
                                              False))
                    rec["ratio"] = rec["fit_seconds"] / seconds
                    rec["ratio_classifier_epochs"] = rec["fit_seconds"] / one_model
                    log(f"  {name:>8s} seed={seed} eps={runner._num(epsilon):>3s} "
                        f"{rec['fit_seconds']:.2f}s  ratio {rec['ratio']:.2f} (classifier "
                        f"epochs only: {rec['ratio_classifier_epochs']:.2f})")
                except Exception as exc:  # record it and go on
                    rec["error"] = f"{type(exc).__name__}: {exc}"
                    log(f"  {name:>8s} seed={seed} eps={runner._num(epsilon)} ERROR {exc}")
                records.append(rec)
    return split_name, records


def summarize(records):
    """Per (estimator, epsilon): mean fit and anchor times, the ratio of the means."""
    import numpy as np

    rows = []
    for key in dict.fromkeys((r["estimator"], r["epsilon"]) for r in records):
        ok = [r for r in records if (r["estimator"], r["epsilon"]) == key and "error" not in r]
        if not ok:
            continue
        ours = float(np.mean([r["fit_seconds"] for r in ok]))
        anchor = float(np.mean([r["anchor_seconds"] for r in ok]))
        one_model = float(np.mean([r["anchor_classifier_epochs_seconds"] for r in ok]))
        rows.append({"estimator": key[0], "epsilon": key[1], "runs": len(ok),
                     "anchor": ok[0]["anchor"], "anchor_settings": ok[0]["anchor_settings"],
                     "fit_seconds_mean": ours, "anchor_seconds_mean": anchor,
                     "ratio_of_means": ours / anchor,
                     "ratio_classifier_epochs": ours / one_model,
                     "ratio_max": max(r["ratio"] for r in ok),
                     "target_ratio": ok[0]["target_ratio"],
                     "test_accuracy_mean": float(np.mean([r["test_accuracy"] for r in ok])),
                     "anchor_test_accuracy_mean": float(np.mean(
                         [r["anchor_test_accuracy"] for r in ok]))})
    return rows


def format_table(rows):
    headers = ["estimator", "eps", "runs", "anchor (L x width, epochs)", "ours s", "anchor s",
               "ratio", "max", "target", "classifier epochs only", "acc % ours/anchor"]
    lines = []
    for r in rows:
        s = r["anchor_settings"]
        lines.append([r["estimator"], runner._num(r["epsilon"]), str(r["runs"]),
                      f"{r['anchor']} ({s['layers']} x {s['hidden']}, {s['epochs']})",
                      f"{r['fit_seconds_mean']:.2f}", f"{r['anchor_seconds_mean']:.2f}",
                      f"{r['ratio_of_means']:.2f}", f"{r['ratio_max']:.2f}",
                      f"{r['target_ratio']:g}",
                      f"{r['ratio_classifier_epochs']:.2f} ({s['classifier_epochs']})",
                      f"{100 * r['test_accuracy_mean']:.1f}/"
                      f"{100 * r['anchor_test_accuracy_mean']:.1f}"])
    widths = [max(len(c) for c in col) for col in zip(headers, *lines)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in lines]
    return "\n".join(line.rstrip() for line in out)


def main(argv=None):
    args = parse_args(argv)
    runner.set_threads(args.threads)
    args.params = {}
    env = runner.environment(args)
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    start = time.perf_counter()
    split_name, records = run(args, log)
    env["wall_seconds"] = time.perf_counter() - start
    rows = summarize(records)
    print(format_table(rows))
    out = args.out or HERE / "results" / f"pyg-anchor-{args.dataset}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    config = {"dataset": args.dataset, "split": split_name, "estimators": args.estimators,
              "epsilons": args.epsilons, "seeds": args.seeds, "threads": args.threads}
    payload = {"config": config, "environment": env, "summary": rows, "records": records}
    out.write_text(json.dumps(runner._jsonable(payload), indent=2) + "\n")
    print(f"\nwrote {out}")
    return 1 if any("error" in r for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
