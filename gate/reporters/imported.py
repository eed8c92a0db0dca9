"""The Markdown report's words on an imported file: its format and where each field came from.

A W&B sweep, Katib Experiment, SkyPilot task or Hydra config in a pull request is priced
as the spec it stands for; the comment says so in one line, and a collapsed table gives
each field's value and source (the file's line and column, its extension point, the team
policy's defaults, the calibration, an engine's or budget-gate's default), then the
engine's notes. Everything read from the file is escaped.
"""

from __future__ import annotations

from gate.formats.model import ImportSummary, Origin, Source
from gate.reporters.markup import escape


def read_as(summary: ImportSummary) -> str:
    """The format in one line, e.g. Read as a **W&B sweep**, priced as its spec."""
    return f"Read as a **{escape(summary.format.value)}**: priced as the spec it stands for."


def provenance(summary: ImportSummary, file: str) -> str:
    """The one-line reading and, collapsed, each field's source and the engine's notes."""
    rows = [
        f"| {escape(row.field)} | {escape(row.value)} | {escape(_source(row.source, file))} |"
        for row in summary.fields
        if not (row.source.origin is Origin.GATE and row.value == "not set")
    ]
    table = "\n".join(["| field | value | from |", "|---|---|---|", *rows])
    notes = "\n".join(f"- {escape(note)}" for note in summary.notes)
    body = "\n\n".join(part for part in (table, notes) if part)
    return (
        f"{read_as(summary)}\n\n<details><summary>Where each field came from</summary>\n\n"
        f"{body}\n\n</details>"
    )


def _source(source: Source, file: str) -> str:
    """``line 29:18 · file — spec.maxTrialCount: 15`` (the file named when it is another)."""
    at = source.location
    if at is None:
        return f"{source.origin.value} — {source.detail}"
    where = f"line {at.line}:{at.col}" if at.file == file else str(at)
    return f"{where} · {source.origin.value} — {source.detail}"
