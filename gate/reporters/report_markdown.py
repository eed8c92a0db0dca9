"""The monthly report as GitHub Markdown, for an issue or a wiki page.

Every cell and note is escaped (:func:`gate.reporters.markup.escape`): team names, model
labels, experiment names and approvers come from specs and ledger records. An issue body
holds at most 65,536 characters: past that, the longest tables keep their first rows and
say how many were left out (the JSON and the HTML have them all).
"""

from __future__ import annotations

import dataclasses

from gate.report.model import MonthReport
from gate.reporters.markup import escape, utf16_length
from gate.reporters.report_tables import Table, headline, note_lines, tables

MARKER = "<!-- budget-gate monthly report -->"
LIMIT = 65_000
"""Below GitHub's 65,536-character limit on an issue or comment body (UTF-16 units)."""


def render(report: MonthReport) -> str:
    """A level-2 title, the tables as Markdown tables, then the notes."""
    found = tables(report)
    keep = max((len(t.rows) for t in found), default=0)
    while True:
        text = _render(report, [_cut(t, keep) for t in found])
        if utf16_length(text) <= LIMIT or keep <= 1:
            return text
        keep //= 2


def _render(report: MonthReport, shown: list[Table]) -> str:
    blocks = [MARKER, f"## {escape(headline(report))}"]
    blocks.extend(_table(table) for table in shown)
    notes = note_lines(report)
    if notes:
        blocks.append("\n".join(["**Notes**", "", *(f"- {escape(note)}" for note in notes)]))
    return "\n\n".join(blocks) + "\n"


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
