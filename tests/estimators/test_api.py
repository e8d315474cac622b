"""One API across estimators: parameter names, history_, verbose progress bars, devices."""

import inspect
import math
import re

import numpy as np
import pandas as pd
import pytest
import torch

import skdpgraph
from skdpgraph import _progress
from skdpgraph.datasets import make_csbm
from skdpgraph.estimators._base import resolve_device
from tests._fast_estimators import FAST, NO_TRAINING_LOOP, make

ESTIMATORS = [skdpgraph.DPMLPClassifier, skdpgraph.GAPClassifier, skdpgraph.DRWClassifier,
              skdpgraph.FDPClassifier, skdpgraph.RGNNClassifier]
COLUMNS = ["stage", "epoch", "loss", "train_accuracy", "validation_accuracy", "epsilon"]


def _stages(name: str) -> list[str]:
    if name.startswith("ProGAP"):
        return ["stage 0", "stage 1", "stage 2"]  # hops=2: K + 1 stages
    if name == "RGNN":
        return [f"classifier {i}" for i in range(1, 6)]  # ensemble_size=5
    if name == "GAP-node":
        return ["encoder"]  # the vote head, node level's default, trains no classifier
    return ["encoder", "classifier"] if name.startswith("GAP") else ["classifier"]


@pytest.fixture(scope="module")
def data():
    graph = make_csbm(n_nodes=120, n_classes=3, n_features=8, random_state=0)
    return graph.nodes()[:80], graph.y[:80]


# ---------------------------------------------------------------- names
def _parameters(cls) -> dict:
    return dict(inspect.signature(cls.__init__).parameters)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_one_name_per_concept(cls):
    params = _parameters(cls)
    assert "epsilon" in params, "every estimator takes the total budget epsilon"
    assert {p for p in params if "layers" in p} <= {"num_layers", "encoder_layers"}
    assert "backbone" not in params and "layers" not in params
    if "validation_fraction" in params:  # "auto": a split only where it costs no privacy
        assert params["validation_fraction"].default in ("auto", None)
    assert params["device"].default == "auto" and params["verbose"].default is False


def test_graph_convolution_type_is_conv_everywhere():
    assert "conv" in _parameters(skdpgraph.DRWClassifier)
    assert "conv" in _parameters(skdpgraph.RGNNClassifier)
    assert "conv" in inspect.signature(skdpgraph.nn.GNN).parameters


# ---------------------------------------------------------------- history_
@pytest.mark.parametrize("name", [n for n in FAST if n not in NO_TRAINING_LOOP])
def test_history_is_one_table_with_the_same_columns(name, data):
    est = make(name, random_state=0, private_diagnostics=True).fit(*data)
    table = pd.DataFrame(est.history_)
    assert list(table.columns) == COLUMNS
    stages = _stages(name)
    assert list(dict.fromkeys(table["stage"])) == stages  # stages in training order
    for stage in stages:
        epochs = table.loc[table["stage"] == stage, "epoch"].tolist()
        assert epochs == list(range(1, len(epochs) + 1)) and epochs
    # No validation split by default: below 500 training nodes "auto" holds out nothing.
    assert table["validation_accuracy"].isna().all()
    assert table["loss"].map(math.isfinite).all()
    assert table["train_accuracy"].between(0, 1).all()
    epsilon = table["epsilon"].to_numpy()
    assert np.all(np.diff(epsilon) >= 0) and np.all(epsilon >= 0)
    if name == "FDP-private":  # the inference release is paid after training
        assert epsilon[-1] < est.epsilon_spent_
    elif name == "GAP-node":  # the vote head: the encoder's 5/8, then the votes' release
        assert epsilon[-1] == pytest.approx(0.625 * est.epsilon, rel=0.02)
        assert epsilon[-1] < est.epsilon_spent_
    else:
        assert epsilon[-1] == pytest.approx(est.epsilon_spent_, rel=1e-9)


@pytest.mark.parametrize("name", ["DPMLP", "GAP-edge", "RGNN"])
def test_history_of_a_non_private_fit_states_infinite_epsilon(name, data):
    table = pd.DataFrame(make(name, random_state=0, epsilon=np.inf).fit(*data).history_)
    assert list(table.columns) == COLUMNS and np.isinf(table["epsilon"]).all()


@pytest.mark.parametrize("name", ["GAP-edge", "RGNN"])
def test_history_records_validation_accuracy_with_a_validation_split(name, data):
    table = pd.DataFrame(make(name, random_state=0, validation_fraction=0.25).fit(*data).history_)
    assert list(table.columns) == COLUMNS
    assert table["validation_accuracy"].between(0, 1).all()


# ---------------------------------------------------------------- verbose
def _final_bars(err: str) -> dict[str, str]:
    """The last state of each progress bar on screen, by its label."""
    bars = {}
    for segment in re.split(r"[\r\n]", err):
        match = re.match(r"(\w+Classifier \w+(?: \d+)?):", segment)
        if match:
            bars[match.group(1)] = segment
    return bars


@pytest.mark.parametrize("name", [n for n in FAST if n not in NO_TRAINING_LOOP])
def test_verbose_shows_one_bar_per_stage_with_loss_and_epsilon(name, data, capfd, monkeypatch):
    monkeypatch.setattr(_progress, "_redraws_in_place", lambda stream: True)  # a terminal
    est = make(name, random_state=0, verbose=True, private_diagnostics=True).fit(*data)
    out, err = capfd.readouterr()
    bars = _final_bars(err)
    cls = type(est).__name__
    assert set(bars) == {f"{cls} {stage}" for stage in _stages(name)}
    for stage in _stages(name):
        last = [r for r in est.history_ if r["stage"] == stage][-1]
        bar = bars[f"{cls} {stage}"]
        assert "100%" in bar, f"the {stage} bar did not stay on screen finished: {bar!r}"
        assert f"loss={last['loss']:.4g}" in bar
        expected = "inf" if math.isinf(last["epsilon"]) else f"{last['epsilon']:.3g}"
        assert f"eps={expected}" in bar
    assert err.endswith("\n")  # left on screen, not cleared


@pytest.mark.parametrize("name", list(FAST))
def test_quiet_by_default(name, data, capfd):
    make(name, random_state=0).fit(*data)
    assert capfd.readouterr() == ("", "")


# ---------------------------------------------------------------- device
@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("device", ["cuda:1", "cuda:0", torch.device("cuda", 1)])
def test_cuda_device_without_cuda_names_the_parameter_and_value(device):
    with pytest.raises(ValueError, match=re.escape(
            f"device={device!r} but CUDA is not available on this machine")):
        resolve_device(device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_cuda_index_is_a_valid_device_parameter(cls, data):
    """'cuda:1' passes parameter validation; here, without CUDA, fit says why it fails."""
    with pytest.raises(ValueError, match=r"device='cuda:1' but CUDA is not available"):
        cls(device="cuda:1").set_params(**(  # the fixture's CSBM features are continuous
            {"feature_type": "continuous"} if cls is skdpgraph.RGNNClassifier else {})).fit(*data)


@pytest.mark.parametrize("device", ["gpu", "cuda:x"])
def test_a_string_that_names_no_device_is_refused_by_name(device):
    with pytest.raises(ValueError, match=re.escape(f"device={device!r} is not a device")):
        resolve_device(device)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_index_on_a_cuda_machine(data):
    last = torch.cuda.device_count() - 1
    est = make("DPMLP", random_state=0, device=f"cuda:{last}").fit(*data)
    assert est.device_ == torch.device("cuda", last)
    assert est.predict(data[0]).shape == (len(data[1]),)
    missing = f"cuda:{last + 1}"
    with pytest.raises(ValueError, match=re.escape(
            f"device={missing!r} but this machine has {last + 1} CUDA device(s)")):
        resolve_device(missing)
