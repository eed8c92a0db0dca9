"""Reporters: ``render(report) -> str`` per output format, registered by name.

A reporter module is imported only when its format is asked for, so ``check`` starts fast
whatever formats exist. Owns the output formats and their helpers (escaping, the chart,
rule docstrings as Markdown), and the monthly report's (``REPORT_FORMATS``). Imports
:mod:`gate.evaluation`, :mod:`gate.report` and the pure core; never the rule registry,
the verdict or :mod:`gate.integrations`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:  # NOTE: the CLI parser imports this module; it must stay stdlib-only
    from gate.evaluation.report import Report
    from gate.report.model import MonthReport

if sys.version_info >= (3, 11):  # the reporters' exhaustive matches
    from typing import assert_never as assert_never
else:  # pragma: no cover - Python 3.10 (typing_extensions costs a report 4 ms to import)
    from typing_extensions import assert_never as assert_never


class Reporter(Protocol):
    """Renders a report; never decides pass or fail."""

    name: ClassVar[str]

    def render(self, report: Report) -> str:
        """Return the whole output as one string."""
        ...


REPORTERS: dict[str, str] = {
    "text": "gate.reporters.text:TextReporter",
    "json": "gate.reporters.json:JsonReporter",
    "markdown": "gate.reporters.markdown:MarkdownReporter",
    "sarif": "gate.reporters.sarif:SarifReporter",
    "github": "gate.reporters.github:GithubReporter",
    "junit": "gate.reporters.junit:JunitReporter",
}
"""Output formats by the name given to ``--format``, as ``module:class`` import paths."""


def load_reporter(name: str) -> Reporter:
    """Import the reporter registered as ``name`` and return an instance of it."""
    module_name, _, class_name = REPORTERS[name].partition(":")
    reporter: type[Reporter] = getattr(importlib.import_module(module_name), class_name)
    return reporter()


REPORT_FORMATS: dict[str, str] = {
    "text": "gate.reporters.report_text",
    "markdown": "gate.reporters.report_markdown",
    "json": "gate.reporters.report_json",
    "html": "gate.reporters.report_html",
    "focus": "gate.reporters.focus",
}
"""``budget-gate report``'s formats: modules with ``render(report: MonthReport) -> str``."""


def load_report_renderer(name: str) -> Callable[[MonthReport], str]:
    """The ``render`` function of the monthly report's format ``name``."""
    render: Callable[[MonthReport], str] = importlib.import_module(REPORT_FORMATS[name]).render
    return render
