"""Propagated public rows: a study prototype, and the signal against PMA's noise per hop.

At edge level the features and labels are public, so any unsupervised function of the
features (raw rows, a truncated SVD of them) or the training labels may be aggregated
without a trained encoder. Two measurements:

- ``propagate``: a PROTOTYPE for this study only (not in ``skdpgraph``). It aggregates
  public rows over ``hops`` hops and fits a logistic regression (its ``C`` chosen on the
  validation nodes) on each node's own row and its aggregations. ``norm="pma"`` is GAP's
  aggregation: sums over in-neighbours, row-normalised, with the Gaussian noise of the
  library's ``private_multi_hop_aggregation`` at the std that ``plan_gap`` calibrates for
  edge level (K hops sharing epsilon, GAP's default delta): edge-level private at a
  finite epsilon. ``norm="gcn"`` is GCN's symmetric normalisation with self-loops
  (SGC-like): NON-PRIVATE, at ``epsilon=inf`` only, to separate normalisation from noise.
  ``norm="laplace-l1"`` is a CANDIDATE, not a library mechanism: the same sums over
  L1-normalised rows with Laplace noise of scale 2K / epsilon per coordinate (one edge
  moves two rows' sums by one L1-unit row each, so the L1 sensitivity of a hop is 2; the
  K hops compose by basic composition to pure epsilon-DP). Its calibration is standard
  but has no vetted accountant or test here: the records mark it ``"unvetted"``.
- ``noise``: per hop, the norm of each node's noise-free aggregation against the norm of
  the noise PMA adds (std x sqrt(width)), and the cosine between the released and the
  noise-free rows, by degree; the same cosine for the Laplace candidate.
"""

import math

import numpy as np

#: ``noise``: the rows measured by default (see :func:`public_rows`).
NOISE_ROWS = ("labels-all", "gap", "labels", "svd-16", "svd-64", "features")

#: Degree buckets of the ``noise`` records (lower bounds; the last is open).
BUCKETS = (1, 2, 4, 8, 16)


def edge_delta(num_nodes):
    """GAP's default delta at edge level: 1 / (10 x the possible undirected edges)."""
    return 1.0 / (10 * num_nodes * (num_nodes - 1) / 2)


def noise_std(epsilon, hops, num_nodes):
    """The per-coordinate std that edge-level GAP's plan calibrates for ``hops`` hops."""
    from skdpgraph.privacy import plan_gap

    if math.isinf(epsilon):
        return 0.0, 0.0
    plan = plan_gap(epsilon=epsilon, delta=edge_delta(num_nodes), privacy_level="edge",
                    hops=hops, directed=False, num_examples=1, batch_size=1, epochs=1,
                    encoder_epochs=1, max_grad_norm=1.0)
    return plan.noise_std, plan.noise_multiplier


def public_rows(kind, ds, split, seed):
    """The rows to aggregate (before PMA's row normalisation), all from public data.

    ``"features"``: the raw feature rows. ``"svd-K"``: a K-dimensional truncated SVD of
    them (unsupervised). ``"labels"``: the training nodes' one-hot labels, zeros elsewhere.
    ``"labels-all"``: every node's one-hot label: an oracle, for the ``noise``
    measurement only (it gives the most concentrated sums unit rows can give). ``"gap"``:
    what edge-level GAP sums by default: the class probabilities of its encoder (fitted at
    ``epsilon=inf`` with defaults on the training nodes), one-hot labels on those nodes.
    """
    import scipy.sparse as sp
    from sklearn.decomposition import TruncatedSVD

    x = ds.graph.x if sp.issparse(ds.graph.x) else ds.graph.features()
    classes = int(ds.y.max()) + 1
    if kind == "features":
        return np.asarray(x.todense() if sp.issparse(x) else x, dtype=np.float32)
    if kind == "gap":
        return _gap_rows(ds, split, seed)
    if kind.startswith("svd-"):
        svd = TruncatedSVD(int(kind[4:]), random_state=seed)
        return svd.fit_transform(x).astype(np.float32)
    rows = np.zeros((ds.graph.num_nodes, classes), np.float32)
    known = np.arange(ds.graph.num_nodes) if kind == "labels-all" else np.asarray(split["train"])
    rows[known, ds.y[known]] = 1.0
    return rows


def _gap_rows(ds, split, seed):
    """Edge-level GAP's default rows: encoder probabilities, the training labels in place."""
    import torch

    from registry import ESTIMATORS
    from skdpgraph.nn import class_probabilities, with_known_labels

    train = np.asarray(split["train"])
    clf = ESTIMATORS["gap-edp"](math.inf, seed).fit(ds.graph.nodes(train), ds.y[train])
    known = (torch.from_numpy(train), torch.from_numpy(np.asarray(ds.y[train])))
    return with_known_labels(class_probabilities(clf.encoder_, ds.graph), known).numpy()


def aggregate(adjacency, rows, hops, std, seed, norm="pma"):
    """``(n, hops, d)`` aggregations: PMA's (noisy at ``std`` > 0) or GCN's normalisation."""
    import scipy.sparse as sp
    import torch

    from skdpgraph.privacy import private_multi_hop_aggregation, row_normalize

    x = torch.from_numpy(rows)
    if norm == "pma":
        generator = torch.Generator().manual_seed(seed) if std > 0 else None
        return private_multi_hop_aggregation(adjacency, x, hops, std, generator)
    if std > 0:
        raise ValueError("aggregate: norm='gcn' is the non-private reference; std must be 0.")
    a = adjacency + sp.eye(adjacency.shape[0], dtype=np.float32)
    scale = sp.diags(1.0 / np.sqrt(np.asarray(a.sum(axis=1)).ravel()))
    s = (scale @ a @ scale).tocsr()
    out, current = [], row_normalize(x).numpy()
    for _ in range(hops):
        current = np.asarray(s @ current, dtype=np.float32)
        out.append(current)
    return torch.from_numpy(np.stack(out, axis=1))


def laplace_aggregate(adjacency, rows, hops, epsilon, seed):
    """``(n, hops, d)``: the Laplace candidate (see the module doc), L1-normalised rows."""
    generator = np.random.default_rng(seed)
    current, out = _l1_rows(rows), []
    for _ in range(hops):
        total = np.asarray(adjacency @ current, dtype=np.float32)
        if math.isfinite(epsilon):
            total += generator.laplace(0.0, 2.0 * hops / epsilon, total.shape)
        current = _l1_rows(total)
        out.append(current)
    return np.stack(out, axis=1)


def _l1_rows(rows):
    """Rows divided by their L1 norm (zero rows stay zero)."""
    norms = np.abs(rows).sum(axis=1, keepdims=True)
    return (rows / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def _cosine(a, b):
    """Row-wise cosine of ``a`` and ``b`` (0 where either row is zero)."""
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return (a * b).sum(-1) / np.where(norms == 0, np.inf, norms)


def fit_logistic(inputs, y, split):
    """Logistic regression on ``inputs``, ``C`` of the best validation accuracy."""
    from sklearn.linear_model import LogisticRegression

    best = None
    for c in (0.1, 1.0, 10.0, 100.0):
        model = LogisticRegression(C=c, max_iter=300)
        model.fit(inputs[split["train"]], y[split["train"]])
        val = model.score(inputs[split["val"]], y[split["val"]])
        if best is None or val > best[0]:
            best = (val, c, model.score(inputs[split["test"]], y[split["test"]]))
    return {"val_accuracy": best[0], "C": best[1], "test_accuracy": best[2]}


def _released(adjacency, rows, hops, norm, epsilon, seed):
    """One configuration's aggregations and what the record says of its privacy."""
    if norm == "laplace-l1":
        return (laplace_aggregate(adjacency, rows, hops, epsilon, seed),
                {"private": "unvetted" if math.isfinite(epsilon) else False,
                 "laplace_scale": 2.0 * hops / epsilon})
    std, sigma = noise_std(epsilon, hops, adjacency.shape[0])
    return (aggregate(adjacency, rows, hops, std, seed, norm).numpy(),
            {"private": std > 0, "noise_std": std, "noise_multiplier": sigma})


def propagate(ds, split_for_seed, args, emit):
    """The prototype over rows x normalisation x hops x budgets (see the module doc)."""
    from skdpgraph.privacy import row_normalize
    import torch

    adjacency, norms = ds.graph.adjacency(), args.norms or ("gcn", "pma", "laplace-l1")
    configurations = [(n, math.inf) for n in norms if n == "gcn"] + [
        (n, e) for n in norms if n != "gcn" for e in args.epsilons
        if math.isfinite(e) or n == "pma"]
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        split = split_for_seed(seed)
        for kind in args.rows or ("features", "svd-64", "svd-16", "labels", "gap"):
            rows = public_rows(kind, ds, split, seed)
            own = row_normalize(torch.from_numpy(public_rows(
                "features" if kind in ("labels", "gap") else kind, ds, split, seed))).numpy()
            record = {"model": "prototype-propagated-rows", "rows": kind, "seed": seed}
            if kind == "features" and "gcn" in norms:  # no graph: the features alone
                emit({**record, "norm": "none", "private": False, "hops": 0,
                      "epsilon": math.inf, **fit_logistic(own, ds.y, split)})
            if kind == "gap":  # GAP's encoder alone (no graph): its predicted classes
                emit({**record, "norm": "encoder", "private": False, "hops": 0,
                      "epsilon": math.inf, **{f"{part}_accuracy": float(np.mean(
                          rows[split[part]].argmax(1) == ds.y[split[part]]))
                          for part in ("val", "test")}})
            for hops in args.hops or (1, 2, 3):
                for norm, epsilon in configurations:
                    agg, privacy = _released(adjacency, rows, hops, norm, epsilon, seed)
                    inputs = np.concatenate([own, agg.reshape(len(agg), -1)], axis=1)
                    emit({**record, "norm": norm, "hops": hops, "epsilon": epsilon, **privacy,
                          **fit_logistic(inputs, ds.y, split)})


def _by_degree(values, degree):
    """Mean of ``values`` per degree bucket (``BUCKETS``), with the bucket's node count."""
    out = {}
    for low, high in zip(BUCKETS, BUCKETS[1:] + (np.inf,)):
        mask = (degree >= low) & (degree < high)
        if mask.any():
            name = f"{low}-{high - 1:g}" if np.isfinite(high) else f"{low}+"
            out[name] = {"nodes": int(mask.sum()), "mean": float(values[mask].mean())}
    return out


def _noise_record(adjacency, rows, clean, hops, epsilon, seed):
    """PMA's std, its hop-1 signal/noise per node and both mechanisms' cosines per hop."""
    std, sigma = noise_std(epsilon, hops, adjacency.shape[0])
    signal = np.linalg.norm(adjacency @ _unit_rows(rows), axis=1)
    noisy = aggregate(adjacency, rows, hops, std, seed + 1).numpy()
    laplace = laplace_aggregate(adjacency, rows, hops, epsilon, seed + 1)
    return ({"noise_std": std, "noise_multiplier": sigma,
             "laplace_std": math.sqrt(2) * 2.0 * hops / epsilon},
            signal / (std * math.sqrt(rows.shape[1])), _cosine(noisy, clean["pma"][:, :hops]),
            _cosine(laplace, clean["laplace-l1"][:, :hops]))


def _calibration_record(num_nodes, mean_degree, epsilon):
    """Noise of each candidate at ``epsilon``, from public quantities only.

    PMA's per-coordinate std for 1 and 2 hops at GAP's default delta and at delta=1e-5;
    the Laplace candidate's std; randomised response on each possible edge (flip
    probability 1 / (1 + e^epsilon)): the false edges per node it releases and the share
    of released edges that are true.
    """
    flip = 1.0 / (1.0 + math.exp(epsilon))
    false_per_node = (num_nodes - 1 - mean_degree) * flip
    true_per_node = mean_degree * (1 - flip)
    record = {"model": "calibration", "epsilon": epsilon, "default_delta": edge_delta(num_nodes),
              "rr_flip_probability": flip, "rr_false_edges_per_node": false_per_node,
              "rr_true_edges_per_node": true_per_node,
              "rr_share_true": true_per_node / (true_per_node + false_per_node)}
    for hops in (1, 2):
        record[f"pma_std_hops{hops}"] = noise_std(epsilon, hops, num_nodes)[0]
        record[f"pma_std_hops{hops}_delta1e-5"] = _pma_std(epsilon, hops, 1e-5)
        record[f"laplace_std_hops{hops}"] = math.sqrt(2) * 2.0 * hops / epsilon
    return record


def _pma_std(epsilon, hops, delta):
    """PMA's per-coordinate std at edge level for ``delta`` (``plan_gap``)."""
    from skdpgraph.privacy import plan_gap

    return plan_gap(epsilon=epsilon, delta=delta, privacy_level="edge", hops=hops,
                    directed=False, num_examples=1, batch_size=1, epochs=1, encoder_epochs=1,
                    max_grad_norm=1.0).noise_std


def _unit_rows(rows):
    """Rows divided by their L2 norm (zero rows stay zero)."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def noise(ds, split_for_seed, args, emit):
    """Signal norm / noise norm and cosine to the noise-free rows, per hop and budget."""
    import graphs

    adjacency = ds.graph.adjacency()
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    summary = graphs.degree_summary(ds.graph)
    emit({"model": "degrees", **summary})
    for epsilon in [e for e in args.epsilons if math.isfinite(e)]:
        emit(_calibration_record(ds.graph.num_nodes, summary["mean_degree"], epsilon))
    split, seed = split_for_seed(args.first_seed), args.first_seed
    for kind in args.rows or NOISE_ROWS:
        rows = public_rows(kind, ds, split, seed)
        clean = {"pma": aggregate(adjacency, rows, 4, 0.0, seed).numpy(),
                 "laplace-l1": laplace_aggregate(adjacency, rows, 4, math.inf, seed)}
        for hops in (1, 2, 3, 4):
            for epsilon in [e for e in args.epsilons if math.isfinite(e)]:
                stds, ratio, cosine, laplace = _noise_record(adjacency, rows, clean, hops,
                                                             epsilon, seed)
                emit({"model": "pma-signal-to-noise", "rows": kind, "width": rows.shape[1],
                      "hops": hops, "epsilon": epsilon, **stds,
                      "hop1_signal_over_noise_median": float(np.median(ratio[degree > 0])),
                      "hop1_signal_over_noise_by_degree": _by_degree(ratio, degree),
                      "cosine_mean_per_hop": [float(c) for c in cosine[degree > 0].mean(0)],
                      "cosine_hop1_by_degree": _by_degree(cosine[:, 0], degree),
                      "laplace_cosine_mean_per_hop": [
                          float(c) for c in laplace[degree > 0].mean(0)],
                      "laplace_cosine_hop1_by_degree": _by_degree(laplace[:, 0], degree)})
