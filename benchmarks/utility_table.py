"""Write the privacy-utility table (estimator x epsilon) of run.py results as reStructuredText.

One table per dataset and split: a row per estimator, a column per budget, each cell the mean
test accuracy (%) ± its standard deviation over the seeds. Budgets an estimator was not run at
are left empty. The docs include the file this writes::

    python benchmarks/run.py --dataset cora --split public --epsilons 1 2 4 8 inf --seeds 1 \\
        --no-warmup --estimators gap-edp --out benchmarks/results/utility/cora-gap-edp.json
    python benchmarks/utility_table.py benchmarks/results/utility/*.json \\
        --out doc/user_guide/privacy_utility_tables.inc

One file per dataset and estimator (a run cut short keeps every finished estimator); the
files of one dataset and split make one table. ``benchmarks/privacy_utility.sh`` runs every
estimator on every shared dataset.
"""

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path


def _label(epsilon: float) -> str:
    return "inf" if math.isinf(epsilon) else f"{epsilon:g}"


def table(result: dict) -> str:
    """The RST table of one run.py result (its ``summary`` rows)."""
    cells, budgets, order = defaultdict(dict), set(), []
    for row in result["summary"]:
        estimator, epsilon = row["estimator"], float(row["epsilon"])
        if estimator not in order:
            order.append(estimator)
        budgets.add(epsilon)
        cells[estimator][epsilon] = (f"{100 * row['test_accuracy_mean']:.1f} ± "
                                     f"{100 * row['test_accuracy_std']:.1f}")
    budgets = sorted(budgets)
    config = result.get("config", {})
    seeds = config.get("seeds", "?")
    lines = [f".. list-table:: {config.get('dataset', '?')}, split {config.get('split', '?')}, "
             f"{seeds} seeds: test accuracy % by epsilon",
             "   :header-rows: 1", "",
             "   * - estimator"] + [f"     - eps={_label(e)}" for e in budgets]
    for estimator in order:
        lines.append(f"   * - {estimator}")
        lines += [f"     - {cells[estimator].get(e, '')}" for e in budgets]
    return "\n".join(lines)


def merge(results: list[dict]) -> list[tuple[list[str], dict]]:
    """Group results by (dataset, split): ``[(file names, merged result), ...]``.

    Runs of one estimator each (``benchmarks/results/utility/DATASET-ESTIMATOR.json``) become
    one table; their seed counts must agree, else the merged caption would mislead.
    """
    groups: dict[tuple, tuple[list[str], dict]] = {}
    for name, result in results:
        config = result.get("config", {})
        key = (config.get("dataset"), config.get("split"))
        if key not in groups:
            groups[key] = ([], {"config": dict(config), "summary": []})
        names, merged = groups[key]
        if merged["config"].get("seeds") != config.get("seeds"):
            raise SystemExit(f"{name}: {config.get('seeds')} seeds where the other files of "
                             f"{key[0]} ({key[1]}) have {merged['config'].get('seeds')}")
        names.append(name)
        merged["summary"] += result["summary"]
    return list(groups.values())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="write here (default: print)")
    args = parser.parse_args(argv)
    results = [(path.name, json.loads(path.read_text())) for path in args.files]
    folders = {path.name: path.parent.as_posix() for path in args.files}
    parts = []
    for names, result in merge(results):
        folder = folders[names[0]]  # one table's files sit together (the runs of one dataset)
        source = (f"``{folder}/{names[0]}``" if len(names) == 1
                  else "``" + "``, ``".join(names) + f"`` in ``{folder}/``")
        parts.append(f"From {source}.\n\n{table(result)}\n")
    text = "\n".join(parts)
    if args.out is None:
        print(text)
    else:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
