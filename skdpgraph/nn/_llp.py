"""Learning from label proportions: the bag-level loss of RGNN."""

from __future__ import annotations

import torch

__all__ = ["llp_loss"]


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
