"""The monthly report as GitHub Markdown, for an issue or a wiki page.

Every cell and note is escaped (:func:`gate.reporters.markup.escape`): team names, model
labels, experiment names and approvers come from specs and ledger records. An issue body
holds at most 65,536 characters: a cell keeps its first 200 characters and a note its
first 2,000 (a training job's tag can be as long as it likes); past the limit, the longest
tables keep their first rows, then the notes their first ones, each saying how many were
left out (the JSON and the HTML have them all).
"""

from __future__ import annotations

import dataclasses

from gate.report.model import MonthReport
from gate.reporters.markup import escape, hidden_marker, utf16_length, without_bidi
from gate.reporters.report_tables import Table, headline, note_lines, tables
from gate.words import shortened

MARKER = "<!-- budget-gate monthly report -->"
LIMIT = 65_000
"""Below GitHub's 65,536-character limit on an issue or comment body (UTF-16 units)."""


CELL = 200
"""Characters of a cell shown; a longer one (a name from a tag) ends in an ellipsis."""
NOTE = 2_000
"""Characters of a note shown."""
TITLE = 256
"""GitHub's limit on an issue title."""


def render(report: MonthReport) -> str:
    """A level-2 title, the tables as Markdown tables, then the notes."""
    found = [_shortened(t) for t in tables(report)]
    notes = [shortened(note, NOTE) for note in note_lines(report)]
    keep = max((len(t.rows) for t in found), default=0)
    while True:
        text = _render(report, [_cut(t, keep) for t in found], notes)
        if utf16_length(text) <= LIMIT or keep <= 1:
            break
        keep //= 2
    shown = len(notes)
    while utf16_length(text) > LIMIT and shown:
        shown -= 1
        left = [f"{len(notes) - shown} more notes in the JSON and HTML"]
        text = _render(report, [_cut(t, keep) for t in found], notes[:shown] + left)
    return text


def issue(report: MonthReport) -> tuple[str, str, str]:
    """The report as its period's GitHub issue: the title, the marker and the body.

    The marker, a hidden first line, names the period and the team, so the workflow that
    runs again (a re-run, a manual dispatch) edits that issue instead of opening another.
    """
    team = report.team_filter
    marker = hidden_marker("report", str(report.period), team)
    title = f"budget-gate report {report.period}" + (f" for team {team}" if team else "")
    return shortened(without_bidi(title), TITLE), marker, f"{marker}\n{render(report)}"


def _render(report: MonthReport, shown: list[Table], notes: list[str]) -> str:
    blocks = [MARKER, f"## {escape(headline(report))}"]
    blocks.extend(_table(table) for table in shown)
    if notes:
        blocks.append("\n".join(["**Notes**", "", *(f"- {escape(note)}" for note in notes)]))
    return "\n\n".join(blocks) + "\n"


def _shortened(table: Table) -> Table:
    rows = tuple(tuple(shortened(cell, CELL) for cell in row) for row in table.rows)
    return dataclasses.replace(table, rows=rows)


def _cut(table: Table, keep: int) -> Table:
    if len(table.rows) <= keep:
        return table
    left = len(table.rows) - keep
    title = f"{table.title} — the first {keep} rows; {left} more in the JSON and HTML"
    return dataclasses.replace(table, title=title, rows=table.rows[:keep])


def _table(table: Table) -> str:
    title = f"### {escape(table.title)}"
    if not table.rows:
        return f"{title}\n\n{escape(table.empty)}"
    align = [":--" if i in table.left else "--:" for i in range(len(table.header))]
    lines = [
        _row(table.header),
        "| " + " | ".join(align) + " |",
        *(_row(row) for row in table.rows),
    ]
    return "\n".join([title, "", *lines])


def _row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(escape(cell) for cell in cells) + " |"
