"""The monthly report as text, for a terminal or a CI log."""

from __future__ import annotations

from gate.errors import one_line
from gate.report.model import MonthReport
from gate.reporters.report_tables import headline, note_lines, tables
from gate.words import aligned


def render(report: MonthReport) -> str:
    """Every table under its title, then the notes."""
    blocks = [one_line(headline(report))]
    for table in tables(report):
        if not table.rows:
            blocks.append(f"{table.title}\n  {one_line(table.empty)}")
            continue
        rows = [[one_line(cell) for cell in row] for row in table.rows]  # tags are a job's text
        lines = aligned([table.header, *rows], left=table.left)
        blocks.append("\n".join([table.title, *(f"  {line}" for line in lines)]))
    notes = note_lines(report)
    if notes:
        blocks.append("\n".join(["notes", *(f"  - {one_line(note)}" for note in notes)]))
    return "\n\n".join(blocks) + "\n"
