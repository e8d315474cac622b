"""The total privacy cost of a hyperparameter search.

A search trains many models on the same private data, so the guarantee of the model it
releases is not the ``epsilon_spent_`` of one fit. Two bounds are provided:

* :func:`composition_cost` -- the naive bound: every fit is a release, and all of them
  compose, together with every later release recorded in their reports (e.g. a new noisy
  aggregation made when held-out nodes are scored). With dp-accounting events the fits
  and releases are composed in RDP (tighter than adding epsilons); without them, basic
  composition adds the (epsilon, delta) pairs.
* :func:`repeat_and_select_cost` -- the random-repetition bound of Papernot and Steinke
  [PS22]_: if the *number* of runs is random (truncated negative binomial or Poisson) and
  only the best run is released, the cost grows with the logarithm of the mean number of
  runs instead of linearly. dp-accounting implements it as ``RepeatAndSelectDpEvent``.

References
----------
.. [PS22] Papernot, Steinke. "Hyperparameter Tuning with Renyi Differential Privacy",
   ICLR 2022, Theorems 2 and 6. https://arxiv.org/abs/2110.03620
"""

from __future__ import annotations

import math
import dataclasses
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from skdpgraph.privacy import (
    PrivacyCost,
    PrivacyReport,
    compose_spends,
    composed_event,
    compute_rdp,
    epsilon_from_rdp,
    relation_of,
    release_event,
    repeat_and_select_event,
    repeat_and_select_rdp,
)

__all__ = ["PrivacyCost", "composition_cost", "repeat_and_select_cost", "as_report",
           "run_events", "check_same_unit", "unit_code", "unit_of_code",
           "VALIDATION_LABELS_PUBLIC", "RELEASES_COMPOSED"]

#: Stated by every cost of a selection: what chooses the model is not covered.
VALIDATION_LABELS_PUBLIC = (
    "validation labels are treated as public: the scores that choose the model are computed "
    "from the held-out nodes' labels and from everything prediction reads: the held-out "
    "nodes' features and, for estimators that predict from the graph, their neighbours' "
    "features and edges, training nodes among them (DRW's random walks and FDP's stars "
    "without private_inference read the training nodes' raw features in the clear); neither "
    "those scores nor the choice they make is covered by this bound, except the noisy "
    "releases recorded in privacy_.releases, which are charged"
)

#: Stated by every cost that composes the releases recorded after fit.
RELEASES_COMPOSED = (
    "every release recorded in a fit's privacy_.releases by the time it was counted (e.g. a "
    "new noisy aggregation made when held-out nodes were scored) is composed with that fit"
)


def as_report(obj: Any) -> PrivacyReport:
    """The :class:`PrivacyReport` of a fitted estimator (or the report itself)."""
    if isinstance(obj, PrivacyReport):
        return obj
    report = getattr(obj, "privacy_", None)
    if not isinstance(report, PrivacyReport):
        raise TypeError(
            f"Expected a PrivacyReport or a fitted skdpgraph estimator with privacy_; got "
            f"{type(obj).__name__}. Fit the estimator first."
        )
    return report


def run_events(report: PrivacyReport) -> list[Any] | None:
    """The events of the training release and of every later release; None if one is unknown."""
    events = [report.dp_event] + [release_event(r) for r in report.releases]
    return None if any(event is None for event in events) else events


def unit_code(unit: str, relation: str) -> float:
    """A number that identifies ``(unit, relation)``: scorers record it in ``cv_results_``.

    48 bits of a BLAKE2b digest, exact in a float64; :func:`unit_of_code` names the pair
    again in the process that computed it.
    """
    digest = hashlib.blake2b(f"{unit}\x00{relation}".encode(), digest_size=6).digest()
    code = float(int.from_bytes(digest, "big"))
    _NAMED_CODES[code] = (unit, relation)
    return code


_NAMED_CODES: dict[float, tuple[str, str]] = {}


def unit_of_code(code: float) -> str:
    """``(unit, relation)`` of a :func:`unit_code` seen in this process, or the code itself."""
    named = _NAMED_CODES.get(float(code))
    return repr(named) if named else f"unit code {code:.0f}"


def check_same_unit(units: Sequence[tuple[str, str]] | set, what: str = "fits") -> None:
    """Refuse to compose guarantees on different ``(unit, relation)`` pairs."""
    units = set(units)
    if len(units) > 1:
        raise ValueError(
            f"Cannot compose guarantees on different privacy units: {sorted(units)}. "
            f"The {what} protect different things, so no single bound covers them; compose "
            "fits that protect the same unit under the same relation (do not search over "
            "the unit)."
        )


def _check_reports(reports: Sequence[Any]) -> list[PrivacyReport]:
    reports = [as_report(r) for r in reports]
    if not reports:
        raise ValueError("At least one fit is required to compute a privacy cost; got none.")
    check_same_unit({(r.unit, r.neighbouring_relation) for r in reports})
    return reports


def _release_note(reports: list[PrivacyReport]) -> tuple[str, ...]:
    return (RELEASES_COMPOSED,) if any(r.releases for r in reports) else ()


def composition_cost(reports: Sequence[Any], delta: float | None = None) -> PrivacyCost:
    """Naive bound: the composition of every fit in a search.

    Parameters
    ----------
    reports : sequence of PrivacyReport or fitted estimators
        One entry per fit that touched the private data (every candidate on every split,
        plus the refit). The releases each report records (``privacy_.releases``) are
        composed with it.
    delta : float, default=None
        Target delta of the RDP composition; defaults to the largest delta of the fits.
        Ignored by basic composition, whose delta is the sum of the fits' and releases'
        deltas.

    Returns
    -------
    PrivacyCost
        The tightest valid composition (:func:`~skdpgraph.privacy.compose_spends`): the
        fits and releases with a dp-accounting event (:func:`~skdpgraph.privacy.release_event`)
        compose in RDP, the others add their (epsilon, delta); ``notes`` says which.

    Examples
    --------
    >>> from skdpgraph.privacy import PrivacyReport, poisson_dpsgd_event
    >>> fit = PrivacyReport("X", "node", "add or remove one node", 1.0, 1e-5, "rdp", "dp-sgd",
    ...                     dp_event=poisson_dpsgd_event(1.1, 0.01, 1000))
    >>> cost = composition_cost([fit] * 10, delta=1e-5)
    >>> cost.method
    'RDP composition (dp-accounting)'
    >>> cost.epsilon < 10 * 1.0   # tighter than adding the epsilons
    True
    """
    reports = _check_reports(reports)
    if delta is None:
        delta = max(r.delta for r in reports)
    cost = compose_spends([spend for r in reports for spend in r.spends()],
                          delta if delta > 0 else None)
    notes = _release_note(reports) + cost.notes
    if any(not r.private for r in reports):
        notes += ("at least one fit has epsilon=inf",)
    return dataclasses.replace(cost, num_fits=len(reports), notes=notes)


def check_repetition_distribution(mean: float, shape: float) -> None:
    """Validate the parameters of the distribution of the number of runs."""
    if not (isinstance(mean, (int, float)) and math.isfinite(mean) and mean >= 1):
        raise ValueError(f"mean_repetitions must be a finite number >= 1; got {mean!r}.")
    if not (isinstance(shape, (int, float)) and not math.isnan(shape) and shape >= 0):
        raise ValueError(
            f"shape must be >= 0 (0: logarithmic, 1: geometric, (0, inf): truncated negative "
            f"binomial, inf: Poisson); got {shape!r}."
        )


def repeat_and_select_cost(reports: Sequence[Any], mean: float, shape: float = 1.0,
                           delta: float | None = None) -> PrivacyCost:
    r"""Papernot--Steinke bound for running a random number of fits and releasing the best.

    The number of runs :math:`K` is drawn from a distribution with mean ``mean``: the
    truncated negative binomial with shape :math:`\eta` = ``shape`` (0: logarithmic,
    1: geometric) or, for ``shape=inf``, the Poisson. Each run trains one candidate drawn
    at random from a fixed distribution, and only the best run (by any score on data whose
    privacy is not at stake) is released. If one run is :math:`(\lambda, \varepsilon(\lambda))`
    -RDP, for :math:`0 < \eta < \infty` the release is RDP with (Papernot and Steinke,
    ICLR 2022, Theorem 2)

    .. math::
        \varepsilon'(\lambda) = \varepsilon(\lambda) + (1+\eta)\Big(1-\frac{1}{\hat\lambda}\Big)
        \varepsilon(\hat\lambda) + \frac{(1+\eta)\log(1/\gamma)}{\hat\lambda}
        + \frac{\log \mathbb{E}[K]}{\lambda-1}

    minimised over :math:`\hat\lambda`. dp-accounting computes it for
    ``RepeatAndSelectDpEvent(event, mean, shape)``.

    Parameters
    ----------
    reports : sequence of PrivacyReport or fitted estimators
        The single-run guarantees of every candidate a run can draw: the whole candidate
        space, not only the candidates that happened to run (their curve would depend on
        the number of runs, which must stay secret). A run is the training release
        composed with the releases its report records (e.g. the release its scoring made).
        With several different runs the single-run RDP curve is their pointwise maximum (a
        run of a randomly drawn candidate is no less private than the least private one).
    mean : float
        Mean number of runs, >= 1.
    shape : float, default=1.0
        Shape of the distribution (see above).
    delta : float, default=None
        Target delta; defaults to the largest delta of the fits.

    Returns
    -------
    PrivacyCost
        ``num_fits`` counts the distinct single-run events.

    Raises
    ------
    ValueError
        If a fit or one of its releases has no dp-accounting event: the bound needs the
        RDP curve of one run.

    Notes
    -----
    The bound covers the released run only: the number of runs, the other runs and their
    scores must stay secret. The score that picks the best run is computed on validation
    labels, which are treated as public (``notes`` says so).
    """
    check_repetition_distribution(mean, shape)
    reports = _check_reports(reports)
    if any(not r.private for r in reports):
        return PrivacyCost(math.inf, 0.0, "not private", len(reports),
                           ("at least one fit has epsilon=inf",))
    runs = [run_events(r) for r in reports]
    if any(run is None for run in runs):
        raise ValueError(
            f"The random-repetition bound needs the RDP curve of one run, but "
            f"{reports[0].estimator}'s privacy_ has no dp-accounting event for its training "
            "release or for a release it records (dp_event=None). Use composition_cost for a "
            "basic-composition bound."
        )
    target = max(r.delta for r in reports) if delta is None else float(delta)
    events = [run[0] if len(run) == 1 else composed_event(run) for run in runs]
    events = list({repr(e): e for e in events}.values())
    relation = relation_of(composed_event(events))
    if len(events) == 1:
        rdp = compute_rdp(repeat_and_select_event(events[0], mean, shape), relation=relation)
        notes = ()
    else:
        single = np.max([compute_rdp(e, relation=relation) for e in events], axis=0)
        rdp = repeat_and_select_rdp(single, mean, shape)
        notes = (f"{len(events)} different single-run events over the candidate space: the "
                 "single-run RDP curve is their pointwise maximum",)
    return PrivacyCost(epsilon_from_rdp(rdp, target), target,
                       f"random repetition, Papernot-Steinke (mean={mean:g}, shape={shape:g})",
                       len(events), notes + _release_note(reports) + (VALIDATION_LABELS_PUBLIC,))
