"""Print the summaries of benchmark JSON files (written by run.py) as one markdown table.

Usage: ``python benchmarks/summarize.py benchmarks/results/*.json``
"""

import argparse
import json


def _number(value):
    return value if isinstance(value, str) else f"{value:.3g}"


def _rows(path):
    with open(path) as handle:
        result = json.load(handle)
    config = result.get("config", {})
    for row in result.get("summary", []) if isinstance(result, dict) else []:
        if not isinstance(row, dict) or "test_accuracy_mean" not in row:
            continue  # not a run.py summary (e.g. a scaling or method-specific script)
        yield config.get("dataset", "?"), config.get("split", "?"), row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    print("| file | dataset | split | estimator | epsilon | runs | test acc % | eps spent | fit s "
          "| time / eps=inf |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for path in args.files:
        for dataset, split, row in _rows(path):
            mean, std = 100 * row["test_accuracy_mean"], 100 * row["test_accuracy_std"]
            accuracy = f"{mean:.1f} ± {std:.1f}"
            ratio = row.get("time_ratio_to_inf_mean")
            print(f"| {path.rsplit('/', 1)[-1]} | {dataset} | {split} | {row['estimator']} "
                  f"| {row['epsilon']} | {row['n_runs']} | {accuracy} "
                  f"| {_number(row['epsilon_spent_mean'])} | {row['fit_seconds_mean']:.1f} "
                  f"| {'' if ratio is None else f'{ratio:.2f}'} |")


if __name__ == "__main__":
    main()
