"""Training-level privacy audits: one training run with canaries (Steinke, Nasr, Jagielski 2023).

Each audit fits the REAL estimator once on a graph holding ``m`` canary nodes, each put in
the training data independently with probability 1/2, then guesses from the fitted model
alone which canaries were in: "included" for the ``k`` highest scores, "excluded" for the
``k`` lowest, abstaining on the rest (``k`` from four values fixed in advance, Bonferroni).
The number of right guesses gives an epsilon lower bound valid with probability 1 - alpha
(:func:`~tests.audits._lower_bounds.one_run_audit`: the paper's binomial bound with its
delta term). The bound must stay below the ``epsilon_spent_`` the estimator reports. The
same audit, same canaries, on a deliberately broken variant must push it above that
epsilon, which shows the audit has power: the DP-SGD noise multiplier divided by 10 or 100
where ``skdpgraph.training.Stepper`` hands it to Opacus, or clipping off, while the plan,
and so the reported epsilon, is unchanged.

Canaries. Canary ``i`` is an isolated node whose features are zero except ``CANARY_SCALE``
in a feature column of its own, with a uniformly random label: nothing else in the data
moves that column, so the model can only learn the canary's label from the canary itself.
Its score is read from ``predict_proba`` on a separate graph of the canaries' features
(the auditor's own inputs; black-box, see :func:`canary_scores`). How a canary is left out follows
the neighbouring relation the estimator states in ``privacy_.neighbouring_relation``
(checked after every fit):

- add/remove (DPMLP: "add or remove one training node"; GAP node level: "add or remove
  one node with all its edges, node set public: a removed node is isolated"): an excluded
  canary is not a training node and its slot in the graph is an isolated node with zero
  features. The number of training nodes then varies with the draw. Both estimators treat
  it as public and plan (sampling rate, steps, noise) at the realised size, so a coin flip
  is one add/remove step plus an O(1/n) change of those public settings, the convention
  their accounting states; the bound is compared with that run's ``epsilon_spent_``.
- replace-one (DRW: "replace one node's features and label, the set of training nodes
  fixed"; FDP: "replace one node by an isolated node, the number of training nodes
  public"): every slot stays a training node and an excluded canary is replaced by a
  fixed node drawn in advance, its counter-canary (same features, another label,
  isolated), so ``n`` is the same in every draw and a coin flip is exactly one
  replace-one step. The score is then the log-ratio of the two labels.

Canaries are isolated, so GAP's aggregation (PMA) never sees them and its noise is left
as planned in the broken variant; FDP's accounting charges the K + 1 stars a node can
touch, and an isolated canary touches one, so its honest bound is far from tight.

Sizes: the default test command runs ``m = 400`` canaries per estimator (about 2 s each),
noise divided by 10 for DPMLP and GAP, by 100 for DRW and FDP; ``-m audit`` runs
``m = 1000`` (DRW: 2000, where noise / 10 is then caught too) and adds DPMLP with clipping
off. For FDP a noise multiplier divided by 10 is not caught by this black-box audit at
these sizes (lower bounds 0.2-0.8 against 0.995), hence 100 in both sizes. The table:
``python -m tests.audits.test_canaries [--fast]`` from the repository root, or the summary
at the end of a pytest run (without ``-n``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from typing import Callable
from unittest import mock

import numpy as np
import pytest
import torch
from scipy.special import logit
from scipy.stats import binom

from skdpgraph import DPMLPClassifier, DRWClassifier, FDPClassifier, GAPClassifier, Graph
from skdpgraph import training
from skdpgraph._random import RandomStreams
from skdpgraph.datasets import make_csbm
from tests.audits._lower_bounds import (
    OneRunResult,
    clopper_pearson_lower,
    one_run_audit,
    one_run_epsilon_lower_bound,
    one_run_p_value,
)
from tests.audits.report import AuditRow

DELTA = 1e-5  # explicit, so that the bound's delta term 2 m delta stays small
ALPHA = 0.05
EPSILON = 1.0  # small: a broken variant then overspends by more than a one-run audit can miss
CLASSES = 4
BASE_NODES, BASE_FEATURES = 200, 16  # an ordinary CSBM graph the canaries are added to
CANARY_SCALE = 5.0

#: One test per audit and size; the full size carries the ``audit`` marker.
SIZES = [pytest.param(False, id="fast"), pytest.param(True, id="full", marks=pytest.mark.audit)]


# ---------------------------------------------------------------------------- the bound itself
def _randomised_response_correct(epsilon: float, guesses: int) -> tuple[np.ndarray, np.ndarray]:
    """All outcomes ``v`` of ``guesses`` guesses on randomised response and their probabilities.

    Each canary's bit is reported truthfully with probability ``e^eps / (1 + e^eps)``, an
    eps-DP mechanism in each bit, and the guesser repeats the report: exactly the
    distribution the theorem compares with, the hardest case for the bound.
    """
    outcomes = np.arange(guesses + 1)
    return outcomes, binom.pmf(outcomes, guesses, 1 / (1 + math.exp(-epsilon)))


@pytest.mark.parametrize("epsilon", [0.0, 1.0, 3.0])
@pytest.mark.parametrize("delta", [0.0, 1e-3])
def test_one_run_bound_exceeds_the_true_epsilon_at_most_alpha_of_the_time(epsilon, delta):
    """Exact coverage on randomised response with known epsilon, summed over every outcome."""
    guesses, canaries = 150, 400
    outcomes, probability = _randomised_response_correct(epsilon, guesses)
    bounds = np.array([one_run_epsilon_lower_bound(int(v), guesses, canaries, delta=delta,
                                                   alpha=ALPHA) if p > 1e-15 else 0.0
                       for v, p in zip(outcomes, probability)])
    miss = probability[bounds > epsilon].sum()
    assert miss <= ALPHA
    if delta == 0:  # not vacuous: randomised response attains the bound up to discreteness
        assert miss > ALPHA / 3
    # The naive point estimate (logit of the accuracy) overshoots about half the time.
    with np.errstate(divide="ignore"):
        naive = logit(np.clip(outcomes / guesses, 0, 1))
    assert probability[naive > epsilon].sum() > 0.3


def test_one_run_bound_with_delta_zero_is_the_clopper_pearson_logit():
    """delta = 0: P[Binomial(r, q) >= v] < alpha exactly below Clopper--Pearson's bound."""
    for correct, guesses in [(75, 100), (20, 20), (51, 100), (300, 400), (1, 1)]:
        expected = max(0.0, float(logit(clopper_pearson_lower(correct, guesses, ALPHA))))
        assert one_run_epsilon_lower_bound(correct, guesses, 1000, delta=0.0) == pytest.approx(
            expected, abs=1e-7)


def test_one_run_bound_matches_the_paper_worked_example():
    """m = 1000, r = 100, v = 75, delta = 1e-4, 95%: 0.673, as quoted from the paper's
    Appendix D (arXiv:2305.08846)."""
    assert one_run_epsilon_lower_bound(75, 100, 1000, delta=1e-4, alpha=0.05) == pytest.approx(
        0.673, abs=5e-4)


def test_one_run_p_value_against_a_direct_sum():
    """The delta term, computed here by brute force over i from binomial CDF differences."""
    correct, guesses, canaries, epsilon, delta = 30, 40, 500, 0.7, 1e-3
    q = math.exp(epsilon) / (1 + math.exp(epsilon))
    f = lambda u: binom.sf(u - 1, guesses, q)  # noqa: E731  P[Binomial >= u]
    direct = f(correct) + 2 * canaries * delta * max(
        (f(correct - i) - f(correct)) / i for i in range(1, correct + 1))
    assert one_run_p_value(correct, guesses, canaries, epsilon, delta) == pytest.approx(direct)


def test_one_run_p_value_is_monotone():
    """Nondecreasing in epsilon, nonincreasing in the right guesses (as the bound needs)."""
    guesses, canaries, delta = 40, 1000, 4e-4  # 2 m delta = 0.8 <= 1
    grid = np.linspace(0, 6, 61)
    values = np.array([[one_run_p_value(v, guesses, canaries, e, delta) for e in grid]
                       for v in range(guesses + 1)])
    assert np.all(np.diff(values, axis=1) >= -1e-12)
    assert np.all(np.diff(values, axis=0) <= 1e-12)


def test_one_run_bound_grows_with_perfect_guesses():
    """All r guesses right: the bound is logit(alpha^(1/r)) (delta = 0) and grows with r."""
    previous = 0.0
    for guesses in (5, 10, 20, 50, 100, 200, 400):
        exact = math.log(ALPHA ** (1 / guesses) / (1 - ALPHA ** (1 / guesses)))
        pure = one_run_epsilon_lower_bound(guesses, guesses, 1000, delta=0.0)
        bound = one_run_epsilon_lower_bound(guesses, guesses, 1000, delta=DELTA)
        assert pure == pytest.approx(exact, abs=1e-7)
        assert previous < bound <= pure  # the delta term only lowers it
        previous = bound
    assert previous > 4.5


def test_one_run_bound_refuses_bad_inputs():
    with pytest.raises(ValueError, match="correct <= guesses"):
        one_run_epsilon_lower_bound(11, 10, 100, delta=0.0)
    with pytest.raises(ValueError, match="guesses <= canaries"):
        one_run_epsilon_lower_bound(5, 200, 100, delta=0.0)
    with pytest.raises(ValueError, match="2 \\* canaries \\* delta <= 1"):
        one_run_epsilon_lower_bound(5, 10, 100_000, delta=1e-5)
    with pytest.raises(ValueError, match="alpha"):
        one_run_epsilon_lower_bound(5, 10, 100, delta=0.0, alpha=1.5)
    with pytest.raises(TypeError, match="correct must be an integer"):
        one_run_epsilon_lower_bound(5.0, 10, 100, delta=0.0)
    with pytest.raises(ValueError, match="guesses_per_side"):
        one_run_audit(np.zeros(10), np.zeros(10, bool), guesses_per_side=[6], delta=0.0)
    with pytest.raises(ValueError, match="finite"):
        one_run_audit(np.full(10, np.nan), np.zeros(10, bool), guesses_per_side=[2], delta=0.0)


def test_one_run_audit_counts_top_and_bottom_guesses():
    """Guesses: top k "in", bottom k "out"; each k is tested at alpha / len(ks)."""
    included = np.array([True, False, True, True, False, False, True, False])
    scores = np.array([9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0])
    # k = 2: top {0 in, 1 out} -> 1 right; bottom {7 out, 6 in} -> 1 right.
    result = one_run_audit(scores, included, guesses_per_side=[2], delta=0.0)
    assert (result.guesses, result.correct) == (4, 2)
    rng = RandomStreams(0).numpy("split")
    included = rng.random(1000) < 0.5
    scores = included + rng.normal(0, 0.3, 1000)
    result = one_run_audit(scores, included, guesses_per_side=[25, 100, 250], delta=DELTA)
    assert result.epsilon == pytest.approx(one_run_epsilon_lower_bound(
        result.correct, result.guesses, 1000, delta=DELTA, alpha=ALPHA / 3))
    assert result.epsilon > 3.0


def test_one_run_audit_of_uninformative_scores_rarely_claims_leakage():
    """Scores independent of the draw: a positive bound at most about alpha of the time."""
    rng = RandomStreams(1).numpy("split")
    positive = sum(
        one_run_audit(rng.normal(size=200), rng.random(200) < 0.5,
                      guesses_per_side=[5, 10, 20, 50], delta=DELTA).epsilon > 0
        for _ in range(300))
    assert positive <= 30  # expected <= 15 (alpha = 0.05 of 300)


# ---------------------------------------------------------------------------- canaries
ADD_REMOVE, REPLACE = "add/remove", "replace-one"


@dataclass(frozen=True)
class CanaryDraw:
    """One training set with canaries, and what the auditor knows.

    ``graph``, ``train`` and ``y`` are what the estimator is fitted on; ``queries`` is a
    graph of the canaries' own features (isolated), ``labels`` their labels,
    ``counter_labels`` the labels of their replacements under replace-one, and
    ``included`` the coin flips (hidden from the guesser, used only to count right guesses).
    """

    relation: str
    graph: Graph
    train: np.ndarray
    y: np.ndarray
    queries: Graph
    labels: np.ndarray
    counter_labels: np.ndarray
    included: np.ndarray


def draw_canaries(relation: str, canaries: int, seed: int,
                  scale: float = CANARY_SCALE) -> CanaryDraw:
    """A CSBM graph of ``BASE_NODES`` nodes plus ``canaries`` isolated slots, one per canary.

    Slot ``i`` holds canary ``i`` (features ``scale * e_{F+i}``, a uniform random label)
    when its coin says "in". When it says "out": under add/remove the slot is an isolated
    node with zero features, not a training node; under replace-one it holds the canary's
    fixed replacement, its *counter-canary*: the same features with another label, drawn
    in advance. (A neutral node with zero features would do as well, but the
    counter-canary pushes the canary's own column the other way, so a coin flip moves the
    clipped gradient sum by up to 2C, the sensitivity replace-one is accounted with.)
    """
    base = make_csbm(n_nodes=BASE_NODES, n_classes=CLASSES, n_features=BASE_FEATURES,
                     random_state=seed)
    rng = RandomStreams(seed).numpy("split")
    labels = rng.integers(0, CLASSES, canaries)
    counter_labels = (labels + rng.integers(1, CLASSES, canaries)) % CLASSES
    included = rng.random(canaries) < 0.5
    width = BASE_FEATURES + canaries
    canary_x = np.zeros((canaries, width), np.float32)
    canary_x[np.arange(canaries), BASE_FEATURES + np.arange(canaries)] = scale
    base_x = np.hstack([np.asarray(base.graph.x), np.zeros((BASE_NODES, canaries), np.float32)])
    slots = BASE_NODES + np.arange(canaries)
    if relation == ADD_REMOVE:
        slots_x = np.where(included[:, None], canary_x, 0.0)
        train = np.concatenate([np.arange(BASE_NODES), slots[included]])
        y = np.concatenate([base.y, labels[included]])
    elif relation == REPLACE:
        slots_x = canary_x
        train = np.concatenate([np.arange(BASE_NODES), slots])
        y = np.concatenate([base.y, np.where(included, labels, counter_labels)])
    else:
        raise ValueError(f"relation must be {ADD_REMOVE!r} or {REPLACE!r}; got {relation!r}.")
    graph = Graph(base.graph.edge_index, np.vstack([base_x, slots_x]))
    queries = Graph(np.zeros((2, 0), np.int64), canary_x)
    return CanaryDraw(relation, graph, train, y, queries, labels, counter_labels, included)


def canary_scores(estimator, draw: CanaryDraw) -> np.ndarray:
    """How much the model prefers each canary's label at the canary's own features.

    Add/remove: the log-odds of the label. Replace-one: the log-ratio of the label to the
    counter-canary's label (the two hypotheses the coin decides between).
    """
    probability = np.clip(estimator.predict_proba(draw.queries.nodes()), 1e-12, 1 - 1e-12)
    rows = np.arange(len(draw.labels))
    p = probability[rows, np.searchsorted(estimator.classes_, draw.labels)]
    if draw.relation == REPLACE:
        return np.log(p) - np.log(
            probability[rows, np.searchsorted(estimator.classes_, draw.counter_labels)])
    return np.log(p) - np.log1p(-p)


# ---------------------------------------------------------------------------- broken variants
@contextlib.contextmanager
def noise_divided_by(divisor: float):
    """Every DP-SGD run adds ``1 / divisor`` of the planned noise; the plan (and so the
    reported epsilon) is untouched: the noise multiplier is cut where ``Stepper`` hands it
    to Opacus' optimizer."""
    original = training.Stepper.__init__
    calls = []

    def weakened(self, module, plan, optimizer, noise_generator):
        if plan.private:
            calls.append(plan.noise_multiplier)
            plan = dataclasses.replace(plan, noise_multiplier=plan.noise_multiplier / divisor)
        original(self, module, plan, optimizer, noise_generator)

    with mock.patch.object(training.Stepper, "__init__", weakened):
        yield
    assert calls, "the broken variant never reached a private DP-SGD step"


@contextlib.contextmanager
def clipping_off():
    """Per-example gradients are not clipped; the noise stays ``sigma * C`` as planned."""
    original = training.Stepper.__init__
    calls = []

    def unclipped(self, module, plan, optimizer, noise_generator):
        original(self, module, plan, optimizer, noise_generator)
        if plan.private:
            calls.append(plan.max_grad_norm)
            self.model.max_grad_norm = math.inf  # Opacus' clip factor min(1, C / norm) -> 1

    with mock.patch.object(training.Stepper, "__init__", unclipped):
        yield
    assert calls, "the broken variant never reached a private DP-SGD step"


# ---------------------------------------------------------------------------- the audits
@dataclass(frozen=True)
class CanaryRow(AuditRow):
    """An :class:`AuditRow` whose trials are canaries, with the guesses behind each bound."""

    guesses: int = 0
    correct: int = 0
    broken_guesses: int = 0
    broken_correct: int = 0


@dataclass(frozen=True)
class CanaryAudit:
    """How to audit one estimator: its configuration, relation and broken variant per size."""

    name: str
    make: Callable[[], object]
    relation: str
    seed: int
    fast_canaries: int = 400
    fast_divisor: float = 10.0
    full_canaries: int = 1000
    full_divisor: float = 10.0

    def guesses_per_side(self, canaries: int) -> tuple[int, ...]:
        return tuple(canaries // d for d in (40, 20, 10, 5))


def _fit(audit: CanaryAudit, draw: CanaryDraw, variant=contextlib.nullcontext):
    estimator = audit.make()
    with variant():
        estimator.fit(draw.graph.nodes(draw.train), draw.y)
    return estimator


def _check_relation(audit: CanaryAudit, estimator) -> None:
    """The draw's way of leaving a canary out must be a step of the stated relation."""
    relation = estimator.privacy_.neighbouring_relation
    expected = "add or remove" if audit.relation == ADD_REMOVE else "replace one node"
    assert relation.startswith(expected), (
        f"{audit.name} now states the relation {relation!r}; the canary draw assumes "
        f"{audit.relation}: redesign how an excluded canary is left out.")


def _one_run(audit: CanaryAudit, draw: CanaryDraw, estimator) -> OneRunResult:
    return one_run_audit(canary_scores(estimator, draw), draw.included,
                         guesses_per_side=audit.guesses_per_side(len(draw.labels)),
                         delta=estimator.delta_, alpha=ALPHA)


def run_audit(audit: CanaryAudit, full: bool = False, *, variant=None,
              variant_name: str | None = None, scale: float = CANARY_SCALE) -> CanaryRow:
    """Fit honestly and broken on the same canary draw; one row of the table.

    The broken variant defaults to the audit's noise divisor for that size.
    """
    canaries = audit.full_canaries if full else audit.fast_canaries
    divisor = audit.full_divisor if full else audit.fast_divisor
    if variant is None:
        variant = lambda: noise_divided_by(divisor)  # noqa: E731
        variant_name = f"noise multiplier / {divisor:g}"
    draw = draw_canaries(audit.relation, canaries, audit.seed, scale=scale)
    honest = _fit(audit, draw)
    _check_relation(audit, honest)
    assert honest.delta_ == DELTA
    honest_result = _one_run(audit, draw, honest)
    broken = _fit(audit, draw, variant)
    assert broken.epsilon_spent_ == honest.epsilon_spent_  # the broken variant claims as much
    broken_result = _one_run(audit, draw, broken)
    return CanaryRow(
        mechanism=f"{audit.name} training (one run)", unit=honest.privacy_.unit,
        reported=honest.epsilon_spent_, lower_bound=honest_result.epsilon, trials=canaries,
        broken=variant_name, broken_claim=broken.epsilon_spent_,
        broken_lower_bound=broken_result.epsilon, broken_trials=canaries,
        size="full" if full else "fast", guesses=honest_result.guesses,
        correct=honest_result.correct, broken_guesses=broken_result.guesses,
        broken_correct=broken_result.correct)


AUDITS = {
    "DPMLPClassifier": CanaryAudit(
        "DPMLPClassifier", lambda: DPMLPClassifier(
            epsilon=EPSILON, delta=DELTA, classes=np.arange(CLASSES), hidden_dim=32, epochs=20,
            lr=0.02, batch_size=64, random_state=0, device="cpu"),
        ADD_REMOVE, seed=0),
    "DRWClassifier": CanaryAudit(
        "DRWClassifier", lambda: DRWClassifier(
            epsilon=EPSILON, delta=DELTA, classes=np.arange(CLASSES), hidden_dim=64, epochs=40,
            lr=0.005, batch_size=128, random_state=1, device="cpu"),
        REPLACE, seed=1, fast_divisor=100.0, full_canaries=2000),
    "FDPClassifier": CanaryAudit(
        "FDPClassifier", lambda: FDPClassifier(
            epsilon=EPSILON, delta=DELTA, classes=np.arange(CLASSES), max_degree=1,
            hidden_dim=64, epochs=20, lr=0.01, batch_size=128, random_state=2, device="cpu"),
        REPLACE, seed=2, fast_divisor=100.0, full_divisor=100.0),
    "GAPClassifier(node)": CanaryAudit(
        "GAPClassifier(unit='node')", lambda: GAPClassifier(
            epsilon=EPSILON, delta=DELTA, classes=np.arange(CLASSES), unit="node",
            max_degree=2, hidden_dim=32, epochs=20, lr=0.01, batch_size=128, random_state=3,
            device="cpu"),
        ADD_REMOVE, seed=3),
}


def _check_row(row: CanaryRow) -> None:
    assert row.valid, f"empirical lower bound above the reported epsilon: {row}"
    assert row.has_power, f"the audit misses the broken variant: {row}"


@pytest.mark.parametrize("full", SIZES)
@pytest.mark.parametrize("name", list(AUDITS))
def test_canary_audit(name, full, audit_table):
    row = run_audit(AUDITS[name], full)
    audit_table.append(row)
    _check_row(row)


#: Canary feature scale of the clipping-off audit: the canaries' gradients must exceed C
#: for clipping to matter (at scale 5 they are about C, and the variant goes unnoticed).
CLIPPING_CANARY_SCALE = 30.0


@pytest.mark.audit
def test_canary_audit_dpmlp_clipping_off(audit_table):
    """The other broken variant of the issue: clipping off, noise sigma * C as planned."""
    row = run_audit(AUDITS["DPMLPClassifier"], True, variant=clipping_off,
                    variant_name=f"clipping off (canaries x{CLIPPING_CANARY_SCALE:g})",
                    scale=CLIPPING_CANARY_SCALE)
    audit_table.append(row)
    _check_row(row)


# ---------------------------------------------------------------------------- table
_HEADER = ("estimator", "unit", "reported eps", "lower bound", "canaries / guesses (right)",
           "broken variant", "broken LB", "canaries / guesses (right)")


def format_canary_table(rows) -> str:
    """Rows as a Markdown table (epsilons to 3 decimals)."""
    lines = ["| " + " | ".join(_HEADER) + " |", "|" + "---|" * len(_HEADER)]
    for row in rows:
        cells = (row.mechanism, row.unit, f"{row.reported:.3f}", f"{row.lower_bound:.3f}",
                 f"{row.trials} / {row.guesses} ({row.correct})", row.broken,
                 f"{row.broken_lower_bound:.3f}",
                 f"{row.broken_trials} / {row.broken_guesses} ({row.broken_correct})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run every canary audit (full sizes, or ``--fast``) and print the table."""
    argv = sys.argv[1:] if argv is None else argv
    full = "--fast" not in argv
    torch.set_num_threads(1)  # as in the test session (conftest.py): the same numbers
    rows, failures = [], []
    runs = [(name, audit, {}) for name, audit in AUDITS.items()]
    if full:
        runs.append(("DPMLPClassifier clipping off", AUDITS["DPMLPClassifier"], dict(
            variant=clipping_off, scale=CLIPPING_CANARY_SCALE,
            variant_name=f"clipping off (canaries x{CLIPPING_CANARY_SCALE:g})")))
    for name, audit, options in runs:
        start = time.perf_counter()
        row = run_audit(audit, full, **options)
        rows.append(row)
        print(f"{name}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
        if not (row.valid and row.has_power):
            failures.append(name)
    print(format_canary_table(rows))
    if failures:
        print(f"FAILED: {', '.join(failures)}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
