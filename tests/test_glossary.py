"""The parameter glossary of the developer guide names every constructor parameter once.

``doc/developers/glossary.rst`` has one entry per parameter name (a line holding only
````name````), followed by its meaning and a ``Taken by:`` line listing the estimators
that take it. These tests read the entries and compare them with the signatures of the
estimators that ``skdpgraph.estimators`` exports, so the glossary cannot drift.
"""

import inspect
import pathlib
import re

import pytest
from sklearn.base import BaseEstimator

import skdpgraph.estimators

GLOSSARY = pathlib.Path(__file__).resolve().parents[1] / "doc" / "developers" / "glossary.rst"


def _estimators() -> dict:
    """Every public estimator class of ``skdpgraph.estimators``, base classes aside."""
    return {name: getattr(skdpgraph.estimators, name) for name in skdpgraph.estimators.__all__
            if isinstance(getattr(skdpgraph.estimators, name), type)
            and issubclass(getattr(skdpgraph.estimators, name), BaseEstimator)
            and not name.startswith("Base")}


def _parameters() -> dict[str, set[str]]:
    """Parameter name -> names of the estimators whose constructor takes it."""
    taken: dict[str, set[str]] = {}
    for name, cls in _estimators().items():
        for parameter in inspect.signature(cls.__init__).parameters.values():
            if parameter.name != "self":
                taken.setdefault(parameter.name, set()).add(name)
    return taken


def _entries(text: str) -> dict[str, set[str]]:
    """Entry name -> the estimators its ``Taken by:`` line lists."""
    entries, name = {}, None
    everyone = set(_estimators())
    for line in text.splitlines():
        term = re.fullmatch(r"``(\w+)``", line)
        if term:
            if term.group(1) in entries:
                raise AssertionError(f"the glossary has two entries for {term.group(1)!r}")
            name = term.group(1)
            entries[name] = None
        elif name and line.strip().startswith("Taken by:"):
            listed = line.split("Taken by:", 1)[1]
            entries[name] = (everyone if "every estimator" in listed
                             else set(re.findall(r"~skdpgraph\.(\w+)", listed)))
        elif name and line.startswith("   :class:") and entries[name] is not None:
            entries[name] |= set(re.findall(r"~skdpgraph\.(\w+)", line))
    return entries


def test_every_parameter_has_a_glossary_entry():
    missing = sorted(set(_parameters()) - set(_entries(GLOSSARY.read_text())))
    assert not missing, f"parameters without an entry in {GLOSSARY.name}: {missing}"


def test_every_glossary_entry_names_a_parameter():
    unknown = sorted(set(_entries(GLOSSARY.read_text())) - set(_parameters()))
    assert not unknown, f"glossary entries that no estimator takes: {unknown}"


def test_every_entry_lists_the_estimators_that_take_it():
    taken, entries = _parameters(), _entries(GLOSSARY.read_text())
    wrong = {name: {"glossary": sorted(entries[name] or ()), "signatures": sorted(owners)}
             for name, owners in taken.items() if name in entries and entries[name] != owners}
    assert not wrong, f"'Taken by:' lines out of date: {wrong}"


@pytest.mark.parametrize("broken, problem", [
    ("``epsilon``", "two entries"),
    ("``no_such_parameter``\n   Nothing.\n   Taken by: every estimator.", "no_such_parameter"),
])
def test_the_glossary_check_catches_a_duplicate_or_an_unknown_entry(broken, problem):
    text = GLOSSARY.read_text() + "\n" + broken + "\n"
    with pytest.raises(AssertionError, match=problem):
        entries = _entries(text)
        unknown = sorted(set(entries) - set(_parameters()))
        assert not unknown, f"glossary entries that no estimator takes: {unknown}"
