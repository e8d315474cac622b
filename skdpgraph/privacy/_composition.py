"""Composing the guarantees of several releases on the same private data.

One rule, used by the privacy ledger, :func:`~skdpgraph.model_selection.privacy_spent` and
the costs of searches: releases that carry a dp-accounting event compose in RDP (their
curves add up, then one conversion to (epsilon, delta)); releases without one add their
(epsilon, delta) by basic composition; the two parts add up. Releases on different privacy
units or neighbouring relations never compose into one number.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["PrivacyCost", "Spend", "compose_spends", "release_event"]


@dataclass(frozen=True)
class PrivacyCost:
    """The guarantee of a set of releases on the same private data.

    Parameters
    ----------
    epsilon, delta : float
        The composed guarantee (an upper bound).
    method : str
        How it was computed.
    num_fits : int
        How many single-release guarantees entered the bound.
    notes : tuple of str
        Assumptions and fallbacks the number depends on.
    unit, relation : str
        The privacy unit and neighbouring relation the guarantee protects ("" where the
        releases did not state one).
    """

    epsilon: float
    delta: float
    method: str
    num_fits: int
    notes: tuple[str, ...] = ()
    unit: str = ""
    relation: str = ""

    def __str__(self) -> str:
        on = f" on one {self.unit} ({self.relation})" if self.unit else ""
        releases = "release" if self.num_fits == 1 else "releases"
        lines = [f"({self.epsilon:.4g}, {self.delta:.3g})-DP{on} over {self.num_fits} "
                 f"{releases} [{self.method}]"]
        return "\n".join(lines + [f"  note: {note}" for note in self.notes])


@dataclass(frozen=True)
class Spend:
    """One release on private data, as composition sees it.

    Parameters
    ----------
    epsilon, delta : float
        Its own guarantee (``epsilon=inf`` for a release that is not private).
    unit, relation : str
        The privacy unit and the neighbouring relation, in words.
    dp_event : dp_accounting.DpEvent or None
        Its dp-accounting event, when one exists; then it composes in RDP.
    """

    epsilon: float
    delta: float
    unit: str
    relation: str
    dp_event: Any = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> tuple[str, str]:
        """``(unit, relation)``: spends compose only with spends of the same key."""
        return (self.unit, self.relation)


def release_event(release: Mapping[str, Any]) -> Any | None:
    """The dp-accounting event of one release recorded in ``privacy_.releases``, if known.

    A release that states its ``dp_event`` has that event. A release that states a Gaussian
    ``noise_multiplier`` (GAP's and ProGAP's PMA, FDP's neighbour sums) is ``hops``
    Gaussian mechanisms (1 when it states none) at that multiplier: the mechanism whose
    exact epsilon the estimator recorded; one that also states ``noise="laplace"`` (the
    neighbour-vote release) is one Laplace mechanism at that multiplier (scale over L1
    sensitivity). Any other release has no event (None).

    Parameters
    ----------
    release : mapping
        One entry of ``privacy_.releases``.

    Returns
    -------
    event : dp_accounting.DpEvent or None
        Its event, or None when the release states none.

    Examples
    --------
    >>> release_event({"kind": "pma", "epsilon": 1.0, "delta": 1e-5}) is None
    True
    >>> release_event({"noise_multiplier": 2.0, "hops": 3})
    SelfComposedDpEvent(event=GaussianDpEvent(noise_multiplier=2.0), count=3)
    >>> release_event({"noise_multiplier": 0.5, "noise": "laplace"})
    LaplaceDpEvent(noise_multiplier=0.5)
    """
    event = release.get("dp_event")
    if event is not None:
        return event
    sigma = release.get("noise_multiplier")
    if sigma is None or not math.isfinite(float(sigma)) or float(sigma) <= 0:
        return None
    from skdpgraph.privacy._accountant import gaussian_event, laplace_event  # dp-accounting

    if release.get("noise") == "laplace":
        return laplace_event(float(sigma))
    return gaussian_event(float(sigma), int(release.get("hops", 1)))


_RDP_CURVES: dict[int, tuple[Any, Any, np.ndarray]] = {}


def _rdp_curve(event: Any) -> tuple[Any, np.ndarray]:
    """``(accountant relation, RDP curve)`` of one event, cached by identity."""
    from skdpgraph.privacy._accountant import compute_rdp, relation_of  # imports dp-accounting

    cached = _RDP_CURVES.get(id(event))
    if cached is None or cached[0] is not event:
        relation = relation_of(event)
        cached = (event, relation, compute_rdp(event, relation=relation))
        if len(_RDP_CURVES) > 4096:
            _RDP_CURVES.clear()
        _RDP_CURVES[id(event)] = cached
    return cached[1], cached[2]


def _check_one_key(spends: Sequence[Spend]) -> tuple[str, str]:
    keys = sorted({spend.key for spend in spends})
    if len(keys) > 1:
        raise ValueError(
            f"Cannot compose guarantees on different privacy units or relations: {keys}. "
            "A release private for one unit says nothing about another; total each unit "
            "apart (PrivacyLedger.totals() does).")
    return keys[0] if keys else ("", "")


def compose_spends(spends: Iterable[Spend], delta: float | None = None) -> PrivacyCost:
    """The tightest valid composition of ``spends`` on one unit.

    Parameters
    ----------
    spends : iterable of Spend
        Releases on the same private data, all on one unit and relation.
    delta : float, default=None
        Target delta of the whole. ``None``: the RDP part is converted at the largest delta
        of its releases (and the basic part adds its deltas). With a target, the RDP part
        is converted at ``delta`` minus the basic part's deltas (``inf`` if nothing is left).

    Returns
    -------
    PrivacyCost
        A single release keeps its own (epsilon, delta); several releases with
        dp-accounting events compose in RDP; the others add up.

    Raises
    ------
    ValueError
        If the spends protect different units or relations.

    Examples
    --------
    >>> from skdpgraph.privacy import poisson_dpsgd_event
    >>> fit = Spend(1.0, 1e-5, "node", "add or remove one node",
    ...             poisson_dpsgd_event(1.1, 0.01, 1000))
    >>> cost = compose_spends([fit] * 10)
    >>> cost.method, cost.epsilon < 10.0
    ('RDP composition (dp-accounting)', True)
    """
    spends = list(spends)
    unit, relation = _check_one_key(spends)
    if not spends:
        return PrivacyCost(0.0, 0.0, "nothing released", 0, unit=unit, relation=relation)
    if any(math.isinf(s.epsilon) for s in spends):
        return PrivacyCost(math.inf, 0.0, "not private", len(spends),
                           ("at least one release has epsilon=inf",), unit, relation)
    basic = PrivacyCost(float(sum(s.epsilon for s in spends)),
                        float(min(1.0, sum(s.delta for s in spends))),
                        "basic composition", len(spends), (), unit, relation)
    with_event = [s for s in spends if s.dp_event is not None]
    if len(spends) == 1:
        return basic
    if len(with_event) < 2:
        missing = len(spends) - len(with_event)
        return dataclasses.replace(basic, notes=(
            f"{missing} of {len(spends)} releases report no dp-accounting event: used basic "
            "composition of their (epsilon, delta), which is looser than RDP composition",))
    curves, relations = [], set()
    for spend in with_event:
        accountant_relation, curve = _rdp_curve(spend.dp_event)
        relations.add(accountant_relation)
        curves.append(curve)
    if len(relations) > 1:
        return dataclasses.replace(basic, notes=(
            "the releases' events are accounted under different relations; used basic "
            "composition",))
    others = [s for s in spends if s.dp_event is None]
    other_epsilon = float(sum(s.epsilon for s in others))
    other_delta = float(sum(s.delta for s in others))
    if delta is None:
        rdp_delta = max(s.delta for s in with_event)
    else:
        rdp_delta = float(delta) - other_delta
        if rdp_delta <= 0:
            return PrivacyCost(math.inf, float(delta), "RDP composition (dp-accounting)",
                               len(spends), (f"the releases without an event already spend "
                                             f"delta={other_delta:.3g} of {delta:.3g}",),
                               unit, relation)
    from skdpgraph.privacy._accountant import epsilon_from_rdp

    rdp_epsilon = epsilon_from_rdp(np.sum(curves, axis=0), rdp_delta)
    method = "RDP composition (dp-accounting)"
    notes: tuple[str, ...] = ()
    if others:
        method += " + basic composition"
        notes = (f"{len(with_event)} releases with a dp-accounting event composed in RDP; "
                 f"{len(others)} without one (e.g. releases after fit) added their "
                 "(epsilon, delta)",)
    total = PrivacyCost(rdp_epsilon + other_epsilon, min(1.0, rdp_delta + other_delta),
                        method, len(spends), notes, unit, relation)
    if basic.epsilon <= total.epsilon and basic.delta <= total.delta:
        return basic
    return total
