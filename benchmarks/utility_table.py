"""Write the privacy-utility table (estimator x epsilon) of run.py results as reStructuredText.

One table per dataset and split: a row per estimator, a column per budget, each cell the mean
test accuracy (%) ± its standard deviation over the seeds. Budgets an estimator was not run at
are left empty. The docs include the file this writes::

    python benchmarks/run.py --dataset cora --split public --epsilons 1 2 4 8 inf --seeds 2 \\
        --estimators dpmlp gap-edp progap-edp gap-ndp drw fdp rgnn \\
        --param rgnn.feature_group_size=25 --out benchmarks/results/cora-public-privacy-utility.json
    python benchmarks/utility_table.py benchmarks/results/*privacy-utility*.json \\
        --out doc/user_guide/privacy_utility_tables.inc
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="write here (default: print)")
    args = parser.parse_args(argv)
    parts = []
    for path in args.files:
        result = json.loads(path.read_text())
        parts.append(f"From ``benchmarks/results/{path.name}``.\n\n{table(result)}\n")
    text = "\n".join(parts)
    if args.out is None:
        print(text)
    else:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
