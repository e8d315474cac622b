"""The one accounting layer: RDP curves and epsilons from dp-accounting.

Every epsilon skdpgraph reports is computed here, by dp-accounting's Rényi-DP
accountant [MTZ19]_ and its RDP-to-(epsilon, delta) conversion [BBG+20]_. Methods whose
bound dp-accounting does not implement (FDP's multi-term bound) produce an RDP curve on
the same orders and convert it with :func:`epsilon_from_rdp`.

References
----------
.. [MTZ19] Mironov, Talwar, Zhang. "Rényi Differential Privacy of the Sampled Gaussian
   Mechanism", 2019.
.. [WBK19] Wang, Balle, Kasiviswanathan. "Subsampled Rényi Differential Privacy and
   Analytical Moments Accountant", AISTATS 2019.
.. [BBG+20] Balle, Barthe, Gaboardi, Hsu, Sato. "Hypothesis Testing Interpretations and
   Rényi Differential Privacy", AISTATS 2020, Theorem 21.
"""

from __future__ import annotations

import contextlib
import logging

import numpy as np
from dp_accounting import dp_event
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import rdp_privacy_accountant as _rdp

from skdpgraph._docstrings import fill_doc, register_fragments

__all__ = [
    "DEFAULT_ORDERS",
    "FINE_ORDERS",
    "ADD_OR_REMOVE",
    "REPLACE_ONE",
    "gaussian_event",
    "laplace_event",
    "pure_epsilon",
    "poisson_dpsgd_event",
    "without_replacement_dpsgd_event",
    "compute_rdp",
    "epsilon_from_rdp",
    "compute_epsilon",
    "relation_of",
    "composed_event",
    "repeat_and_select_event",
    "repeat_and_select_rdp",
]

ADD_OR_REMOVE = NeighboringRelation.ADD_OR_REMOVE_ONE
REPLACE_ONE = NeighboringRelation.REPLACE_ONE

#: dp-accounting's default RDP orders (1.25 .. 256).
DEFAULT_ORDERS = np.array(_rdp.DEFAULT_RDP_ORDERS, dtype=float)

#: A fine grid 1.1..10.9 (step 0.1) merged with the defaults, for bounds computed here
#: (FDP). Each order gives a valid bound alone, so more orders only tighten the minimum.
FINE_ORDERS = np.unique(np.round(np.concatenate([np.arange(1.1, 11.0, 0.1), DEFAULT_ORDERS]), 6))


class _SkipNonConvergedOrders(logging.Filter):
    """dp-accounting logs, then drops, fractional orders whose series does not converge.

    Dropping an order keeps the bound valid (the minimum runs over fewer orders), so the
    message is noise for our users; it is filtered while we call the accountant.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "failed to converge" not in record.getMessage()


@contextlib.contextmanager
def _quiet_accountant():
    filter_ = _SkipNonConvergedOrders()
    root = logging.getLogger("absl")  # dp-accounting logs through absl
    root.addFilter(filter_)
    try:
        yield
    finally:
        root.removeFilter(filter_)


def gaussian_event(noise_multiplier: float, count: int = 1) -> dp_event.DpEvent:
    """``count`` Gaussian mechanisms with std = ``noise_multiplier`` x sensitivity.

    Parameters
    ----------
    noise_multiplier : float
        The noise std over the sensitivity.
    count : int, default=1
        How many times the mechanism runs on the same data.

    Returns
    -------
    event : dp_accounting.DpEvent
        The (self-composed) Gaussian event.
    """
    event = dp_event.GaussianDpEvent(noise_multiplier)
    return event if count == 1 else dp_event.SelfComposedDpEvent(event, count)


def laplace_event(noise_multiplier: float) -> dp_event.DpEvent:
    """One Laplace mechanism with scale = ``noise_multiplier`` x L1 sensitivity.

    Parameters
    ----------
    noise_multiplier : float
        The Laplace scale over the L1 sensitivity.

    Returns
    -------
    event : dp_accounting.DpEvent
        The ``LaplaceDpEvent`` of dp-accounting.
    """
    return dp_event.LaplaceDpEvent(float(noise_multiplier))


def pure_epsilon(event: dp_event.DpEvent) -> float:
    """The pure-DP epsilon of a Laplace event, alone or self-composed: ``count / multiplier``.

    dp-accounting defines ``LaplaceDpEvent(noise_multiplier)`` as the Laplace mechanism of
    scale ``noise_multiplier`` x L1 sensitivity, which is ``(1 / noise_multiplier, 0)``-DP;
    ``count`` runs compose to ``count`` times that (basic composition is exact for the
    worst-case privacy loss). The bound holds at every delta; dp-accounting's PLD
    accountant gives at most this at any delta > 0 (checked in the tests).

    Parameters
    ----------
    event : dp_accounting.DpEvent
        A ``LaplaceDpEvent`` or a ``SelfComposedDpEvent`` of one.

    Returns
    -------
    epsilon : float
        The epsilon of the event, at every delta.

    Raises
    ------
    ValueError
        For any other event (it has no pure-DP epsilon here).

    Examples
    --------
    >>> pure_epsilon(laplace_event(0.5))
    2.0
    """
    count = 1
    if isinstance(event, dp_event.SelfComposedDpEvent):
        event, count = event.event, int(event.count)
    if not isinstance(event, dp_event.LaplaceDpEvent):
        raise ValueError(f"pure_epsilon: only Laplace events have a pure-DP epsilon here; "
                         f"got {event}.")
    return count / float(event.noise_multiplier)


def poisson_dpsgd_event(noise_multiplier: float, sample_rate: float,
                        steps: int) -> dp_event.DpEvent:
    """DP-SGD with Poisson sampling: the add/remove-one relation.

    Each step includes every example independently with probability ``sample_rate``,
    clips per-example gradients to C and adds N(0, (noise_multiplier * C)^2).

    Parameters
    ----------
    noise_multiplier : float
        The noise std over the clipping norm C.
    sample_rate : float
        The probability that a step includes an example.
    steps : int
        The number of steps.

    Returns
    -------
    event : dp_accounting.DpEvent
        ``steps`` Poisson-sampled Gaussian steps.
    """
    gaussian = dp_event.GaussianDpEvent(noise_multiplier)
    # Sampling everyone is no sampling: the same mechanism, and the accountant's series for
    # fractional orders converges slowly at q = 1.
    step = gaussian if sample_rate >= 1 else dp_event.PoissonSampledDpEvent(sample_rate, gaussian)
    return dp_event.SelfComposedDpEvent(step, steps)


def without_replacement_dpsgd_event(noise_multiplier: float, num_examples: int,
                                    batch_size: int, steps: int) -> dp_event.DpEvent:
    """DP-SGD with fixed-size batches drawn without replacement: the replace-one relation.

    Replacing one example changes the clipped-gradient sum by up to 2C, so the noise std is
    ``noise_multiplier * 2C`` and ``noise_multiplier`` is what dp-accounting's RDP accountant
    expects under ``REPLACE_ONE`` (Wang, Balle and Kasiviswanathan, AISTATS 2019; checked
    against an independent computation in the tests; dp-accounting's PLD accountant reads
    the same event differently).

    Parameters
    ----------
    noise_multiplier : float
        The noise std over the replace-one sensitivity 2C.
    num_examples : int
        The number of examples batches are drawn from.
    batch_size : int
        The fixed batch size.
    steps : int
        The number of steps.

    Returns
    -------
    event : dp_accounting.DpEvent
        ``steps`` Gaussian steps on batches sampled without replacement.
    """
    step = dp_event.SampledWithoutReplacementDpEvent(
        num_examples, batch_size, dp_event.GaussianDpEvent(noise_multiplier)
    )
    return dp_event.SelfComposedDpEvent(step, steps)


register_fragments(relation_and_orders="""
    relation : NeighboringRelation, default=ADD_OR_REMOVE
        The neighbouring relation the guarantee is stated for.
    orders : ndarray, default=DEFAULT_ORDERS
        The RDP orders.""")


@fill_doc
def compute_rdp(event: dp_event.DpEvent, *, relation: NeighboringRelation = ADD_OR_REMOVE,
                orders: np.ndarray = DEFAULT_ORDERS) -> np.ndarray:
    """RDP curve of ``event`` on ``orders`` from dp-accounting's RDP accountant.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The mechanism.
    {{relation_and_orders}}

    Returns
    -------
    rdp : ndarray of shape (len(orders),)
        The RDP epsilon at each order.

    Raises
    ------
    ValueError
        If the accountant does not support the event under ``relation``.
    """
    accountant = _rdp.RdpAccountant(list(orders), relation)
    if not accountant.supports(event):
        raise ValueError(
            f"dp-accounting's RDP accountant cannot evaluate {event} under {relation}.")
    with _quiet_accountant():
        accountant.compose(event)
    # dp-accounting keeps the composed curve in this attribute; read it, never write it.
    return np.array(accountant._rdp, dtype=float)


def epsilon_from_rdp(rdp: np.ndarray, delta: float, *,
                     orders: np.ndarray = DEFAULT_ORDERS) -> float:
    """Convert an RDP curve to epsilon at ``delta`` (Balle et al. 2020, Theorem 21).

    Parameters
    ----------
    rdp : array-like of shape (len(orders),)
        The RDP epsilon at each order.
    delta : float
        The target delta.
    orders : ndarray, default=DEFAULT_ORDERS
        The RDP orders of ``rdp``.

    Returns
    -------
    epsilon : float
        The smallest epsilon over the orders.
    """
    epsilon, _ = _rdp.compute_epsilon(list(orders), list(np.asarray(rdp, dtype=float)), delta)
    return float(epsilon)


@fill_doc
def compute_epsilon(event: dp_event.DpEvent, delta: float, *,
                    relation: NeighboringRelation = ADD_OR_REMOVE,
                    orders: np.ndarray = DEFAULT_ORDERS) -> float:
    """Epsilon of ``event`` at ``delta``: an upper bound from the RDP accountant.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The mechanism.
    delta : float
        The target delta.
    {{relation_and_orders}}

    Returns
    -------
    epsilon : float
        The epsilon of ``event`` at ``delta``.

    Examples
    --------
    DP-SGD with sigma=1.5, q=0.04 for 90 epochs (Opacus' published vector, 7.3):

    >>> from skdpgraph.privacy import compute_epsilon, poisson_dpsgd_event
    >>> round(compute_epsilon(poisson_dpsgd_event(1.5, 0.04, 90 * 25), 1e-5), 1)
    7.3
    """
    return epsilon_from_rdp(compute_rdp(event, relation=relation, orders=orders), delta,
                            orders=orders)


# --- composition and selection (used by skdpgraph.model_selection) --------------------------
def relation_of(event: dp_event.DpEvent) -> NeighboringRelation:
    """The neighbouring relation under which the RDP accountant reads ``event``.

    Poisson-sampled events are defined for add/remove, sampling without replacement for
    replace-one; pure Gaussian events read the same under both. So the first relation the
    accountant supports is the one the estimator's own accounting used.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The mechanism.

    Returns
    -------
    relation : NeighboringRelation
        ``ADD_OR_REMOVE`` or ``REPLACE_ONE``.

    Raises
    ------
    ValueError
        If the accountant supports ``event`` under neither relation (e.g. a composition
        that mixes Poisson and without-replacement sampling).

    Examples
    --------
    >>> from skdpgraph.privacy import ADD_OR_REMOVE, poisson_dpsgd_event, relation_of
    >>> relation_of(poisson_dpsgd_event(1.1, 0.01, 100)) == ADD_OR_REMOVE
    True
    """
    for relation in (ADD_OR_REMOVE, REPLACE_ONE):
        if _rdp.RdpAccountant(list(DEFAULT_ORDERS), relation).supports(event):
            return relation
    raise ValueError(f"dp-accounting's RDP accountant cannot evaluate {event} under either "
                     "neighbouring relation (add/remove one or replace one).")


def composed_event(events: list[dp_event.DpEvent]) -> dp_event.DpEvent:
    """The composition of ``events`` (releases on the same private data, in any order).

    Parameters
    ----------
    events : list of dp_accounting.DpEvent
        The releases; at least one.

    Returns
    -------
    event : dp_accounting.DpEvent
        Their composition.
    """
    events = list(events)
    if not events:
        raise ValueError("composed_event: at least one event is required; got none.")
    return dp_event.ComposedDpEvent(events)


def repeat_and_select_event(event: dp_event.DpEvent, mean: float,
                            shape: float) -> dp_event.DpEvent:
    """Run ``event`` a random number of times (mean ``mean``, ``shape``) and release the best.

    The Papernot--Steinke mechanism (ICLR 2022); only the RDP accountant evaluates it.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        One run.
    mean : float
        The mean number of runs.
    shape : float
        The shape of the truncated negative binomial distribution of the number of runs.

    Returns
    -------
    event : dp_accounting.DpEvent
        The repeated run with its best result released.
    """
    return dp_event.RepeatAndSelectDpEvent(event, float(mean), float(shape))


def repeat_and_select_rdp(rdp: np.ndarray, mean: float, shape: float, *,
                          orders: np.ndarray = DEFAULT_ORDERS) -> np.ndarray:
    """The Papernot--Steinke transform of a single-run RDP curve on ``orders``.

    For single runs whose curve is not one event's (e.g. the pointwise maximum of several
    candidates' curves); dp-accounting's own transform is applied to ``rdp``.

    Parameters
    ----------
    rdp : array-like of shape (len(orders),)
        The RDP curve of one run.
    mean : float
        The mean number of runs.
    shape : float
        The shape of the truncated negative binomial distribution of the number of runs.
    orders : ndarray, default=DEFAULT_ORDERS
        The RDP orders of ``rdp``.

    Returns
    -------
    rdp : ndarray of shape (len(orders),)
        The RDP curve of the repeated run with its best result released.
    """
    rdp = np.asarray(rdp, dtype=float)
    if rdp.shape != (len(orders),):
        raise ValueError(f"repeat_and_select_rdp: rdp has shape {rdp.shape}; expected one value "
                         f"per order ({len(orders)}).")
    return np.asarray(_rdp._compute_rdp_repeat_and_select(
        list(orders), list(rdp), float(mean), float(shape)), dtype=float)
