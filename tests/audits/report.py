"""The mechanism-level audit table: ``python tests/audits/report.py [--fast]``.

Runs every audit of ``test_mechanisms.py`` (the full sizes by default, the fast subset with
``--fast``) and prints one row per mechanism: the reported epsilon, the empirical lower
bound with its trial count, and the lower bound of the deliberately broken variant next
to the epsilon that variant claims. ``python -m pytest -m audit tests/audits`` prints the
same table at the end of the run (without ``-n``).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["AuditRow", "format_table", "main"]


@dataclass(frozen=True)
class AuditRow:
    """One audited mechanism.

    ``lower_bound`` is computed from ``trials`` runs of the mechanism (both inputs) and must
    stay below ``reported``; ``broken_lower_bound``, from ``broken_trials`` runs of
    ``broken`` (a description of the deliberately broken variant), must exceed
    ``broken_claim``, the epsilon that variant claims.
    """

    mechanism: str
    unit: str
    reported: float
    lower_bound: float
    trials: int
    broken: str
    broken_claim: float
    broken_lower_bound: float
    broken_trials: int
    size: str = ""

    @property
    def valid(self) -> bool:
        return self.lower_bound <= self.reported

    @property
    def has_power(self) -> bool:
        return self.broken_lower_bound > self.broken_claim


_HEADER = ("mechanism", "unit", "size", "reported eps", "lower bound", "trials",
           "broken variant", "claimed", "broken LB", "trials")


def format_table(rows) -> str:
    """Rows as a Markdown table (epsilons to 3 decimals)."""
    lines = ["| " + " | ".join(_HEADER) + " |", "|" + "---|" * len(_HEADER)]
    for row in rows:
        cells = (row.mechanism, row.unit, row.size, f"{row.reported:.3f}",
                 f"{row.lower_bound:.3f}", f"{row.trials:,}", row.broken,
                 f"{row.broken_claim:.3f}", f"{row.broken_lower_bound:.3f}",
                 f"{row.broken_trials:,}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    full = "--fast" not in argv
    root = Path(__file__).resolve().parents[2]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from tests.audits import test_mechanisms

    rows, failures = [], []
    for name, audit in test_mechanisms.AUDITS.items():
        start = time.perf_counter()
        row = audit(full=full)
        rows.append(row)
        print(f"{name}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
        if not (row.valid and row.has_power):
            failures.append(name)
    print(format_table(rows))
    if failures:
        print(f"FAILED: {', '.join(failures)}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
