"""``import skdpgraph`` and ``skdpgraph --help`` stay light: heavy modules load on first use."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
HEAVY = ["torch", "sklearn", "torch_geometric", "opacus", "pandas", "networkx", "scipy"]
PACKAGES = ["skdpgraph", "skdpgraph.datasets", "skdpgraph.estimators", "skdpgraph.model_selection",
            "skdpgraph.nn", "skdpgraph.preprocessing", "skdpgraph.privacy", "skdpgraph.sampling"]


def _loaded_after(code: str) -> list[str]:
    """The heavy modules a fresh interpreter has loaded after running ``code``."""
    probe = (f"{code}\nimport json, sys\n"
             f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("package", PACKAGES)
def test_importing_a_package_loads_no_heavy_module(package):
    assert _loaded_after(f"import {package}") == []


def test_help_loads_no_heavy_module():
    code = ("import contextlib, io\nfrom skdpgraph.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['--help'])\n    except SystemExit:\n        pass")
    assert _loaded_after(code) == []


def test_a_name_loads_only_what_it_needs():
    assert _loaded_after("from skdpgraph import Graph") == ["scipy"]
    assert "torch" in _loaded_after("from skdpgraph import GAPClassifier")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves_and_is_listed(package):
    module = importlib.import_module(package)
    assert module.__all__ == sorted(set(module.__all__))
    listed = dir(module)
    for name in module.__all__:
        assert getattr(module, name) is not None
        assert name in listed
    with pytest.raises(AttributeError, match=rf"module '{package}' has no attribute 'nonexistent'"):
        getattr(module, "nonexistent")


def test_top_level_names_and_subpackages():
    import skdpgraph
    from skdpgraph import GAPClassifier
    from skdpgraph.estimators import GAPClassifier as same

    assert GAPClassifier is same is skdpgraph.GAPClassifier
    assert set(skdpgraph.__all__) == {
        "DPGraphClassifier", "DPMLPClassifier", "DPNodeClassifier", "DRWClassifier",
        "EdgesDroppedWarning",
        "FDPClassifier", "GAPClassifier", "Graph", "GraphCollection", "GraphDroppedWarning",
        "NeighbourVoteClassifier", "Nodes",
        "PrivacyBudgetError", "PrivacyLedger", "PrivacyReport", "ProGAPClassifier",
        "RGNNClassifier", "all_estimators", "make_graph_pipeline", "process_ledger"}
    assert skdpgraph.datasets is importlib.import_module("skdpgraph.datasets")
    assert {"datasets", "estimators", "privacy"} <= set(dir(skdpgraph))
    assert "DEMO_ESTIMATORS" not in skdpgraph.estimators.__all__


def test_the_static_name_tables_list_the_registered_estimators():
    """The lazy tables of ``skdpgraph`` and ``skdpgraph.estimators`` (static, for IDEs) and
    :func:`skdpgraph.all_estimators` (discovered by type) name the same estimators."""
    import skdpgraph
    import skdpgraph.estimators
    from skdpgraph._discovery import estimator_names

    registered = [name for name, _ in skdpgraph.all_estimators()]
    top_level = [name for name in skdpgraph.__all__ if name.endswith("Classifier")]
    in_package = [name for name in skdpgraph.estimators.__all__
                  if name.endswith("Classifier") and name != "BaseDPClassifier"]
    assert registered == top_level == in_package == estimator_names()
