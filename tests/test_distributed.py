"""Past one process: Dask-backed searches and data-parallel DP-SGD equal their single-process runs.

The DP-SGD test forks two CPU processes that form a gloo process group on the loopback
interface; the Dask test starts a local two-worker cluster. Both compare against the same
computation in this process.
"""

import datetime
import math
import multiprocessing
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from skdpgraph.nn import MLP
from skdpgraph.privacy import DPSGDPlan, plan_dpsgd, steps_for_epochs
from skdpgraph.training import (EpsilonTracker, Generators, OptimizerSettings, TensorExamples,
                                train_dpsgd)

ROOT = Path(__file__).parents[1]
DELTA = 1e-3
N, BATCH = 96, 24
# Single-process and data-parallel runs differ only in float32 summation order (the
# clipped-gradient sum is formed per rank, then all-reduced): about 1e-7 relative per step.
# Over 16 Adam steps with lr 0.05, whose normalised updates do not amplify such errors
# (the gradients are dominated by noise of std ~0.04, far from Adam's eps), the parameters
# agree to ~1e-6; the tolerance leaves a factor of 10 to 100 over that.
ATOL, RTOL = 1e-5, 1e-4

needs_fork = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods() or not torch.distributed.is_available(),
    reason="needs the fork start method and torch.distributed")


def _loss(module, batch):
    x, y = batch
    logits = module(x)
    return nn.functional.cross_entropy(logits, y, reduction="none"), logits.argmax(-1) == y


def _examples():
    g = torch.Generator().manual_seed(0)
    return TensorExamples(torch.randn(N, 6, generator=g), torch.randint(0, 3, (N,), generator=g))


def _plans():
    """Name -> (plan, optimiser). Adam hides a constant scale error in the gradient, SGD not."""
    steps = steps_for_epochs(4, N, BATCH)
    common = dict(delta=DELTA, num_examples=N, batch_size=BATCH, steps=steps, max_grad_norm=1.0)
    poisson = plan_dpsgd(epsilon=4.0, sampling="poisson", **common)
    return {
        "poisson": (poisson, "adam"),
        "poisson_sgd": (poisson, "sgd"),
        "without_replacement": (
            plan_dpsgd(epsilon=4.0, sampling="without_replacement", **common), "adam"),
        "non_private": (plan_dpsgd(epsilon=math.inf, sampling="poisson", **common), "adam"),
        "non_private_sgd": (plan_dpsgd(epsilon=math.inf, sampling="poisson", **common), "sgd"),
    }


def _train(config, train, batch_seed=1):
    """``train`` (single-process or distributed) on the shared setup; its parameters, history."""
    plan, optimizer = config
    torch.manual_seed(0)
    module = MLP(6, 16, 3)
    settings = OptimizerSettings(lr=0.05 if optimizer == "adam" else 0.5, name=optimizer)
    result = train(module, _examples(), _loss, plan, optimizer=settings,
                   generators=Generators(torch.Generator().manual_seed(batch_seed),
                                         torch.Generator().manual_seed(2)),
                   callbacks=[EpsilonTracker(lambda steps: plan.epsilon(DELTA, steps))])
    return {k: v.detach().clone() for k, v in result.module.state_dict().items()}, result.history


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world_size, port, out_dir):
    """One rank: every plan's distributed run, then a run with a rank-dependent batch stream."""
    from skdpgraph.parallel import train_dpsgd_distributed

    torch.set_num_threads(1)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    # A rank left waiting on a peer that raised fails after 60 s instead of gloo's 30 min.
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                                         rank=rank, world_size=world_size,
                                         timeout=datetime.timedelta(seconds=60))
    try:
        results = {name: _train(config, train_dpsgd_distributed)
                   for name, config in _plans().items()}
        try:
            _train(_plans()["poisson"], train_dpsgd_distributed, batch_seed=1 + rank)
            results["mismatch"] = "no error"
        except ValueError as error:
            results["mismatch"] = str(error)
        results["diverged"] = _diverge(train_dpsgd_distributed)
        torch.save(results, Path(out_dir) / f"rank{rank}.pt")
    finally:
        torch.distributed.destroy_process_group()


def _diverge(train):
    """Train with one example whose loss is NaN: the error message, or "no error"."""
    examples = _examples()
    examples.tensors[0][5] = math.nan  # seen by one rank's shard at a time
    plan = _plans()["poisson"][0]
    torch.manual_seed(0)
    try:
        train(MLP(6, 16, 3), examples, _loss, plan, optimizer=OptimizerSettings(lr=0.05),
              generators=Generators(torch.Generator().manual_seed(1)))
    except FloatingPointError as error:
        return str(error)
    return "no error"


@pytest.fixture(scope="module")
def distributed_runs(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("ranks")
    torch.multiprocessing.start_processes(_worker, args=(2, _free_port(), str(out_dir)), nprocs=2,
                                          start_method="fork")
    return [torch.load(out_dir / f"rank{r}.pt") for r in range(2)]


@needs_fork
@pytest.mark.parametrize("name", ["poisson", "poisson_sgd", "without_replacement",
                                  "non_private", "non_private_sgd"])
def test_two_processes_train_the_single_process_model(distributed_runs, name):
    plan = _plans()[name][0]
    expected, expected_history = _train(_plans()[name], train_dpsgd)
    for rank, runs in enumerate(distributed_runs):
        params, history = runs[name]
        for key, value in expected.items():
            torch.testing.assert_close(params[key], value, atol=ATOL, rtol=RTOL,
                                       msg=lambda m: f"rank {rank}, {key}: {m}")
        # Same plan, same number of steps: the accountant's epsilon is identical.
        assert [r["epsilon"] for r in history] == [r["epsilon"] for r in expected_history]
        assert history[-1]["epsilon"] == plan.epsilon(DELTA)
        # History is over the global batches, not over this rank's shard.
        np.testing.assert_allclose([r["loss"] for r in history],
                                   [r["loss"] for r in expected_history], rtol=1e-5)
        np.testing.assert_allclose([r["train_accuracy"] for r in history],
                                   [r["train_accuracy"] for r in expected_history], rtol=1e-6)
    # The ranks hold bit-identical models: they apply the same all-reduced update.
    for key, value in distributed_runs[0][name][0].items():
        assert torch.equal(distributed_runs[1][name][0][key], value)


@needs_fork
def test_noise_is_added_once_per_step(distributed_runs):
    """The private model differs from the non-private one by one noise draw's worth, not more.

    Were noise added on both ranks, the distributed model would not match the single-process
    one (checked above) and its distance to the noiseless run would grow by about sqrt(2).
    """
    private, _ = distributed_runs[0]["poisson"]
    single, _ = _train(_plans()["poisson"], train_dpsgd)
    assert all(torch.allclose(private[k], single[k], atol=ATOL, rtol=RTOL) for k in single)
    noiseless, _ = distributed_runs[0]["non_private"]
    assert any(not torch.allclose(private[k], noiseless[k], atol=1e-3) for k in private)


@needs_fork
def test_ranks_with_different_batch_streams_are_refused(distributed_runs):
    for runs in distributed_runs:
        assert "generator must be in the same state on every rank" in runs["mismatch"]


@needs_fork
def test_a_non_finite_loss_on_one_rank_stops_every_rank(distributed_runs):
    single = _diverge(train_dpsgd)
    assert "the loss is non-finite" in single
    for runs in distributed_runs:  # both ranks raised, neither waited for the other
        assert "training diverged: the loss is non-finite on 1 rank(s) at step" in runs["diverged"]


def test_without_a_process_group_it_says_how_to_start_one():
    from skdpgraph.parallel import train_dpsgd_distributed

    plan = DPSGDPlan("poisson", N, BATCH, 1, noise_multiplier=1.0, max_grad_norm=1.0)
    with pytest.raises(RuntimeError, match="init_process_group"):
        train_dpsgd_distributed(MLP(6, 16, 3), _examples(), _loss, plan,
                                optimizer=OptimizerSettings(lr=0.1),
                                generators=Generators(torch.Generator()))


def test_importing_parallel_loads_no_torch():
    probe = "import skdpgraph.parallel, sys; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "False"


# ---------------------------------------------------------------- many fits on a Dask cluster
def _search(n_jobs):
    from sklearn.model_selection import GridSearchCV

    from skdpgraph import DPMLPClassifier
    from skdpgraph.datasets import make_csbm

    ds = make_csbm(n_nodes=120, n_features=8, random_state=0)
    search = GridSearchCV(
        DPMLPClassifier(epsilon=8.0, noise_multiplier=1.5, epochs=3, hidden_dim=8,
                        batch_size=32, random_state=0),
        {"lr": [0.01, 0.1], "max_grad_norm": [0.5, 2.0]}, cv=2, n_jobs=n_jobs)
    return search.fit(ds.graph.nodes(np.arange(120)), ds.y)


def test_grid_search_on_a_dask_cluster_equals_the_single_process_search():
    distributed = pytest.importorskip("distributed")
    import joblib

    expected = _search(n_jobs=None)
    # Worker processes, not threads: torch's global generator, which parameter
    # initialisation seeds and draws from, is shared by the threads of one process.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as tasks, joblib.parallel_backend("dask"):
            searched = _search(n_jobs=-1)
    # 4 candidates x 2 folds, and the refit, ran on the cluster's two workers.
    assert len(tasks.data) >= 8
    assert len({task["worker"] for task in tasks.data}) == 2
    np.testing.assert_array_equal(searched.cv_results_["mean_test_score"],
                                  expected.cv_results_["mean_test_score"])
    assert searched.best_params_ == expected.best_params_
    assert searched.best_estimator_.epsilon_spent_ == expected.best_estimator_.epsilon_spent_
