"""The public stages of :class:`~skdpgraph.NeighbourVoteClassifier`: logistic regressions.

Stage 1 reads only the node features and labels (public at edge level); stage 3 reads
those and the noisy release. Neither touches the edges, so nothing here costs privacy,
except :func:`propagated_features`, which reads them and serves only a non-private fit.
Every model predicts over all ``num_classes`` classes, also when a fold lacks some.
"""

from __future__ import annotations

import itertools
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.special import log_softmax
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler, normalize
from sklearn.utils.extmath import randomized_svd

__all__ = ["STAGE1_C_GRID", "STAGE3_C_GRID", "FORMS", "FOLDS", "SELECTION_FOLDS", "ClassModel",
           "fit_class_model", "kfold", "cross_fit", "select", "stage3_inputs", "stage3_candidates",
           "row_normalised_features", "propagated_features", "feature_projection", "vote_rows",
           "TiedVoteModel", "VOTE_SHARPNESS", "PUBLIC_HOPS", "PUBLIC_WIDTH", "TIED_RAW_GRID",
           "TIED_NORMALISED_GRID"]

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
#: Power the stage-1 probabilities are raised to (then renormalised to sum 1) before
#: they vote: sharper rows put more of each unit-L1 row on one class, so the same
#: Laplace noise hides less of the vote.
VOTE_SHARPNESS = 2.0
#: Hops of the feature propagation stage 1 may read when the graph is public
#: (``epsilon=inf``).
PUBLIC_HOPS = 2
#: Width the features are projected to before they are propagated (propagated sparse
#: bag-of-words rows fill in: tens of millions of non-zeros on the coauthor graphs).
PUBLIC_WIDTH = 256
#: The tied stage 3's weights of the noisy sum, raw and divided by its own total.
TIED_RAW_GRID = (0.0, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
TIED_NORMALISED_GRID = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)


def row_normalised_features(graph, index=None) -> np.ndarray | sp.csr_matrix:
    """Float64 features of ``index`` (all nodes if None), each row of L2 norm 1.

    Sparse features stay sparse (CSR): bag-of-words rows are mostly zeros, and the
    regressions' cost then follows the non-zeros instead of the width.
    """
    if sp.issparse(graph.x):
        rows = graph.x if index is None else graph.x[np.asarray(index)]
        return normalize(sp.csr_matrix(rows, dtype=np.float64))
    return normalize(graph.features(index).astype(np.float64))


def feature_projection(graph, random_state: int) -> np.ndarray | None:
    """The top :data:`PUBLIC_WIDTH` right singular vectors of the row-normalised features.

    Parameters
    ----------
    graph : Graph
    random_state : int
        Seed of the randomised SVD (used once, not kept).

    Returns
    -------
    ndarray of shape (n_features, PUBLIC_WIDTH) or None
        None when the features are no wider than :data:`PUBLIC_WIDTH`.
    """
    x = row_normalised_features(graph)
    if x.shape[1] <= PUBLIC_WIDTH:
        return None
    _, _, components = randomized_svd(x, PUBLIC_WIDTH, random_state=random_state)
    return components.T


def propagated_features(graph, index=None, projection: np.ndarray | None = None,
                        hops: int = PUBLIC_HOPS) -> np.ndarray | sp.csr_matrix:
    """Row-normalised features propagated ``hops`` times over the graph (SGC), rows of L2 norm 1.

    The propagation is GCN's: ``D^{-1/2} (A + I) D^{-1/2}`` with ``D`` the in-degree plus
    one (Wu et al., "Simplifying Graph Convolutional Networks", ICML 2019). It reads the
    edges, so only a non-private fit (``epsilon=inf``, the graph public) may call it.

    Parameters
    ----------
    graph : Graph
    index : array-like of int, default=None
        Rows to return (all nodes if None).
    projection : ndarray of shape (n_features, width), default=None
        Project the row-normalised features on it (then normalise the rows again) before
        propagating (:func:`feature_projection`); None: propagate the features.
    hops : int, default=PUBLIC_HOPS

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix of shape (len(index), n_features)
    """
    adjacency = graph.adjacency().astype(np.float64) + sp.identity(graph.num_nodes)
    scale = sp.diags(1.0 / np.sqrt(np.asarray(adjacency.sum(axis=1)).ravel()))
    step = (scale @ adjacency @ scale).tocsr()
    x = row_normalised_features(graph)
    if projection is not None:
        x = normalize(np.asarray(x @ projection))
    for _ in range(hops):
        x = step @ x
    x = x if index is None else x[np.asarray(index)]
    return normalize(sp.csr_matrix(x) if sp.issparse(x) else np.asarray(x))


def vote_rows(probabilities: np.ndarray, sharpness: float = VOTE_SHARPNESS) -> np.ndarray:
    """Class rows that vote: ``probabilities ** sharpness``, renormalised to sum 1 per row.

    Parameters
    ----------
    probabilities : ndarray of shape (n, C)
        Non-negative rows, each with a positive entry.
    sharpness : float, default=VOTE_SHARPNESS

    Returns
    -------
    ndarray of shape (n, C)
        Non-negative rows of L1 norm 1.
    """
    powered = np.asarray(probabilities, dtype=np.float64) ** sharpness
    return powered / powered.sum(axis=1, keepdims=True)


class TiedVoteModel:
    """Stage 3 with two weights shared by every class: stage 1's log-probabilities plus votes.

    The score of class ``c`` is ``own_c + a * S_c + b * S_c / max(sum(S), 1)``, where
    ``S`` is the node's noisy vote sum; ``(a, b)`` maximise the mean log-likelihood of
    the training labels over :data:`TIED_RAW_GRID` x :data:`TIED_NORMALISED_GRID`
    (``(0, 0)``, stage 1 alone, wins ties). Two parameters, so a few training nodes fit
    them without the overfitting of a full regression on noisy inputs.

    Attributes
    ----------
    weights : tuple of float
        The chosen ``(a, b)`` after :meth:`fit`.
    """

    def fit(self, own: np.ndarray, released: np.ndarray, y: np.ndarray) -> "TiedVoteModel":
        """Choose ``(a, b)`` on ``own`` (log-probabilities), ``released`` sums and labels ``y``."""
        best = None
        for weights in itertools.product(TIED_RAW_GRID, TIED_NORMALISED_GRID):
            log_likelihood = log_softmax(self._scores(own, released, weights), axis=1)
            value = float(np.mean(log_likelihood[np.arange(len(y)), y]))
            if best is None or value > best[0] + 1e-12:
                best = (value, weights)
        self.weights = best[1]
        return self

    @staticmethod
    def _scores(own, released, weights):
        raw, normalised = weights
        total = np.maximum(released.sum(axis=1), 1.0)[:, None]
        return own + raw * released + normalised * released / total

    def predict_proba(self, own: np.ndarray, released: np.ndarray) -> np.ndarray:
        """Class probabilities of rows with log-probabilities ``own`` and sums ``released``."""
        return np.exp(log_softmax(self._scores(own, released, self.weights), axis=1))


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
           splits: Sequence[tuple[np.ndarray, np.ndarray]], *, with_score: bool = False):
    """The candidate with the best mean ``score(candidate, fit, held)`` over ``splits``.

    The first candidate wins ties; without splits it is the first candidate (score nan).
    ``with_score``: return ``(candidate, its mean score)``.
    """
    if not splits:
        return (candidates[0], float("nan")) if with_score else candidates[0]
    means = [np.mean([score(candidate, fit, held) for fit, held in splits])
             for candidate in candidates]
    best = int(np.argmax(means))
    return (candidates[best], float(means[best])) if with_score else candidates[best]


def stage3_inputs(own: np.ndarray, released: np.ndarray, form: str) -> np.ndarray:
    """Stage 3's inputs: the own block and the noisy sums in ``form`` (:data:`FORMS`).

    ``"normalised"`` divides each noisy sum by its own total (at least 1): a degree read
    from the release, never the true degree.
    """
    normalised = released / np.maximum(released.sum(axis=1), 1.0)[:, None]
    blocks = {"own": [], "raw": [released], "normalised": [normalised],
              "both": [released, normalised]}[form]
    return np.concatenate([own, *blocks], axis=1)


def stage3_candidates() -> list[tuple[str, float | None]]:
    """Every ``(form, C)`` pair stage 3 selects from, the default (``"tied"``, None) first.

    ``"tied"`` is :class:`TiedVoteModel` (no C); the other forms are logistic
    regressions on :func:`stage3_inputs` at each C of :data:`STAGE3_C_GRID`.
    """
    return [("tied", None)] + list(itertools.product(FORMS, STAGE3_C_GRID))
