"""Probe feature choices for DRW and FDP on Cora's public split, outside the estimators.

Each configuration is a JSON object of estimator parameters plus these transforms of the
node features, applied to the whole graph before fitting (the estimator is unchanged):

- ``"pe": k`` spectral embedding of the structure: the ``k`` leading eigenvectors of
  ``D^-1/2 (A + I) D^-1/2``, each row scaled to norm ``"pe_scale"`` (default 1), appended
  to the features, or replacing them with ``"pe_only": true``. It reads only the structure,
  which DRW's unit treats as public; FDP's unit protects edges, so it is not for FDP.
- ``"proj": r`` a fixed Gaussian random projection to ``r`` columns (data independent).
- ``"l2norm": true`` / ``"rownorm": true`` rows scaled to unit L2 / L1 norm.

One JSON line per configuration (5 seeds by default, epsilon 8) is printed and appended to
``--out``::

    python benchmarks/studies/drwfdp_features/drwfdp_feature_probe.py \\
        --out benchmarks/studies/drwfdp_features/drwfdp-cora-tune.jsonl \\
        '{"estimator": "DRWClassifier", "pe": 32, "pe_only": true}'
"""

import argparse
import json
import os
import sys
from pathlib import Path

for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")

REPO_ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO_ROOT), str(REPO_ROOT / "benchmarks")]

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import torch  # noqa: E402
from sweep import emit_record  # noqa: E402  (benchmarks/ is on sys.path)


def spectral_embedding(adjacency, k):
    """The ``k`` leading eigenvectors of the symmetrically normalised ``A + I``."""
    from scipy.sparse.linalg import eigsh

    a = ((adjacency + adjacency.T) > 0).astype(float)
    scale = sp.diags((np.asarray(a.sum(1)).ravel() + 1) ** -0.5)
    operator = scale @ (a + sp.eye(a.shape[0])) @ scale
    v0 = np.ones(a.shape[0])  # a fixed start: the same basis on every run
    return eigsh(operator, k=k, which="LA", v0=v0)[1]


def transform(features, adjacency, cfg):
    """Features after the transforms named in ``cfg`` (which it empties of them)."""
    out = features
    if cfg.pop("rownorm", False):
        out = out / np.maximum(out.sum(1, keepdims=True), 1e-12)
    if cfg.pop("l2norm", False):
        out = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    proj = cfg.pop("proj", 0)
    if proj:
        projection = np.random.default_rng(123).standard_normal((out.shape[1], proj))
        out = out @ (projection / np.sqrt(proj))
    k, scale, only = cfg.pop("pe", 0), cfg.pop("pe_scale", 1.0), cfg.pop("pe_only", False)
    if k:
        pe = spectral_embedding(adjacency, k)
        pe = scale * pe / np.maximum(np.linalg.norm(pe, axis=1, keepdims=True), 1e-12)
        out = pe if only else np.hstack([out, pe])
    return out.astype(np.float32)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("configs", nargs="+", type=json.loads)
    p.add_argument("--epsilon", type=float, default=8.0)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--data-root", type=Path, default=REPO_ROOT.parent / "shared" / "datasets")
    p.add_argument("--out", type=Path, default=None, help="append JSON lines here")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    import skdpgraph
    from skdpgraph import Graph
    from skdpgraph.datasets import load_dataset

    ds = load_dataset("cora", args.data_root)
    features = ds.graph.x() if callable(ds.graph.x) else ds.graph.x
    features = features.toarray() if sp.issparse(features) else np.asarray(features)
    train, test = ds.split["train"], ds.split["test"]
    for config in args.configs:
        params = dict(config)
        cls = getattr(skdpgraph, params.pop("estimator", "DRWClassifier"))
        graph = Graph(ds.graph.edge_index, transform(features, ds.graph.adjacency(), params))
        accuracies = []
        for seed in range(args.seeds):
            est = cls(epsilon=args.epsilon, random_state=seed, **params)
            est.fit(graph.nodes(train), ds.y[train])
            accuracies.append(100 * est.score(graph.nodes(test), ds.y[test]))
        emit_record({"dataset": "cora", "split": "public", "epsilon": args.epsilon,
                     "estimator": cls.__name__, "config": config,
                     "mean": float(np.mean(accuracies)), "std": float(np.std(accuracies)),
                     "accuracies": accuracies, "script": "drwfdp_feature_probe.py"}, args.out)


if __name__ == "__main__":
    main()
