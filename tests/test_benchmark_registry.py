"""benchmarks/registry.py: the benchmark configurations cover the registered estimators."""

import importlib.util
from pathlib import Path

import skdpgraph

ROOT = Path(__file__).parents[1]


def _registry():
    spec = importlib.util.spec_from_file_location("registry", ROOT / "benchmarks" / "registry.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_registered_estimator_has_a_benchmark_entry():
    registry = _registry()
    benchmarked = {factory.class_name for factory in registry.ESTIMATORS.values()}
    assert benchmarked == {name for name, _ in skdpgraph.all_estimators()}


def test_each_benchmark_entry_builds_its_registered_class():
    registry = _registry()
    classes = dict(skdpgraph.all_estimators())
    for name, factory in registry.ESTIMATORS.items():
        estimator = factory(4.0, 0)
        assert type(estimator) is classes[factory.class_name], name
        assert estimator.get_params()["random_state"] == 0, name
