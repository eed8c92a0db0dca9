"""The package map in the design notes matches the tree, and every package says what it owns."""

from __future__ import annotations

import ast
import re

import pytest

from tests.conftest import ROOT

GATE = ROOT / "gate"
_ENTRY = re.compile(r"^[├└]── (?P<name>\S+)\s+(?P<text>.*)$")
_MORE = re.compile(r"^│?\s{4,}(?P<text>\S.*)$")
_PURE = ("spec", "estimate", "policy", "ledger", "reconcile", "calibrate")


def _package_map() -> dict[str, str]:
    """docs/design.md's ``gate/`` tree: each entry's name and its (joined) description."""
    notes = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    block = notes.split("```text\ngate/\n", 1)[1].split("```", 1)[0]
    entries: dict[str, str] = {}
    last = ""
    for line in block.splitlines():
        if match := _ENTRY.match(line):
            last = match["name"]
            entries[last] = match["text"]
        elif match := _MORE.match(line):
            entries[last] += " " + match["text"]
    return entries


def _tree() -> set[str]:
    files = {p.name for p in GATE.glob("*.py")}
    packages = {p.name + "/" for p in GATE.iterdir() if (p / "__init__.py").is_file()}
    return files | packages


def _modules(package: str) -> set[str]:
    folder = GATE / package
    names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    return names | {p.name + "/" for p in folder.iterdir() if (p / "__init__.py").is_file()}


def test_the_design_notes_map_lists_exactly_the_top_of_gate():
    assert set(_package_map()) == _tree()


def test_at_most_eight_modules_stay_at_the_top():
    assert len(list(GATE.glob("*.py"))) <= 8


_LISTED = sorted(n for n, text in _package_map().items() if n.endswith("/") and ": " in text)


@pytest.mark.parametrize("entry", _LISTED)
def test_each_listed_package_names_exactly_its_modules(entry):
    listed = _package_map()[entry].rsplit(": ", 1)[1]
    names = {name.strip() for name in listed.split(",")}
    assert names == _modules(entry.rstrip("/"))


@pytest.mark.parametrize("package", _PURE)
def test_the_map_marks_the_pure_packages(package):
    assert "(pure)" in _package_map()[package + "/"]


@pytest.mark.parametrize("package", sorted(p.rstrip("/") for p in _tree() if p.endswith("/")))
def test_every_package_docstring_says_what_it_owns(package):
    docstring = ast.get_docstring(ast.parse((GATE / package / "__init__.py").read_text()))
    assert docstring and len(docstring.split()) >= 8
    assert "import" in docstring.lower(), "say what the package may import"


MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _sources() -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
        for path in sorted(GATE.rglob("*.py"))
    ]


def test_no_module_is_over_400_lines():
    """A module a reader must scroll through for its parts is split where they would look."""
    sizes = [(name, len(text.splitlines())) for name, text in _sources()]
    assert [(name, n) for name, n in sizes if n > MAX_MODULE_LINES] == []


def test_no_function_is_over_60_lines():
    """Signature and docstring counted: a function longer than a screen is split."""
    long = [
        (name, node.name, node.end_lineno - node.lineno + 1)
        for name, text in _sources()
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []
