"""The monthly report as GitHub Markdown, for an issue or a wiki page.

Every cell and note is escaped (:func:`gate.reporters.markup.escape`): team names, model
labels, experiment names and approvers come from specs and ledger records.
"""

from __future__ import annotations

from gate.report.model import MonthReport
from gate.reporters.markup import escape
from gate.reporters.report_tables import Table, headline, note_lines, tables

MARKER = "<!-- budget-gate monthly report -->"


def render(report: MonthReport) -> str:
    """A level-2 title, the tables as Markdown tables, then the notes."""
    blocks = [MARKER, f"## {escape(headline(report))}"]
    blocks.extend(_table(table) for table in tables(report))
    notes = note_lines(report)
    if notes:
        blocks.append("\n".join(["**Notes**", "", *(f"- {escape(note)}" for note in notes)]))
    return "\n\n".join(blocks) + "\n"


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
