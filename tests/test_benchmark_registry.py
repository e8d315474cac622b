"""benchmarks/registry.py: the benchmark configurations cover the registered estimators."""

import importlib.util
from pathlib import Path

import pytest

import skdpgraph

ROOT = Path(__file__).parents[1]


def _registry():
    spec = importlib.util.spec_from_file_location("registry", ROOT / "benchmarks" / "registry.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tables(registry) -> dict:
    """Each kind of data -> the benchmark table of its estimators."""
    return {"nodes": registry.ESTIMATORS, "graphs": registry.GRAPH_ESTIMATORS}


@pytest.mark.parametrize("data", ["nodes", "graphs"])
def test_every_registered_estimator_has_a_benchmark_entry(data):
    table = _tables(_registry())[data]
    benchmarked = {factory.class_name for factory in table.values()}
    assert benchmarked == {name for name, _ in skdpgraph.all_estimators(data=data)}


@pytest.mark.parametrize("data", ["nodes", "graphs"])
def test_each_benchmark_entry_builds_its_registered_class(data):
    table = _tables(_registry())[data]
    classes = dict(skdpgraph.all_estimators(data=data))
    for name, factory in table.items():
        estimator = factory(4.0, 0)
        assert type(estimator) is classes[factory.class_name], name
        assert estimator.get_params()["random_state"] == 0, name
        assert estimator.get_params()["epsilon"] == 4.0, name
