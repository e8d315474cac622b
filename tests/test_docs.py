"""The documentation builds without warnings and its API pages document the estimators.

The build runs Sphinx with ``-W`` on a copy of ``doc/`` and ``examples/`` in a temporary folder
(the checkout stays clean) and does not execute the gallery; the gallery runs with the command
in ``doc/install.rst``.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
ESTIMATORS = ["DPMLPClassifier", "GAPClassifier", "DRWClassifier", "FDPClassifier",
              "RGNNClassifier"]
SKLEARN_METHODS = ["fit", "predict", "predict_proba", "score"]
# Outputs of an earlier in-tree build; copying them would hide a page that no longer builds.
BUILD_OUTPUTS = ("_build", "generated", "auto_examples", "sg_execution_times.rst")


@pytest.fixture(scope="module")
def built_html(tmp_path_factory):
    pytest.importorskip("sphinx", reason="Sphinx is not installed (pip install -e '.[docs]')")
    work = tmp_path_factory.mktemp("docs")
    shutil.copytree(ROOT / "doc", work / "doc", ignore=shutil.ignore_patterns(*BUILD_OUTPUTS))
    shutil.copytree(ROOT / "examples", work / "examples")
    env = {**os.environ, "SKDPGRAPH_DOCS_RUN_EXAMPLES": "0", "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    html = work / "html"
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(work / "doctrees"), str(work / "doc"), str(html)],
        cwd=work, env=env, capture_output=True, text=True, timeout=600)
    return html, result


def test_docs_build_without_warnings(built_html):
    html, result = built_html
    assert result.returncode == 0, (
        f"sphinx-build -W failed (exit {result.returncode}):\n{result.stdout}\n{result.stderr}")
    # numpydoc reports unknown docstring sections as Python warnings, which -W does not catch.
    assert not re.search(r"WARNING|numpydoc.*Warning", result.stderr), result.stderr
    assert (html / "index.html").is_file()
    assert (html / "user_guide" / "which_guarantee.html").is_file()
    gallery = (html / "auto_examples" / "index.html").read_text()
    examples = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))
    missing = [name for name in examples if f"{name}.html" not in gallery]
    assert missing == [], f"gallery index does not link the examples {missing}"


@pytest.mark.parametrize("name", ESTIMATORS)
def test_estimator_pages_document_sklearn_methods(built_html, name):
    html, _ = built_html
    page = (html / "generated" / f"skdpgraph.{name}.html").read_text()
    documented = set(re.findall(rf'id="skdpgraph\.{name}\.(\w+)"', page))
    missing = [method for method in SKLEARN_METHODS if method not in documented]
    assert missing == [], f"the API page of {name} does not document {missing}"


@pytest.mark.parametrize("name", ESTIMATORS)
def test_estimator_docstring_lists_every_parameter(name):
    """Every constructor parameter has an entry in the numpydoc Parameters section."""
    import inspect

    docscrape = pytest.importorskip("numpydoc.docscrape",
                                    reason="numpydoc is not installed (pip install -e '.[docs]')")
    import skdpgraph

    cls = getattr(skdpgraph, name)
    listed = {part.strip() for entry in docscrape.ClassDoc(cls)["Parameters"]
              for part in entry.name.split(",")}
    missing = [p for p in inspect.signature(cls).parameters if p not in listed]
    assert missing == [], f"{name}'s docstring does not list the parameters {missing}"
