"""Parameter and attribute descriptions that GAPClassifier and ProGAPClassifier share."""

from skdpgraph._docstrings import register_fragments

register_fragments(
    gap_budget_parameters="""
        epsilon : float, default=8.0
            Total privacy budget of the fit, in ``(0, inf]``, met by one noise multiplier
            sigma. Edge level: only the aggregations pay (their Gaussians compose exactly);
            node level: the DP-SGD runs and the aggregations share it (RDP composition).
            ``np.inf``: no noise and no clipping (the non-private baseline). At most 1e12 at
            edge level.
        delta : float, default=None
            Delta of the guarantee, in ``(0, 1)``. None uses, at edge level,
            ``1 / (10 * P)`` with P the number of possible edges, ``N (N - 1) / 2`` for N nodes
            (``N (N - 1)`` if directed): below 1/E for every graph, and read from the public
            node count only, never from the protected edges. At node level ``1 / (10 * N)``
            (the node set is public). The value used is ``delta_``.
        classes : array-like, default=None
            The public label set; None reads it from ``y`` (stated in ``privacy_``).
        unit : {"edge", "node"}, default="edge"
            The privacy unit. Edge: add/remove one edge; features and labels are public and
            only the aggregations are noisy. Node: add/remove one node with its features,
            label and edges; the node set is public, and training runs DP-SGD as well.""",
    gap_combine_parameters="""
        combine : {"cat", "sum", "max"}, default="cat"
            How the own embedding and the aggregations are combined: concatenation
            (row-normalised), sum or element-wise maximum. It does not change the accountant.""",
    gap_activation_parameters="""
        activation : {"relu", "selu", "tanh", "elu", "gelu"}, default="selu"
            Activation of every network. It does not change the accountant.""",
    gap_lr_parameters="""
        lr : float, default=0.01
            Learning rate of Adam in every training run, in ``(0, 1e30]``. It does not change
            the accountant.""",
    gap_degree_and_run_parameters="""
        max_degree : int, default=30
            Node level: out-degree bound D; each release first keeps at most D random
            out-edges per node, so one hop has sensitivity sqrt(D) (own rows held fixed).
            Larger D: more noise, fewer dropped edges. Unused at edge level.
        max_in_degree : int or None, default=10
            Node level: also keep at most D_in random in-edges per node; sensitivity
            sqrt(D_in² + D), so each node's own aggregation rows are covered by the reported
            epsilon and the release made in ``fit`` is kept in the pickle. None: in-degree
            unbounded; each node's own rows are then covered only by its in-degree d
            (sensitivity sqrt(d² + D) for it; ``privacy_.not_covered`` states the epsilon at
            d = 1, 5, 10, 30, 100), and the fit's release is kept in memory, never pickled.
            The bound's accuracy cost is measured in the privacy-units guide (GAP's node-level
            guarantee). Unused at edge level.
        max_grad_norm : float, default=1.0
            Node level: per-node clipping norm C of every DP-SGD run (noise std sigma * C);
            epsilon does not depend on it. Unused at edge level, which trains without
            clipping.
        dropout : float, default=None
            Dropout rate in ``[0, 1)`` of every network during training; None: 0.5 at edge
            level, 0 at node level. It does not change the accountant.
        validation_fraction : float, "auto" or None, default="auto"
            Hold out this fraction (in ``(0, 1)``) of the training nodes (stratified where
            possible) and keep, for every training run, the epoch with the best accuracy on
            them. Allowed only where the labels are public (edge level, or ``epsilon=inf``),
            so it costs nothing; an explicit fraction at private node level is refused.
            ``"auto"``: 10% where allowed (none below 500 training nodes), else none. None: no
            split.
        random_state : int, RandomState instance or None, default=None
            Root of independent streams (initialisation, batches, degree sampling, noise,
            validation split, later releases). Leave None in production: a known seed makes
            the noise reproducible.
        device : {"auto", "cpu", "cuda", "cuda:<index>"} or torch.device, default="auto"
            Where to train and predict; ``"auto"`` takes CUDA when available, else the CPU.
            The device used is ``device_``; it does not change the guarantee.
        verbose : bool, default=False
            One progress bar per training run with the loss and running epsilon. The printed
            loss is not covered (``privacy_`` says so).
        private_diagnostics : bool, default=False
            Also keep in ``history_`` the per-epoch loss and training accuracy where they are
            computed without noise on protected data (node level): not covered by the
            guarantee (``privacy_.not_covered`` then says so). False: there they are None.
            At edge level (features and labels public; the classifier reads the noisy
            aggregations) and with ``epsilon=np.inf`` the history is kept whole either way.
        privacy_level : {"edge", "node"}, default="deprecated"
            The former name of ``unit``: setting it still works, with a ``FutureWarning``,
            and will be removed in 0.3. Setting both is refused.""",
    gap_fitted_attributes="""
        classes_ : ndarray of shape (n_classes,)
        n_features_in_ : int
        epsilon_spent_ : float
        delta_ : float
        sensitivity_ : float
        privacy_ : PrivacyReport
        device_ : torch.device
        unit_ : {"edge", "node"}
            The privacy unit used (``unit``, or the deprecated ``privacy_level``).
        hops_ : int
            ``hops`` with None resolved (the same for the five below).
        hidden_dim_ : int
        encoder_layers_ : int
        epochs_ : int
        encoder_epochs_ : int
        batch_size_ : int
            Before ``plan_dpsgd`` caps it at the number of training nodes.
        dropout_ : float
            ``dropout`` with None resolved.
        aggregate_ : {"embeddings", "predictions", "labels"}
            ``aggregate`` with ``"auto"`` resolved.""",
)
