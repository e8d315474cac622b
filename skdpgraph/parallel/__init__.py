"""Training past one process: data-parallel DP-SGD over ``torch.distributed``.

Many independent fits (a grid search, cross-validation, the benchmark runner) need no code
here: they run on a Dask cluster through joblib's ``"dask"`` backend, see the user guide's
*Scaling* page. This package holds what one large fit needs:
:func:`train_dpsgd_distributed`, the DP-SGD loop of :mod:`skdpgraph.training` with each
step's global batch split across processes.
"""

from skdpgraph._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "_dpsgd": ["train_dpsgd_distributed"],
})
