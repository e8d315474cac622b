r"""Server-side reconstruction of RGNN: features, labels and bag proportions from LDP reports.

Everything here is post-processing of locally randomised reports plus the public graph
structure, so it spends no privacy budget. It lives next to the client-side randomisers
because both are data preparation, and it imports only the pure estimators of
:mod:`skdpgraph.privacy`. The operator is a scipy matrix; its rounds run as torch sparse
products in float64 (:func:`~skdpgraph.preprocessing._sparse.torch_csr`: the same sums,
faster than scipy's).

The propagation operator is the mean over :math:`\{v\} \cup N(v)`:
:math:`M = (D + I)^{-1}(A + I)`; :math:`K` rounds give :math:`M^K \Lambda`. Each round
costs one pass over the edges per propagated column.

References
----------
.. [BHWW24] Bhaila, K., Huang, W., Wu, Y. and Wu, X. (2024). "Local Differential Privacy
   in Graph Neural Networks: a Reconstruction Approach". SDM. Algorithms 1-3, Eq. (5), (14).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from skdpgraph._docstrings import fill_doc, register_fragments
from skdpgraph.graph import Graph
from skdpgraph.preprocessing._randomizers import feature_reports
from skdpgraph.preprocessing._sparse import torch_csr
from skdpgraph.privacy import grr_fs_frequency_estimate, label_transition_matrix
from skdpgraph.privacy import grr_fs_estimate_columns

__all__ = [
    "mean_propagation_operator",
    "propagate",
    "propagation_hops",
    "one_hot_blocks",
    "feature_frequency_estimates",
    "reconstruct_features",
    "reconstruct_from_clients",
    "noisy_label_means",
    "reconstruct_labels",
    "held_out_label_hops",
    "bag_label_proportions",
    "holdout_split",
]


def mean_propagation_operator(graph: Graph) -> sp.csr_matrix:
    """Row-normalised :math:`A + I` of the in-adjacency: one round of neighbourhood means.

    Parameters
    ----------
    graph : Graph
        The graph.

    Returns
    -------
    operator : scipy.sparse.csr_matrix of shape (n, n)
        The propagation operator :math:`M`.
    """
    n = graph.num_nodes
    a_hat = (graph.adjacency() + sp.identity(n, dtype=np.float64, format="csr")).tocsr()
    degree = np.asarray(a_hat.sum(axis=1)).ravel()
    return (sp.diags(1.0 / degree) @ a_hat).tocsr()


#: Largest propagated block, in bytes (512 MB): reconstruct_features propagates the
#: columns of a large graph this many at a time (64 columns at 10^6 nodes), which bounds
#: its memory at a few blocks for 10-30% more time than one block of every column.
_BLOCK_BYTES = 1 << 29


def propagate(operator: sp.csr_matrix, values: np.ndarray, hops: int) -> np.ndarray:
    """Compute ``operator^hops @ values`` (dense float64).

    Parameters
    ----------
    operator : sparse matrix of shape (n, n)
        The propagation operator.
    values : array-like of shape (n, k)
        The values propagated.
    hops : int
        The number of rounds.

    Returns
    -------
    ndarray of float64 of shape (n, k)
        The propagated values.
    """
    values = np.asarray(values, dtype=np.float64)
    if hops == 0:
        return values
    return _propagate(torch_csr(operator), values, hops)


def _propagate(matrix: torch.Tensor, values: np.ndarray, hops: int) -> np.ndarray:
    """``hops`` products of the torch CSR ``matrix`` with float64 ``values`` (1-D or 2-D)."""
    values = np.require(values, requirements=["C", "W"])  # torch reads only writable memory
    current = torch.from_numpy(values.reshape(values.shape[0], -1))
    for _ in range(hops):
        current = torch.sparse.mm(matrix, current)  # the previous block is freed here
    return current.numpy().reshape(values.shape)


def propagation_hops(operator: sp.csr_matrix, max_hops: int = 16,
                     max_spread: float = 0.5, n_probes: int = 64) -> int:
    r"""The number of propagation rounds before the means cover half the graph.

    Each round of :math:`M` averages over more nodes, which cuts the noise of the local
    reports but, once the average covers most of the graph, washes out every node's own
    neighbourhood: on a small dense graph 16 rounds leave only the global mean, every
    reconstructed label becomes the majority class and training collapses. The rule
    reads only the public structure: the largest :math:`K \le` ``max_hops`` whose
    effective sample size :math:`1/\sum_u (M^K)_{vu}^2`, the median over ``n_probes``
    evenly spaced nodes :math:`v`, is at most ``max_spread`` times the number of nodes.
    It keeps :math:`K = 16` on Cora (about 140 of 2,708 nodes) and picks 3-4 on a
    300-1,000-node graph of average degree 20.

    Parameters
    ----------
    operator : scipy.sparse matrix of shape (n, n)
        Row-stochastic propagation operator (:func:`mean_propagation_operator`).
    max_hops : int, default=16
        The most rounds allowed.
    max_spread : float, default=0.5
        Largest allowed effective sample size as a fraction of the nodes.
    n_probes : int, default=64
        Nodes whose rows of :math:`M^K` are computed (deterministic, evenly spaced).

    Returns
    -------
    int
        At least 1 (when ``max_hops >= 1``), at most ``max_hops``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> ring = sp.diags([np.ones(99), np.ones(99)], [-1, 1], shape=(100, 100)).tocsr()
    >>> operator = sp.diags(1 / (ring.sum(1).A1 + 1)) @ (ring + sp.identity(100))
    >>> propagation_hops(sp.csr_matrix(operator))
    16
    """
    n = operator.shape[0]
    probes = np.unique(np.linspace(0, n - 1, min(n_probes, n)).astype(np.int64))
    rows = torch.zeros((n, probes.size), dtype=torch.float64)
    rows[torch.from_numpy(probes), torch.arange(probes.size)] = 1.0
    transposed = torch_csr(sp.csr_matrix(operator.T))
    chosen = min(1, max_hops)
    for hops in range(1, max_hops + 1):
        rows = torch.sparse.mm(transposed, rows)  # column j is row probes[j] of operator**hops
        squares = np.einsum("ij,ij->j", rows.numpy(), rows.numpy())  # no (n, probes) temporary
        effective = np.median(1.0 / squares)
        if effective > max_spread * n:
            break
        chosen = hops
    return chosen


def one_hot_blocks(codes: np.ndarray, domain_sizes: np.ndarray) -> np.ndarray:
    """One-hot encoding of categorical codes, one block of ``domain_sizes[j]`` per column.

    Parameters
    ----------
    codes : ndarray of int of shape (n, d)
        The codes, one column per feature.
    domain_sizes : ndarray of int of shape (d,)
        The number of codes of each column.

    Returns
    -------
    ndarray of shape (n, sum(domain_sizes))
        The one-hot blocks side by side.
    """
    offsets = np.concatenate([[0], np.cumsum(domain_sizes)[:-1]])
    out = np.zeros((codes.shape[0], int(np.sum(domain_sizes))))
    np.put_along_axis(out, codes + offsets, 1.0, axis=1)
    return out


def feature_frequency_estimates(operator: sp.csr_matrix, reports: np.ndarray,
                                domain_sizes: np.ndarray, epsilon_per_feature: float,
                                n_sampled_features: int, hops: int) -> np.ndarray:
    r"""Unbiased estimates :math:`\tilde\pi_v` of each node's neighbourhood frequencies.

    The GRR-FS estimator applied to :math:`M^K` times the one-hot reports; as both are
    affine, :math:`E[\tilde\pi] = M^K` times the one-hot *true* values. Not clipped.

    Parameters
    ----------
    operator : sparse matrix of shape (n, n)
        From :func:`mean_propagation_operator`.
    reports : ndarray of int of shape (n, n_features)
        The clients' GRR-FS reports (a code per feature, or -1 where none was sampled).
    domain_sizes : ndarray of int of shape (n_features,)
        The number of codes of each feature.
    epsilon_per_feature : float
        The GRR budget of each sampled feature.
    n_sampled_features : int
        The number of features each client reports.
    hops : int
        The rounds :math:`K` of neighbourhood means.

    Returns
    -------
    ndarray of shape (n, sum(domain_sizes))
        The estimated frequencies of each code around each node.
    """
    domain_sizes = np.asarray(domain_sizes, dtype=np.int64)
    lam = propagate(operator, one_hot_blocks(reports, domain_sizes), hops)
    return grr_fs_frequency_estimate(lam, domain_sizes, epsilon_per_feature, n_sampled_features)


def reconstruct_features(operator: sp.csr_matrix, reports: np.ndarray, domain_sizes: np.ndarray,
                         epsilon_per_feature: float, n_sampled_features: int,
                         hops: int) -> np.ndarray:
    r"""Neighbourhood frequency estimates of each feature (Bhaila et al. 2024, Algorithm 1).

    The one-hot reports are averaged over ``hops`` rounds of :math:`M`, then the unbiased
    GRR-FS estimator (:func:`skdpgraph.privacy.grr_fs_frequency_estimate`) maps each
    node's neighbourhood frequencies :math:`\lambda_v` to :math:`\tilde\pi_v`. A binary
    feature becomes :math:`\tilde\pi_v[1]` clipped to ``[0, 1]``; a feature with more
    categories becomes the one-hot of :math:`\arg\max \tilde\pi_v`.

    The result is that of :func:`feature_frequency_estimates` followed by those two
    rules, computed with less: a binary feature propagates only the column of its value 1
    (the only one read), and the columns go through the rounds in blocks of at most
    512 MB, each block estimated in place and reduced to float32 before the next, so the
    memory stays a few blocks whatever the number of features.

    Parameters
    ----------
    operator : sparse matrix of shape (n, n)
        From :func:`mean_propagation_operator`.
    reports : ndarray of int of shape (n, d)
        GRR-FS reports.
    domain_sizes : ndarray of int of shape (d,)
        The number of codes of each feature.
    epsilon_per_feature : float
        The budget of each sampled feature the reports were made with.
    n_sampled_features : int
        The number :math:`m` of features each client reported.
    hops : int
        :math:`K_x`.

    Returns
    -------
    ndarray of float32 of shape (n, n_binary + sum of the other domain sizes)
        The reconstructed features.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> path = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    >>> operator = sp.csr_matrix(sp.diags(1 / (path.sum(1).A1 + 1)) @ (path + sp.identity(3)))
    >>> reports = np.array([[1, 0], [1, 2], [0, 2]])  # a binary feature, one of 3 values
    >>> # exact reports (eps = inf); node 0's tie between 0 and 2 goes to the first value
    >>> reconstruct_features(operator, reports, np.array([2, 3]), np.inf, 2, 1)
    array([[1.       , 1.       , 0.       , 0.       ],
           [0.6666667, 0.       , 0.       , 1.       ],
           [0.5      , 0.       , 0.       , 1.       ]], dtype=float32)
    """
    domain_sizes = np.asarray(domain_sizes, dtype=np.int64)
    reports = np.asarray(reports)
    n, d = reports.shape
    widths = np.where(domain_sizes <= 2, 1, domain_sizes)  # output columns of each feature
    ends = np.cumsum(widths)
    out = np.zeros((n, int(ends[-1]) if d else 0), dtype=np.float32)
    matrix = torch_csr(operator) if hops > 0 else None
    for first, last in _feature_blocks(widths, max(1, _BLOCK_BYTES // (8 * max(n, 1)))):
        offset = ends[first] - widths[first]
        sizes, starts = domain_sizes[first:last], ends[first:last] - widths[first:last] - offset
        lam = _kept_one_hot(reports[:, first:last], sizes, starts, int(ends[last - 1] - offset))
        lam = lam if matrix is None else _propagate(matrix, lam, hops)
        lam = grr_fs_estimate_columns(lam, np.repeat(sizes, widths[first:last]),
                                      epsilon_per_feature, n_sampled_features, d)
        _reduce_block(lam, sizes, starts, out[:, offset:ends[last - 1]])
    return out


def _feature_blocks(widths: np.ndarray, max_columns: int) -> list[tuple[int, int]]:
    """Runs ``[first, last)`` of consecutive features of at most ``max_columns`` columns.

    A feature wider than ``max_columns`` gets a block of its own.
    """
    blocks, first, used = [], 0, 0
    for j, width in enumerate(widths.tolist()):
        if used and used + width > max_columns:
            blocks.append((first, j))
            first, used = j, 0
        used += width
    return blocks + [(first, len(widths))] if len(widths) else blocks


def _kept_one_hot(codes: np.ndarray, sizes: np.ndarray, starts: np.ndarray,
                  width: int) -> np.ndarray:
    """The one-hot columns :func:`reconstruct_features` reads, float64 of shape (n, width).

    Feature ``j`` owns columns ``starts[j]...``: value ``sizes[j] - 1`` only for a binary
    feature (or one of a single value), every value otherwise.
    """
    binary = sizes <= 2
    column = starts + np.where(binary, 0, codes)
    hot = ~binary | (codes == sizes - 1)
    out = np.zeros((codes.shape[0], width))
    rows = np.nonzero(hot)[0]
    out[rows, column[hot]] = 1.0
    return out


def _reduce_block(pi: np.ndarray, sizes: np.ndarray, starts: np.ndarray,
                  out: np.ndarray) -> None:
    """Write the clipped binary estimates and the argmax one-hots of ``pi`` into ``out``.

    Consecutive features of one domain size are reduced together, through
    ``(n, features, size)`` views of ``pi`` and ``out``.
    """
    ends = starts + np.where(sizes <= 2, 1, sizes)
    run_ends = np.flatnonzero(np.diff(sizes, append=-1) != 0) + 1
    for first, last in zip(np.concatenate([[0], run_ends[:-1]]), run_ends):
        size, start, end = int(sizes[first]), starts[first], ends[last - 1]
        if size <= 2:
            out[:, start:end] = np.clip(pi[:, start:end], 0.0, 1.0)
            continue
        shape = (pi.shape[0], last - first, size)  # splitting the unit-stride axis: views
        target = out[:, start:end].reshape(shape)
        np.put_along_axis(target, pi[:, start:end].reshape(shape).argmax(axis=2)[:, :, None],
                          1.0, axis=2)


def reconstruct_from_clients(graph: Graph, encoder, domain_sizes: np.ndarray,
                             epsilon_per_feature: float, n_sampled_features: int, hops: int,
                             rng: np.random.Generator | None, *, operator=None,
                             name: str = "RGNN reconstruction (randomize=False)") -> np.ndarray:
    """Every node's GRR-FS report, reconstructed over ``graph`` by :func:`reconstruct_features`.

    The reports are simulated with ``rng``, or read from ``graph`` when ``encoder`` is None
    (see :func:`~skdpgraph.preprocessing._randomizers.feature_reports`). ``operator``
    defaults to :func:`mean_propagation_operator` of ``graph``.

    Parameters
    ----------
    graph : Graph
        The graph whose nodes report.
    encoder : CategoricalFeatureEncoder or None
        The public encoder of the features; None when ``graph`` holds the reports.
    domain_sizes : ndarray of int of shape (d,)
        The number of codes of each feature.
    epsilon_per_feature : float
        The budget of each sampled feature.
    n_sampled_features : int
        The number of features each client reports.
    hops : int
        The rounds of neighbourhood means.
    rng : numpy.random.Generator or None
        The clients' randomness (None when the reports are read from ``graph``).
    operator : sparse matrix of shape (n, n), default=None
        The propagation operator.
    name : str, default="RGNN reconstruction (randomize=False)"
        What is reconstructed, named in error messages.

    Returns
    -------
    ndarray of float32
        The reconstructed features (see :func:`reconstruct_features`).
    """
    reports = feature_reports(graph.x, encoder, domain_sizes, epsilon_per_feature,
                              n_sampled_features, rng, name=name)
    operator = mean_propagation_operator(graph) if operator is None else operator
    return reconstruct_features(operator, reports, domain_sizes, epsilon_per_feature,
                                n_sampled_features, hops)


def _debias(frequencies: np.ndarray, epsilon: float, n_classes: int) -> np.ndarray:
    """Apply :math:`P^{-1}` to rows of label frequencies, clamp at 0, renormalise."""
    P = label_transition_matrix(epsilon, n_classes)
    pi = np.linalg.solve(P.T, np.asarray(frequencies, dtype=np.float64).T).T
    pi = np.clip(pi, 0.0, None)
    total = pi.sum(axis=1, keepdims=True)
    return np.divide(pi, total, out=np.full_like(pi, 1.0 / n_classes), where=total > 0)


register_fragments(label_reports="""
    operator : sparse matrix of shape (n, n)
        From :func:`mean_propagation_operator`.
    train_index : ndarray of int of shape (n_train,)
        The nodes that reported a label.
    noisy_labels : ndarray of int of shape (n_train,)
        Their GRR reports.
    n_classes : int
        The number of classes.""")


@fill_doc
def noisy_label_means(operator: sp.csr_matrix, train_index: np.ndarray,
                      noisy_labels: np.ndarray, n_classes: int, hops: int) -> np.ndarray:
    r"""Compute the frequencies of the noisy labels around each training node.

    The propagation is masked to the training nodes.

    Training nodes start from the one-hot of their noisy label, all other nodes from
    zero; after ``hops`` rounds of :math:`M` each training node's row is divided by its
    sum: the share of every class among the noisy labels of its ``hops``-round
    neighbourhood, weighted by :math:`M^K`. Its expectation is the true label
    distribution of that neighbourhood times the GRR channel :math:`P`.

    Parameters
    ----------
    {{label_reports}}
    hops : int
        :math:`K_y` (0: the one-hot of each node's own report).

    Returns
    -------
    ndarray of shape (n_train, n_classes)
        Rows sum to one.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> path = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    >>> operator = sp.csr_matrix(sp.diags(1 / (path.sum(1).A1 + 1)) @ (path + sp.identity(3)))
    >>> noisy_label_means(operator, np.array([0, 2]), np.array([1, 0]), 2, 1)
    array([[0., 1.],
           [1., 0.]])
    """
    Y = np.zeros((operator.shape[0], n_classes))
    np.add.at(Y, (train_index, noisy_labels), 1.0)
    lam = propagate(operator, Y, hops)[train_index]
    return lam / lam.sum(axis=1, keepdims=True)  # a node's own report keeps its row nonzero


def held_out_label_hops(operator: sp.csr_matrix, train_index: np.ndarray,
                        noisy_labels: np.ndarray, held_index: np.ndarray,
                        held_labels: np.ndarray, n_classes: int, max_hops: int) -> int:
    r"""The rounds whose label means best predict reports they were not computed from.

    For every :math:`K \le` ``max_hops``, the :math:`M^K`-weighted frequencies of the
    reports of ``train_index`` around each held-out node (without its own report) are
    compared with that node's report by the Brier score; the :math:`K` with the lowest
    mean wins (the smaller on ties). Under GRR the expected score is, up to a constant,
    :math:`(p - q)^2` times the squared distance between the node's :math:`K`-round
    label distribution and its true one-hot label, plus the variance of the frequencies:
    more rounds average more reports but reach further from the node's own class, and
    the score weighs the two on the data. Post-processing of the reports.

    Parameters
    ----------
    operator : sparse matrix of shape (n, n)
        From :func:`mean_propagation_operator`.
    train_index, noisy_labels : ndarray of int
        The nodes whose reports are averaged, and their reports.
    held_index, held_labels : ndarray of int
        The nodes scored (not in ``train_index``), and their reports.
    n_classes, max_hops : int
        The number of classes and the most rounds tried.

    Returns
    -------
    int
        The chosen number of rounds, in ``[1, max_hops]``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> ring = sp.diags([np.ones(99), np.ones(99)], [-1, 1], shape=(100, 100)).tocsr()
    >>> operator = sp.csr_matrix(sp.diags(1 / (ring.sum(1).A1 + 1)) @ (ring + sp.identity(100)))
    >>> labels = np.arange(100) // 50  # a path whose two halves hold one class each
    >>> held = np.arange(0, 100, 5)
    >>> train = np.setdiff1d(np.arange(100), held)
    >>> held_out_label_hops(operator, train, labels[train], held, labels[held], 2, 16)
    3
    """
    values = np.zeros((operator.shape[0], n_classes + 1))
    values[train_index, noisy_labels] = 1.0
    values[train_index, n_classes] = 1.0  # the weight of the reports reached
    reports = np.eye(n_classes)[held_labels]
    matrix, current = torch_csr(operator), torch.from_numpy(values)
    best, best_score = 1, np.inf
    for hops in range(1, max_hops + 1):
        current = torch.sparse.mm(matrix, current)
        rows = current[torch.as_tensor(held_index)].numpy()
        weight = rows[:, -1:]
        frequencies = np.where(weight > 0, rows[:, :-1] / np.maximum(weight, 1e-300),
                               1.0 / n_classes)
        score = float(np.square(frequencies - reports).sum(axis=1).mean())
        if score < best_score:
            best, best_score = hops, score
    return best


@fill_doc
def reconstruct_labels(operator: sp.csr_matrix, train_index: np.ndarray,
                       noisy_labels: np.ndarray, n_classes: int, epsilon: float,
                       hops: int) -> np.ndarray:
    r"""Bhaila et al. (2024), Algorithm 2: label distributions of the training nodes.

    The frequencies of :func:`noisy_label_means` are de-biased with :math:`P^{-1}`
    (Eq. 14), clamped at zero and renormalised.

    Parameters
    ----------
    {{label_reports}}
    epsilon : float
        The labels' GRR budget.
    hops : int
        :math:`K_y`.

    Returns
    -------
    ndarray of shape (len(train_index), n_classes)
        Estimated label distribution of each training node (rows sum to one).
    """
    return _debias(noisy_label_means(operator, train_index, noisy_labels, n_classes, hops),
                   epsilon, n_classes)


def bag_label_proportions(bags: np.ndarray, noisy_labels: np.ndarray, n_classes: int,
                          epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    r"""De-biased label proportion of every bag that holds at least one training node.

    :math:`\tilde b_r = P^{-1} b'_r` (once), clamped and renormalised, where
    :math:`b'_r` is the mean one-hot noisy label of the training nodes in bag :math:`r`.
    Bags without training nodes are dropped.

    Parameters
    ----------
    bags : ndarray of int of shape (n_train,)
        Bag (cluster) of each training node.
    noisy_labels : ndarray of int of shape (n_train,)
        The GRR reports of the training nodes' labels.
    n_classes : int
        The number of classes.
    epsilon : float
        The labels' GRR budget.

    Returns
    -------
    bag_of_node : ndarray of int of shape (n_train,)
        Bags renumbered ``0..n_nonempty - 1``.
    proportions : ndarray of shape (n_nonempty, n_classes)
        The de-biased label proportions of each bag.
    """
    used, bag_of_node = np.unique(bags, return_inverse=True)
    counts = np.zeros((used.size, n_classes))
    np.add.at(counts, (bag_of_node, noisy_labels), 1.0)
    observed = counts / counts.sum(axis=1, keepdims=True)
    return bag_of_node.astype(np.int64), _debias(observed, epsilon, n_classes)


def holdout_split(n: int, fraction: float,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random positions ``(kept, held_out)`` of ``n`` items, ``round(fraction * n)`` held out.

    ``fraction=0`` holds out nothing (and draws nothing from ``rng``); otherwise at least
    one item is held out and at least one kept.

    Parameters
    ----------
    n : int
        The number of items.
    fraction : float
        The share held out.
    rng : numpy.random.Generator
        The generator of the split.

    Returns
    -------
    kept, held_out : ndarray of int
        The positions kept and held out.

    Raises
    ------
    ValueError
        If ``fraction > 0`` and ``n < 2``.
    """
    if fraction <= 0:
        return np.arange(n), np.arange(0)
    if n < 2:
        raise ValueError(f"validation_fraction={fraction:g} needs at least 2 labelled nodes; "
                         f"got {n}.")
    n_out = min(max(int(round(fraction * n)), 1), n - 1)
    order = rng.permutation(n)
    return np.sort(order[n_out:]), np.sort(order[:n_out])
