"""FDP's accounting: the multi-term RDP bound and the plan of one FDP fit.

The bound is the one of Daigavane et al. (2021) for one-layer GNNs trained with
DP-SGD on fixed-size batches drawn without replacement from a public number
``N`` of training stars. Its neighbouring relation is :data:`FDP_RELATION`: one
node is replaced by an isolated node, which changes at most ``K' = K + 1`` of
the ``N`` per-example terms (the node's own star and the at most ``K`` stars it
feeds), each by up to ``2C``. :class:`FDPPlan` composes that bound with, when
asked, the Gaussian release of FDP's private inference
(:mod:`skdpgraph.privacy._neighbour_sums`).
"""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp
from scipy.stats import hypergeom

from skdpgraph._docstrings import fill_doc
from skdpgraph.privacy._accountant import (FINE_ORDERS, compute_rdp, epsilon_from_rdp,
                                           gaussian_event)
from skdpgraph.privacy._calibration import calibrate_noise_multiplier
from skdpgraph.privacy._rdp_orders import OrderHint
from skdpgraph.privacy._dpsgd_plan import DPSGDPlan
from skdpgraph.privacy._report import NON_PRIVATE_NOTE

__all__ = ["FDP_RELATION", "FDPPlan", "compute_rdp_fdp", "fdp_relation", "plan_fdp"]

#: FDP's neighbouring relation, stated the same way by the bound, the plan, the
#: estimator's report and the user guide. Replace-one at the level of the ``N``
#: training examples: a non-training node may equally be added or removed (an
#: isolated non-training node changes nothing), a training node keeps its slot.
FDP_RELATION = ("replace one node by an isolated node (any features and label, no "
                "edges); the number of training nodes is public")


def fdp_relation(max_degree: int) -> str:
    """State :data:`FDP_RELATION` with what it changes for the degree bound ``max_degree``.

    Parameters
    ----------
    max_degree : int
        The degree bound K.

    Returns
    -------
    relation : str
        The neighbouring relation, in words, with the stars it changes and the sensitivity.
    """
    k = int(max_degree)
    return (f"{FDP_RELATION}; at most K+1 = {k + 1} of the training stars change, each "
            "by up to 2C (sensitivity 2(K+1)C)")


def compute_rdp_fdp(
    noise_multiplier: float,
    num_train: int,
    batch_size: int,
    max_degree: int,
    steps: int,
    orders: ArrayLike,
) -> np.ndarray:
    r"""RDP curve of ``steps`` FDP DP-SGD steps with node-level amplification.

    One step samples ``batch_size`` of the ``num_train`` training examples
    uniformly without replacement, clips every per-example gradient to norm
    ``C``, sums them and adds Gaussian noise of standard deviation
    ``noise_multiplier * 2 * K' * C`` with ``K' = max_degree + 1``. Replacing
    one node by an isolated node changes at most ``K'`` per-example terms, each
    by up to ``2C``; the number of them that land in the batch is
    :math:`\rho \sim \mathrm{Hypergeometric}(N, K', B)`.
    The per-step bound (for an order :math:`\alpha > 1`) is

    .. math::

        \varepsilon_{\text{step}}(\alpha) = \frac{1}{\alpha - 1}
        \log \sum_{i=0}^{\min(K', B)} P(\rho = i)\,
        \exp\!\left(\frac{(\alpha - 1)\,\alpha}{2\sigma^2}
        \left(\frac{i}{K'}\right)^2\right),

    and ``steps`` adaptive compositions give
    :math:`\varepsilon(\alpha) = T\,\varepsilon_{\text{step}}(\alpha)`.
    Symbols: :math:`N` = ``num_train``, :math:`B` = ``batch_size``,
    :math:`K` = ``max_degree``, :math:`\sigma` = ``noise_multiplier``,
    :math:`T` = ``steps``.

    Parameters
    ----------
    noise_multiplier : float
        :math:`\sigma = \text{noise std} / (2 K' C)`, the noise standard
        deviation divided by the node-level sensitivity ``2 K' C`` of the
        summed clipped gradient. Must be ``>= 0``; ``np.inf`` means no
        privacy loss.
    num_train : int
        Number of training examples :math:`N` the batches are drawn from.
    batch_size : int
        Fixed batch size :math:`B`, ``0 <= batch_size <= num_train``. The
        batch must be drawn uniformly *without replacement*.
    max_degree : int
        Degree bound :math:`K >= 0`: every node occurs in the examples of at
        most ``K`` other training nodes, so ``K' = max_degree + 1``.
    steps : int
        Number of DP-SGD steps :math:`T >= 0`.
    orders : array-like of float
        Rényi orders :math:`\alpha > 1` (finite) at which to evaluate.

    Returns
    -------
    rdp : ndarray of shape ``np.shape(orders)``
        :math:`\varepsilon(\alpha)` for each order; ``np.inf`` where the
        bound is infinite (``noise_multiplier == 0``) or overflows.

    Notes
    -----
    Neighbouring relation (replace-one, ``N`` public): replace one node by an
    isolated node (any features and label, no edges); the number of training
    nodes is public (:data:`FDP_RELATION`). Both graphs must satisfy the
    degree bound: every node feeds at most ``K`` training stars. skdpgraph
    enforces it with data-dependent samplers
    (:func:`~skdpgraph.sampling.bound_star_membership`: replacing a node
    changes which edges its in-neighbours keep), so the bound holds with the
    degree-bounded stars taken as the input, as in Daigavane et al. Edge
    cases are handled first: ``batch_size == 0``, ``steps == 0`` or
    ``noise_multiplier == inf`` give 0, otherwise ``noise_multiplier == 0``
    gives ``inf``.

    The sum is evaluated in log space (log-pmf plus exponent, then
    ``logsumexp``), so large orders and small ``noise_multiplier`` do not
    overflow. If ``K' > N`` only ``N`` training terms can be affected, so the
    hypergeometric population of affected terms is ``min(K', N)`` while the
    scale ``i / K'`` keeps ``K'`` (the noise is calibrated to ``2 K' C``).

    With ``max_degree = 0`` (``K' = 1``) :math:`\rho` is Bernoulli with
    :math:`q = B/N` and the bound reduces to
    :math:`\frac{1}{\alpha-1}\log(1 - q + q\,e^{(\alpha-1)\alpha/(2\sigma^2)})`,
    the bound for a sampled Gaussian mechanism without the
    sampled-without-replacement refinements. This bound is loose at small
    ``q`` (several times looser than the tight without-replacement bound at
    ``q = 0.01``) and tighter at ``q >= 0.5``; all are valid RDP bounds for
    the same mechanism, so a caller may take the per-order minimum.

    Convert the curve to :math:`(\varepsilon, \delta)`-DP with the
    conversion of Balle et al. (2020), e.g. dp-accounting's
    ``rdp_privacy_accountant.compute_epsilon``.

    References
    ----------
    .. [DMS21] Daigavane, A., Madan, G., Sinha, A., Thakurta, A. G.,
       Aggarwal, G. and Jain, P. (2021). "Node-Level Differentially Private
       Graph Neural Networks". arXiv:2111.15521, privacy amplification
       theorem for 1-layer GNNs (multi-term hypergeometric bound).
    .. [BBG20] Balle, B., Barthe, G., Gaboardi, M., Hsu, J. and Sato, T.
       (2020). "Hypothesis Testing Interpretations and Renyi Differential
       Privacy". AISTATS, Theorem 21 (RDP to DP conversion).

    Examples
    --------
    >>> import numpy as np
    >>> from dp_accounting.rdp.rdp_privacy_accountant import (
    ...     DEFAULT_RDP_ORDERS, compute_epsilon)
    >>> from skdpgraph.privacy._fdp_plan import compute_rdp_fdp
    >>> orders = np.union1d(DEFAULT_RDP_ORDERS, np.arange(1.1, 10.0, 0.1))
    >>> rdp = compute_rdp_fdp(noise_multiplier=4.0, num_train=140,
    ...                       batch_size=70, max_degree=2, steps=100,
    ...                       orders=orders)
    >>> round(float(compute_epsilon(orders, rdp, 1e-5)[0]), 3)
    7.456
    >>> rdp = compute_rdp_fdp(2.0, 10000, 1000, 5, 1000, orders)
    >>> round(float(compute_epsilon(orders, rdp, 1e-5)[0]), 2)
    14.36

    With ``max_degree=0`` it is the classic one-term bound:

    >>> q, a, s = 0.5, 2.0, 1.0
    >>> bool(np.isclose(compute_rdp_fdp(s, 140, 70, 0, 1, [a])[0],
    ...                 np.log(1 - q + q * np.exp((a - 1) * a / (2 * s**2))) / (a - 1)))
    True
    """
    sigma, n, b, k_prime, t, orders = _check_fdp_args(
        noise_multiplier, num_train, batch_size, max_degree, steps, orders
    )
    alphas = orders.ravel()
    if b == 0 or t == 0 or np.isinf(sigma):
        return np.zeros(orders.shape)
    if sigma == 0:
        return np.full(orders.shape, np.inf)
    rdp = t * _compute_log_moment_fdp(sigma, n, b, k_prime, alphas) / (alphas - 1)
    rdp = np.where(np.isfinite(rdp), rdp, np.inf)
    return rdp.reshape(orders.shape)


def _compute_log_moment_fdp(sigma, n, b, k_prime, alphas):
    """``log E[exp((alpha-1) alpha rho^2 / (2 sigma^2 K'^2))]`` per order."""
    population = min(k_prime, n)
    i = np.arange(0, min(population, b) + 1)
    log_pmf = hypergeom.logpmf(i, n, population, b)
    with np.errstate(over="ignore"):
        exponent = np.outer((alphas - 1) * alphas / 2, (i / (k_prime * sigma)) ** 2)
        terms = log_pmf[None, :] + exponent
    if np.isposinf(terms).any():
        # Overflow: the moment is infinite at orders whose terms reach inf.
        finite_rows = ~np.isposinf(terms).any(axis=1)
        out = np.full(alphas.shape, np.inf)
        out[finite_rows] = logsumexp(terms[finite_rows], axis=1)
        return out
    return logsumexp(terms, axis=1)


def _check_fdp_args(noise_multiplier, num_train, batch_size, max_degree, steps, orders):
    """Validate the public arguments of :func:`compute_rdp_fdp`."""
    ints = {
        "num_train": (num_train, 1),
        "batch_size": (batch_size, 0),
        "max_degree": (max_degree, 0),
        "steps": (steps, 0),
    }
    for name, (value, low) in ints.items():
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int. Got {value!r} instead.")
        if value < low:
            raise ValueError(f"{name} must be >= {low}. Got {value} instead.")
    if batch_size > num_train:
        raise ValueError(
            f"batch_size must be <= num_train. Got batch_size={batch_size}, "
            f"num_train={num_train}."
        )
    sigma = float(noise_multiplier)
    if not sigma >= 0:
        raise ValueError(f"noise_multiplier must be >= 0. Got {noise_multiplier!r} instead.")
    orders = np.asarray(orders, dtype=float)
    if orders.size == 0 or not np.all(np.isfinite(orders)) or np.any(orders <= 1):
        raise ValueError(
            f"orders must be a non-empty array of finite values > 1. Got {orders!r} instead."
        )
    return sigma, int(num_train), int(batch_size), int(max_degree) + 1, int(steps), orders


@dataclass(frozen=True)
class FDPPlan:
    """The privacy plan of one FDP fit: multi-term DP-SGD, plus one inference release.

    Implements :class:`~skdpgraph.privacy.PrivacyPlan`. Epsilon is the RDP sum of
    :func:`compute_rdp_fdp` for the training run and, with ``private_inference``, one
    Gaussian mechanism of multiplier ``noise_multiplier`` (the noisy neighbour sums of
    the training graph, released once in ``fit``), converted on ``FINE_ORDERS``.

    Parameters
    ----------
    training : DPSGDPlan
        The DP-SGD run (fixed-size batches without replacement, sensitivity 2(K+1)).
    max_degree : int
        The degree bound K.
    private_inference : bool, default=False
        Whether the plan pays for one release of noisy neighbour sums.
    degree_sampler : str, default="bernoulli"
        The sampler that enforces K (for the report).

    Examples
    --------
    >>> plan = plan_fdp(epsilon=4.0, delta=1e-4, num_train=200, batch_size=50, steps=40,
    ...                 max_degree=2, max_grad_norm=1.0)
    >>> plan.epsilon(1e-4) <= 4.0, plan.dp_event() is None
    (True, True)
    """

    training: DPSGDPlan
    max_degree: int
    private_inference: bool = False
    degree_sampler: str = "bernoulli"

    def __post_init__(self) -> None:
        if self.training.sampling != "without_replacement" or not math.isclose(
                self.training.sensitivity, 2.0 * (int(self.max_degree) + 1)):
            raise ValueError("FDPPlan: the training run must draw fixed-size batches without "
                             "replacement with sensitivity 2(K+1) (the multi-term bound's "
                             f"mechanism); got sampling={self.training.sampling!r}, "
                             f"sensitivity={self.training.sensitivity}.")

    @property
    def private(self) -> bool:
        return self.training.private

    @property
    def noise_multiplier(self) -> float | None:
        return self.training.noise_multiplier

    @property
    def relation(self) -> str:
        return fdp_relation(self.max_degree)

    def rdp(self, steps: int | None = None, *, inference: bool | None = None) -> np.ndarray:
        """RDP curve on ``FINE_ORDERS`` of ``steps`` steps (all by default) and, if
        ``inference`` (the plan's ``private_inference`` by default), the release."""
        plan = self.training
        steps = plan.steps if steps is None else int(steps)
        inference = self.private_inference if inference is None else inference
        rdp = compute_rdp_fdp(plan.noise_multiplier, plan.num_examples, plan.batch_size,
                              int(self.max_degree), steps, FINE_ORDERS)
        if inference:
            rdp = rdp + compute_rdp(gaussian_event(plan.noise_multiplier), orders=FINE_ORDERS)
        return rdp

    def epsilon(self, delta: float, steps: int | None = None, *,
                inference: bool | None = None) -> float:
        """Epsilon at ``delta`` (``inf`` when not private); see :meth:`rdp`."""
        if not self.private:
            return math.inf
        return epsilon_from_rdp(self.rdp(steps, inference=inference), delta, orders=FINE_ORDERS)

    def running_epsilon(self, delta: float, stage: str, steps: int, *,
                        hint: OrderHint | None = None, integer_orders: bool = False) -> float:
        """Epsilon after ``steps`` training steps, without the inference release (made after
        training); ``inf`` when not private. The bound is on ``FINE_ORDERS`` whatever
        ``hint`` and ``integer_orders`` say.

        Examples
        --------
        >>> plan = plan_fdp(epsilon=4.0, delta=1e-4, num_train=200, batch_size=50, steps=40,
        ...                 max_degree=2, max_grad_norm=1.0)
        >>> plan.running_epsilon(1e-4, "classifier", 40) == plan.epsilon(1e-4, 40,
        ...                                                              inference=False)
        True
        """
        if not self.private:
            return math.inf
        return self.epsilon(delta, steps, inference=False)

    def dp_event(self) -> None:
        """None: dp-accounting has no event for the multi-term bound."""
        return None

    @property
    def accountant(self) -> str:
        if not self.private:
            return "none"
        return ("FDP multi-term hypergeometric RDP (Daigavane et al. 2021)"
                + (" + Gaussian RDP" if self.private_inference else "")
                + ", Balle et al. 2020 conversion on FINE_ORDERS")

    @property
    def mechanism(self) -> str:
        if not self.private:
            return NON_PRIVATE_NOTE
        plan = self.training
        return (f"DP-SGD on degree-bounded stars ({self.degree_sampler}, K={self.max_degree}): "
                f"fixed-size batches of {plan.batch_size} of {plan.num_examples} without "
                f"replacement, {plan.steps} steps, clip C={plan.max_grad_norm:g}, noise std "
                f"{plan.noise_multiplier:.4g} x {plan.sensitivity:g}C")

    @property
    def events(self) -> tuple[str, ...]:
        if not self.private:
            return ()
        plan = self.training
        events = (f"FDP multi-term DP-SGD: N={plan.num_examples}, B={plan.batch_size}, "
                  f"K'={self.max_degree + 1}, sigma={plan.noise_multiplier:.4g}, T={plan.steps}",)
        if self.private_inference:
            events += (f"Gaussian (the inference release on the training graph, made in fit): "
                       f"noise multiplier {plan.noise_multiplier:.4g}",)
        return events


@fill_doc
def plan_fdp(*, epsilon: float, delta: float, num_train: int, batch_size: int, steps: int,
             max_degree: int, max_grad_norm: float, noise_multiplier: float | None = None,
             private_inference: bool = False, degree_sampler: str = "bernoulli",
             context: str = "FDP") -> FDPPlan:
    """Plan an FDP fit from public quantities, calibrating the noise when not given.

    ``epsilon=inf`` without ``noise_multiplier`` gives a non-private plan. A given
    ``noise_multiplier`` is used as is; :func:`~skdpgraph.privacy.check_plan` then
    refuses it, before training, if its epsilon exceeds the budget.

    Parameters
    ----------
    {{plan_budget}}
    num_train : int
        N, the number of training nodes (one star each).
    batch_size : int
        Fixed batch size, drawn without replacement (capped at ``num_train``).
    steps : int
        Number of noisy steps.
    max_degree : int
        The degree bound K.
    {{dpsgd_given_noise}}
    private_inference : bool, default=False
        Whether the plan pays for one release of noisy neighbour sums.
    degree_sampler : str, default="bernoulli"
        The sampler that enforces K (for the report).
    context : str, default="FDP"
        Names the caller in error messages.

    Returns
    -------
    plan : FDPPlan
        The planned fit.

    Raises
    ------
    PrivacyBudgetError
        If calibration cannot meet ``epsilon``.
    """
    batch_size = min(int(batch_size), int(num_train))
    common = dict(sampling="without_replacement", num_examples=int(num_train),
                  batch_size=batch_size, steps=int(steps),
                  sensitivity=2.0 * (int(max_degree) + 1))
    extra = dict(max_degree=int(max_degree), private_inference=bool(private_inference),
                 degree_sampler=degree_sampler)
    if math.isinf(epsilon) and noise_multiplier is None:
        return FDPPlan(DPSGDPlan(noise_multiplier=None, max_grad_norm=None, **common), **extra)
    if noise_multiplier is None:
        noise_multiplier = _calibrated(int(num_train), batch_size, int(steps), int(max_degree),
                                       bool(private_inference), float(delta), float(epsilon),
                                       context)
    return FDPPlan(DPSGDPlan(noise_multiplier=float(noise_multiplier),
                             max_grad_norm=max_grad_norm, **common), **extra)


@functools.lru_cache(maxsize=128)
def _calibrated(num_train: int, batch_size: int, steps: int, max_degree: int,
                inference: bool, delta: float, epsilon: float, context: str) -> float:
    """Cached: searches and cross-validation calibrate the same plan many times."""

    def epsilon_for(sigma: float) -> float:
        training = DPSGDPlan("without_replacement", num_train, batch_size, steps, sigma, 1.0,
                             sensitivity=2.0 * (max_degree + 1))
        return FDPPlan(training, max_degree, inference).epsilon(delta)

    return calibrate_noise_multiplier(epsilon_for, epsilon, context=context)
