"""What every skdpgraph classifier shares: the fit/predict plumbing of the contract."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from skdpgraph._random import Seeds, make_seeds, torch_seeded
from skdpgraph._validation import check_fit_data, check_predict_nodes, fit_context
from skdpgraph.graph import Nodes
from skdpgraph.privacy import PrivacyReport

__all__ = ["BaseDPClassifier", "resolve_device", "HISTORY_NOT_COVERED"]

#: Stated in every report of an estimator that records a training history.
HISTORY_NOT_COVERED = (
    "history_ (per-epoch loss and accuracy on the private training nodes): a diagnostic, "
    "not covered by the guarantee; do not publish it"
)


def resolve_device(device: Any) -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU."""
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class BaseDPClassifier(ClassifierMixin, BaseEstimator):
    """Base class: validation, seeding, device, probabilities, the privacy record.

    Subclasses implement ``_fit(nodes, y, seeds)`` (``y`` encoded as 0..n_classes-1),
    which must call :meth:`_set_privacy`, and ``_predict_logits(nodes)``.
    """

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> BaseDPClassifier:
        """Fit on the labelled nodes ``X`` (a :class:`Nodes` or a 2-D array) and labels ``y``.

        Returns
        -------
        self
        """
        nodes, encoded = check_fit_data(self, X, y)
        seeds = make_seeds(self.random_state)
        self.device_ = resolve_device(self.device)
        with torch_seeded(seeds.seed):
            self._fit(nodes, encoded, seeds)
        return self

    def _fit(self, nodes: Nodes, y: np.ndarray, seeds: Seeds) -> None:
        raise NotImplementedError

    def _predict_logits(self, nodes: Nodes) -> torch.Tensor:
        raise NotImplementedError

    def _set_privacy(self, report: PrivacyReport) -> None:
        self.privacy_ = report
        self.epsilon_spent_ = float(report.epsilon)
        self.delta_ = float(report.delta)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of the nodes ``X``, shape (n_nodes, n_classes)."""
        check_is_fitted(self)
        nodes = check_predict_nodes(self, X)
        with torch.no_grad():
            logits = self._predict_logits(nodes)
        return torch.softmax(logits.float(), dim=-1).cpu().numpy().astype(np.float64)

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class of each node in ``X``."""
        probabilities = self.predict_proba(X)
        return self.classes_[np.argmax(probabilities, axis=1)]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Accuracy on ``(X, y)``; labels never seen in ``fit`` raise a ``ValueError``."""
        check_is_fitted(self)
        unseen = np.setdiff1d(np.unique(np.asarray(y)), self.classes_)
        if len(unseen):
            raise ValueError(
                f"{type(self).__name__}.score: y has labels never seen in fit: "
                f"{unseen.tolist()[:10]} (classes_ = {self.classes_.tolist()[:10]})."
            )
        return super().score(X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.poor_score = True  # DP noise: no accuracy promise on toy data
        return tags
