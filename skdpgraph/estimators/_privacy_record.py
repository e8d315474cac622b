"""The fitted ``privacy_`` record: the report built from the plan and what the class
declares, and the one rule of what ``history_`` keeps."""

from __future__ import annotations

from skdpgraph.graph import Graph, Nodes
from skdpgraph.privacy import PrivacyPlan, report_from_plan

__all__ = ["HISTORY_NOT_COVERED", "PRIVATE_HISTORY_KEYS", "VERBOSE_NOT_COVERED", "PrivacyRecord"]

#: Stated in the report of a fit that keeps noise-free diagnostics (``private_diagnostics``).
HISTORY_NOT_COVERED = (
    "history_'s loss and train_accuracy (private_diagnostics=True: per-epoch loss and "
    "accuracy on the private training nodes, without noise): a diagnostic, not covered by "
    "the guarantee; do not publish it"
)
#: ``history_`` keys computed without noise from the training data.
PRIVATE_HISTORY_KEYS = ("loss", "train_accuracy")
#: Stated when ``verbose`` is on.
VERBOSE_NOT_COVERED = (
    "verbose=True progress output (training loss on the private training nodes): not "
    "covered; do not publish it"
)
_HYPERPARAMETERS_PUBLIC = "hyperparameters (architecture, epochs, lr, batch size...) are public"


class PrivacyRecord:
    """Mix-in of :class:`~skdpgraph.estimators.BaseDPClassifier`: the privacy report.

    Subclasses implement ``_unit_and_relation(graph)`` and ``_inference(plan)`` and may
    override ``_assumptions(plan, nodes)`` and ``_not_covered(plan)``.

    Examples
    --------
    >>> from skdpgraph import DPMLPClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=60, random_state=0)
    >>> clf = DPMLPClassifier(epsilon=4.0, epochs=1, random_state=0).fit(data.nodes(), data.y)
    >>> clf.epsilon_spent_ <= 4.0
    True
    """

    def _unit_and_relation(self, graph: Graph) -> tuple[str, str]:
        raise NotImplementedError

    def _inference(self, plan: PrivacyPlan) -> str:
        raise NotImplementedError

    def _assumptions(self, plan: PrivacyPlan, nodes: Nodes) -> tuple[str, ...]:
        return ()

    def _not_covered(self, plan: PrivacyPlan) -> tuple[str, ...]:
        return ()

    def _set_report(self, plan: PrivacyPlan, epsilon: float, nodes: Nodes) -> None:
        unit, relation = self._unit_and_relation(getattr(nodes, "graph", None))
        assumptions = self._assumptions(plan, nodes) + self._common_assumptions(plan, nodes)
        not_covered = self._not_covered(plan)
        if self._keep_covered_history(plan):
            not_covered = (HISTORY_NOT_COVERED,) + not_covered
        if self.verbose:
            not_covered += (VERBOSE_NOT_COVERED,)
        self.privacy_ = report_from_plan(
            plan, estimator=type(self).__name__, unit=unit, relation=relation,
            delta=self.delta_, epsilon=epsilon, inference=self._inference(plan),
            assumptions=assumptions, not_covered=not_covered)
        self.epsilon_spent_ = float(self.privacy_.epsilon)
        self.delta_ = float(self.privacy_.delta)

    def _keep_covered_history(self, plan: PrivacyPlan) -> bool:
        """The one rule of ``history_``: blank what the guarantee does not cover.

        Where a private fit's loss and training accuracy are noise-free statistics of
        protected data, they become None unless ``private_diagnostics=True``. Returns
        whether such values are kept (then the report states it).
        """
        if not (hasattr(self, "history_") and plan.private and self._history_on_private_data):
            return False
        if getattr(self, "private_diagnostics", False):
            return True
        self.history_ = [{**record, **dict.fromkeys(PRIVATE_HISTORY_KEYS)}
                         for record in self.history_]
        return False

    def _common_assumptions(self, plan: PrivacyPlan, nodes: Nodes) -> tuple[str, ...]:
        if not plan.private:
            return ()
        classes = self.classes_.tolist()
        shown = classes if len(classes) <= 10 else classes[:10] + ["..."]
        if getattr(self, "classes", None) is None:
            label_set = (f"the label set {shown} is read from the training labels and treated "
                         "as public (pass classes= to fix it in advance)")
        else:
            label_set = f"the label set {shown} is the public classes parameter"
        out = (label_set, _HYPERPARAMETERS_PUBLIC)
        if self._training_size_public:
            out += (f"the number of training nodes (n={len(nodes)}) is public: it sets the "
                    "sampling rate, the number of steps and the calibrated noise",)
        return out
