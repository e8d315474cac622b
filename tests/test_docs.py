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
    "ProGAPClassifier", "NeighbourVoteClassifier", "DPNodeClassifier", "DPGraphClassifier"]] + [
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
    """Every estimator class that ``skdpgraph.estimators`` and ``.model_selection`` export,
    base classes aside (as ``sklearn.utils.discovery.all_estimators`` leaves out ``Base*``)."""
    import importlib

    from sklearn.base import BaseEstimator

    found = {}
    for package in ("skdpgraph.estimators", "skdpgraph.model_selection"):
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            if (isinstance(value, type) and issubclass(value, BaseEstimator)
                    and not name.startswith("Base")):
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


# --- what the pages say: no work log, numbers from the records, nothing from the network --

# Page sources a reader sees: the Sphinx sources and the README.
DOC_SOURCES = sorted([*ROOT.glob("doc/**/*.rst"), *ROOT.glob("doc/**/*.inc"),
                      ROOT / "README.md"])
# Names of a development work log, not of what a page or a result file holds.
WORK_LOG = re.compile(r"issue ?\d+|session ?\d+|-s\d+\.|[-_](?:before|after)[-_.]",
                      re.IGNORECASE)


def work_log_names(text: str) -> list[str]:
    """The work-log names in ``text`` (``issue13-...``, ``...-s10.json``, ``-before.json``)."""
    return [match.group(0) for match in WORK_LOG.finditer(text)]


def test_work_log_pattern_catches_work_log_names():
    found = work_log_names("see issue3-gap.json, Issue 37, session 14, overhead-s10.json, "
                           "cora-before-x.json and run-after.log")
    assert found == ["issue3", "Issue 37", "session 14", "-s10.", "-before-", "-after."]
    assert work_log_names("check before spending; one after the other; seeds1-4.json") == []


@pytest.mark.parametrize("path", DOC_SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_pages_name_no_work_log(path):
    """Pages state results, methods and commands: no issue, session or before/after names."""
    lines = [f"{number}: {line.strip()}" for number, line in
             enumerate(path.read_text().splitlines(), 1) if work_log_names(line)]
    assert lines == [], f"{path.relative_to(ROOT)} names a development work log:\n" + "\n".join(
        lines)


def _load_benchmark(name: str):
    import importlib.util

    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_guide_numbers_are_the_records(tmp_path, monkeypatch):
    """Every generated number file equals what the tools write from benchmarks/results."""
    numbers = _load_benchmark("doc_numbers")
    assert numbers.INC.read_text() == numbers.substitutions(), (
        "doc/user_guide/results_numbers.inc differs from the records: "
        "run python benchmarks/doc_numbers.py")
    readme = numbers.README.read_text()
    assert readme == numbers.readme_text(readme), (
        "README.md's results table differs from the records: run python benchmarks/doc_numbers.py")
    table = _load_benchmark("utility_table")
    out = tmp_path / "tables.inc"
    monkeypatch.chdir(ROOT)  # the tables name their files relative to the repository
    table.main([path.relative_to(ROOT).as_posix() for path in
                sorted((ROOT / "benchmarks/results/utility").glob("*.json"))] + ["--out", str(out)])
    assert out.read_text() == (ROOT / "doc/user_guide/privacy_utility_tables.inc").read_text()
    scaling_page = (ROOT / "doc/user_guide/scaling.rst").read_text()
    command = re.search(r"python \.\./scaling\.py --table (.*?)\\\n\s*> ", scaling_page, re.S)
    assert command, "scaling.rst no longer shows the command that writes scaling_table.inc"
    files = []
    for word in command.group(1).replace("\\\n", " ").split():
        stem = re.fullmatch(r"(.*)\{(.*)\}(.*)", word)
        files += ([stem.group(1) + part + stem.group(3) for part in stem.group(2).split(",")]
                  if stem else [word])
    scaling = _load_benchmark("scaling")
    expected = scaling.rst_table([str(ROOT / "benchmarks/results" / name) for name in files])
    assert (ROOT / "doc/user_guide/scaling_table.inc").read_text() == expected + "\n"


def test_graph_level_tables_are_the_records():
    """The graph-level guide's accuracy tables and the scaling guide's time table equal what
    benchmarks/graph_level.py writes from the records the pages' commands name."""
    graph_level = _load_benchmark("graph_level")
    results = ROOT / "benchmarks" / "results"
    expected = graph_level.rst_table(
        [str(p) for p in sorted((results / "graph_level").glob("*.json"))],
        [str(p) for p in sorted(results.glob("graph_kernel-*.json"))])
    assert (ROOT / "doc/user_guide/graph_level_table.inc").read_text() == expected, (
        "graph_level_table.inc differs from the records: run the command in graph_level.rst")
    curves = [str(p) for p in sorted((results / "graph_level_curves").glob("*.json"))]
    assert (ROOT / "doc/user_guide/graph_level_xu_table.inc").read_text() == (
        graph_level.rst_xu_table(curves)), (
        "graph_level_xu_table.inc differs from the records: run the command in graph_level.rst")
    scaling_page = (ROOT / "doc/user_guide/scaling.rst").read_text()
    command = re.search(r"graph_level\.py --time-table (.*?)\n\s*> ", scaling_page, re.S)
    assert command, "scaling.rst no longer shows the command that writes graph_time_table.inc"
    files = [str(ROOT / word) for word in command.group(1).split() if word != "\\"]
    assert (ROOT / "doc/user_guide/graph_time_table.inc").read_text() == (
        graph_level.rst_time_table(files))


# Every guide page: its numbers come from the records or from the library's own functions
# (benchmarks/doc_numbers.py); README's table is checked above.
NUMBERED_PAGES = sorted(path.stem for path in (ROOT / "doc" / "user_guide").glob("*.rst"))


def _prose(text: str) -> str:
    """``text`` without code blocks, literals, math and substitution references."""
    kept, block_indent = [], None
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if block_indent is not None:
            if line.strip() == "" or indent > block_indent:
                continue
            block_indent = None
        if re.match(r"\s*\.\. (code-block|code|math|include)::", line) or (
                line.rstrip().endswith("::") and not line.lstrip().startswith(".. ")):
            block_indent = indent
            if not line.rstrip().endswith("::") or line.lstrip().startswith(".. "):
                continue
        kept.append(line)
    prose = "\n".join(kept)
    for pattern in (r"``.*?``", r":math:`.*?`", r"\|[^|\s][^|]*\|", r":\w+:`.*?`"):
        prose = re.sub(pattern, " ", prose, flags=re.S)
    return prose


def test_prose_filter_keeps_only_prose():
    text = ("GAP scores |u-x| and ``lr=0.01`` at :math:`\\varepsilon=0.5`::\n\n"
            "    python run.py --eps 0.5\n\nthen 84.9 remains.\n")
    assert re.findall(r"\d+\.\d+", _prose(text)) == ["84.9"]


@pytest.mark.parametrize("page", NUMBERED_PAGES)
def test_guide_pages_quote_results_only_from_the_records(page):
    """A decimal number in a guide page's prose is a substitution written from a record.

    ``benchmarks/doc_numbers.py`` writes them from the records, or with the library's own
    functions where a number follows from public quantities (a plan, an accountant).
    Numbers quoted from papers are substitutions too (``REFERENCES``), so a number typed
    into a page fails here.
    """
    prose = _prose((ROOT / "doc" / "user_guide" / f"{page}.rst").read_text())
    typed = sorted(set(re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", prose)))
    assert typed == [], (f"doc/user_guide/{page}.rst types the numbers {typed}; write them "
                         "from the records with benchmarks/doc_numbers.py")


NETWORK = re.compile(r"""<(script|link|img|iframe|source)\b[^>]*?\b(src|href)=["']
                         (https?:)?//""", re.VERBOSE | re.IGNORECASE)


def test_built_pages_load_nothing_from_the_network(built_html):
    """No script, stylesheet, font or image comes from another host (offline, MathJax too)."""
    html, result = built_html
    assert result.returncode == 0, result.stderr
    problems = []
    for page in html.rglob("*.html"):
        text = page.read_text(errors="replace")
        problems += [f"{page.relative_to(html)}: {m.group(0)}" for m in NETWORK.finditer(text)]
        if re.search(r"mathjax[^\"']*\.js", text, re.I) and re.search(
                r"cdn\.jsdelivr|cdnjs|mathjax\.org", text, re.I):
            problems.append(f"{page.relative_to(html)}: MathJax from a CDN")
    for sheet in html.rglob("*.css"):
        problems += [f"{sheet.relative_to(html)}: {url}" for url in re.findall(
            r"url\(\s*['\"]?(https?://[^)'\"]+)", sheet.read_text(errors="replace"))]
    assert problems == [], "built pages load from the network:\n" + "\n".join(problems[:20])
    index = (html / "index.html").read_text()
    assert "_static/mathjax/tex-chtml.js" in (html / "user_guide" / "which_guarantee.html"
                                              ).read_text()
    assert index  # the index itself was read


@pytest.mark.parametrize("page", ["index", "quickstart", "user_guide/which_guarantee"])
def test_front_door_leads(page):
    """The index, the quick start and the decision guide show DPNodeClassifier first."""
    text = (ROOT / "doc" / f"{page}.rst").read_text()
    first = text.find("DPNodeClassifier(unit=")
    assert first >= 0, f"doc/{page}.rst does not show DPNodeClassifier(unit=..., epsilon=...)"
    names = ("GAPClassifier", "DPMLPClassifier", "DRWClassifier", "RGNNClassifier")
    others = [text.find(name) for name in names if name in text]
    assert all(first < position for position in others), (
        f"doc/{page}.rst names another estimator before the front door")


def test_command_line_guide_covers_the_commands():
    text = (ROOT / "doc" / "user_guide" / "command_line.rst").read_text()
    for command in ("skdpgraph fit", "skdpgraph predict", "skdpgraph evaluate"):
        assert command in text, f"the command-line guide does not show {command!r}"
    assert "user_guide/command_line" in (ROOT / "doc" / "index.rst").read_text()


def test_built_pages_name_no_work_log(built_html):
    """What the reader sees, docstrings and gallery included, names no development work log."""
    html, result = built_html
    assert result.returncode == 0, result.stderr
    found = []
    for page in html.rglob("*.html"):
        text = re.sub(r'(?:id|href)="[^"]*"', "", page.read_text(errors="replace"))  # anchors
        found += [f"{page.relative_to(html)}: {name}" for name in work_log_names(text)]
    assert found == [], "built pages name a development work log:\n" + "\n".join(found[:20])
