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
        # Non-breaking spaces keep a cell on one line in a narrow column.
        cells[estimator][epsilon] = (f"{100 * row['test_accuracy_mean']:.1f}\u00a0±\u00a0"
                                     f"{100 * row['test_accuracy_std']:.1f}")
    budgets = sorted(budgets)
    config = result.get("config", {})
    seeds = config.get("seeds", "?")
    lines = [f".. list-table:: {config.get('dataset', '?')}, split {config.get('split', '?')}, "
             f"{seeds} seed{'' if seeds == 1 else 's'}: test accuracy % by epsilon",
             "   :header-rows: 1", "",
             "   * - estimator"] + [f"     - eps={_label(e)}" for e in budgets]
    for estimator in order:
        lines.append(f"   * - {estimator}")
        lines += [f"     - {cells[estimator].get(e, '')}" for e in budgets]
    return "\n".join(lines)


def merge(results: list[tuple[str, dict]]) -> list[tuple[list[str], dict]]:
    """Group results by (dataset, split): ``[(file names, merged result), ...]``.

    Runs of one estimator each (``benchmarks/results/utility/DATASET-ESTIMATOR.json``) become
    one table, and runs of more seeds of the same estimator (``run.py --first-seed``, e.g.
    ``DATASET-ESTIMATOR-seeds1-4.json``) join their first run: each cell is recomputed from
    the records of every file (the same mean and std as ``run.py``'s). A seed run twice is
    refused, and so is a table whose estimators have different numbers of seeds, since its
    caption would mislead.
    """
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import summarize

    groups: dict[tuple, tuple[list[str], dict, list]] = {}
    for name, result in results:
        config = result.get("config", {})
        key = (config.get("dataset"), config.get("split"))
        names, merged, records = groups.setdefault(key, ([], {"config": dict(config)}, []))
        names.append(name)
        records += [_decoded(r, name) for r in result["records"]]
    tables = []
    for (dataset, split), (names, merged, records) in groups.items():
        seen, seeds = {}, defaultdict(set)
        for r in records:
            run_key = (r["estimator"], r["epsilon"], r["seed"])
            if run_key in seen:
                raise SystemExit(f"{r['file']}: {r['estimator']} at epsilon={r['epsilon']}, seed "
                                 f"{r['seed']} is also in {seen[run_key]}")
            seen[run_key] = r["file"]
            seeds[r["estimator"]].add(r["seed"])
        counts = {estimator: len(s) for estimator, s in seeds.items()}
        if len(set(counts.values())) > 1:
            raise SystemExit(f"{dataset} ({split}): different numbers of seeds per estimator: "
                             f"{counts}")
        epsilons = sorted({r["epsilon"] for r in records})
        merged["config"]["seeds"] = next(iter(counts.values()))
        merged["summary"] = summarize(records, epsilons)
        tables.append((names, merged))
    return tables


def _decoded(record: dict, name: str) -> dict:
    """A run.py record as written to JSON (``inf`` as a string) with numbers back as floats,
    and the name of its file."""
    numbers = {key: float(record[key]) for key in ("epsilon", "epsilon_spent") if key in record}
    return {**record, **numbers, "file": name}


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
