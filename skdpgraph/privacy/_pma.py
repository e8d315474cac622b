"""PMA: GAP's private multi-hop aggregation mechanism (normalise, sum, add noise), in torch.

The mechanism lives in the privacy layer (not in ``nn``) because it is where the noise
that protects the edges is drawn: it is a Gaussian mechanism on the sum aggregation, with
a declared sensitivity, and the estimators only compose it.

.. math::

    \\bar X_0 = \\mathrm{rownorm}(Z), \\qquad
    X_k = A \\bar X_{k-1} + \\mathcal N(0, (\\sigma \\Delta)^2 I), \\qquad
    \\bar X_k = \\mathrm{rownorm}(X_k), \\quad k = 1..K,

with ``A[target, source] = 1`` (sum over in-neighbours, no self-loops, no degree
normalisation) [SSBG23]_. Every row of ``X̄_{k-1}`` has norm <= 1, so the L2 change of
``A X̄_{k-1}`` is: adding/removing one directed edge, 1; one undirected edge, sqrt(2);
one node v of out-degree <= D, sqrt(D) on the *other* nodes' rows (v's own row, the
sum over its in-neighbours, held fixed, as in [SSBG23]_); and, when the in-degree is
bounded by D_in as well, sqrt(D_in^2 + D) on all rows, v's own included (its row, a sum
of at most D_in unit vectors, moves by at most D_in; each of its <= D out-neighbours'
rows by one unit vector). The removed node is isolated: the node set is public.

References
----------
.. [SSBG23] Sajadmanesh, Shamsabadi, Bellet, Gatica-Perez. "GAP: Differentially Private
   Graph Neural Networks with Aggregation Perturbation", USENIX Security 2023,
   Algorithm 1, Lemmas 1-2, Theorems 1-4.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from skdpgraph._docstrings import fill_doc, register_fragments
from skdpgraph.sampling import bound_in_degree, bound_out_degree

__all__ = [
    "row_normalize",
    "sum_in_neighbours",
    "private_multi_hop_aggregation",
    "noisy_sum_aggregation",
    "noisy_neighbour_votes",
    "PMARelease",
]


_NORM_FLOOR = 1e-12


class _RowNormalize(torch.autograd.Function):
    """``x / max(||x||, floor)`` row by row, with a fused backward pass.

    The forward is exactly the autograd expression; the backward is its closed form,
    ``(g - y <g, y>) / ||x||`` (only ``g / floor`` on rows below the floor), two passes
    over ``x``'s size where autograd's chain of division, norm and clamp takes about ten
    (it was a third of GAP's classifier epoch; this backward is about 3x faster).
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        norm = x.norm(dim=-1, keepdim=True)
        clamped = norm.clamp_min(_NORM_FLOOR)
        out = x / clamped
        ctx.save_for_backward(out, clamped, norm >= _NORM_FLOOR)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        out, clamped, above = ctx.saved_tensors
        # Row-wise <g, y> as a batch of 1x1 products: one pass, no (n, d) temporary.
        along = torch.bmm(grad.reshape(-1, 1, grad.shape[-1]),
                          out.reshape(-1, out.shape[-1], 1)).reshape(clamped.shape)
        return torch.addcmul(grad, out, along * above, value=-1).mul_(clamped.reciprocal())


def row_normalize(x: torch.Tensor) -> torch.Tensor:
    """Divide every row by its L2 norm; all-zero rows stay zero (norm <= 1 either way).

    Exactly ``x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)``, gradient included (up to
    rounding), with a faster backward pass.

    Parameters
    ----------
    x : Tensor of shape (..., d)
        The rows to normalise; not modified.

    Returns
    -------
    normalised : Tensor of shape (..., d)
        Every row divided by its L2 norm.

    Examples
    --------
    >>> import torch
    >>> row_normalize(torch.tensor([[3.0, 4.0], [0.0, 0.0]]))
    tensor([[0.6000, 0.8000],
            [0.0000, 0.0000]])
    """
    return _RowNormalize.apply(x)


def _to_torch_csr(adjacency: sp.csr_matrix, device: torch.device) -> torch.Tensor:
    adjacency = sp.csr_matrix(adjacency)
    with warnings.catch_warnings():  # torch flags sparse CSR as beta; products are stable
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(
            torch.from_numpy(adjacency.indptr.astype(np.int64)),
            torch.from_numpy(adjacency.indices.astype(np.int64)),
            torch.ones(adjacency.nnz, dtype=torch.float32),
            size=adjacency.shape, device=device, check_invariants=False,
        )


register_fragments(adjacency_and_rows="""
    adjacency : scipy sparse matrix or torch sparse CSR tensor of shape (n, n)
        In-adjacency, ``A[target, source] = 1``; entries are treated as 1.
    x : Tensor of shape (n, d)
        The rows to aggregate, one per node.""")


@fill_doc
def sum_in_neighbours(adjacency: sp.spmatrix | torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Sum every node's in-neighbours' rows, ``A @ x`` (the pre-noise aggregation).

    Parameters
    ----------
    {{adjacency_and_rows}}

    Returns
    -------
    Tensor of shape (n, d)
        Row ``v``: the sum of the rows of ``v``'s in-neighbours.
    """
    if not isinstance(adjacency, torch.Tensor):
        adjacency = _to_torch_csr(adjacency, x.device)
    return adjacency @ x


def private_multi_hop_aggregation(adjacency: sp.spmatrix, x: torch.Tensor, hops: int,
                                  noise_std: float,
                                  generator: torch.Generator | None) -> torch.Tensor:
    """Run PMA: ``hops`` noisy sum aggregations, each followed by row normalisation.

    Parameters
    ----------
    adjacency : scipy sparse matrix of shape (n, n)
        In-adjacency ``A[target, source]`` (already degree-bounded at node level).
    x : Tensor of shape (n, d)
        Input embeddings; they are row-normalised first (X̄_0).
    hops : int
        K >= 1.
    noise_std : float
        Std of the Gaussian noise added to every coordinate of every hop: the noise
        multiplier times the sensitivity. 0 only for the non-private (epsilon=inf) run.
    generator : torch.Generator or None
        Generator on ``x.device`` for the noise (required when ``noise_std > 0``).

    Returns
    -------
    Tensor of shape (n, hops, d)
        X̄_1 .. X̄_K; every row has unit norm (or is zero when a node has no in-neighbours
        and there is no noise).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp, torch
    >>> from skdpgraph._random import RandomStreams
    >>> path = sp.csr_matrix((np.ones(4), ([0, 1, 1, 2], [1, 0, 2, 1])), shape=(3, 3))
    >>> out = private_multi_hop_aggregation(path, torch.eye(3), 2, 0.5,
    ...                                     RandomStreams(0).torch("noise"))
    >>> out.shape, bool(torch.allclose(out.norm(dim=-1), torch.ones(3, 2)))
    (torch.Size([3, 2, 3]), True)
    """
    if hops < 1:
        raise ValueError(f"private_multi_hop_aggregation: hops must be >= 1; got {hops}.")
    if not noise_std >= 0:
        raise ValueError(f"private_multi_hop_aggregation: noise_std must be >= 0; got {noise_std}.")
    if noise_std > 0 and generator is None:
        raise ValueError("private_multi_hop_aggregation: a generator is required for the noise.")
    matrix = _to_torch_csr(adjacency, x.device)
    current = row_normalize(x.float())
    outputs = []
    for _ in range(hops):  # K sparse products; each is vectorised over all nodes
        current = row_normalize(noisy_sum_aggregation(matrix, current, noise_std, generator))
        outputs.append(current)
    return torch.stack(outputs, dim=1)


@fill_doc
def noisy_sum_aggregation(adjacency: sp.spmatrix | torch.Tensor, x: torch.Tensor,
                          noise_std: float, generator: torch.Generator | None) -> torch.Tensor:
    """Run one PMA hop before normalisation: ``A @ x + N(0, noise_std^2)`` on every coordinate.

    Parameters
    ----------
    {{adjacency_and_rows}}
    noise_std : float
        Std of the Gaussian noise added to every coordinate; 0: no noise.
    generator : torch.Generator or None
        Generator on ``x.device`` for the noise (required when ``noise_std > 0``).

    Returns
    -------
    Tensor of shape (n, d)
        The noisy sums of the in-neighbours' rows.
    """
    aggregated = sum_in_neighbours(adjacency, x)
    if noise_std > 0:
        aggregated = aggregated + noise_std * torch.randn(
            aggregated.shape, generator=generator, device=aggregated.device)
    return aggregated


def noisy_neighbour_votes(adjacency: sp.spmatrix, log_probabilities: torch.Tensor, hops: int,
                          noise_std: float, weight: float,
                          generator: torch.Generator,
                          labelled: tuple[torch.Tensor, torch.Tensor] | None = None
                          ) -> torch.Tensor:
    """PMA on predicted classes, kept as vote counts: the logits that GAP's vote head adds.

    Hop ``k`` counts, over each node's in-neighbours, their predicted classes
    ``argmax L_{k-1}`` (one-hot rows; ``L_0`` = ``log_probabilities``; a ``labelled``
    node's row is its own label's at every hop, a noisy label propagation) plus Gaussian noise
    of std ``noise_std``, and adds ``weight * counts / noise_std`` to the logits:
    ``L_k = L_{k-1} + weight * (A onehot(argmax L_{k-1}) + N(0, noise_std^2)) / noise_std``.
    Every summed row, label or prediction, has norm 1 and is the summed node's own (with
    what earlier hops released), so each hop is one PMA hop (same sensitivity); dividing by
    the noise std makes the noise in every logit N(0, weight^2), whatever sigma and D.
    Unlike :func:`private_multi_hop_aggregation` the sums are not normalised: a node with
    more agreeing neighbours gets a stronger vote. A one-hot row spends the whole unit
    norm on one class, where a row-normalised probability vector spreads it: on Amazon
    Photo and Computers (epsilon=8, 5 seeds, paired noise draws) hard votes scored 0.25
    points above soft ones, and level with them on Facebook (see "How the defaults were
    chosen").

    Parameters
    ----------
    adjacency : scipy sparse matrix of shape (n, n)
        In-adjacency ``A[target, source]``, already degree-bounded.
    log_probabilities : Tensor of shape (n, C)
        Every node's log class probabilities from its own features.
    hops : int
        K >= 1 noisy sums, each on the probabilities after the previous votes.
    noise_std : float
        > 0: the noise multiplier times the sensitivity.
    weight : float
        > 0: the vote weight, in noise standard deviations per unit count.
    generator : torch.Generator
        Generator on ``log_probabilities.device`` for the noise.
    labelled : (index, labels) or None, default=None
        Positions of the nodes whose labels are known (the fitted nodes) and their labels
        (class indices): these nodes vote for their label instead of their prediction.

    Returns
    -------
    Tensor of shape (n, C)
        ``L_K - L_0``: the votes to add to each node's own log-probabilities.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp, torch
    >>> from skdpgraph._random import RandomStreams
    >>> star = sp.csr_matrix((np.ones(3), ([0, 0, 0], [1, 2, 3])), shape=(4, 4))
    >>> own = torch.log(torch.tensor([[.5, .5], [.9, .1], [.9, .1], [.9, .1]]))
    >>> votes = noisy_neighbour_votes(star, own, 1, 0.1, 2.0, RandomStreams(0).torch("noise"))
    >>> votes.shape, bool(votes[0, 0] > votes[0, 1])
    (torch.Size([4, 2]), True)
    >>> labelled = (torch.tensor([1, 2, 3]), torch.tensor([1, 1, 1]))  # their labels say 1
    >>> votes = noisy_neighbour_votes(star, own, 1, 0.1, 2.0, RandomStreams(0).torch("noise"),
    ...                               labelled)
    >>> bool(votes[0, 1] > votes[0, 0])
    True
    """
    if hops < 1:
        raise ValueError(f"noisy_neighbour_votes: hops must be >= 1; got {hops}.")
    if not (noise_std > 0 and weight > 0):
        raise ValueError("noisy_neighbour_votes: noise_std and weight must be > 0; got "
                         f"noise_std={noise_std}, weight={weight}.")
    matrix = _to_torch_csr(adjacency, log_probabilities.device)
    own = log_probabilities.float()
    logits = own
    for _ in range(hops):
        classes = logits.argmax(-1)
        if labelled is not None:
            classes[labelled[0].to(classes.device)] = labelled[1].to(classes.device).long()
        predicted = torch.nn.functional.one_hot(classes, logits.shape[-1]).to(own.dtype)
        counts = noisy_sum_aggregation(matrix, predicted, noise_std, generator)
        logits = logits + (weight / noise_std) * counts
    return logits - own


@dataclass(frozen=True)
class PMARelease:
    """One PMA release as a plan fixes it: degree bounding, then noisy hops.

    Build it from a plan with :meth:`of`; the plan holds the accounting, this object the
    mechanism that draws the noise.

    Parameters
    ----------
    noise_std : float
        Std of the Gaussian noise on every coordinate of every hop (0: not private).
    hops : int
        K, the hops of one :meth:`aggregate` or :meth:`votes` call.
    max_degree : int or None, default=None
        Out-degree bound D applied before aggregating (node level); None: no bounding.
    max_in_degree : int or None, default=None
        In-degree bound D_in applied after the out-degree bound; None: none.
    stagewise : bool, default=False
        The hops are released one per stage (ProGAP): only :meth:`aggregate_once` applies.
    """

    noise_std: float
    hops: int
    max_degree: int | None = None
    max_in_degree: int | None = None
    stagewise: bool = False

    @classmethod
    def of(cls, plan: Any) -> PMARelease:
        """The release that ``plan`` (a :class:`~skdpgraph.privacy.GAPPlan`) accounts for."""
        node = plan.node_level
        return cls(plan.noise_std, plan.hops, plan.max_degree if node else None,
                   plan.max_in_degree if node else None, stagewise=plan.layout.stagewise)

    def bounded(self, adjacency: sp.spmatrix, streams: Any) -> sp.spmatrix:
        """The adjacency that a release aggregates over: degree-bounded at node level.

        The kept edges come from a fresh ``"degree"`` stream of ``streams``; one release
        bounds once and uses the result for all its hops (or stages).
        """
        if self.max_degree is None:
            return adjacency
        degree = streams.numpy("degree")
        adjacency = bound_out_degree(adjacency, self.max_degree, degree)
        if self.max_in_degree is not None:
            adjacency = bound_in_degree(adjacency, self.max_in_degree, degree)
        return adjacency

    def aggregate_once(self, adjacency: sp.spmatrix, embeddings: torch.Tensor,
                       noise: torch.Generator | None) -> torch.Tensor:
        """One noisy hop on an already :meth:`bounded` adjacency (a progressive stage).

        Returns a Tensor of shape (n, d): row-normalised noisy sums of the row-normalised
        ``embeddings``, with noise std :attr:`noise_std` from ``noise``.
        """
        with torch.no_grad():
            return private_multi_hop_aggregation(adjacency, embeddings, 1, self.noise_std,
                                                 noise)[:, 0]

    def aggregate(self, adjacency: sp.spmatrix, embeddings: torch.Tensor,
                  streams: Any) -> torch.Tensor:
        """One PMA release: degree bounding (node level), then K noisy hops.

        Parameters
        ----------
        adjacency : scipy sparse matrix of shape (n, n)
            In-adjacency ``A[target, source]`` of the queried graph.
        embeddings : Tensor of shape (n, d)
            Encoder embeddings (row-normalised by PMA), on the device to compute on.
        streams : RandomStreams
            The edges kept by the degree bounds come from a ``"degree"`` stream, the noise
            from a ``"noise"`` stream: fresh ones for every release.

        Returns
        -------
        Tensor of shape (n, K, d), on the device of ``embeddings``.
        """
        if self.stagewise:
            raise ValueError("PMARelease.aggregate: a progressive release aggregates stage by "
                             "stage (bounded, then aggregate_once per stage).")
        with torch.no_grad():
            return private_multi_hop_aggregation(
                self.bounded(adjacency, streams), embeddings, self.hops, self.noise_std,
                streams.torch("noise", embeddings.device))

    def votes(self, adjacency: sp.spmatrix, log_probabilities: torch.Tensor, weight: float,
              streams: Any, labelled: tuple[torch.Tensor, torch.Tensor] | None = None
              ) -> torch.Tensor:
        """One vote release (vote head): degree bounding, then K noisy vote hops.

        ``labelled``: the fitted nodes' ``(index, labels)``, which vote for their label.

        Returns the Tensor of shape (n, C) of :func:`noisy_neighbour_votes`, with noise
        std :attr:`noise_std` from a fresh ``"noise"`` stream of ``streams``.
        """
        with torch.no_grad():
            return noisy_neighbour_votes(
                self.bounded(adjacency, streams), log_probabilities, self.hops, self.noise_std,
                weight, streams.torch("noise", log_probabilities.device), labelled)
