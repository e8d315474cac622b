"""The documentation builds without warnings and its API pages document the estimators.

The build runs Sphinx with ``-W`` on a copy of ``doc/`` and ``examples/`` in a temporary folder
(the checkout stays clean) and does not execute the gallery; the gallery runs with the command
in ``doc/install.rst``.
"""

import ast
import inspect
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
# Every public estimator class, by module path (checked against the packages' __all__).
PUBLIC_ESTIMATORS = [f"skdpgraph.estimators.{name}" for name in ESTIMATORS + [
    "ProGAPClassifier", "DPNodeClassifier"]] + [
    f"skdpgraph.model_selection.{name}" for name in ("PrivateRandomSearch", "BudgetedSearchCV")]
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


def _public_estimator_classes() -> dict:
    """Every estimator class that ``skdpgraph.estimators`` and ``.model_selection`` export."""
    import importlib

    from sklearn.base import BaseEstimator

    found = {}
    for package in ("skdpgraph.estimators", "skdpgraph.model_selection"):
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseEstimator):
                found[f"{package}.{name}"] = value
    return found


def test_public_estimator_list_is_complete():
    """``PUBLIC_ESTIMATORS`` (the docstring tests' list) names every public estimator."""
    assert sorted(_public_estimator_classes()) == sorted(PUBLIC_ESTIMATORS)


def _written_default(type_line: str):
    """The value after ``default=`` at the end of a numpydoc type line, or ``_NO_DEFAULT``."""
    match = re.search(r"(?:^|,\s*)default=(.+)$", type_line)
    if match is None:
        return _NO_DEFAULT
    try:
        return ast.literal_eval(match.group(1).strip())
    except (ValueError, SyntaxError):
        return _UNREADABLE


_NO_DEFAULT, _UNREADABLE = object(), object()


@pytest.mark.parametrize("path", PUBLIC_ESTIMATORS)
def test_estimator_docstring_describes_every_parameter(path):
    """Each constructor parameter has its own Parameters entry, described, default as coded.

    One entry per parameter, in signature order (as scikit-learn's
    ``test_docstring_parameters``), with a description that is at least one sentence, and
    ``default=<value>`` on its type line equal (value and type) to the signature's default;
    a required parameter states no default.
    """
    docscrape = pytest.importorskip("numpydoc.docscrape",
                                    reason="numpydoc is not installed (pip install -e '.[docs]')")
    cls = _public_estimator_classes()[path]
    parameters = inspect.signature(cls).parameters
    section = docscrape.ClassDoc(cls)["Parameters"]
    listed = [entry.name for entry in section]
    grouped = [name for name in listed if "," in name]
    assert grouped == [], f"{path}: entries that group several parameters: {grouped}"
    entries = {entry.name: entry for entry in section}
    assert listed == list(parameters), (
        f"{path}: the Parameters section lists {listed}; the signature has "
        f"{list(parameters)} (missing: {[p for p in parameters if p not in entries]}, "
        f"unknown: {[e for e in entries if e not in parameters]})")
    problems = []
    for name, parameter in parameters.items():
        entry = entries[name]
        description = " ".join(line.strip() for line in entry.desc).strip()
        if not description.endswith("."):
            problems.append(f"{name}: the description is not a sentence: {description!r}")
        written, coded = _written_default(entry.type), parameter.default
        if coded is inspect.Parameter.empty:
            if written is not _NO_DEFAULT:
                problems.append(f"{name}: required, but the docstring states a default")
        elif written is _NO_DEFAULT or written is _UNREADABLE:
            problems.append(f"{name}: no readable 'default=' in {entry.type!r} "
                            f"(the signature's is {coded!r})")
        elif type(written) is not type(coded) or written != coded:
            problems.append(f"{name}: the docstring says default={written!r}, the signature "
                            f"{coded!r}")
    assert problems == [], f"{path}:\n" + "\n".join(problems)


# ProGAP takes GAP's parameters; these count per stage in ProGAP or have its own defaults.
PROGAP_OWN_ENTRIES = ["aggregate", "batch_size", "encoder_epochs", "encoder_layers", "epochs",
                      "head", "hidden_dim", "hops"]


def test_progap_parameter_entries_are_gaps():
    """ProGAP's copy of GAP's Parameters section stays in step (STYLE.md, section 7)."""
    docscrape = pytest.importorskip("numpydoc.docscrape",
                                    reason="numpydoc is not installed (pip install -e '.[docs]')")
    from skdpgraph import GAPClassifier, ProGAPClassifier

    gap, progap = ({entry.name: (entry.type, entry.desc)
                    for entry in docscrape.ClassDoc(cls)["Parameters"]}
                   for cls in (GAPClassifier, ProGAPClassifier))
    assert list(progap) == list(gap)
    differ = sorted(name for name in gap if progap[name] != gap[name])
    assert differ == PROGAP_OWN_ENTRIES, (
        f"ProGAPClassifier's entries differ from GAPClassifier's for {differ}; only "
        f"{PROGAP_OWN_ENTRIES} should (copy GAP's text or update PROGAP_OWN_ENTRIES)")
