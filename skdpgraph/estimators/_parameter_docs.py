"""Descriptions of the constructor parameters that several estimators share, written once.

Each fragment is the body of one parameter's entry, without its ``name : type, default=``
line, which stays in the class docstring (defaults differ between estimators). A class
docstring writes that line, then ``{{name}}`` on the next line, indented as the body, and
may add its own sentences on the lines after the marker::

    epsilon : float, default=8.0
        {{epsilon}}
        ``np.inf`` trains the same model without clipping or noise.

Fragments take the parameter's name (see the glossary in the developer guide), so every
estimator of the package reuses them; import :func:`fill_doc` from here, which makes sure
they are registered.
"""

from __future__ import annotations

from skdpgraph._docstrings import fill_doc, register_fragments

__all__ = ["fill_doc"]

register_fragments(
    epsilon="""
        Total privacy budget of the fit, in ``(0, inf]``: the noise is calibrated so
        that the whole fit is ``(epsilon, delta_)``-DP.""",
    delta="""
        Delta of the guarantee, in ``(0, 1)``; the value used is ``delta_``. A smaller
        delta needs more noise.""",
    classes="""
        The public label set. None reads it from ``y`` and states in ``privacy_`` that it
        is treated as public; labels outside a given set raise.""",
    activation="""
        Activation between the network's linear layers. It does not change the
        accountant.""",
    dropout="""
        Dropout rate in ``[0, 1)`` of the network's hidden layers during training (each
        example draws its own mask). It does not change the accountant.""",
    lr="""
        Learning rate of Adam, in ``(0, 1e30]``. It acts on the noisy gradients
        (post-processing) and does not change the accountant.""",
    max_grad_norm="""
        Clipping norm C > 0 of each example's gradient (the noise std is proportional to
        C). Epsilon does not depend on C; the ratio of gradient to noise does.""",
    noise_multiplier="""
        Noise std divided by the sensitivity, > 0. None calibrates the smallest
        multiplier that meets ``(epsilon, delta_)``; the value used is
        ``noise_multiplier_``.""",
    validation_fraction="""
        Hold out this fraction (in ``(0, 1)``, rounded up, stratified where every class
        fits in both parts) of the training nodes and keep the epoch with the best
        accuracy on them. ``"auto"``: 10% where the labels are public (a non-private
        fit: ``epsilon=inf`` without ``noise_multiplier``; none below 500 training
        nodes), none where they are protected, where an explicit fraction is refused
        (it would read protected labels without accounting). None: no split.""",
    random_state="""
        Root of the fit's independent random streams (initialisation, sampling, noise,
        validation split and later releases). Leave it None in production: a known seed
        makes the noise reproducible.""",
    device="""
        Where to train and predict; ``"auto"`` takes CUDA when available, else the CPU.
        The device used is ``device_``; it does not change the guarantee.""",
    verbose="""
        Show a progress bar with the loss and running epsilon. The printed loss is
        computed on the training data and is stated as not covered in ``privacy_``.""",
    private_diagnostics="""
        Also keep in ``history_`` the per-epoch loss and training accuracy, computed
        without noise on the private training nodes: not covered by the guarantee
        (``privacy_.not_covered`` then says so). False: ``history_`` holds only the
        stage, epoch, running epsilon and validation accuracy (where the labels are
        public); loss and training accuracy are None.""",
)
