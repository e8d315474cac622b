"""GPU path: every estimator fits and predicts on CUDA with the accounting of the CPU run.

Skipped without CUDA. On a GPU machine: ``python -m pytest -q -m gpu tests/test_gpu.py``.
"""

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from skdpgraph.datasets import make_csbm
from skdpgraph.estimators._base import resolve_device
from tests._fast_estimators import FAST, make

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


@pytest.fixture(scope="module")
def data():
    graph = make_csbm(n_nodes=300, n_classes=3, n_features=8, random_state=0)
    index = np.arange(0, 300, 2)
    return graph.graph.nodes(index), graph.y[index], graph.graph.nodes(np.arange(1, 300, 2))


def test_auto_picks_cuda():
    assert resolve_device("auto").type == "cuda"


@pytest.mark.parametrize("name", list(FAST))
def test_fits_and_predicts_on_cuda_with_the_cpu_accounting(name, data):
    X, y, X_new = data
    gpu = make(name, random_state=0, device="cuda").fit(X, y)
    cpu = make(name, random_state=0, device="cpu").fit(X, y)
    assert gpu.device_.type == "cuda"
    assert gpu.epsilon_spent_ == cpu.epsilon_spent_ and gpu.delta_ == cpu.delta_
    proba = gpu.predict_proba(X_new)
    assert proba.shape == (len(X_new), len(gpu.classes_)) and np.isfinite(proba).all()
    assert gpu.score(X, y) > 1 / len(gpu.classes_)


@pytest.mark.parametrize("name", list(FAST))
def test_gpu_trained_model_predicts_on_a_cpu_only_process(name, data, tmp_path):
    X, y, X_new = data
    est = make(name, random_state=0, device="cuda").fit(X, y)
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps((est, X_new)))
    script = textwrap.dedent(f"""
        import pickle, torch
        assert not torch.cuda.is_available()
        est, nodes = pickle.loads(open({str(path)!r}, "rb").read())
        print(est.predict(nodes).shape[0])
    """)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=os.getcwd(), timeout=300)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == len(X_new)


def test_graph_classifier_fits_on_cuda_with_the_cpu_accounting():
    from skdpgraph import DPGraphClassifier
    from skdpgraph.datasets import make_graph_classification

    X, y = make_graph_classification(n_graphs=60, random_state=0)
    settings = dict(epsilon=4.0, epochs=2, batch_size=16, hidden_dim=8, random_state=0)
    gpu = DPGraphClassifier(**settings, device="cuda").fit(X, y)
    cpu = DPGraphClassifier(**settings, device="cpu").fit(X, y)
    assert gpu.device_.type == "cuda"
    assert gpu.epsilon_spent_ == cpu.epsilon_spent_ and gpu.delta_ == cpu.delta_
    proba = gpu.predict_proba(X)
    assert proba.shape == (len(X), len(gpu.classes_)) and np.isfinite(proba).all()
