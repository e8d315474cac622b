"""Public stacking and one private vote release: a study prototype at edge level.

NOT a library mechanism (not in ``skdpgraph``) and not vetted: the calibration is the
textbook Laplace and Gaussian mechanisms at the sensitivity argued below and checked by
``tests/test_edge_level_public_stacking.py``, with no accountant or audit. Records of a
finite budget mark it ``"private": "unvetted"``.

At edge level the node features and labels are public and one undirected edge is
protected, so only what touches the edges costs budget:

1. Stage 1 (public): a logistic regression on each node's row-normalised features, ``C``
   chosen on the validation nodes. Every node gets its class probabilities; a training
   node gets either its cross-fitted probabilities (5-fold within the training nodes,
   ``train_rows="crossfit"``) or its one-hot label (``"onehot"``). Each row is a
   probability vector: non-negative, L1 norm 1.
2. Stage 2 (the only use of the edges): one release, for every node at once, of the sum
   over its neighbours of their stage-1 rows, ``S = A R``. Adding or removing the edge
   ``(u, v)`` changes ``S_u`` by ``R_v`` and ``S_v`` by ``R_u`` and nothing else: L1
   sensitivity 2, L2 sensitivity ``sqrt(2)``. Laplace noise of scale ``2 / epsilon`` per
   coordinate makes it ``epsilon``-DP; Gaussian noise of std ``sqrt(2)`` times the
   library's ``calibrate_gaussian_noise`` multiplier makes it ``(epsilon, delta)``-DP at
   GAP's edge-level default delta (``propagation.edge_delta``).
3. Stage 3 (post-processing): a second logistic regression on the node's stage-1
   log-probabilities (cross-fitted on the training nodes) and its noisy sum, raw and/or
   divided by the noisy sum's own mass (a degree estimate from the release, never the
   true degree); ``C`` and the input form chosen on the validation nodes, whose noisy
   sums are part of the same release. Test nodes predict from the same release.

One hop only: a second hop of the public rows (``A^2 R``) moves by up to the degrees of
the edge's end points when one edge changes, so it has no degree-free sensitivity, and a
second hop of the noisy sums reads the edges again; neither is built here.
"""

import math
import time

import numpy as np

#: Stage 1's ``C`` grid (chosen on the validation nodes), as ``propagation.fit_logistic``.
C_GRID = (0.1, 1.0, 10.0, 100.0)

#: Stage 3's ``C`` grid: stronger regularisation too, since the noisy inputs overfit.
STAGE3_C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0)

#: Stage 3's input forms: the own-node block alone (the release unused), or with the noisy
#: sum raw, divided by its own mass, or both.
FORMS = ("own", "raw", "normalised", "both")

#: The release options measured; the defaults were chosen on the validation nodes (README).
TRAIN_ROWS = ("crossfit", "onehot")
NOISES = ("laplace", "gaussian")
DEFAULT_TRAIN_ROWS = "onehot"
DEFAULT_NOISE = "laplace"

#: Stage 1's folds for the cross-fitted training rows.
FOLDS = 5


def _logistic(c):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=300)


def public_stage(x, y, split, seed):
    """Stage 1: the graph-free logistic regression and its cross-fitted training rows.

    Parameters
    ----------
    x : array or sparse matrix of shape (n, d)
        The public node features (row-normalised by the caller).
    y : ndarray of shape (n,)
        The public labels.
    split : dict
        ``"train"``, ``"val"`` and ``"test"`` node indices.
    seed : int
        The seed of the folds.

    Returns
    -------
    dict
        ``probs`` (n, classes) of the model fitted on every training node,
        ``crossfit`` (n_train, classes) of the 5-fold models, ``C``, and the stage's
        validation and test accuracies.
    """
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    train = np.asarray(split["train"])
    best = None
    for c in C_GRID:
        model = _logistic(c).fit(x[train], y[train])
        val = model.score(x[split["val"]], y[split["val"]])
        if best is None or val > best[0]:
            best = (val, c, model)
    val, c, model = best
    folds = StratifiedKFold(FOLDS, shuffle=True, random_state=seed)
    crossfit = cross_val_predict(_logistic(c), x[train], y[train], cv=folds,
                                 method="predict_proba")
    return {"probs": model.predict_proba(x), "crossfit": crossfit, "C": c,
            "val_accuracy": val, "test_accuracy": model.score(x[split["test"]], y[split["test"]])}


def vote_rows(stage, y, split, train_rows):
    """The released rows: stage-1 probabilities, the training nodes' rows replaced.

    ``train_rows="crossfit"``: their cross-fitted probabilities; ``"onehot"``: their labels.
    Every row is non-negative with L1 norm 1.
    """
    if train_rows not in TRAIN_ROWS:
        raise ValueError(f"vote_rows: train_rows must be one of {TRAIN_ROWS}, got {train_rows!r}.")
    rows = np.array(stage["probs"], dtype=np.float64)
    train = np.asarray(split["train"])
    rows[train] = (stage["crossfit"] if train_rows == "crossfit"
                   else np.eye(rows.shape[1])[y[train]])
    return rows


def own_log_probs(stage, split):
    """Stage 3's own-node block: log stage-1 probabilities, cross-fitted on training nodes."""
    probs = np.array(stage["probs"], dtype=np.float64)
    probs[np.asarray(split["train"])] = stage["crossfit"]
    return np.log(np.clip(probs, 1e-6, None))


def clean_release(adjacency, rows):
    """The released statistic without noise: each node's sum of its neighbours' rows."""
    return np.asarray(adjacency @ rows, dtype=np.float64)


def laplace_scale(epsilon, hops=1):
    """Laplace scale per coordinate: L1 sensitivity 2 per hop, ``hops`` releases composed."""
    return 2.0 * hops / epsilon


def gaussian_sigma(epsilon, delta):
    """Gaussian std per coordinate: L2 sensitivity ``sqrt(2)`` times the analytic multiplier."""
    from skdpgraph.privacy import calibrate_gaussian_noise

    return math.sqrt(2.0) * calibrate_gaussian_noise(epsilon, delta,
                                                     context="vote-sum release")


def release(adjacency, rows, epsilon, noise, delta, rng):
    """Stage 2: the one private release, every node's noisy sum (noise-free at ``inf``).

    Parameters
    ----------
    adjacency : sparse matrix of shape (n, n)
        The private graph (symmetric, 0/1).
    rows : ndarray of shape (n, classes)
        Non-negative rows of L1 norm 1 (:func:`vote_rows`).
    epsilon : float
        The budget; ``inf`` releases the noise-free sums (non-private).
    noise : {"laplace", "gaussian"}
        The mechanism.
    delta : float
        The Gaussian's delta (unused by Laplace).
    rng : numpy.random.Generator
        The noise's randomness.

    Returns
    -------
    ndarray of shape (n, classes)
    """
    sums = clean_release(adjacency, rows)
    if math.isinf(epsilon):
        return sums
    if noise == "laplace":
        return sums + rng.laplace(0.0, laplace_scale(epsilon), sums.shape)
    if noise == "gaussian":
        return sums + rng.normal(0.0, gaussian_sigma(epsilon, delta), sums.shape)
    raise ValueError(f"release: noise must be one of {NOISES}, got {noise!r}.")


def degree_estimate(released):
    """The degree read from the release: the noisy sum's coordinate total, at least 1."""
    return np.maximum(released.sum(axis=1), 1.0)


def stage3_inputs(own, released, form):
    """Stage 3's inputs: the own-node block and the noisy sum in ``form`` (``FORMS``)."""
    normalised = released / degree_estimate(released)[:, None]
    blocks = {"own": [], "raw": [released], "normalised": [normalised],
              "both": [released, normalised]}[form]
    return np.concatenate([own] + blocks, axis=1)


def post_process(own, released, y, split, fallback=None):
    """Stage 3: the second logistic regression, form and ``C`` chosen on validation nodes.

    Reads only the public ``own`` block, the public labels and the ``released`` sums.
    ``fallback`` (public class probabilities of every node, e.g. stage 1's): a further
    candidate, form ``"stage1"``, kept unless a fit beats its validation accuracy.

    Returns
    -------
    dict
        ``predictions`` and class ``probabilities`` for every node, the chosen ``form``
        and ``C``, and the validation accuracy.
    """
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train, val = np.asarray(split["train"]), np.asarray(split["val"])
    best = None
    if fallback is not None:
        best = (float(np.mean(fallback[val].argmax(1) == y[val])), "stage1", None,
                fallback.argmax(1), fallback)
    for form in FORMS:
        inputs = stage3_inputs(own, released, form)
        for c in STAGE3_C_GRID:
            model = make_pipeline(StandardScaler(), _logistic(c)).fit(inputs[train], y[train])
            score = model.score(inputs[val], y[val])
            if best is None or score > best[0]:
                best = (score, form, c, model.predict(inputs), model.predict_proba(inputs))
    return {"val_accuracy": best[0], "form": best[1], "C": best[2], "predictions": best[3],
            "probabilities": best[4]}


def stack_predict(adjacency, stage, y, split, epsilon, noise, train_rows, delta, rng,
                  fallback=False):
    """The three stages: one release from ``adjacency``, then post-processing only.

    ``fallback``: stage 1's own predictions are a candidate of stage 3 (``post_process``).
    """
    released = release(adjacency, vote_rows(stage, y, split, train_rows), epsilon, noise,
                       delta, rng)
    return post_process(own_log_probs(stage, split), released, y, split,
                        stage["probs"] if fallback else None)


def stack(ds, split_for_seed, args, emit):
    """Stage 1 once per seed, then one release per option and budget (module doc)."""
    import torch

    from propagation import edge_delta
    from skdpgraph.privacy import row_normalize

    x = ds.graph.x
    if hasattr(x, "tocsr"):
        x = x.tocsr()
        norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1))).ravel()
        x = (x.multiply(1.0 / np.where(norms == 0, 1.0, norms)[:, None])).tocsr()
    else:
        x = row_normalize(torch.as_tensor(np.asarray(ds.graph.features()),
                                          dtype=torch.float32)).numpy()
    adjacency, delta = ds.graph.adjacency(), edge_delta(ds.graph.num_nodes)
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        split, start = split_for_seed(seed), time.perf_counter()
        stage = public_stage(x, ds.y, split, seed)
        if not args.stage1_fallback:  # the same stage 1 as the run without the fallback
            emit({"model": "stack-stage1", "seed": seed, "epsilon": math.inf, "private": False,
                  "C": stage["C"], "val_accuracy": stage["val_accuracy"],
                  "test_accuracy": stage["test_accuracy"],
                  "fit_seconds": time.perf_counter() - start})
        noises = args.noises or NOISES
        for train_rows in args.train_rows or TRAIN_ROWS:
            for noise in noises:
                for epsilon in args.epsilons:
                    if math.isinf(epsilon) and noise != noises[0]:
                        continue  # one noise-free record per option
                    emit(_stack_record(adjacency, stage, ds.y, split, epsilon, noise,
                                       train_rows, delta, seed, args.stage1_fallback))


def _stack_record(adjacency, stage, y, split, epsilon, noise, train_rows, delta, seed,
                  fallback):
    """One release and its stage 3: the record's fields."""
    rng = np.random.default_rng([seed, int(1000 * min(epsilon, 1e6))])
    result = stack_predict(adjacency, stage, y, split, epsilon, noise, train_rows, delta, rng,
                           fallback)
    private = math.isfinite(epsilon)
    test = np.asarray(split["test"])
    return {"model": "stack-fallback" if fallback else "stack", "seed": seed,
            "epsilon": epsilon, "train_rows": train_rows,
            "noise": noise if private else "none", "hops": 1,
            "private": "unvetted" if private else False, "delta": delta,
            "noise_scale": (laplace_scale(epsilon) if noise == "laplace"
                            else gaussian_sigma(epsilon, delta)) if private else 0.0,
            "form": result["form"], "C": result["C"], "val_accuracy": result["val_accuracy"],
            "test_accuracy": float(np.mean(result["predictions"][test] == y[test]))}
