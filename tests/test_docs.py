"""The README and the documentation site say what the code does.

The README stays one screen that names every command; its links into docs/ resolve; its
verdict is the real output of the command it shows, and its first green and first red are
what they say. The field reference in docs/reference/ is generated from schemas/, and the
options table of docs/cli.md is the parser's. ``mkdocs build --strict`` (in .ci/run) checks
the site's own links and anchors.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
from pathlib import Path

import pytest

from gate.cli import main
from gate.cli.parser import build_parser
from gate.commands.schema_docs import PAGES, render_all, render_reference
from gate.spec.experiment import Experiment
from gate.spec.fingerprint import fingerprint
from gate.spec.loader import load_bytes, load_file
from gate.spec.validation import validate
from tests.conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_NUMBERS = {2: "two", 3: "three", 6: "six"}


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lowercase, punctuation but - and _ dropped, - for spaces."""
    plain = heading.replace("`", "")
    return re.sub(r"[^\w\- ]", "", plain.lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    prose = _FENCE.sub("", _text(path))
    return {_github_anchor(h) for h in re.findall(r"^#+ (.+)$", prose, re.M)}


def _table(text: str, heading: str) -> list[list[str]]:
    """The cells of the first table after ``heading``."""
    after = text.split(heading, 1)[1]
    rows = re.search(r"^\|.*?(?=^[^|])", after + "\nend", re.M | re.S)
    assert rows is not None, f"no table after {heading}"
    lines = rows.group(0).strip().splitlines()[2:]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]


def _leaf_commands() -> dict[str, argparse.ArgumentParser]:
    """Every command the parser has, ``serve skypilot-policy`` and ``policy test`` included."""

    def walk(parser: argparse.ArgumentParser, prefix: str):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    full = f"{prefix} {name}".strip()
                    if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
                        yield from walk(sub, full)
                    else:
                        yield full, sub

    return dict(walk(build_parser(), ""))


def _named_commands(cells: list[str]) -> set[str]:
    """The commands a table's first column names: `budget-gate check SPEC...`, `policy test`."""
    nested = {name.split()[0] for name in _leaf_commands() if " " in name}
    named = set()
    for cell in cells:
        for span in re.findall(r"`([^`]+)`", cell):
            words = span.removeprefix("budget-gate ").split()
            named.add(" ".join(words[:2]) if words[0] in nested else words[0])
    return named


# --- the README -------------------------------------------------------------------------


def test_the_readme_fits_one_screen():
    """Folded blocks (``<details>``, the report workflow) take no screen until opened."""
    shown = re.sub(r"(?s)<details>.*?</details>\n", "", _text(README))
    assert len(shown.splitlines()) <= 250
    assert len(shown.encode()) <= 13 * 1024
    assert len(README.read_bytes()) <= 16 * 1024


def test_the_readme_links_resolve_to_files_and_headings():
    links = _LINK.findall(_FENCE.sub("", _text(README)))
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(local) >= 20  # the command table and the documentation section link into docs/
    for link in local:
        target, _, anchor = link.partition("#")
        path = (ROOT / target) if target else README
        assert path.exists(), f"README links to {link}, which is not in the repository"
        if anchor:
            assert anchor in _anchors(path), f"README links to {link}: no such heading"


def test_the_readme_links_every_page_of_the_guide():
    linked = {link.partition("#")[0] for link in _LINK.findall(_text(README))}
    journey = ["spec", "check", "approvals", "launch", "guard", "reconcile", "calibrate", "report"]
    assert {f"docs/{page}.md" for page in journey} <= linked


@pytest.mark.parametrize("page", [README, DOCS / "cli.md"], ids=lambda p: p.name)
def test_the_command_table_names_every_command_the_cli_has(page):
    rows = _table(_text(page), "## Commands")
    assert _named_commands([row[0] for row in rows]) == set(_leaf_commands())


def test_the_readme_verdict_is_what_the_command_prints(request, capsys, monkeypatch):
    start, end = "<!-- check-output:start -->\n", "<!-- check-output:end -->"
    readme = _text(README)
    shown = readme[readme.index(start) + len(start) : readme.index(end)]
    command = shown.splitlines()[1].removeprefix("$ ")
    monkeypatch.chdir(ROOT)
    code = main(command.split()[1:])
    output = capsys.readouterr().out
    expected = f"```console\n$ {command}\n{output}```\n"
    if request.config.getoption("--update-goldens"):
        README.write_text(readme.replace(shown, expected), encoding="utf-8")
        shown = expected
    assert shown == expected, "the README's verdict is stale: pytest --update-goldens"
    assert f"(exit {code})" in output


def test_the_first_green_and_the_first_red_are_what_the_pages_say(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["check", "examples/cifar-sweep.yaml"]) == 0
    assert re.search(r"^  worst\s+24\s.*\s396\.88 USD", capsys.readouterr().out, re.M)
    assert main(["check", "-q", "examples/imagenet-bruteforce.yaml"]) == 1
    red = capsys.readouterr().out
    count = {kind: len(re.findall(rf": {kind} BG\d+ ", red)) for kind in ("error", "warn")}
    approvals = len(re.findall(r": approval BG\d+ ", red))
    phrase = (
        f"{_NUMBERS[count['error']]} policy errors, {_NUMBERS[count['warn']]} warnings "
        f"and {_NUMBERS[approvals]} approval triggers"
    )
    for page in (README, DOCS / "getting-started.md"):
        text = " ".join(_text(page).split())
        assert "396.88 USD at worst" in text and "258,949.25 USD at worst" in text
        assert phrase in text, f"{page.name} should say: {phrase}"


def test_your_own_first_red_after_init_is_the_line_the_pages_show(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    sample = tmp_path / "experiments" / "sample.yaml"
    sample.write_text(_text(sample).replace("gpus_per_trial: 1\n", "gpus_per_trial: 16\n"))
    capsys.readouterr()
    assert main(["check", "-q", "experiments/"]) == 1
    (line,) = [x for x in capsys.readouterr().out.splitlines() if " BG101 " in x]
    assert line in _text(DOCS / "getting-started.md")
    assert line.split(": ", 1)[1] in " ".join(_text(README).split())


# --- the site ---------------------------------------------------------------------------


def test_the_annotated_spec_is_the_cifar_example():
    page = _text(DOCS / "spec.md")
    block = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    annotated = validate(Experiment, load_bytes(block.encode(), "docs/spec.md"))
    example = validate(Experiment, load_file(ROOT / "examples" / "cifar-sweep.yaml"))
    assert fingerprint(annotated) == fingerprint(example)


def test_the_options_table_is_the_parsers():
    taken: dict[str, set[str]] = {}
    for name, parser in _leaf_commands().items():
        for action in parser._actions:
            for option in action.option_strings:
                taken.setdefault(option, set()).add(name)
    rows = _table(_text(DOCS / "cli.md"), "## Options")
    checked = 0
    for cells in rows:
        spans = re.findall(r"`(--[\w-]+)", cells[0])
        if not spans:
            continue  # `-` as a SPEC, an environment variable
        listed = {c.strip() for c in cells[1].split(",")}
        assert listed == taken[spans[0]], f"{spans[0]} is taken by {sorted(taken[spans[0]])}"
        checked += 1
    assert checked >= 10


def _committed_schemas() -> dict[str, dict]:
    return {name: json.loads(_text(ROOT / "schemas" / name)) for name in PAGES}


def test_the_field_reference_is_generated_from_the_schemas():
    for page, text in render_all(_committed_schemas()).items():
        committed = _text(DOCS / "reference" / page)
        assert committed == text, (
            f"docs/reference/{page} drifted: budget-gate schema --docs --write"
        )


def test_the_field_reference_has_a_section_and_a_row_for_every_object_and_key():
    for name, schema in _committed_schemas().items():
        page = _text(DOCS / "reference" / PAGES[name][0])
        objects = {"": schema} | {
            n: d for n, d in schema["$defs"].items() if d.get("type") == "object"
        }
        headings = re.findall(r"^## (\w+)$", page, re.M)
        assert sorted(headings) == sorted([schema["title"], *list(objects)[1:]])
        for title, node in objects.items():
            section = page.split(f"\n## {title or schema['title']}\n", 1)[1].split("\n## ", 1)[0]
            for key in node["properties"]:
                assert f"| `{key}` |" in section, f"{title or 'root'}.{key} is missing"


def test_a_changed_schema_changes_the_reference():
    schema = _committed_schemas()["experiment.schema.json"]
    before = render_reference(schema, "schemas/experiment.schema.json", "Spec")
    changed = copy.deepcopy(schema)
    changed["$defs"]["Resources"]["properties"]["gpus_per_trial"]["description"] = "Changed <x>."
    changed["$defs"]["Resources"]["properties"]["gpus_per_trial"]["maximum"] = 64
    after = render_reference(changed, "schemas/experiment.schema.json", "Spec")
    assert before != after
    assert "| `gpus_per_trial` | integer > 0, ≤ 64 | **required** | Changed &lt;x&gt;. |" in after


def test_schema_docs_writes_the_committed_pages(tmp_path, capsys):
    assert main(["schema", "--docs", "--write", "--dir", str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(page for page, _ in PAGES.values())
    for page in written:
        assert _text(tmp_path / page) == _text(DOCS / "reference" / page)
    assert main(["schema", "--docs"]) == 0
    assert "## Resources" in capsys.readouterr().out


_TEST_REF = re.compile(r"`(tests/[^`:]+\.py)?(?:::)?(test_[A-Za-z0-9_]*)?`")


def test_every_threat_model_row_names_tests_that_exist():
    """A row's last cell names the tests that back it (``tests/x.py::name`` or ``::name`` for
    the file named before it): a renamed or deleted test must not leave a row unbacked."""
    rows = [line for line in _text(DOCS / "threat-model.md").splitlines() if line.startswith("| ")]
    missing, backed = [], 0
    for row in rows[2:]:  # NOTE: past the header and its rule
        cell, current = row.rstrip("| ").rsplit("|", 1)[-1], None
        for path, name in _TEST_REF.findall(cell):
            current = path or current
            if current is None or not (ROOT / current).is_file():
                missing.append(f"{current}: no such file")
            elif name and f"def {name}(" not in _text(ROOT / current):
                missing.append(f"{current}::{name}")
            backed += 1
    assert not missing
    assert backed > len(rows)
