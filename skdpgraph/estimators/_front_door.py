"""One front door: name the privacy unit and the budget; get the estimator that does best."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError

from skdpgraph._validation import DP_CONSTRAINTS, StrOptions, fit_context

__all__ = ["DPNodeClassifier", "UNITS"]

#: What each unit protects, in the words of the estimators' reports.
UNITS = {
    "edge": "one undirected edge; node features and labels are public",
    "node": "one node with its features, label and edges",
    "features": "one node's features and label; the graph structure is public",
    "local": "local DP: each node randomises its own features and label before collection",
}


@dataclasses.dataclass(frozen=True)
class _Choice:
    """An estimator class name, its settings, and the measured reason it was chosen."""

    estimator: str
    params: dict
    reason: str


def choose(unit: str, epsilon: float) -> _Choice:
    """The estimator :class:`DPNodeClassifier` uses for ``unit`` at ``epsilon``.

    The choices follow the privacy-utility tables of the user guide (defaults, mean test
    accuracy over five seeds); each reason quotes them. They are public constants: choosing
    reads no data.

    Examples
    --------
    >>> choose("local", 4.0).estimator
    'RGNNClassifier'
    """
    if unit == "edge":
        return _Choice("NeighbourVoteClassifier", {}, _EDGE_REASON)
    if unit == "node":
        return _Choice("DPMLPClassifier", {}, _NODE_REASON)
    if unit == "features":
        return _Choice("DRWClassifier", {}, _FEATURES_REASON)
    if unit == "local":
        return _Choice("RGNNClassifier", {}, _LOCAL_REASON)
    raise ValueError(f"unit must be one of {sorted(UNITS)}; got {unit!r}.")


_EDGE_REASON = (
    "NeighbourVoteClassifier: at edge level features and labels are public, so its "
    "logistic regressions read them without noise and only one Laplace release of each "
    "node's neighbour class votes pays; with defaults at epsilon=4 (5 seeds) it scores "
    "90.4 on Amazon Computers, 95.4 on Amazon Photo, 93.8 on Facebook, 95.5 on Coauthor CS "
    "and 68.7 on Cora's public split, against edge-level GAP's 89.5, 94.8, 90.9, 95.1 and "
    "55.5, and it is ahead of GAP at every epsilon on all five (the privacy-utility tables "
    "of the user guide)")

_NODE_REASON = (
    "DPMLPClassifier: it never reads the edges, so it is node-level private as it stands "
    "(80.6 on Amazon Computers, 88.6 on Amazon Photo and 87.1 on Facebook at epsilon=8 with "
    "defaults, 5 seeds; the privacy-utility tables of the user guide). Node-level ProGAP "
    "(82.0, 89.5, 87.2) and GAP's vote head (84.9, 90.8, 87.7) score higher, but their "
    "guarantees leave each node's own aggregation row uncovered and assume the degree "
    "bound, so neither is chosen")
_FEATURES_REASON = (
    "DRWClassifier: with the structure public it trains a one-layer GNN on disjoint stars "
    "with DP-SGD; at epsilon=8 with defaults (5 seeds) it is ahead of DP-MLP on Amazon "
    "Computers (83.0 vs 80.6), Amazon Photo (91.4 vs 88.6), Facebook (89.1 vs 87.1) and "
    "Cora's public split (30.6 vs 27.7) (the privacy-utility tables of the user guide)")
_LOCAL_REASON = (
    "RGNNClassifier: the only estimator whose data are randomised by each node before "
    "collection (local DP)")


class DPNodeClassifier(ClassifierMixin, BaseEstimator):
    """Node classification with differential privacy: say what to protect, get the best method.

    ``unit`` names what one neighbouring dataset changes; the classifier fits the
    estimator that the benchmarks show best for that unit (:func:`choose`), with its
    defaults and this budget, and says why in ``privacy_.choice``. It is a normal
    estimator: ``clone``, ``GridSearchCV`` (over ``epsilon``), pipelines and pickling work
    as for the estimators it wraps.

    Do not search over ``unit``: the unit is what the guarantee protects, chosen before
    the data, not a hyperparameter. Fits on different units read different data in the
    clear (the edge level reads features and labels, DRW reads the edges), so a search
    over them is private under none of the units, and
    :func:`~skdpgraph.model_selection.search_cost` refuses it.

    Parameters
    ----------
    unit : {"edge", "node", "features", "local"}, default="edge"
        ``"edge"``: one undirected edge (features and labels public). ``"node"``: one node
        with its features, label and edges. ``"features"``: one node's features and label
        (structure public). ``"local"``: local DP on each node's features and label
        (RGNN's default schema: binary features; for others use ``RGNNClassifier`` with
        ``feature_type="continuous"``). Fixed by what must be protected, never searched.
    epsilon : float, default=8.0
        Total budget of the chosen estimator; ``np.inf`` for its non-private counterpart.
    delta : float, default=None
        The chosen estimator's default (1 / (10 x protected units)) when None; unused at
        ``unit="edge"`` and ``unit="local"``, whose guarantees are pure (delta 0).
    classes : array-like, default=None
        The public label set; None reads it from ``y`` (stated as public in ``privacy_``).
    random_state : int, RandomState instance or None, default=None
        Root of the chosen estimator's random streams; leave None in production: a known
        seed makes the noise reproducible.
    device : {"auto", "cpu", "cuda", "cuda:<index>"} or torch.device, default="auto"
        Where the chosen estimator trains and predicts; ``"auto"`` takes CUDA when
        available, else the CPU. It does not change the guarantee.
    verbose : bool, default=False
        Passed to the chosen estimator: a progress bar with the loss and running epsilon,
        stated as not covered in ``privacy_``.

    Attributes
    ----------
    estimator_ : BaseDPClassifier
        The fitted estimator.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    epsilon_spent_ : float
    delta_ : float
    choice_ : str
        The chosen estimator and the reason.
    privacy_ : PrivacyReport
        The chosen estimator's report (releases after fit included), with ``choice`` set.
    history_ : list of dict
        The chosen estimator's per-epoch training records (``pandas.DataFrame(clf.history_)``
        gives one table); a diagnostic on private data, not covered by the guarantee.
    device_ : torch.device
        The device the chosen estimator trained on.

    Examples
    --------
    >>> from skdpgraph import DPNodeClassifier, Graph
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=300, random_state=0)
    >>> words = Graph(data.graph.edge_index, (data.graph.x > 0).astype(float))  # binary
    >>> clf = DPNodeClassifier(unit="local", epsilon=13.0, random_state=0)
    >>> clf = clf.fit(words.nodes()[:200], data.y[:200])
    >>> type(clf.estimator_).__name__, clf.epsilon_spent_ <= 13.0
    ('RGNNClassifier', True)
    >>> clf.privacy_.choice.startswith("RGNNClassifier")
    True
    """

    _parameter_constraints = {
        "unit": [StrOptions(set(UNITS))],
        **{name: DP_CONSTRAINTS[name] for name in (
            "epsilon", "delta", "classes", "random_state", "device", "verbose")},
    }

    def __init__(self, *, unit="edge", epsilon=8.0, delta=None, classes=None, random_state=None,
                 device="auto", verbose=False):
        self.unit = unit
        self.epsilon = epsilon
        self.delta = delta
        self.classes = classes
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    #: As the estimators': bootstrap counts reach the chosen estimator's check.
    __metadata_request__fit = {"sample_weight": True}
    #: Trains on the node table of one graph (see ``skdpgraph.all_estimators(data=...)``).
    _data_kind = "nodes"

    @fit_context(prefer_skip_nested_validation=False)  # the chosen estimator checks its own
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "DPNodeClassifier":
        """Choose the estimator for ``unit`` and ``epsilon``, then fit it on ``(X, y)``.

        ``sample_weight`` goes to the chosen estimator, which takes only 0 or 1 (each
        node counts once).

        A failed fit leaves this classifier unfitted, whatever was fitted before.
        """
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]:
            delattr(self, name)
        choice = choose(self.unit, self.epsilon)
        import skdpgraph

        estimator = getattr(skdpgraph, choice.estimator)(
            epsilon=self.epsilon, classes=self.classes, random_state=self.random_state,
            device=self.device, verbose=self.verbose, **choice.params)
        if "delta" in estimator.get_params():  # pure local DP (RGNN) has no delta
            estimator.set_params(delta=self.delta)
        estimator.fit(X, y, sample_weight=sample_weight)
        self.estimator_, self.choice_ = estimator, choice.reason
        self.classes_, self.n_features_in_ = estimator.classes_, estimator.n_features_in_
        self.epsilon_spent_, self.delta_ = estimator.epsilon_spent_, estimator.delta_
        return self

    @property
    def privacy_(self):
        return dataclasses.replace(self._fitted().privacy_, choice=self.choice_)

    @property
    def history_(self) -> list:
        return self._fitted().history_

    @property
    def device_(self):
        return self._fitted().device_

    def _fitted(self):
        if "estimator_" not in vars(self):
            raise NotFittedError("This DPNodeClassifier instance is not fitted yet; call "
                                 "'fit' with appropriate arguments before using this estimator.")
        return self.estimator_

    def mark_fitted_graph(self, graph: Any) -> DPNodeClassifier:
        """Declare ``graph`` the fitted one, for the chosen estimator (see
        :meth:`GAPClassifier.mark_fitted_graph <skdpgraph.GAPClassifier.mark_fitted_graph>`).

        Returns
        -------
        self
        """
        self._fitted().mark_fitted_graph(graph)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels of the nodes ``X`` (see the chosen estimator's ``predict``)."""
        return self._fitted().predict(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of the nodes ``X``, columns in ``classes_`` order."""
        return self._fitted().predict_proba(X)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Mean accuracy of :meth:`predict` on the nodes ``X`` against ``y``."""
        return self._fitted().score(X, y, sample_weight=sample_weight)
