"""The public stages of :class:`~skdpgraph.NeighbourVoteClassifier`: logistic regressions.

Stage 1 reads only the node features and labels (public at edge level); stage 3 reads
those and the noisy release. Neither touches the edges, so nothing here costs privacy.
Every model predicts over all ``num_classes`` classes, also when a fold lacks some.
"""

from __future__ import annotations

import itertools
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler, normalize

__all__ = ["STAGE1_C_GRID", "STAGE3_C_GRID", "FORMS", "FOLDS", "SELECTION_FOLDS", "ClassModel",
           "fit_class_model", "kfold", "cross_fit", "select", "stage3_inputs", "stage3_candidates",
           "row_normalised_features"]

#: Stage 1's inverse regularisation strengths, one chosen on held-out training nodes (the
#: first one without any).
STAGE1_C_GRID = (1.0, 0.1, 10.0, 100.0)
#: Stage 3's: stronger regularisation too, since the noisy inputs overfit.
STAGE3_C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0)
#: Stage 3's input forms: the node's own block alone, or with its noisy sum raw, divided by
#: the sum's own mass, or both.
FORMS = ("own", "raw", "normalised", "both")
#: Folds of the cross-fitted stage-1 probabilities.
FOLDS = 5
#: Folds of the choices without a hold-out (fewer: each fold refits every candidate).
SELECTION_FOLDS = 3
#: Iterations of lbfgs.
MAX_ITER = 1000


def row_normalised_features(graph, index=None) -> np.ndarray | sp.csr_matrix:
    """Float64 features of ``index`` (all nodes if None), each row of L2 norm 1.

    Sparse features stay sparse (CSR): bag-of-words rows are mostly zeros, and the
    regressions' cost then follows the non-zeros instead of the width.
    """
    if sp.issparse(graph.x):
        rows = graph.x if index is None else graph.x[np.asarray(index)]
        return normalize(sp.csr_matrix(rows, dtype=np.float64))
    return normalize(graph.features(index).astype(np.float64))


class ClassModel:
    """A fitted classifier's probabilities over all ``num_classes`` classes.

    Parameters
    ----------
    model : estimator or None
        A fitted scikit-learn classifier; None when the training labels held one class.
    classes : ndarray of int
        The encoded classes it was fitted on.
    num_classes : int
        Width of the probabilities.
    """

    def __init__(self, model, classes: np.ndarray, num_classes: int) -> None:
        self.model, self.classes, self.num_classes = model, classes, num_classes

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """Probabilities of shape (len(x), num_classes); classes never seen get 0."""
        out = np.zeros((x.shape[0], self.num_classes))
        out[:, self.classes] = 1.0 if self.model is None else self.model.predict_proba(x)
        return out


def fit_class_model(x: np.ndarray, y: np.ndarray, c: float, num_classes: int, *,
                    scale: bool = False) -> ClassModel:
    """A logistic regression (lbfgs) at inverse regularisation ``c``; ``scale``: standardised.

    Parameters
    ----------
    x : ndarray of shape (n, d)
    y : ndarray of shape (n,)
        Encoded labels in ``range(num_classes)``.
    c : float
    num_classes : int
    scale : bool, default=False
        Standardise the inputs first (stage 3's noisy sums are on another scale than the
        log-probabilities).

    Returns
    -------
    ClassModel
    """
    classes = np.unique(y)
    if len(classes) < 2:
        return ClassModel(None, classes, num_classes)
    model = LogisticRegression(C=c, max_iter=MAX_ITER)
    model = make_pipeline(StandardScaler(), model) if scale else model
    return ClassModel(model.fit(x, y), classes, num_classes)


def kfold(n: int, generator: np.random.Generator, folds: int = FOLDS) -> list[np.ndarray]:
    """At most ``folds`` disjoint random parts of ``range(n)`` (none if ``n < 2``)."""
    k = min(folds, n)
    return [] if k < 2 else np.array_split(generator.permutation(n), k)


def cross_fit(x: np.ndarray, y: np.ndarray, c: float, num_classes: int,
              parts: Sequence[np.ndarray]) -> np.ndarray:
    """Each row's probabilities from a model fitted without its part (in-sample without parts)."""
    if not parts:
        return fit_class_model(x, y, c, num_classes).predict_proba(x)
    out = np.zeros((len(y), num_classes))
    for part in parts:
        rest = np.setdiff1d(np.arange(len(y)), part)
        out[part] = fit_class_model(x[rest], y[rest], c, num_classes).predict_proba(x[part])
    return out


def select(candidates: Sequence, score: Callable[[object, np.ndarray, np.ndarray], float],
           splits: Sequence[tuple[np.ndarray, np.ndarray]]):
    """The candidate with the best mean ``score(candidate, fit, held)`` over ``splits``.

    The first candidate wins ties; without splits it is the first candidate.
    """
    if not splits:
        return candidates[0]
    means = [np.mean([score(candidate, fit, held) for fit, held in splits])
             for candidate in candidates]
    return candidates[int(np.argmax(means))]


def stage3_inputs(own: np.ndarray, released: np.ndarray, form: str) -> np.ndarray:
    """Stage 3's inputs: the own block and the noisy sums in ``form`` (:data:`FORMS`).

    ``"normalised"`` divides each noisy sum by its own total (at least 1): a degree read
    from the release, never the true degree.
    """
    normalised = released / np.maximum(released.sum(axis=1), 1.0)[:, None]
    blocks = {"own": [], "raw": [released], "normalised": [normalised],
              "both": [released, normalised]}[form]
    return np.concatenate([own, *blocks], axis=1)


def stage3_candidates() -> list[tuple[str, float]]:
    """Every ``(form, C)`` pair stage 3 selects from, the default (``"both"``, 0.1) first."""
    pairs = list(itertools.product(FORMS, STAGE3_C_GRID))
    default = ("both", 0.1)
    return [default] + [pair for pair in pairs if pair != default]
