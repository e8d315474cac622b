"""ProGAP: GAP's aggregation perturbation, learned progressively, one stage per hop."""

from __future__ import annotations

from skdpgraph._docstrings import fill_doc
from skdpgraph.estimators._gap import GAPClassifier
from skdpgraph.estimators._gap_heads import ProgressiveHead

__all__ = ["ProGAPClassifier"]


@fill_doc
class ProGAPClassifier(GAPClassifier):
    """Progressive GAP (ProGAP): each stage learns on the noisy aggregations of the last.

    Sajadmanesh & Gatica-Perez (WSDM 2024), the successor of :class:`GAPClassifier`.
    Stage 0 is GAP's encoder on the node features. Then, for ``i = 1..hops``, the
    embedding of stage ``i - 1`` is row-normalised and aggregated once over the
    in-neighbours with Gaussian noise (one PMA hop), and stage ``i`` is trained on the
    node's own stage-0 embedding together with every aggregation released so far, by
    GAP's classification module over those parts. GAP aggregates one fixed encoder's
    output ``hops`` times; ProGAP aggregates a new, learned one at each hop. The last
    stage is the classifier.

    Privacy is GAP's, with the same parameters: at edge level the ``hops`` one-hop
    Gaussians compose exactly as GAP's ``hops`` hops (the stages read only public features
    and labels); at node level ``hops + 1`` DP-SGD runs and the ``hops`` Gaussians share
    one noise multiplier, composed in RDP. ``predict`` on the fitted graph reuses the
    aggregations released in ``fit``; on another graph it is a new release (all stages'
    aggregations, fresh noise), recorded in ``privacy_.releases`` at the cost of
    ``hops`` Gaussians. The parameters are :class:`GAPClassifier`'s; ``hops``, ``epochs``
    and ``encoder_epochs`` count per stage.

    Parameters
    ----------
    {{gap_budget_parameters}}
    hops : int, default=None
        K >= 1, the number of one-hop noisy aggregations (None: 2 at edge level, 1 at
        node level), one per stage: K + 1 stages, stage 0 the encoder and stage K the
        classifier. The K Gaussians share ``epsilon``, so more hops mean more noise per
        hop (and, at node level, more DP-SGD runs).
    hidden_dim : int, default=None
        Width of the embeddings and of the layers after them; None: 64 (see "How the
        defaults were chosen" in the docs). It does not change the accountant: aggregated
        rows are row-normalised.
    encoder_layers : int, default=None
        Linear layers of the encoder MLP (each followed by ``activation``), which embeds
        the node features before any aggregation; None: 1 at node level (the DP-MLP
        baseline's network), 2 at edge level. It does not change the accountant.
    {{gap_combine_parameters}}
    aggregate : {"auto", "embeddings", "predictions", "labels"}, default="auto"
        What each stage aggregates: its embedding, its class probabilities
        (``"predictions"``, fewer coordinates for the same noise), or (``"labels"``) those
        with the fitted nodes' one-hot labels in place of theirs (at node level protected
        by PMA's node-level sensitivity, as the features are). ``"auto"``: ``"labels"``.
        It does not change the accountant.
    {{gap_activation_parameters}}
    head : {"auto", "trained", "vote"}, default="auto"
        Every ProGAP stage is a trained classifier: ``"auto"`` and ``"trained"`` are the
        same, and ``"vote"`` (:class:`GAPClassifier`'s untrained head) is refused.
    epochs : int, default=None
        Training epochs of the last stage (the classifier); None: 100 at edge level, 50
        at node level. Edge level: free (public features and labels). Node level: its
        DP-SGD steps enter the accountant, so more epochs mean more noise.
    encoder_epochs : int, default=None
        Training epochs of each of the stages 0 to K - 1, whose outputs are aggregated;
        None: the resolved ``epochs`` at edge level, 20 at node level. Node level: all K
        runs enter the accountant.
    {{gap_lr_parameters}}
    batch_size : int, default=None
        Expected Poisson batch size of every training run; None: all training nodes at
        edge level, 1024 at node level. Node level: the sampling rate
        ``batch_size / n_train`` enters the accountant.
    {{gap_degree_and_run_parameters}}

    Attributes
    ----------
    {{gap_fitted_attributes}}
    head_ : ProgressiveHead
        The stages that follow the encoder.
    noise_multiplier_ : float or None
        sigma: the noise std of each aggregation / sensitivity (and, at node level, of
        every stage's DP-SGD / C).
    encoder_ : GAPEncoder
        Stage 0.
    stages_ : list of ProgressiveStage
        Stages ``1..hops-1``, whose outputs are aggregated.
    module_ : ProgressiveStage
        The last stage.
    history_ : list of dict
        Per-epoch records of every stage (``stage`` is ``"stage 0"`` .. ``"stage K"``),
        with the running epsilon (see ``private_diagnostics``).

    Examples
    --------
    >>> from skdpgraph import ProGAPClassifier
    >>> from skdpgraph.datasets import make_csbm
    >>> data = make_csbm(n_nodes=300, random_state=0)
    >>> clf = ProGAPClassifier(epsilon=4.0, epochs=20, encoder_epochs=20, random_state=0)
    >>> clf = clf.fit(data.nodes()[:200], data.y[:200])
    >>> clf.epsilon_spent_ <= 4.0, len(clf.stages_) + 2, clf.predict(data.nodes()[200:]).shape
    (True, 3, (100,))
    """

    def _resolve_head(self) -> ProgressiveHead:
        """Every stage is a trained classifier; ``head="vote"`` is refused."""
        if self.head == "vote":
            raise ValueError(f"{type(self).__name__}: head='vote' is GAPClassifier's; every "
                             "ProGAP stage is a trained classifier (use head='auto').")
        return ProgressiveHead()

    def _default_epochs(self) -> tuple[int, int]:
        """``(epochs, encoder_epochs)`` with None resolved: at node level, 50 for the last
        stage, which learns how to weigh the aggregations, and 20 for each stage before."""
        if not self._node_unit:
            return super()._default_epochs()
        return self.epochs or 50, self.encoder_epochs or 20
