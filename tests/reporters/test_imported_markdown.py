"""The comment on an imported file: its format, each field's source, all of it escaped.

A W&B sweep in a pull request is the author's text: a parameter name, a project name or an
extension-point value reaches the "where each field came from" table, so a hostile one
must come out as literal text under GitHub's own Markdown parser.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from gate.estimate.prices import load_catalog
from gate.evaluation.evaluate import Evaluator
from gate.evaluation.report import Report
from gate.policy.loader import builtin_policies
from gate.reporters.markdown import MarkdownReporter
from tests.reporters.test_markdown import OUR_TAGS, to_html, visible_text

HOSTILE = """\
method: grid
project: "<img src=x onerror=alert(1)> @org/team"
parameters:
  "<script>lr</script>": {values: [0.1, 0.01]}
  epochs: {value: 4}
# x-budget-gate: {accelerator: A100-80GB, gpus_per_trial: 1, epoch_minutes: 2,
#   labels: {model: "**bold** [x](javascript:alert(1))"}}
"""


def comment(tmp_path: Path, text: str) -> str:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(text)
    evaluator = Evaluator(builtin_policies(), load_catalog(), dt.date(2026, 1, 1))
    return MarkdownReporter().render(Report((evaluator.evaluate(str(sweep)),)))


def test_the_source_table_shows_hostile_values_literally(tmp_path) -> None:
    markdown = comment(tmp_path, HOSTILE)
    page = to_html(markdown)
    assert set(re.findall(r"<([a-z0-9]+)", page)) <= OUR_TAGS
    assert "javascript:" not in " ".join(re.findall(r'href="([^"]*)"', page))
    text = visible_text(page)
    assert "Read as a W&B sweep: priced as the spec it stands for." in text
    assert "search.parameters.<script>lr</script>" in text  # shown, not run
    assert "@org" not in markdown and "@&#8203;org/team" in markdown  # pings nobody
    assert "model: **bold** [x](javascript:alert(1))" in text


def test_each_row_names_the_line_of_the_file_it_came_from(tmp_path) -> None:
    markdown = comment(tmp_path, HOSTILE)
    rows = {
        cells[0]: cells[2]
        for line in markdown.splitlines()
        if line.startswith("| ") and len(cells := [c.strip() for c in line[2:-2].split(" | ")]) == 3
    }
    assert rows["resources.accelerator"] == "line 6:32 · extension — \\# x-budget-gate.accelerator"
    assert rows["workload.max\\_epochs"].startswith("line 5:11 · file — the largest of")


def test_an_invalid_imported_file_still_says_its_format(tmp_path) -> None:
    markdown = comment(tmp_path, "method: random\nparameters:\n  lr: {min: 0.1, max: 1.0}\n")
    assert "Read as a **W&amp;B sweep**" in markdown
    assert "add run\\_cap: N at the top level" in markdown
