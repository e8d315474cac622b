"""Learning from label proportions: the bag-level loss of RGNN and its forward-corrected loss.

The full-batch loop that trains with them is :func:`skdpgraph.training.train_llp_gnn`.
"""

from __future__ import annotations

import torch

__all__ = ["forward_corrected_loss", "llp_loss"]


def llp_loss(probs: torch.Tensor, bag: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    r"""Mean KL divergence between target and predicted bag label proportions.

    .. math::

        \mathcal{L}_{llp} = \frac{1}{|B|}\sum_{r \in B}
            \mathrm{KL}(\tilde b_r \,\|\, \hat b_r), \qquad
        \hat b_r = \frac{1}{|C_r|}\sum_{v \in C_r} \hat y_v,

    over the bags :math:`B` that hold at least one node; empty bags are skipped.

    Parameters
    ----------
    probs : Tensor of shape (n, n_classes)
        Predicted class probabilities of the (training) nodes.
    bag : Tensor of int64 of shape (n,)
        Bag of each node, in ``0..n_bags - 1``.
    target : Tensor of shape (n_bags, n_classes)
        Target proportions :math:`\tilde b_r` (rows of empty bags are ignored).

    Returns
    -------
    Tensor
        A scalar; zero if every bag is empty.

    Examples
    --------
    >>> import torch
    >>> from skdpgraph.nn import llp_loss
    >>> probs = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> float(llp_loss(probs, torch.tensor([0, 0]), torch.tensor([[0.5, 0.5]])))
    0.0
    """
    n_bags, n_classes = target.shape
    sums = probs.new_zeros(n_bags, n_classes).index_add(0, bag, probs)
    counts = torch.bincount(bag, minlength=n_bags).to(probs.dtype)
    nonempty = counts > 0
    if not bool(nonempty.any()):
        return probs.sum() * 0.0
    predicted = sums[nonempty] / counts[nonempty, None]
    target = target[nonempty].to(probs.dtype)
    kl = torch.xlogy(target, target) - target * torch.log(predicted.clamp_min(1e-12))
    return kl.sum(dim=1).mean()


def forward_corrected_loss(logits: torch.Tensor, frequencies: torch.Tensor,
                           transition: torch.Tensor) -> torch.Tensor:
    r"""Cross-entropy of noisy-label frequencies against the model's predicted reports.

    .. math::

        \mathcal{L}_{fwd} = -\frac{1}{n}\sum_v \sum_j \lambda_{vj}
            \log\,(\hat y_v P)_j,

    where :math:`\hat y_v` is the softmax of the logits and :math:`P` the channel matrix
    of the randomiser (:math:`P_{ij}` = P(report j | true i)): the *forward* loss
    correction of Patrini et al. (CVPR 2017), here against soft frequencies
    :math:`\lambda_v` of the noisy labels (one-hot: a node's own report). Its minimiser
    over :math:`\hat y_v` satisfies :math:`\hat y_v P = \lambda_v` when that is
    feasible, so the model learns de-biased class probabilities without ever inverting
    :math:`P` (no clamping of negative estimates).

    Parameters
    ----------
    logits : Tensor of shape (n, n_classes)
        The model's class logits.
    frequencies : Tensor of shape (n, n_classes)
        Rows sum to one.
    transition : Tensor of shape (n_classes, n_classes)
        Row-stochastic channel matrix.

    Returns
    -------
    Tensor
        A scalar.

    Examples
    --------
    >>> import torch
    >>> from skdpgraph.nn import forward_corrected_loss
    >>> P = torch.tensor([[0.75, 0.25], [0.25, 0.75]])
    >>> logits = torch.tensor([[10.0, -10.0]])  # predicts class 0: reports 0 w.p. 0.75
    >>> round(float(forward_corrected_loss(logits, torch.tensor([[1.0, 0.0]]), P)), 4)
    0.2877
    """
    reports = logits.softmax(-1) @ transition.to(logits.dtype)
    return -(frequencies.to(logits.dtype) * torch.log(reports.clamp_min(1e-12))).sum(1).mean()
