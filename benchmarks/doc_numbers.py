"""Write every number of our own results that the user guide and the README quote.

The numbers come from the records in ``benchmarks/results``: the privacy-utility runs in
``benchmarks/results/utility/`` (merged as ``utility_table.py`` merges them) and the sweep
records of ``benchmarks/sweep.py`` and the method scripts (``*.jsonl``, one line per
configuration). Numbers that follow from public quantities alone (a plan's epsilon, an
accountant's bound, the model-selection guide's worked example) are computed here with the
library's own functions. The guide pages use them as reStructuredText substitutions
(``|name|``) defined in ``doc/user_guide/results_numbers.inc``; the README's results table is
written between its ``results-table`` markers, and its ledger comment from the record of
``counting_example.py``. Numbers quoted from papers are listed in
``REFERENCES`` with their source and written as such. Regenerate after new runs::

    python benchmarks/doc_numbers.py            # rewrite the .inc file and the README table
    python benchmarks/doc_numbers.py --check    # exit 1 if either differs from the records
"""

import argparse
import json
import math
import re
import statistics
import sys
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: One-off studies, each in its folder with the records it wrote.
STUDIES = ROOT / "benchmarks" / "studies"
INC = ROOT / "doc" / "user_guide" / "results_numbers.inc"
README = ROOT / "README.md"
README_BEGIN = "<!-- results-table: written by benchmarks/doc_numbers.py -->"
README_END = "<!-- end of results-table -->"
# A non-breaking space on both sides of "±" keeps "87.7 ± 0.4" on one line in a table cell.
PM = "\u00a0±\u00a0"
EPSILONS = (1.0, 2.0, 4.0, 8.0, math.inf)
DATASET_NAMES = {"amazon_computers": "Amazon Computers", "amazon_photo": "Amazon Photo",
                 "coauthor_cs": "Coauthor CS", "facebook": "Facebook", "cora": "Cora"}


def _eps_label(epsilon: float) -> str:
    return "inf" if math.isinf(epsilon) else f"{epsilon:g}"


def fmt(mean: float, std: float | None = None) -> str:
    """``mean ± std`` in percent with one decimal (``std=None``: the mean alone)."""
    return f"{mean:.1f}" if std is None else f"{mean:.1f}{PM}{std:.1f}"


def fmt_diff(value: float) -> str:
    """A signed difference in points, one decimal."""
    text = f"{value:+.1f}"
    return "0.0" if text in ("+0.0", "-0.0") else text.replace("-", "−")


# --- the privacy-utility runs (benchmarks/results/utility/) -------------------------------

#: The split each graph's tables use unless named: a run on another split is keyed
#: ``DATASET-SPLIT`` (``cora-75-10-15``).
DEFAULT_SPLITS = {"cora": "public"}


@lru_cache(maxsize=None)
def utility_cells() -> dict:
    """``{(dataset, estimator, epsilon): (mean %, std %, seeds)}`` of the privacy-utility runs.

    ``dataset`` is the graph's name on its default split (:data:`DEFAULT_SPLITS`, else
    75/10/15) and ``NAME-SPLIT`` with the split's slashes as dashes on any other.
    """
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from utility_table import merge

    files = sorted((RESULTS / "utility").glob("*.json"))
    cells = {}
    for _, result in merge([(p.name, json.loads(p.read_text())) for p in files]):
        dataset, seeds = result["config"]["dataset"], result["config"]["seeds"]
        split = result["config"].get("split")
        if split != DEFAULT_SPLITS.get(dataset, "75/10/15"):
            dataset = f"{dataset}-{str(split).replace('/', '-')}"
        for row in result["summary"]:
            cells[(dataset, row["estimator"], float(row["epsilon"]))] = (
                100 * row["test_accuracy_mean"], 100 * row["test_accuracy_std"], seeds)
    return cells


def utility(dataset: str, estimator: str, epsilon: float) -> tuple[float, float]:
    mean, std, _ = utility_cells()[(dataset, estimator, float(epsilon))]
    return mean, std


# --- sweep records (*.jsonl, one configuration a line) ------------------------------------

@lru_cache(maxsize=None)
def _lines(name: str | Path) -> tuple:
    """The records of a ``*.jsonl`` file: a name in ``results/``, or a study's path."""
    path = name if isinstance(name, Path) else RESULTS / name
    return tuple(json.loads(line) for line in path.read_text().splitlines()
                 if line.strip())


def sweep(name: str, dataset: str, epsilon: float, config: dict | None = None,
          **fields) -> tuple[float, float]:
    """Mean and std (%) of the one record of ``name`` with this dataset, epsilon and config.

    ``config`` must equal the record's ``config``; ``fields`` must equal its other keys
    (``progap_stages="current"``...). Zero or several matches are an error.
    """
    config = {} if config is None else config
    found = [r for r in _lines(name)
             if r["dataset"] == dataset and "epsilon" in r
             and float(r["epsilon"]) == float(epsilon)
             and r.get("config", {}) == config
             and all(r.get(key) == value for key, value in fields.items())]
    if len(found) != 1:
        raise SystemExit(f"{name}: {len(found)} records for {dataset}, epsilon={epsilon}, "
                         f"config={config}, {fields}")
    return found[0]["mean"], found[0]["std"]


def combiner(dataset: str, part: str) -> tuple[float, float]:
    """``vote_combiner.py``'s record: ``part`` is ``rule``, ``learned`` or ``encoder``."""
    record = next(r for r in _lines(STUDIES / "gap_vote" / "vote-combiner-gap-node-eps8.jsonl")
                  if r["dataset"] == dataset)
    return record[part]["mean"], record[part]["std"]


# --- the numbers the pages quote ----------------------------------------------------------

DRW = "DRWClassifier"
DRW_SWEEP = "drw-defaults-sweep-eps8.jsonl"
DRW_CONFIGS = {  # label: the config of drw-sweep-amazon-eps8.jsonl (besides the estimator)
    "drw-old": {"hidden_dim": 16, "lr": 0.05, "epochs": 15},
    "drw-w64": {"hidden_dim": 64, "lr": 0.05, "epochs": 15},
    "drw-w128": {"hidden_dim": 128, "lr": 0.05, "epochs": 15},
    "drw-sage": {"conv": "sage", "hidden_dim": 64, "lr": 0.05, "epochs": 15},
    "drw-lr02-e30": {"hidden_dim": 64, "lr": 0.02, "epochs": 30},
    "drw-lr01-e30": {"hidden_dim": 64, "lr": 0.01, "epochs": 30},
    "drw-lr01-e50": {"hidden_dim": 64, "lr": 0.01, "epochs": 50},
}
FDP_SCHEDULES = {"fdp-30ep": {"epochs": 30, "lr": 0.05}, "fdp-100ep": {"epochs": 100, "lr": 0.005},
                 "fdp-default": {}}
RGNN_GROUP_SIZES = {"cora": 25, "facebook": 100}  # as privacy_utility.sh sets them
VOTE_GRID_SHARES = {"58": 0.625, "12": 0.5, "34": 0.75}
PROGAP_SHAPES = {  # label: (encoder_epochs, epochs) of ProGAP's node-level stages
    "progap-node-50-3": (50, 3), "progap-node-50-10": (50, 10), "progap-node-50-50": (50, 50),
    "progap-node-30-30": (30, 30), "progap-node-30-60": (30, 60),
    "progap-node-20-50": (20, 50)}


def default_delta_cost() -> dict[str, str]:
    """``default_delta_cost.py``'s records: noise and accuracy under each default-delta rule."""
    out, drops = {}, {}
    for dataset, short in (("amazon_photo", "p"), ("amazon_computers", "c")):
        path = STUDIES / "default_delta" / f"default-delta-cost-{dataset}.json"
        records = json.loads(path.read_text())
        for epsilon in sorted({r["epsilon"] for r in records}):
            means = {}
            for rule, tag in (("1/(10 E)", "e"), ("1/(10 P)", "p")):
                rows = [r for r in records if r["epsilon"] == epsilon and r["rule"] == rule]
                label = f"dd-{short}-{_eps_label(epsilon)}-{tag}"
                out[f"{label}-sigma"] = f"{rows[0]['noise_multiplier']:.2f}"
                means[tag] = 100 * sum(r["test_accuracy"] for r in rows) / len(rows)
                out[f"{label}-acc"] = f"{means[tag]:.1f}"
            drops.setdefault(epsilon, []).append(means["e"] - means["p"])
    for epsilon, values in drops.items():
        out[f"dd-largest-drop-{_eps_label(epsilon)}"] = f"{max(values):.1f}"
    return out


IN_DEGREES = (5, 10, 20, 30)
STATED_IN_DEGREES = (1, 5, 10, 30, 100)  # as GAPPlan.not_covered states them


def in_degree_accuracy() -> dict[str, str]:
    """``in_degree_default.py``'s records: accuracy with and without ``max_in_degree``.

    Each cell is the mean over seeds (a configuration recorded twice for one seed counts
    once: the mean of its records). The drops are a bounded cell minus the unbounded one.
    """
    out, means = {}, {}
    for dataset in ("amazon_photo", "facebook"):
        cells = {}
        for r in _lines(STUDIES / "in_degree" / f"in-degree-default-{dataset}.jsonl"):
            bound = r["params"].get("max_in_degree", "-")
            key = (r["estimator"], r["epsilon"], "none" if bound is None else bound)
            cells.setdefault(key, {}).setdefault(r["seed"], []).append(r["test_accuracy"])
        for (estimator, epsilon, bound), seeds in cells.items():
            label = f"indeg-{dataset}-{estimator}-{_eps_label(epsilon)}" + (
                "" if bound == "-" else f"-{bound}")
            means[label] = 100 * sum(sum(v) / len(v) for v in seeds.values()) / len(seeds)
            out[label] = fmt(means[label])
        path = STUDIES / "in_degree" / f"in-degree-default-{dataset}.jsonl"
        minutes = sum(r["fit_seconds"] for r in _lines(path))
        out[f"indeg-{dataset}-fit-minutes"] = f"{minutes / 60:.0f}"

    def drops(dataset, estimator, epsilons, bounds):
        return [means[f"indeg-{dataset}-{estimator}-{_eps_label(e)}-{b}"]
                - means[f"indeg-{dataset}-{estimator}-{_eps_label(e)}-none"]
                for e in epsilons for b in bounds]

    for epsilon in (8.0, 4.0):
        values = drops("amazon_photo", "gap-ndp", (epsilon,), IN_DEGREES)
        label = f"indeg-amazon_photo-gap-ndp-{_eps_label(epsilon)}"
        out[f"{label}-least-drop"], out[f"{label}-most-drop"] = map(
            fmt_diff, (max(values), min(values)))
        out[f"indeg-facebook-gap-ndp-{_eps_label(epsilon)}-cost-10"] = (
            f"{-drops('facebook', 'gap-ndp', (epsilon,), (10,))[0]:.1f}")
    for epsilon in (8.0, 4.0):  # the page writes one ProGAP cell for every bound ("each")
        label = f"indeg-amazon_photo-progap-ndp-{_eps_label(epsilon)}"
        if len({out[f"{label}-{b}"] for b in IN_DEGREES}) != 1:
            raise SystemExit(f"{label}: the bounds no longer give one accuracy; rewrite the "
                             "table of privacy_units.rst")
    values = drops("amazon_photo", "progap-ndp", (8.0, 4.0), IN_DEGREES)
    out["indeg-amazon_photo-progap-ndp-least-drop"], out[
        "indeg-amazon_photo-progap-ndp-most-drop"] = map(fmt_diff, (max(values), min(values)))
    out["indeg-facebook-progap-ndp-largest-change-10"] = (
        f"{max(map(abs, drops('facebook', 'progap-ndp', (8.0, 4.0), (10,)))):.1f}")
    return out


def fmt_epsilon(value: float) -> str:
    """An epsilon in prose: one decimal below 20, a whole number from 20 up."""
    return f"{value:.1f}" if value < 20 else f"{value:.0f}"


def in_degree_epsilons() -> dict[str, str]:
    """``GAPPlan.in_degree_epsilon`` of the node-level GAP and ProGAP defaults without
    ``max_in_degree`` on Amazon Photo's 75% training split.

    The plan reads public sizes only (nodes of the graph, training nodes, undirected
    edges), so a synthetic graph of Amazon Photo's sizes gives Amazon Photo's plan.
    """
    import numpy as np

    from skdpgraph import GAPClassifier, ProGAPClassifier
    from skdpgraph.datasets import make_csbm
    from skdpgraph.model_selection._planned import checked_plan

    record = _lines(STUDIES / "in_degree" / "in-degree-default-amazon_photo.jsonl")[0]
    n_train = record["n_train"]
    graph = make_csbm(n_nodes=7650, n_classes=8, n_features=8, avg_degree=2, random_state=0)
    train = np.arange(n_train)
    out = {}
    for name, cls in (("gap", GAPClassifier), ("progap", ProGAPClassifier)):
        for epsilon in (8.0, 4.0):
            estimator = cls(unit="node", epsilon=epsilon, max_in_degree=None)
            plan, report = checked_plan(estimator, graph.nodes(train), graph.y[train])
            for degree in STATED_IN_DEGREES:
                out[f"indeg-eps-{name}-{_eps_label(epsilon)}-d{degree}"] = fmt_epsilon(
                    plan.in_degree_epsilon(report.delta, degree))
    return out


def calibration_seconds() -> dict[str, str]:
    """``calibration.py``'s records: the range of calibration seconds of a first private
    fit of DP-MLP, node-level GAP and ProGAP and DRW on Cora and Amazon Computers; the
    ``-full`` records calibrated by a search over the whole order grid."""
    out = {}
    for tag, suffix in (("", "-order-search"), ("-full", "-full-order-grid")):
        paths = [STUDIES / "calibration" / f"calibration-{dataset}{suffix}.json"
                 for dataset in ("cora", "amazon_computers")]
        seconds = [row["calibration_seconds"]
                   for path in paths for row in json.loads(path.read_text())["rows"]
                   if row["estimator"] in ("dpmlp", "gap-ndp", "progap-ndp", "drw")]
        digits = 2 if not tag else 1
        out[f"calibration{tag}-fastest"] = f"{min(seconds):.{digits}f}"
        out[f"calibration{tag}-slowest"] = f"{max(seconds):.{digits}f}"
    return out


def graph_same_work_ratio() -> dict[str, str]:
    """The scaling guide's private/non-private fit CPU-time ratio of DPGraphClassifier on
    NCI1 with the same work (``graph_level_time/NCI1-same-work-20epochs.json``): the mean
    over the seeds' pairs, and the lowest and highest pair."""
    path = RESULTS / "graph_level_time" / "NCI1-same-work-20epochs.json"
    ratios = json.loads(path.read_text())["private_over_nonprivate_fit_cpu_time"]
    return {"graph-same-work-ratio": f"{statistics.mean(ratios):.2f}",
            "graph-same-work-ratio-lowest": f"{min(ratios):.2f}",
            "graph-same-work-ratio-highest": f"{max(ratios):.2f}"}


def model_selection_numbers() -> dict[str, str]:
    """The model-selection guide's numbers, computed with the library's functions.

    The worked example (the snippet on the page), the refit plans of full-batch DP-MLP
    with a fixed multiplier, and the costs of ``examples/plot_budget_constrained_search.py``'s
    random search.
    """
    from sklearn.model_selection import train_test_split

    from skdpgraph import DPMLPClassifier
    from skdpgraph.datasets import make_csbm
    from skdpgraph.model_selection import PrivateRandomSearch, composition_cost, planned_privacy

    out = {}
    names = ("basic", "rdp", "log", "tnb", "geometric", "poisson")
    rows, one = worked_example()
    out["ms-one-fit"] = f"{one.epsilon:.2f}"
    for m, *values in rows:
        for name, value in zip(names, values):
            out[f"ms-{m}-{name}"] = f"{value:.2f}"
            out[f"ms-{m}-{name}-short"] = f"{value:.1f}"

    for n in (100, 200):
        data = make_csbm(n_nodes=n, random_state=0)
        plan = planned_privacy(DPMLPClassifier(epsilon=math.inf, noise_multiplier=2.0, epochs=2,
                                               batch_size=256), data.nodes(), data.y)
        out[f"ms-full-batch-{n}"] = f"{plan.epsilon:.2f}"

    # examples/plot_budget_constrained_search.py's PrivateRandomSearch, its runs kept.
    data = make_csbm(n_nodes=600, random_state=0)
    X_train, _, y_train, _ = train_test_split(data.nodes(), data.y, test_size=0.3,
                                              stratify=data.y, random_state=0)
    fast = dict(epochs=5, hidden_dim=32, batch_size=128, random_state=0)
    search = PrivateRandomSearch(
        DPMLPClassifier(epsilon=2.0, **fast),
        {"lr": [0.005, 0.01, 0.05, 0.1], "hidden_dim": [16, 32, 64]},
        mean_repetitions=5.0, shape=1.0, random_state=0,
    ).fit(X_train, y_train)
    out["ms-example-bound"] = f"{search.privacy_cost_.epsilon:.1f}"
    for runs in (3, 5):
        out[f"ms-example-{runs}-composed"] = (
            f"{composition_cost([search.best_estimator_] * runs).epsilon:.1f}")
    return out


def worked_example() -> tuple[list, object]:
    """Run the worked example's snippet of ``model_selection.rst``: its printed rows
    ``(m, basic, RDP, logarithmic, TNB, geometric, Poisson)`` and its one-fit report."""
    import textwrap

    page = (ROOT / "doc" / "user_guide" / "model_selection.rst").read_text()
    blocks = [textwrap.dedent(block) for block in re.findall(
        r"\.\. code-block:: python\n\n((?:    .*\n|\n)+)", page)
        if "repeat_and_select_cost([one]" in block]
    if len(blocks) != 1:
        raise SystemExit("model_selection.rst: no single worked-example snippet")
    rows = []
    namespace = {"print": lambda *values: rows.append(values)}
    exec(blocks[0], namespace)
    return rows, namespace["one"]


def rgnn_accounting_numbers() -> dict[str, str]:
    """GRR-FS's exact budget against the RGNN paper's formula (``skdpgraph.privacy``), and
    ``rgnn_feature_range.py``'s record."""
    from skdpgraph.privacy import (grr_fs_epsilon, grr_fs_paper_epsilon,
                                   grr_fs_worst_case_log_ratio)

    out = {
        "grr-binary5-exact": f"**{grr_fs_worst_case_log_ratio([2] * 5, 1.0, 1):.1f}**",
        "grr-binary5-paper": f"**{grr_fs_paper_epsilon(5, 1, 1.0):.3f}**",
        "grr-324-exact": f"**{grr_fs_worst_case_log_ratio([3, 2, 4], 1.0, 1, 'one-feature'):.3f}**",
        "grr-324-paper": f"**{grr_fs_paper_epsilon(3, 1, 1.0):.3f}**",
        "grr-cora-1": f"**{grr_fs_epsilon(10, 1.0):g}**",
        "grr-cora-1-paper": f"{grr_fs_paper_epsilon(58, 10, 1.0):.2f}",
        "grr-cora-01": f"**{grr_fs_epsilon(10, 0.1):.1f}**",
        "grr-cora-01-paper": f"{grr_fs_paper_epsilon(58, 10, 0.1):.2f}",
    }
    record = json.loads(
        (STUDIES / "rgnn_feature_range" / "rgnn-feature-range-csbm.json").read_text())
    for name, label in (("default range", "default"), ("per-column data range", "data")):
        out[f"rgnn-range-{label}"] = f"{record['mean_test_accuracy'][name]:.2f}"
    out["rgnn-range-seeds"] = str(record["config"]["seeds"])
    return out


def counting_numbers() -> dict[str, str]:
    """``counting_example.py``'s record: the README's ledger example."""
    record = json.loads((STUDIES / "counting_example" / "counting-readme-search.json").read_text())
    return {"counting-ledger-epsilon": f"{record['ledger_epsilon']:.2f}",
            "counting-ledger-delta": f"{record['ledger_delta']:.3g}",
            "counting-releases": str(record["releases"]),
            "counting-sum-epsilon": f"{record['sum_of_epsilons']:.1f}"}


#: The edge-level study's anchors the pages quote: (dataset, split, model) -> name part.
EDGE_ANCHORS = {("cora", "public", "gcn-64"): "cora-gcn", ("cora", "public", "dpmlp"): "cora-mlp",
                ("cora", "75/10/15", "gcn-64"): "cora-75-10-15-gcn",
                ("cora", "75/10/15", "dpmlp"): "cora-75-10-15-mlp",
                ("twitch_en", "75/10/15", "gcn-64"): "twitch_en-gcn",
                ("twitch_en", "75/10/15", "dpmlp"): "twitch_en-mlp",
                ("coauthor_physics", "75/10/15", "gcn-64-raw"): "coauthor_physics-gcn",
                ("coauthor_physics", "75/10/15", "dpmlp"): "coauthor_physics-mlp",
                ("coauthor_cs", "75/10/15", "gcn-64-raw"): "coauthor_cs-gcn"}


def edge_anchor_numbers() -> dict[str, str]:
    """``e-GRAPH-gcn`` / ``e-GRAPH-mlp``: the edge-level study's plain GCN and graph-free
    DP-MLP at ``epsilon=inf`` (mean ± std over its seeds; the mean alone for one seed)."""
    records = _lines(STUDIES / "edge_level_gain" / "headline.jsonl")
    out = {}
    for (dataset, split, model), name in EDGE_ANCHORS.items():
        values = [100 * r["test_accuracy"] for r in records
                  if (r["dataset"], r["split"], r["model"]) == (dataset, split, model)]
        out[f"e-{name}"] = (fmt(statistics.mean(values), statistics.stdev(values))
                            if len(values) > 1 else fmt(values[0]))
    return out


def numbers() -> dict[str, str]:
    """``{substitution name: text}`` of every number of our own results the pages quote."""
    out = {}
    for (dataset, estimator, epsilon), (mean, std, _) in utility_cells().items():
        out[f"u-{dataset}-{estimator}-{_eps_label(epsilon)}"] = fmt(mean, std)
    for dataset in DATASET_NAMES:
        for epsilon in EPSILONS:
            label = _eps_label(epsilon)
            pairs = {"gap-ndp-vs-dpmlp": ("gap-ndp", "dpmlp"),
                     "drw-vs-dpmlp": ("drw", "dpmlp"),
                     "progap-ndp-vs-dpmlp": ("progap-ndp", "dpmlp"),
                     "progap-edp-vs-gap-edp": ("progap-edp", "gap-edp"),
                     "progap-ndp-vs-gap-ndp": ("progap-ndp", "gap-ndp"),
                     "gap-edp-inf-loss": ("gap-edp", None)}
            for name, (a, b) in pairs.items():
                try:
                    first = utility(dataset, a, epsilon)[0]
                    second = (utility(dataset, "gap-edp", math.inf)[0] if b is None
                              else utility(dataset, b, epsilon)[0])
                except KeyError:
                    continue
                out[f"d-{dataset}-{name}-{label}"] = fmt_diff(first - second)

    out.update(edge_anchor_numbers())

    edge4 = "gap-edge-aggregate-eps4.jsonl"
    for dataset in ("amazon_computers", "amazon_photo", "cora", "coauthor_cs", "facebook"):
        out[f"agg-{dataset}-gap"] = fmt(*sweep(edge4, dataset, 4.0))
        out[f"agg-{dataset}-progap"] = fmt(*sweep(edge4, dataset, 4.0,
                                                  {"estimator": "ProGAPClassifier"}))
    for dataset in ("amazon_computers", "amazon_photo", "cora"):
        out[f"agg-{dataset}-embeddings"] = fmt(*sweep(
            "gap-edge-embeddings-eps4.jsonl", dataset, 4.0))
    out["agg-amazon_computers-gap-inf"] = fmt(*sweep(edge4, "amazon_computers", math.inf))

    node8 = "gap-node-sweep-eps8.jsonl"
    node = {"privacy_level": "node"}  # the key the stored records use for unit
    for label, extra in {"d100-k2": {}, "d30": {"max_degree": 30}, "d10": {"max_degree": 10},
                         "d30-k1": {"hops": 1, "max_degree": 30},
                         "w64": {"hidden_dim": 64}, "lr003": {"lr": 0.03}}.items():
        out[f"node-amazon_computers-{label}"] = fmt(
            *sweep(node8, "amazon_computers", 8.0, {**node, **extra}))

    stages = "progap-stages.jsonl"
    progap = {"estimator": "ProGAPClassifier"}
    for dataset, epsilon in (("cora", math.inf), ("cora", 4.0), ("cora", 1.0),
                             ("amazon_photo", 4.0), ("facebook", 4.0)):
        key = f"stages-{dataset}-{_eps_label(epsilon)}"
        for which in ("previous", "current"):
            out[f"{key}-{which}"] = fmt(*sweep(stages, dataset, epsilon, progap,
                                               progap_stages=which))
    out["stages-cora-inf-gap"] = fmt(*sweep(stages, "cora", math.inf))
    shape = {**progap, "privacy_level": "node", "encoder_layers": 1, "hidden_dim": 64,
             "batch_size": 1024}
    for label, (first, last) in PROGAP_SHAPES.items():
        out[label] = fmt(sweep(stages, "amazon_computers", 8.0,
                               {**shape, "encoder_epochs": first, "epochs": last})[0])

    batch = "dpmlp-batch-sweep.jsonl"
    for size in (256, 1024):
        for epsilon in (1.0, 4.0):
            # The 256 records ran with the default of their time: no batch_size in the config.
            config = {"estimator": "DPMLPClassifier",
                      **({} if size == 256 else {"batch_size": size})}
            out[f"dpmlp-b{size}-amazon_computers-{_eps_label(epsilon)}"] = fmt(
                sweep(batch, "amazon_computers", epsilon, config)[0])

    for dataset in ("amazon_computers", "amazon_photo", "facebook"):
        for part in ("rule", "learned", "encoder"):
            out[f"combiner-{dataset}-{part}"] = fmt(*combiner(dataset, part))
    grid = STUDIES / "gap_vote" / "gap-vote-grid-eps8.jsonl"
    for label, share in VOTE_GRID_SHARES.items():
        for weight in (1.5, 2.0, 2.5, 3.0):
            out[f"grid-{label}-{weight:g}"] = fmt(sweep(
                grid, "amazon_photo", 8.0, {"privacy_level": "node", "encoder_layers": 1},
                encoder_share=share, vote_weight=weight)[0])

    for label, config in DRW_CONFIGS.items():
        for dataset in ("amazon_computers", "amazon_photo"):
            out[f"{label}-{dataset}"] = fmt(sweep(
                DRW_SWEEP, dataset, 8.0, {"estimator": DRW, **config})[0])

    for label, config in FDP_SCHEDULES.items():
        for dataset in ("cora", "amazon_photo", "amazon_computers"):
            out[f"{label}-{dataset}"] = fmt(*sweep(
                "fdp-schedule-eps8.jsonl", dataset, 8.0, {"estimator": "FDPClassifier", **config}))

    hops = "rgnn-label-hops-seed0.jsonl"
    for dataset in ("amazon_photo", "amazon_computers", "facebook", "cora"):
        for epsilon in (8.0, 4.0):
            for rounds in (0, 16):
                config = {"estimator": "RGNNClassifier", "label_hops": rounds}
                if dataset in RGNN_GROUP_SIZES:
                    config["feature_group_size"] = RGNN_GROUP_SIZES[dataset]
                out[f"rgnn-hops{rounds}-{dataset}-{_eps_label(epsilon)}"] = fmt(
                    sweep(hops, dataset, epsilon, config)[0])
    labels = "gap-node-vote-labels.jsonl"
    for dataset in ("amazon_computers", "amazon_photo"):
        out[f"vote-2hops-{dataset}-8"] = fmt(*sweep(
            labels, dataset, 8.0, {"privacy_level": "node", "aggregate": "labels", "hops": 2}))
    out["vote-predictions-amazon_computers-8"] = fmt(*sweep(
        labels, "amazon_computers", 8.0,
        {"privacy_level": "node", "aggregate": "predictions", "hops": 1}))
    out["vote-trained-amazon_photo-8"] = fmt(*sweep(
        labels, "amazon_photo", 8.0,
        {"privacy_level": "node", "aggregate": "labels", "head": "trained"}))

    for record in _lines(STUDIES / "heterpoisson" / "heterpoisson-accountant.jsonl"):
        label = f"hp-{_eps_label(record['epsilon'])}"
        if record["sampler"] == "DP-MLP":
            out[f"{label}-dpmlp-sigma"] = f"{record['noise_multiplier']:.2f}"
        else:
            out[f"{label}-m{record['M']}-sigma"] = f"{record['noise_multiplier']:.2f}"
            out[f"{label}-m{record['M']}-eps"] = f"{record['dp_mlp_epsilon_at_this_noise']:.2f}"

    out.update(default_delta_cost())
    out.update(in_degree_accuracy())
    out.update(in_degree_epsilons())
    out.update(calibration_seconds())
    out.update(graph_same_work_ratio())
    out.update(model_selection_numbers())
    out.update(rgnn_accounting_numbers())
    out.update(counting_numbers())

    paper = json.loads((RESULTS / "rgnn-cora-paper-protocol.json").read_text())["summary"]
    for eps_y in ("3", "2", "1", "0.5"):
        row = paper[f"RGNN eps_y={eps_y}"]
        out[f"rgnn-paper-cora-{eps_y.replace('.', '')}"] = fmt(row["mean"], row["std"])
    return out


# Numbers quoted from papers: references, not our results. name: (text, source).
REFERENCES = {
    "ref-gap-edp-computers-4": ("88.3", "GAP paper's code at edge level, one directed edge"),
    "ref-gap-inf-computers": ("89.7", "GAP paper, non-private GAP"),
    "ref-mlp-inf-computers": ("83.1", "GAP paper, non-private MLP"),
    "ref-gap-ndp-computers-8": ("77.7", "GAP paper, node level"),
    "ref-rgnn-cora-3": ("77.8", "RGNN paper, Table 2"),
    "ref-rgnn-cora-2": ("75.5", "RGNN paper, Table 2"),
    "ref-rgnn-cora-1": ("67.5", "RGNN paper, Table 2"),
    "ref-rgnn-cora-05": ("41.9", "RGNN paper, Table 2"),
    "ref-gin-nci1": ("82.7", "Xu et al. 2019, GIN-0, Table 1 (10-fold, epoch picked on the "
                             "test folds' mean)"),
    "ref-gin-proteins": ("76.2", "Xu et al. 2019, GIN-0, Table 1"),
    "ref-wl-nci1": ("84.6", "Xu et al. 2019, WL subtree kernel, Table 1"),
    "ref-wl-proteins": ("75.0", "Xu et al. 2019, WL subtree kernel, Table 1"),
}


def substitutions() -> str:
    """The text of ``results_numbers.inc``."""
    lines = [".. Written by benchmarks/doc_numbers.py from the records in benchmarks/results;",
             "   do not edit (python benchmarks/doc_numbers.py rewrites it).", ""]
    lines += [f".. |{name}| replace:: {text}" for name, text in sorted(numbers().items())]
    lines += ["", ".. Quoted from papers (references, not our results):", ""]
    lines += [f".. |{name}| replace:: {text}" for name, (text, _) in sorted(REFERENCES.items())]
    return "\n".join(lines) + "\n"


def readme_table() -> str:
    """The README's results table (markdown): the privacy-utility cells at epsilon=8 and inf."""
    rows = [("Neighbour votes, edge level (`NeighbourVoteClassifier`)", "votes-edp"),
            ("GAP, edge level (`GAPClassifier()`)", "gap-edp"),
            ("ProGAP, edge level", "progap-edp"),
            ("GAP, node level (vote head)", "gap-ndp"),
            ("ProGAP, node level", "progap-ndp"),
            ("DP-MLP (`DPMLPClassifier`)", "dpmlp"),
            ("DRW (graph public)", "drw"),
            ("FDP, node level", "fdp"),
            ("RGNN, local DP", "rgnn")]
    datasets = ("amazon_computers", "amazon_photo", "facebook", "coauthor_cs")
    head = ("| estimator | " + " | ".join(f"{DATASET_NAMES[d]} ε=4 / ε=8" for d in datasets)
            + " |")
    lines = [head, "|---" * (len(datasets) + 1) + "|"]
    for label, estimator in rows:
        cells = [f"{fmt(*utility(d, estimator, 4.0))} / {fmt(*utility(d, estimator, 8.0))}"
                 .replace(PM, " ± ") for d in datasets]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def readme_text(current: str) -> str:
    before, found, rest = current.partition(README_BEGIN)
    _, found_end, after = rest.partition(README_END)
    if not (found and found_end):
        raise SystemExit(f"README.md: the markers {README_BEGIN!r} and {README_END!r} are missing")
    text = f"{before}{README_BEGIN}\n{readme_table()}\n{README_END}{after}"
    # The quick start's ledger comment quotes counting_example.py's record.
    total = json.loads((STUDIES / "counting_example" / "counting-readme-search.json")
                       .read_text())["ledger_total"]
    guarantee = total.split("-DP")[0]
    return re.sub(r"(print\(ledger\.total\(\)\).*?: )\([^)]*\)(?=-DP)",
                  lambda match: match.group(1) + guarantee, text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed files instead of writing them")
    args = parser.parse_args(argv)
    wanted = {INC: substitutions(), README: readme_text(README.read_text())}
    stale = [path for path, text in wanted.items()
             if not path.exists() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} differs from the records: "
                  "run python benchmarks/doc_numbers.py")
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path])
    return 0


if __name__ == "__main__":
    sys.exit(main())
