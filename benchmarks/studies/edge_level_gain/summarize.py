"""Markdown tables of the edge-level study's JSON lines: mean ± std (ddof=1) over seeds.

Example (from the repository root)::

    python benchmarks/studies/edge_level_gain/summarize.py
"""

import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def read(name):
    """The records of ``HERE / name`` (epsilons back to floats); none if it is missing."""
    path = HERE / name
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for r in records:
        if "epsilon" in r:
            r["epsilon"] = float(r["epsilon"])
    return records


def cell(values):
    """``mean ± std (n)`` in percent."""
    values = 100 * np.asarray(values, dtype=float)
    if len(values) == 0:
        return "-"
    std = f" ± {values.std(ddof=1):.1f}" if len(values) > 1 else ""
    return f"{values.mean():.1f}{std} ({len(values)})"


def table(headers, rows):
    """A markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(map(str, row)) + " |" for row in rows])


def grouped(records, *keys):
    """Test accuracies grouped by ``keys``, in the order first seen."""
    groups = defaultdict(list)
    for r in records:
        if "test_accuracy" in r:
            groups[tuple(r.get(k) for k in keys)].append(r["test_accuracy"])
    return groups


def headline(records):
    """GCN, MLP and the front door's edge estimator per graph; the share of the GCN's gain
    over the MLP kept (the GCN: the better of its normalised and raw-feature inputs)."""
    groups = grouped(records, "dataset", "split", "model", "epsilon")
    columns = [("gcn-64", math.inf), ("gcn-64-raw", math.inf), ("gcn-16", math.inf),
               ("dpmlp", math.inf), ("dpnode-edge", math.inf), ("dpnode-edge", 4.0),
               ("dpnode-edge", 1.0)]
    rows = []
    for dataset, split in dict.fromkeys((k[0], k[1]) for k in groups):
        means = {c: np.mean(groups[(dataset, split, *c)]) if groups[(dataset, split, *c)]
                 else math.nan for c in columns}
        gcn = np.nanmax([means[("gcn-64", math.inf)], means[("gcn-64-raw", math.inf)]])
        mlp = means[("dpmlp", math.inf)]
        kept = [f"{100 * (means[('dpnode-edge', e)] - mlp) / (gcn - mlp):.0f}%"
                for e in (math.inf, 4.0, 1.0)]
        rows.append([dataset, split] + [cell(groups[(dataset, split, *c)]) for c in columns]
                    + [f"{100 * (gcn - mlp):.1f}"] + kept)
    return table(["graph", "split", "GCN 64", "GCN 64 raw features", "GCN 16", "DP-MLP inf",
                  "edge inf", "edge eps=4", "edge eps=1", "GCN - MLP (points)",
                  "gain kept inf", "eps=4", "eps=1"], rows)


def anchors(records):
    """``(dataset, split) -> (GCN, MLP)`` mean test accuracies of ``headline.jsonl``: the
    better of the GCN's two inputs, and the DP-MLP at ``epsilon=inf``."""
    groups = grouped(records, "dataset", "split", "model", "epsilon")
    out = {}
    for dataset, split in dict.fromkeys((k[0], k[1]) for k in groups):
        def mean(model):
            values = groups.get((dataset, split, model, math.inf))
            return np.mean(values) if values else math.nan

        out[(dataset, split)] = (np.nanmax([mean("gcn-64"), mean("gcn-64-raw")]),
                                 mean("dpmlp"))
    return out


def objective(records):
    """Objective perturbation per graph and objective, and the share of the GCN's gain
    over the MLP kept (anchors from ``headline.jsonl``)."""
    groups = grouped(records, "dataset", "split", "model", "rows", "hops", "epsilon")
    reference = anchors(read("headline.jsonl"))
    epsilons = (math.inf, 8.0, 4.0, 2.0, 1.0)
    rows = []
    for key in dict.fromkeys(k[:5] for k in groups):
        gcn, mlp = reference.get(key[:2], (math.nan, math.nan))
        kept = [np.mean(groups[(*key, e)]) if groups[(*key, e)] else math.nan
                for e in (math.inf, 4.0, 1.0)]
        rows.append(list(key) + [cell(groups[(*key, e)]) for e in epsilons]
                    + [f"{100 * gcn:.1f} / {100 * mlp:.1f}"]
                    + [f"{100 * (k - mlp) / (gcn - mlp):.0f}%" for k in kept])
    headers = (["graph", "split", "objective", "rows", "hops"]
               + [f"eps={e:g}" for e in epsilons]
               + ["GCN / MLP", "gain kept inf", "eps=4", "eps=1"])
    return table(headers, rows)


#: Anchors that ``headline.jsonl`` lacks, quoted from the privacy-utility tables
#: (``benchmarks/results/utility/amazon_*``, 5 seeds): the DP-MLP at ``epsilon=inf``, and
#: edge-level GAP at ``epsilon`` 4 and 1 (the bar for the Amazon graphs).
QUOTED = {("amazon_computers", "75/10/15"): {"dpmlp": 0.851, "gap-edp-4": 0.895,
                                             "gap-edp-1": 0.869},
          ("amazon_photo", "75/10/15"): {"dpmlp": 0.923, "gap-edp-4": 0.948,
                                         "gap-edp-1": 0.931}}


def _kept(value, gcn, mlp):
    if not gcn - mlp > 0 or math.isnan(value):
        return "-"
    return f"{100 * (value - mlp) / (gcn - mlp):.0f}%"


def stacking(records):
    """Public stacking with one private vote release (the default release options; stage 3
    with and without stage 1's predictions as a candidate), the graph-free logistic
    regression of its stage 1 beside it, and the share of the GCN's gain over the MLP kept
    by each (anchors from ``headline.jsonl`` and ``QUOTED``)."""
    import public_stacking as ps

    groups = grouped([r for r in records if r["model"] == "stack-stage1" or (
        r.get("train_rows") == ps.DEFAULT_TRAIN_ROWS and r.get("noise") in (
            ps.DEFAULT_NOISE, "none"))], "dataset", "split", "model", "epsilon")
    reference = anchors(read("headline.jsonl"))
    epsilons = (math.inf, 8.0, 4.0, 2.0, 1.0)
    rows = []
    graphs = list(dict.fromkeys(k[:2] for k in groups))
    keys = sorted(dict.fromkeys(k[:3] for k in groups if k[2] != "stack-stage1"),
                  key=lambda k: (graphs.index(k[:2]), k[2]))
    for key in keys:
        gcn, mlp = reference.get(key[:2], (math.nan, math.nan))
        mlp = QUOTED.get(key[:2], {}).get("dpmlp", mlp)
        lr = groups[(*key[:2], "stack-stage1", math.inf)]
        means = {e: np.mean(groups[(*key, e)]) if groups[(*key, e)] else math.nan
                 for e in epsilons}
        rows.append(list(key) + [cell(lr)] + [cell(groups[(*key, e)]) for e in epsilons]
                    + [f"{100 * gcn:.1f} / {100 * mlp:.1f}".replace("nan", "-"),
                       _kept(np.mean(lr), gcn, mlp)]
                    + [_kept(means[e], gcn, mlp) for e in (math.inf, 4.0, 1.0)])
    headers = (["graph", "split", "model", "stage 1 alone (graph-free LR)"]
               + [f"eps={e:g}" for e in epsilons]
               + ["GCN / MLP", "gain kept: LR alone", "inf", "eps=4", "eps=1"])
    return table(headers, rows)


def stacking_options(records):
    """Every release option measured (training rows x noise), per budget."""
    groups = grouped([r for r in records if r["model"] == "stack"], "dataset", "split",
                     "train_rows", "noise", "epsilon")
    epsilons = (8.0, 4.0, 2.0, 1.0)
    rows = []
    for key in dict.fromkeys(k[:4] for k in groups if k[3] != "none"):
        rows.append(list(key) + [cell(groups[(*key[:3], "none", math.inf)])]
                    + [cell(groups[(*key, e)]) for e in epsilons])
    return table(["graph", "split", "training rows", "noise", "eps=inf"]
                 + [f"eps={e:g}" for e in epsilons], rows)


def ablations(records):
    """Edge-level GAP with one parameter changed, per budget."""
    groups = grouped(records, "dataset", "split", "ablation", "epsilon")
    epsilons = sorted({k[3] for k in groups}, reverse=True)
    rows = [list(key) + [cell(groups[(*key, e)]) for e in epsilons]
            for key in dict.fromkeys(k[:3] for k in groups)]
    return table(["graph", "split", "GAP edge level"] + [f"eps={e:g}" for e in epsilons], rows)


def propagated(records):
    """The prototype: public rows propagated, logistic regression, per budget."""
    groups = grouped(records, "dataset", "split", "rows", "hops", "norm", "epsilon")
    keys = dict.fromkeys((k[:4], k[4:]) for k in groups)
    columns = [("none", math.inf), ("encoder", math.inf), ("gcn", math.inf),
               ("pma", math.inf), ("pma", 4.0), ("pma", 1.0), ("laplace-l1", 4.0),
               ("laplace-l1", 1.0)]
    rows = [list(key) + [cell(groups[(*key, *c)]) for c in columns]
            for key in dict.fromkeys(k for k, _ in keys)]
    return table(["graph", "split", "rows", "hops", "no graph: LR", "no graph: GAP encoder",
                  "GCN norm (non-private)", "PMA inf", "PMA eps=4", "PMA eps=1",
                  "Laplace eps=4 (unvetted)", "Laplace eps=1 (unvetted)"], rows)


def _joined(values, digits=2):
    return " / ".join(f"{v:.{digits}f}" for v in values)


def noise(records):
    """Noise std per coordinate, hop-1 signal/noise and cosine to the noise-free rows."""
    rows = []
    for r in (r for r in records if r["model"] == "pma-signal-to-noise"):
        by_degree = r["cosine_hop1_by_degree"]
        rows.append([r["dataset"], r["rows"], r["width"], r["hops"], f"{r['epsilon']:g}",
                     f"{r['noise_std']:.2f}", f"{r['hop1_signal_over_noise_median']:.2f}",
                     _joined(r["cosine_mean_per_hop"]),
                     ", ".join(f"{k}: {v['mean']:.2f}" for k, v in by_degree.items()),
                     f"{r['laplace_std']:.2f}", _joined(r["laplace_cosine_mean_per_hop"])])
    return table(["graph", "rows", "width", "hops", "eps", "PMA std", "hop-1 signal/noise "
                  "(median)", "PMA cosine per hop", "PMA hop-1 cosine by degree",
                  "Laplace std", "Laplace cosine per hop"], rows)


def calibration(records):
    """Degrees, and each candidate's noise at each budget (public quantities only)."""
    degrees = {r["dataset"]: r for r in records if r["model"] == "degrees"}
    rows = []
    for r in (r for r in records if r["model"] == "calibration"):
        d = degrees[r["dataset"]]
        rows.append([r["dataset"], f"{d['mean_degree']:.1f} / {d['median_degree']:g} / "
                     f"{100 * d['share_degree_1_3']:.0f}%", f"{r['epsilon']:g}",
                     f"{r['default_delta']:.1e}",
                     f"{r['pma_std_hops1']:.2f} / {r['pma_std_hops2']:.2f}",
                     f"{r['pma_std_hops1_delta1e-5']:.2f} / {r['pma_std_hops2_delta1e-5']:.2f}",
                     f"{r['laplace_std_hops1']:.2f} / {r['laplace_std_hops2']:.2f}",
                     f"{r['rr_true_edges_per_node']:.1f} true, "
                     f"{r['rr_false_edges_per_node']:.0f} false ({100 * r['rr_share_true']:.1f}%"
                     " true)"])
    return table(["graph", "degree mean / median / share 1-3", "eps", "default delta",
                  "PMA std K=1 / K=2", "PMA std, delta=1e-5", "Laplace std K=1 / K=2",
                  "randomised response: edges per node"], rows)


def main():
    parts = [("Headline", headline, "headline.jsonl"), ("Ablations", ablations, "ablate.jsonl"),
             ("Propagated public rows", propagated, "propagate.jsonl"),
             ("Noise per budget", calibration, "noise.jsonl"),
             ("Noise against signal", noise, "noise.jsonl"),
             ("Objective perturbation", objective, "objective_perturbation.jsonl"),
             ("Public stacking", stacking, "public_stacking.jsonl"),
             ("Public stacking: release options", stacking_options, "public_stacking.jsonl")]
    for title, build, name in parts:
        records = read(name)
        if records:
            print(f"### {title}\n\n{build(records)}\n")


if __name__ == "__main__":
    sys.exit(main())
