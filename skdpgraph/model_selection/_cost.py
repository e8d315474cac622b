"""The total privacy cost of a hyperparameter search.

A search trains many models on the same private data, so the guarantee of the model it
releases is not the ``epsilon_spent_`` of one fit. Two bounds are provided:

* :func:`composition_cost` -- the naive bound: every fit is a release, and all of them
  compose. With dp-accounting events the fits are composed in RDP (tighter than adding
  epsilons); without them, basic composition adds the (epsilon, delta) pairs.
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
from collections.abc import Sequence
from typing import Any

import numpy as np

from skdpgraph.privacy import (
    PrivacyCost,
    PrivacyReport,
    composed_event,
    compute_rdp,
    epsilon_from_rdp,
    relation_of,
    repeat_and_select_event,
    repeat_and_select_rdp,
)

__all__ = ["PrivacyCost", "composition_cost", "repeat_and_select_cost", "as_report",
           "VALIDATION_LABELS_PUBLIC"]

#: Stated by every cost of a selection: what chooses the model is not covered.
VALIDATION_LABELS_PUBLIC = (
    "validation labels are treated as public: the scores that choose the model are computed "
    "on held-out nodes' labels (and features), and neither those scores nor the choice they "
    "make is covered by this bound"
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


def _check_reports(reports: Sequence[Any]) -> list[PrivacyReport]:
    reports = [as_report(r) for r in reports]
    if not reports:
        raise ValueError("At least one fit is required to compute a privacy cost; got none.")
    units = {(r.unit, r.neighbouring_relation) for r in reports}
    if len(units) > 1:
        raise ValueError(
            f"Cannot compose guarantees on different privacy units: {sorted(units)}. "
            "Compose fits that protect the same unit under the same relation."
        )
    return reports


def _release_note(reports: list[PrivacyReport]) -> tuple[str, ...]:
    if any(r.releases for r in reports):
        return ("later releases recorded in privacy_.releases (e.g. inductive predictions) "
                "are not part of this bound; add them separately",)
    return ()


def composition_cost(reports: Sequence[Any], delta: float | None = None) -> PrivacyCost:
    """Naive bound: the composition of every fit in a search.

    Parameters
    ----------
    reports : sequence of PrivacyReport or fitted estimators
        One entry per fit that touched the private data (every candidate on every split,
        plus the refit).
    delta : float, default=None
        Target delta of the RDP composition; defaults to the largest delta of the fits.
        Ignored by basic composition, whose delta is the sum of the fits' deltas.

    Returns
    -------
    PrivacyCost
        RDP composition of the fits' dp-accounting events when every fit has one;
        otherwise basic composition ``(sum epsilon_i, sum delta_i)``, which says so in
        ``notes``.

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
    notes = _release_note(reports)
    if any(not r.private for r in reports):
        return PrivacyCost(math.inf, 0.0, "not private", len(reports),
                           notes + ("at least one fit has epsilon=inf",))
    events = [r.dp_event for r in reports]
    if all(event is not None for event in events):
        target = max(r.delta for r in reports) if delta is None else float(delta)
        composed = composed_event(events)
        rdp = compute_rdp(composed, relation=relation_of(composed))
        return PrivacyCost(epsilon_from_rdp(rdp, target), target,
                           "RDP composition (dp-accounting)", len(reports), notes)
    missing = sum(event is None for event in events)
    note = (f"{missing} of {len(reports)} fits ({reports[0].estimator}) report no dp-accounting "
            "event; used basic composition of their (epsilon, delta), which is looser than "
            "RDP composition")
    return PrivacyCost(float(sum(r.epsilon for r in reports)),
                       float(min(1.0, sum(r.delta for r in reports))),
                       "basic composition", len(reports), notes + (note,))


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
        The single-run guarantees of the candidates. With several different events the
        single-run RDP curve is their pointwise maximum (a run of a randomly drawn
        candidate is no less private than the least private candidate).
    mean : float
        Mean number of runs, >= 1.
    shape : float, default=1.0
        Shape of the distribution (see above).
    delta : float, default=None
        Target delta; defaults to the largest delta of the fits.

    Returns
    -------
    PrivacyCost

    Raises
    ------
    ValueError
        If a fit has no dp-accounting event: the bound needs the RDP curve of one run.

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
    if any(r.dp_event is None for r in reports):
        raise ValueError(
            f"The random-repetition bound needs the RDP curve of one run, but "
            f"{reports[0].estimator}'s privacy_ has no dp-accounting event (dp_event=None). "
            "Use composition_cost for a basic-composition bound."
        )
    target = max(r.delta for r in reports) if delta is None else float(delta)
    events = list({repr(r.dp_event): r.dp_event for r in reports}.values())
    relation = relation_of(composed_event(events))
    if len(events) == 1:
        rdp = compute_rdp(repeat_and_select_event(events[0], mean, shape), relation=relation)
        notes = ()
    else:
        single = np.max([compute_rdp(e, relation=relation) for e in events], axis=0)
        rdp = repeat_and_select_rdp(single, mean, shape)
        notes = (f"{len(events)} different single-run events: the single-run RDP curve is their "
                 "pointwise maximum; it bounds the candidates that ran, so it holds if no "
                 "candidate of the search space that did not run is less private; which "
                 "candidates ran depends on the number of runs, so this curve says something "
                 "about it (search only parameters that leave the event unchanged to avoid it)",)
    return PrivacyCost(epsilon_from_rdp(rdp, target), target,
                       f"random repetition, Papernot-Steinke (mean={mean:g}, shape={shape:g})",
                       len(reports), notes + _release_note(reports) + (VALIDATION_LABELS_PUBLIC,))
