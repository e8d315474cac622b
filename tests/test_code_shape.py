"""The code's shape, read from its source: size limits, imports between packages, layers.

These checks read ``skdpgraph/`` with :mod:`ast` and import nothing, so they hold the
properties a maintainer relies on when picking the code up: a function fits on a screen
(at most 60 lines of code, docstrings and comments aside), a class fits in one reading
(at most 300 lines), a package uses another package only through its public names, and
no lower layer imports a higher one.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "skdpgraph"
MAX_FUNCTION_CODE_LINES = 60
MAX_CLASS_LINES = 300

#: Each top-level package or module of ``skdpgraph``, lowest layer first. A unit may import
#: units of its own layer or of lower ones only.
LAYERS: list[set[str]] = [
    {"exceptions", "_lazy", "_random", "_progress", "_deprecation", "_docstrings"},
    {"graph", "_graph_tables", "_graph_converters", "graph_collection", "_collection_converters"},
    {"_validation", "datasets"},
    {"sampling"},
    {"privacy"},
    {"preprocessing"},
    {"nn"},
    {"training"},
    {"estimators"},
    {"model_selection", "parallel", "_pipeline", "_discovery"},
    {"cli"},
    {"__init__"},
]


def _modules() -> list[pathlib.Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _unit_of(path: pathlib.Path) -> str:
    """The top-level package or module that ``path`` belongs to."""
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def _layer(unit: str) -> int:
    for index, layer in enumerate(LAYERS):
        if unit in layer:
            return index
    raise AssertionError(f"{unit!r} is in no layer of tests/test_code_shape.py: add it")


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def _code_lines(node: ast.AST, source: list[str], docstrings: set[int]) -> int:
    return sum(1 for number in range(node.lineno, node.end_lineno + 1)
               if number not in docstrings
               and source[number - 1].strip()
               and not source[number - 1].strip().startswith("#"))


def _imports(tree: ast.AST) -> list[str]:
    """Absolute ``skdpgraph`` module names imported anywhere in ``tree``."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("skdpgraph"):
                names.append(node.module)
                names.extend(f"{node.module}.{alias.name}" for alias in node.names
                             if alias.name.startswith("_"))
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names
                         if alias.name.startswith("skdpgraph"))
    return names


def _parsed() -> list[tuple[pathlib.Path, ast.Module, list[str]]]:
    return [(path, ast.parse(path.read_text()), path.read_text().splitlines())
            for path in _modules()]


def test_no_function_over_sixty_lines_of_code():
    long = []
    for path, tree, source in _parsed():
        docstrings = _docstring_lines(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                count = _code_lines(node, source, docstrings)
                if count > MAX_FUNCTION_CODE_LINES:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.name} ({count})")
    assert not long, f"functions over {MAX_FUNCTION_CODE_LINES} lines of code: {long}"


def test_no_class_over_three_hundred_lines():
    long = [f"{path.relative_to(PACKAGE)}:{node.name} ({node.end_lineno - node.lineno + 1})"
            for path, tree, _ in _parsed() for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef)
            and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES]
    assert not long, f"classes over {MAX_CLASS_LINES} lines: {long}"


def test_no_import_of_another_packages_private_module():
    found = []
    for path, tree, _ in _parsed():
        unit = _unit_of(path)
        for name in _imports(tree):
            parts = name.split(".")
            if len(parts) < 3 or parts[1] == unit:
                continue  # a top-level module, or the importer's own package
            if any(part.startswith("_") for part in parts[2:]):
                found.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not found, found


def test_no_layer_imports_a_higher_one():
    found = []
    for path, tree, _ in _parsed():
        unit = _unit_of(path)
        for name in _imports(tree):
            parts = name.split(".")
            if len(parts) < 2 or parts[1] == unit:
                continue
            if _layer(parts[1]) > _layer(unit):
                found.append(f"{path.relative_to(PACKAGE)} ({unit}) imports {name}")
    assert not found, found


def test_layers_name_every_unit():
    units = {_unit_of(path) for path in _modules()}
    for unit in units:
        _layer(unit)
    assert units >= {"graph", "privacy", "training", "estimators"}


def test_the_size_count_skips_docstrings_and_comments():
    broken = "def f():\n" + "    x = 1\n" * 61
    tree = ast.parse(broken)
    function = tree.body[0]
    assert _code_lines(function, broken.splitlines(), _docstring_lines(tree)) == 62
    documented = 'def f():\n    """Doc.\n\n    More.\n    """\n    # why\n    return 1\n'
    tree = ast.parse(documented)
    assert _code_lines(tree.body[0], documented.splitlines(), _docstring_lines(tree)) == 2


def _units_imported() -> dict[str, set[str]]:
    """Each top-level unit -> the other units its modules import."""
    graph: dict[str, set[str]] = {}
    for path, tree, _ in _parsed():
        unit = _unit_of(path)
        for name in _imports(tree):
            parts = name.split(".")
            if len(parts) >= 2 and parts[1] != unit:
                graph.setdefault(unit, set()).add(parts[1])
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle among the units, or None."""
    state: dict[str, str] = {}

    def visit(unit: str, path: list[str]) -> list[str] | None:
        state[unit] = "open"
        for other in sorted(graph.get(unit, ())):
            if state.get(other) == "open":
                return path + [unit, other]
            if other not in state:
                found = visit(other, path + [unit])
                if found:
                    return found
        state[unit] = "done"
        return None

    for unit in sorted(graph):
        if unit not in state:
            found = visit(unit, [])
            if found:
                return found
    return None


def test_no_import_cycle_between_units():
    assert _cycle(_units_imported()) is None


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) is not None
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None


@pytest.mark.parametrize("module, function", [
    ("training/_loop.py", "train_dpsgd"),
    ("parallel/_dpsgd.py", "train_dpsgd_distributed"),
])
def test_the_training_loops_take_at_most_eight_parameters(module, function):
    tree = ast.parse((PACKAGE / module).read_text())
    [node] = [node for node in ast.walk(tree)
              if isinstance(node, ast.FunctionDef) and node.name == function]
    arguments = node.args
    count = (len(arguments.posonlyargs) + len(arguments.args) + len(arguments.kwonlyargs)
             + bool(arguments.vararg) + bool(arguments.kwarg))
    assert count <= 8, f"{function} takes {count} parameters"
