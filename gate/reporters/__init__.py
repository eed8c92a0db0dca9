"""Reporters: ``render(report) -> str`` per output format, registered by name."""

from __future__ import annotations

from typing import ClassVar, Protocol

from gate.report import Report
from gate.reporters.json import JsonReporter
from gate.reporters.text import TextReporter


class Reporter(Protocol):
    """Renders a report; never decides pass or fail."""

    name: ClassVar[str]

    def render(self, report: Report) -> str:
        """Return the whole output as one string."""
        ...


REPORTERS: dict[str, type[Reporter]] = {r.name: r for r in (TextReporter, JsonReporter)}
"""Output formats by the name given to ``--format``."""
