"""DP-SGD plans: the privacy-relevant settings of a training run, fixed before it starts."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from skdpgraph._docstrings import fill_doc, register_fragments
from skdpgraph.privacy._accountant import (
    ADD_OR_REMOVE,
    REPLACE_ONE,
    poisson_dpsgd_event,
    without_replacement_dpsgd_event,
)
from skdpgraph.privacy._calibration import PrivacyBudgetError, calibrate_noise_multiplier
from skdpgraph.privacy._rdp_orders import LazyRdpCurve, OrderHint, search_epsilon
from skdpgraph.privacy._report import NON_PRIVATE_NOTE

__all__ = ["DPSGDPlan", "plan_dpsgd", "steps_for_epochs"]

_SAMPLING = ("poisson", "without_replacement")


register_fragments(dpsgd_run="""
    sampling : {"poisson", "without_replacement"}
        Poisson sampling with rate ``batch_size / num_examples``, or fixed-size batches
        drawn uniformly without replacement.
    num_examples : int
        Number of examples (nodes, subgraphs...).
    batch_size : int
        Expected (Poisson) or exact batch size.
    steps : int
        Number of noisy steps.""", dpsgd_noise="""
    noise_multiplier : float or None
        The accountant's noise multiplier; None for a non-private run (no clipping, no
        noise).
    max_grad_norm : float or None
        Clipping threshold C; None for a non-private run.
    sensitivity : float, default=1.0
        How many multiples of C one privacy unit can move the gradient sum by, in the
        accountant's convention: 1 for Poisson add/remove, 2 for replace-one, 2(K+1) for
        FDP's degree-bounded stars.""", dpsgd_given_noise="""
    max_grad_norm : float
        Clipping threshold C.
    noise_multiplier : float, default=None
        The noise multiplier to use; None: calibrated to ``(epsilon, delta)``.""")


@fill_doc
@dataclass(frozen=True)
class DPSGDPlan:
    """How one DP-SGD run samples, clips and perturbs.

    Each step draws a batch with ``sampling``, clips every per-example gradient to
    ``max_grad_norm`` (C) on its global norm, sums, adds Gaussian noise of std
    ``noise_multiplier * sensitivity * C`` and divides by ``batch_size``.

    Parameters
    ----------
    {{dpsgd_run}}
    {{dpsgd_noise}}
    """

    sampling: str
    num_examples: int
    batch_size: int
    steps: int
    noise_multiplier: float | None
    max_grad_norm: float | None
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        if self.sampling not in _SAMPLING:
            raise ValueError(
                f"DPSGDPlan: sampling must be one of {_SAMPLING}; got {self.sampling!r}.")
        if self.noise_multiplier is not None and not (self.noise_multiplier > 0
                                                      and self.max_grad_norm
                                                      and self.max_grad_norm > 0):
            raise ValueError(
                "DPSGDPlan: a private plan needs noise_multiplier > 0 and max_grad_norm > 0; "
                f"got noise_multiplier={self.noise_multiplier}, max_grad_norm={self.max_grad_norm}."
            )

    @property
    def private(self) -> bool:
        return self.noise_multiplier is not None

    @property
    def sample_rate(self) -> float:
        return min(1.0, self.batch_size / self.num_examples)

    @property
    def noise_std(self) -> float:
        """Std of the noise added to the clipped-gradient sum (0 when not private)."""
        if not self.private:
            return 0.0
        return self.noise_multiplier * self.sensitivity * self.max_grad_norm

    def dp_event(self, steps: int | None = None):
        """The dp-accounting event of ``steps`` steps (all planned steps by default).

        None for a non-private plan.
        """
        if not self.private:
            return None
        steps = self.steps if steps is None else steps
        if self.sampling == "poisson":
            return poisson_dpsgd_event(self.noise_multiplier, self.sample_rate, steps)
        return without_replacement_dpsgd_event(self.noise_multiplier, self.num_examples,
                                               self.batch_size, steps)

    @property
    def relation(self):
        return ADD_OR_REMOVE if self.sampling == "poisson" else REPLACE_ONE

    @property
    def accountant(self) -> str:
        if not self.private:
            return "none"
        if self.sampling == "poisson":
            return ("dp-accounting RDP (Poisson subsampled Gaussian, add/remove-one), "
                    "Balle et al. 2020 conversion")
        return ("dp-accounting RDP (sampling without replacement, replace-one, Wang et al. "
                "2019), Balle et al. 2020 conversion")

    @property
    def mechanism(self) -> str:
        if not self.private:
            return NON_PRIVATE_NOTE
        sampling = (f"Poisson sampling q={self.sample_rate:.4g}" if self.sampling == "poisson"
                    else f"fixed-size batches of {self.batch_size} of {self.num_examples} without "
                         "replacement")
        return (f"DP-SGD: {sampling}, {self.steps} steps, clip C={self.max_grad_norm:g}, noise "
                f"std {self.noise_multiplier:.4g} x {self.sensitivity:g}C")

    @property
    def events(self) -> tuple[str, ...]:
        return (str(self.dp_event()),) if self.private else ()

    @functools.cached_property
    def _step_curve(self) -> LazyRdpCurve:
        return _one_step_curve(self.sampling, self.num_examples, self.batch_size,
                               self.noise_multiplier)

    def step_rdp_at(self, indices) -> np.ndarray:
        """One step's RDP at ``DEFAULT_ORDERS[indices]``, computed when first asked.

        Raises
        ------
        PrivacyBudgetError
            If the accountant cannot evaluate this plan (e.g. an absurd multiplier).
        """
        try:
            return self._step_curve.at(indices)
        except (ArithmeticError, ValueError) as exc:  # e.g. overflow at absurd multipliers
            raise PrivacyBudgetError(
                f"DP-SGD plan: the accountant cannot evaluate noise_multiplier="
                f"{self.noise_multiplier:g} with sample rate {self.sample_rate:.4g} ({exc}); "
                "use a noise_multiplier the accountant supports (e.g. <= 1e6).") from exc

    def epsilon(self, delta: float, steps: int | None = None, *,
                integer_orders: bool = False, hint: OrderHint | None = None) -> float:
        """Epsilon after ``steps`` steps (all planned steps by default).

        The RDP of ``T`` identical steps is ``T`` times that of one step, so one step's
        curve is computed (order by order, as :func:`search_epsilon` asks) and scaled.
        ``integer_orders=True`` gives a cheaper, slightly looser bound (calibration's first
        guess); a ``hint`` starts the search at the last one's best order (the running
        epsilon after each epoch).
        """
        steps = self.steps if steps is None else steps
        if not self.private:
            return math.inf
        if steps == 0:
            return 0.0
        return search_epsilon(lambda indices: steps * self.step_rdp_at(indices), delta,
                              integer_orders=integer_orders, hint=hint)

    def running_epsilon(self, delta: float, stage: str, steps: int, *,
                        hint: OrderHint | None = None, integer_orders: bool = False) -> float:
        """Epsilon spent after ``steps`` steps of the run (one stage: ``stage`` is unused).

        :meth:`epsilon` after ``steps`` steps; ``inf`` when not private.

        Examples
        --------
        >>> plan = DPSGDPlan("poisson", 100, 10, 50, noise_multiplier=1.0, max_grad_norm=1.0)
        >>> plan.running_epsilon(1e-5, "classifier", 20) == plan.epsilon(1e-5, 20)
        True
        """
        return self.epsilon(delta, steps, hint=hint, integer_orders=integer_orders)


@functools.lru_cache(maxsize=1024)
def _one_step_curve(sampling: str, num_examples: int, batch_size: int,
                    noise_multiplier: float) -> LazyRdpCurve:
    """One step's RDP curve, shared by every plan with these settings.

    Calibration evaluates the multiplier it returns; the plan's check before training and
    its running epsilon then ask again about the same orders, which cost milliseconds each.
    """
    plan = DPSGDPlan(sampling, num_examples, batch_size, 1, noise_multiplier, 1.0)
    return LazyRdpCurve(plan.dp_event(1), relation=plan.relation)


def steps_for_epochs(epochs: int, num_examples: int, batch_size: int) -> int:
    """Count the steps in ``epochs`` passes: ``epochs * ceil(num_examples / batch_size)``.

    Parameters
    ----------
    epochs : int
        Number of passes over the examples.
    num_examples : int
        Number of examples.
    batch_size : int
        Batch size (capped at ``num_examples``).

    Returns
    -------
    steps : int
        The number of steps.
    """
    return int(epochs * math.ceil(num_examples / min(batch_size, num_examples)))


@fill_doc
def plan_dpsgd(*, epsilon: float, delta: float, sampling: str, num_examples: int,
               batch_size: int, steps: int, max_grad_norm: float,
               noise_multiplier: float | None = None,
               context: str = "DP-SGD") -> DPSGDPlan:
    """Plan a standard DP-SGD run, calibrating the noise to (epsilon, delta) if needed.

    ``sampling="poisson"`` is accounted under add/remove-one (sensitivity C);
    ``"without_replacement"`` under replace-one (sensitivity 2C). ``epsilon=inf`` gives a
    non-private plan. With ``noise_multiplier`` given, the plan uses it and the caller
    checks the resulting epsilon. ``batch_size`` is capped at ``num_examples``.

    Parameters
    ----------
    {{plan_budget}}
    {{dpsgd_run}}
    {{dpsgd_given_noise}}
    context : str, default="DP-SGD"
        Names the caller in error messages.

    Returns
    -------
    plan : DPSGDPlan
        The planned run (non-private for ``epsilon=inf`` without ``noise_multiplier``).

    Raises
    ------
    PrivacyBudgetError
        If the budget cannot be met (see :func:`calibrate_noise_multiplier`).
    """
    batch_size = min(int(batch_size), int(num_examples))
    common = dict(sampling=sampling, num_examples=int(num_examples), batch_size=batch_size,
                  steps=int(steps), sensitivity=1.0 if sampling == "poisson" else 2.0)
    if math.isinf(epsilon) and noise_multiplier is None:
        return DPSGDPlan(noise_multiplier=None, max_grad_norm=None, **common)
    if noise_multiplier is None:
        noise_multiplier = _calibrated_noise_multiplier(
            sampling, common["num_examples"], batch_size, common["steps"], float(delta),
            float(epsilon), context)
    return DPSGDPlan(noise_multiplier=noise_multiplier, max_grad_norm=max_grad_norm, **common)


@functools.lru_cache(maxsize=256)
def _calibrated_noise_multiplier(sampling: str, num_examples: int, batch_size: int, steps: int,
                                 delta: float, epsilon: float, context: str) -> float:
    """Cached: cross-validation and searches calibrate the same plan many times.

    Epsilon does not depend on the clipping norm, so it is not part of the key.
    """
    sensitivity = 1.0 if sampling == "poisson" else 2.0
    # Calibration's curves are nearby: each order search starts at the last one's best.
    hints = {False: OrderHint(), True: OrderHint()}

    def epsilon_for(sigma: float, integer_orders: bool = False) -> float:
        return DPSGDPlan(sampling, num_examples, batch_size, steps, noise_multiplier=sigma,
                         max_grad_norm=1.0, sensitivity=sensitivity).epsilon(
                             delta, integer_orders=integer_orders, hint=hints[integer_orders])

    return calibrate_noise_multiplier(
        epsilon_for, epsilon, context=context,
        upper_bound_for=functools.partial(epsilon_for, integer_orders=True))
