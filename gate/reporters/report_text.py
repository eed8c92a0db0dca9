"""The monthly report as text, for a terminal or a CI log."""

from __future__ import annotations

from gate.report.model import MonthReport
from gate.reporters.report_tables import headline, note_lines, tables
from gate.words import aligned


def render(report: MonthReport) -> str:
    """Every table under its title, then the notes."""
    blocks = [headline(report)]
    for table in tables(report):
        if not table.rows:
            blocks.append(f"{table.title}\n  {table.empty}")
            continue
        lines = aligned([table.header, *table.rows], left=table.left)
        blocks.append("\n".join([table.title, *(f"  {line}" for line in lines)]))
    notes = note_lines(report)
    if notes:
        blocks.append("\n".join(["notes", *(f"  - {note}" for note in notes)]))
    return "\n\n".join(blocks) + "\n"
