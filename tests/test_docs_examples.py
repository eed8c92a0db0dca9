"""docs/examples/: the pull-request comment for each example spec, kept current.

Each comment is what ``check --base-ref main --format markdown`` posts when the example
changes from ``docs/examples/base/<name>.yaml`` (the base branch) to ``examples/<name>.yaml``.
Regenerate with ``pytest --update-goldens``.
"""

from __future__ import annotations

import argparse
import dataclasses
import re

import cmarkgfm
import pytest

from gate.commands.check import BLOCKED
from gate.commands.common import make_evaluator, make_report
from gate.evaluation.diff import compare
from gate.evaluation.report import RenderContext
from gate.reporters.markdown import MarkdownReporter
from tests.conftest import ROOT

EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.yaml"))
CONTEXT = RenderContext(
    repository="acme/ml-experiments", workflow="budget-gate", policy_dir="policies", base_ref="main"
)


def comment(name: str) -> str:
    args = argparse.Namespace(policy_dir=str(ROOT / "policies"), as_of="2026-11-29")
    # NOTE: judged on that day as a CI run then would be: no word of --as-of in the comment
    evaluator = dataclasses.replace(make_evaluator(args, alternatives_for=BLOCKED), as_of=None)
    spec = f"examples/{name}.yaml"
    head = evaluator.evaluate(spec)
    base = evaluator.evaluate(spec, (ROOT / "docs/examples/base" / f"{name}.yaml").read_bytes())
    report = make_report([head], evaluator, CONTEXT, [compare(spec, base, head)])
    return MarkdownReporter().render(report)


@pytest.fixture(autouse=True)
def _at_the_repository_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # spec paths in the comments are relative, as in CI


@pytest.mark.parametrize("name", EXAMPLES)
def test_rendered_comment_is_current(name, golden):
    golden(ROOT / "docs" / "examples" / f"{name}.md", comment(name))


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_comment_shows_a_change_explained_by_driver(name):
    body = comment(name)
    assert "**Cost change:** changed since main" in body
    page = cmarkgfm.github_flavored_markdown_to_html(body)
    assert re.search(r"<li>\w+ grew from \d+ to \d+ trials \(×[\d.]+\)</li>", page)
