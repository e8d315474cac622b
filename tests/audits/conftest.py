"""The full audits (marker ``audit``) run only when the run selects them with ``-m audit``.

The default test command runs the fast subset of ``tests/audits`` (unmarked tests: fewer
trials, still a valid bound and still power against the broken variants); the full audits
(10^5-10^6 trials per input) run with ``python -m pytest -m audit tests/audits``. The
rows of the audit table are printed at the end of the run (``-s`` not needed; not with
``-n``: workers keep their rows) and by ``python tests/audits/report.py``.
"""

from __future__ import annotations

import pytest

_ROWS = pytest.StashKey[list]()


def _audits_selected(config: pytest.Config) -> bool:
    expression = config.getoption("markexpr", default="") or ""
    return "audit" in expression and "not audit" not in expression


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_ROWS] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _audits_selected(config):
        return
    skip = pytest.mark.skip(reason="full privacy audit: run with `python -m pytest -m audit "
                                   "tests/audits`")
    for item in items:
        if item.get_closest_marker("audit") is not None:
            item.add_marker(skip)


@pytest.fixture
def audit_table(request: pytest.FixtureRequest) -> list:
    """The run's audit rows: a test appends one :class:`AuditRow`-like object per audit."""
    return request.config.stash[_ROWS]


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    rows = config.stash.get(_ROWS, [])
    if not rows:
        return
    from tests.audits.report import format_table  # the one table format

    terminalreporter.section("privacy audit table")
    terminalreporter.write_line(format_table(rows))
