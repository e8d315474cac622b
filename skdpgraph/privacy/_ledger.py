"""The privacy ledger: every fit and release made in a scope, totalled per privacy unit.

Every skdpgraph estimator reports each training release (at the end of ``fit``) and each
later noisy release (``privacy_.releases``) to the ledgers that are active: the process
ledger, always, and every :class:`PrivacyLedger` entered with ``with``. Because the
estimators report, and not the workflows around them, a ledger counts what scikit-learn's
meta-estimators do (cross-validation, searches, halving, calibration, bagging, voting,
stacking, learning curves, permutation importance) without code for any of them.

A ledger with a cap checks each fit's plan and each release's cost against the cap before
any private data is read, and refuses with :class:`PrivacyBudgetError` what would exceed it.
"""

from __future__ import annotations

import math
import threading
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from skdpgraph.privacy._calibration import PrivacyBudgetError
from skdpgraph.privacy._composition import PrivacyCost, Spend, compose_spends

__all__ = ["LedgerEntry", "PrivacyLedger", "Reservation", "process_ledger", "reserve_spend"]

_LOCK = threading.RLock()
#: Ledgers entered with ``with``, innermost last; shared by every thread of the process,
#: so that fits run by joblib's threads inside a scope are counted there.
_ACTIVE: list[PrivacyLedger] = []


@dataclass(frozen=True)
class LedgerEntry:
    """One release recorded in a ledger.

    Parameters
    ----------
    kind : str
        ``"fit"`` (a training release), ``"release"`` (a noisy release after ``fit``) or
        ``"spend"`` (recorded by hand with :meth:`PrivacyLedger.spend`).
    source : str
        Who made it (the estimator's class name, or the caller's label).
    spend : Spend
        Its guarantee, unit, relation and dp-accounting event.
    detail : str
        What was released (e.g. the release's kind).
    """

    kind: str
    source: str
    spend: Spend
    detail: str = ""

    def __str__(self) -> str:
        guarantee = (f"({self.spend.epsilon:.4g}, {self.spend.delta:.3g})"
                     if math.isfinite(self.spend.epsilon) else "not private")
        detail = f" {self.detail}" if self.detail else ""
        return f"{self.kind} {self.source}{detail}: {guarantee} on {self.spend.unit}"


class PrivacyLedger:
    """Records every fit and release while active, and totals them per privacy unit.

    Use it as a context manager around any workflow, or read the process ledger
    (:func:`process_ledger`), which records everything this process has released. Totals
    compose by the tightest valid rule (releases with dp-accounting events in RDP, the
    others by adding their epsilons and deltas); different units are never added into one
    number. With a finite ``epsilon`` (or a ``delta``), a fit or release that would take a
    unit's total past the cap is refused before it reads any private data.

    Parameters
    ----------
    epsilon : float, default=inf
        Cap on each unit's total epsilon. ``inf``: record only.
    delta : float, default=None
        Target delta of the totals: RDP compositions convert to epsilon at this delta (less
        the deltas of releases without an event). With a finite ``epsilon`` it is also the
        cap on each unit's total delta. ``None``: RDP compositions convert at the largest
        delta among their releases.
    name : str, default="ledger"
        Shown in reports and refusals.

    Attributes
    ----------
    entries : tuple of LedgerEntry
        Everything recorded, in order.

    Notes
    -----
    A ledger counts what runs in its own process. Inside a ``with`` block, joblib (which
    scikit-learn's meta-estimators use for ``n_jobs``) runs in threads, so parallel fits
    stay in the process and are counted; outside a block, fits run in joblib worker
    processes are not seen by the process ledger. Releases are counted once per ledger
    whatever their nesting: a fit inside two nested blocks is in both.

    Examples
    --------
    >>> from sklearn.model_selection import cross_validate
    >>> from skdpgraph import DPMLPClassifier, PrivacyLedger
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=200, random_state=0)
    >>> with PrivacyLedger() as ledger:
    ...     _ = cross_validate(DPMLPClassifier(epsilon=1.0, epochs=2, random_state=0),
    ...                        data.nodes(), data.y, cv=3)
    >>> len(ledger.entries), ledger.total().epsilon > 1.0
    (3, True)
    >>> with PrivacyLedger(epsilon=1.5):
    ...     _ = cross_validate(DPMLPClassifier(epsilon=1.0, epochs=2, random_state=0),
    ...                        data.nodes(), data.y, cv=3, error_score="raise")
    Traceback (most recent call last):
    ...
    skdpgraph.exceptions.PrivacyBudgetError: DPMLPClassifier: ledger (epsilon=1.5) ...
    """

    def __init__(self, epsilon: float = math.inf, delta: float | None = None, *,
                 name: str = "ledger") -> None:
        epsilon = float(epsilon)
        if math.isnan(epsilon) or epsilon <= 0:
            raise ValueError(f"PrivacyLedger: epsilon must be a number > 0 (inf: no cap); "
                             f"got {epsilon!r}.")
        if delta is not None and not 0 < float(delta) < 1:
            raise ValueError(f"PrivacyLedger: delta must be in (0, 1) or None; got {delta!r}.")
        self.epsilon = epsilon
        self.delta = None if delta is None else float(delta)
        self.name = str(name)
        self._entries: list[LedgerEntry] = []
        self._scope: ExitStack | None = None

    # ------------------------------------------------------------------ reading
    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        with _LOCK:
            return tuple(self._entries)

    @property
    def units(self) -> tuple[tuple[str, str], ...]:
        """The ``(unit, relation)`` pairs recorded, in order of first appearance."""
        return tuple(dict.fromkeys(entry.spend.key for entry in self.entries))

    def totals(self) -> dict[tuple[str, str], PrivacyCost]:
        """The composed guarantee of each ``(unit, relation)``."""
        return {key: self._compose(key) for key in self.units}

    def total(self, unit: str | None = None) -> PrivacyCost:
        """The composed guarantee on one unit.

        Parameters
        ----------
        unit : str, default=None
            The unit (as in ``privacy_.unit``). ``None``: the only unit recorded.

        Raises
        ------
        ValueError
            If ``unit=None`` and several units were recorded (their totals do not add up),
            or ``unit`` was never recorded.
        """
        keys = self.units
        if unit is not None:
            keys = tuple(key for key in keys if key[0] == unit)
            if not keys:
                raise ValueError(f"{self.name}: nothing recorded on unit {unit!r}; recorded "
                                 f"units: {[key[0] for key in self.units]}.")
        if not keys:
            return PrivacyCost(0.0, 0.0, "nothing released", 0)
        if len(keys) > 1:
            raise ValueError(
                f"{self.name}: releases on {len(keys)} different units or relations were "
                f"recorded ({[key[0] for key in keys]}); a guarantee on one unit says nothing "
                "about another, so there is no single total. Use totals(), or total(unit=...).")
        return self._compose(keys[0])

    def _compose(self, key: tuple[str, str], extra: Spend | None = None) -> PrivacyCost:
        spends = [entry.spend for entry in self.entries if entry.spend.key == key]
        return compose_spends(spends + ([extra] if extra is not None else []), self.delta)

    # ------------------------------------------------------------------ recording
    def check(self, spend: Spend, *, context: str = "") -> None:
        """Refuse ``spend`` if it would take its unit's total past the cap.

        Raises
        ------
        PrivacyBudgetError
            If the cap would be exceeded; nothing is recorded.
        """
        if math.isinf(self.epsilon):
            return
        after = self._compose(spend.key, spend)
        over_epsilon = after.epsilon > self.epsilon * (1 + 1e-9)
        over_delta = self.delta is not None and after.delta > self.delta * (1 + 1e-9)
        if over_epsilon or over_delta:
            before = self._compose(spend.key)
            cap = f"epsilon={self.epsilon:g}" + (
                f", delta={self.delta:.3g}" if self.delta is not None else "")
            raise PrivacyBudgetError(
                f"{context + ': ' if context else ''}{self.name} ({cap}) refuses a release of "
                f"({spend.epsilon:.4g}, {spend.delta:.3g}) on {spend.unit}: with the "
                f"{before.num_fits} releases already recorded ({before.epsilon:.4g}, "
                f"{before.delta:.3g}) the total would be ({after.epsilon:.4g}, "
                f"{after.delta:.3g}). Nothing was read or released.")

    def spend(self, epsilon: float, delta: float, *, unit: str, relation: str,
              source: str = "user", detail: str = "", dp_event: Any = None) -> LedgerEntry:
        """Record a release made outside skdpgraph (checked against the cap first).

        Parameters
        ----------
        epsilon, delta : float
            Its guarantee.
        unit, relation : str
            What it protects; it composes only with releases on the same pair.
        source, detail : str
            Labels for the record.
        dp_event : dp_accounting.DpEvent, default=None
            Its event, so that it composes in RDP.

        Returns
        -------
        LedgerEntry
        """
        spend = Spend(float(epsilon), float(delta), unit, relation, dp_event)
        entry = LedgerEntry("spend", source, spend, detail)
        with _LOCK:
            self.check(entry.spend, context=source)
            self._entries.append(entry)
        return entry

    def _replace(self, entry: LedgerEntry, by: LedgerEntry | None) -> None:
        for i, held in enumerate(self._entries):
            if held is entry:
                if by is None:
                    del self._entries[i]
                else:
                    self._entries[i] = by
                return

    def reset(self) -> None:
        """Forget every entry (the cap stays)."""
        with _LOCK:
            self._entries.clear()

    # ------------------------------------------------------------------ scope
    def __enter__(self) -> PrivacyLedger:
        from joblib import parallel_config

        with _LOCK:
            if self in _ACTIVE:
                raise RuntimeError(f"{self.name} is already active; enter it once.")
            _ACTIVE.append(self)
        self._scope = ExitStack()
        self._scope.enter_context(parallel_config(backend="threading"))
        return self

    def __exit__(self, *exc_info: Any) -> None:
        scope, self._scope = self._scope, None
        if scope is not None:
            scope.close()
        with _LOCK:
            _ACTIVE.remove(self)

    def __str__(self) -> str:
        cap = "" if math.isinf(self.epsilon) else f" (cap epsilon={self.epsilon:g})"
        lines = [f"{self.name}{cap}: {len(self.entries)} releases"]
        for (unit, relation), cost in self.totals().items():
            lines.append(f"  {unit} ({relation}): ({cost.epsilon:.4g}, {cost.delta:.3g})-DP "
                         f"over {cost.num_fits} releases [{cost.method}]")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"PrivacyLedger(epsilon={self.epsilon!r}, delta={self.delta!r}, "
                f"name={self.name!r}; {len(self.entries)} entries)")


_PROCESS = PrivacyLedger(name="process ledger")


def process_ledger() -> PrivacyLedger:
    """The ledger of everything this process has released (no cap unless one is set).

    Returns
    -------
    ledger : PrivacyLedger
        The process-wide ledger.

    Examples
    --------
    >>> from skdpgraph.privacy import process_ledger
    >>> ledger = process_ledger()
    >>> ledger.name
    'process ledger'
    """
    return _PROCESS


def _active() -> list[PrivacyLedger]:
    with _LOCK:
        return [_PROCESS, *_ACTIVE]


class Reservation:
    """A release checked against every active ledger's cap and held there until it is made.

    Held releases count in every total, so that fits running in parallel threads cannot
    pass the same cap together. :meth:`commit` records the release as made; :meth:`cancel`
    (a fit that failed) removes it.

    Parameters
    ----------
    entry : LedgerEntry
        The release held.
    ledgers : list of PrivacyLedger
        The ledgers that hold it.
    """

    def __init__(self, entry: LedgerEntry, ledgers: list[PrivacyLedger]) -> None:
        self.entry, self._ledgers = entry, ledgers

    def commit(self, spend: Spend | None = None) -> LedgerEntry:
        """Record the release as made, with its final ``spend`` (default: the one reserved)."""
        final = self.entry if spend is None else LedgerEntry(
            self.entry.kind, self.entry.source, spend, self.entry.detail)
        with _LOCK:
            for ledger in self._ledgers:
                ledger._replace(self.entry, final)
        self._ledgers = []
        return final

    def cancel(self) -> None:
        """Remove the held release: it was not made."""
        with _LOCK:
            for ledger in self._ledgers:
                ledger._replace(self.entry, None)
        self._ledgers = []


def reserve_spend(kind: str, source: str, spend: Spend, *, detail: str = "") -> Reservation:
    """Check ``spend`` against every active ledger's cap and hold it there.

    Call it before any private data is read; then :meth:`Reservation.commit` once the
    release is made, or :meth:`Reservation.cancel` if it is not.

    Parameters
    ----------
    kind : str
        What the release is (``"fit"``, ``"predict"``, ...).
    source : str
        Who makes it (the estimator's name).
    spend : Spend
        Its epsilon, delta, unit, relation and event.
    detail : str, default=""
        A note kept with the entry.

    Returns
    -------
    reservation : Reservation
        The held release, to commit or cancel.

    Raises
    ------
    PrivacyBudgetError
        If a ledger's cap would be exceeded; nothing is held.
    """
    entry = LedgerEntry(kind, source, spend, detail)
    with _LOCK:
        ledgers = _active()
        for ledger in ledgers:
            ledger.check(spend, context=source)
        for ledger in ledgers:
            ledger._entries.append(entry)
    return Reservation(entry, ledgers)
