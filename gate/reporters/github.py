r"""GitHub Actions workflow commands: one annotation per finding and per input error.

``::error file=F,line=L,col=C,title=T::message``. Severities map to ``error``,
``warning`` (approval) and ``notice`` (warn); a waived finding is a notice that says so.
The message escapes ``%``, CR and LF; the properties also ``:`` and ``,``, as the runner
requires; any other control character (a terminal escape in a file name: the Actions log
renders ANSI) is shown as its escape (``\x1b``). The job summary (Markdown) is written by
the command, not here.
"""

from __future__ import annotations

from typing import ClassVar

from gate.errors import Location
from gate.evaluation.report import Report, SpecResult
from gate.policy.findings import Finding
from gate.policy.model import Severity
from gate.reporters import assert_never

_DATA_ESCAPES = (("%", "%25"), ("\r", "%0D"), ("\n", "%0A"))
_PROPERTY_ESCAPES = (*_DATA_ESCAPES, (":", "%3A"), (",", "%2C"))


class GithubReporter:
    """Annotations for the pull request's changed lines, then one plain summary line."""

    name: ClassVar[str] = "github"

    def render(self, report: Report) -> str:
        """Render every command line and the verdict."""
        lines = [line for result in report.results for line in _commands(result, report)]
        verdict = report.outcome
        lines.append(
            f"budget-gate: {len(report.results)} spec(s), verdict {verdict.value} "
            f"(exit {verdict.exit_code})"
        )
        return "\n".join(lines) + "\n"


def command(kind: str, message: str, location: Location | None, file: str, title: str) -> str:
    """One workflow command with its properties and message escaped."""
    props = {"file": location.file if location else file}
    if location is not None:
        props |= {"line": str(location.line), "col": str(location.col)}
    props["title"] = title
    joined = ",".join(f"{key}={_escape(value, _PROPERTY_ESCAPES)}" for key, value in props.items())
    return f"::{kind} {joined}::{_escape(message, _DATA_ESCAPES)}"


def message_command(kind: str, message: str, title: str) -> str:
    """A workflow command without a file (``::warning title=T::message``), escaped."""
    return f"::{kind} title={_escape(title, _PROPERTY_ESCAPES)}::{_escape(message, _DATA_ESCAPES)}"


def annotation(severity: Severity) -> str:
    """The workflow command for a severity."""
    match severity:
        case Severity.ERROR:
            return "error"
        case Severity.APPROVAL:
            return "warning"
        case Severity.WARN:
            return "notice"
        case _:
            assert_never(severity)


def _commands(result: SpecResult, report: Report) -> list[str]:
    title = "budget-gate invalid input"
    lines = [
        command("error", _problem_text(p.message, p.hint), p.location, result.file, title)
        for p in result.errors
    ]
    lines.extend(_finding(f, result.file, report) for f in result.findings)
    said = "budget-gate: taken as given"
    lines.extend(command("warning", note, None, result.file, said) for note in result.fallbacks)
    return lines


def _finding(finding: Finding, file: str, report: Report) -> str:
    info = report.rules.get(finding.rule_id)
    title = f"{finding.rule_id} {info.title}" if info else finding.rule_id
    if finding.waived_by is not None:
        message = f"{finding.message} (waived: {finding.waived_by})"
        return command("notice", message, finding.location, file, f"{title} (waived)")
    if finding.approved_by is not None:
        message = f"{finding.message} (approved by {finding.approved_by})"
        return command("notice", message, finding.location, file, f"{title} (approved)")
    return command(annotation(finding.severity), finding.message, finding.location, file, title)


def _problem_text(message: str, hint: str) -> str:
    return f"{message} — {hint}" if hint else message


def _escape(value: str, escapes: tuple[tuple[str, str], ...]) -> str:
    if not value.isprintable():
        value = "".join(_visible(ch) for ch in value)
    for raw, escaped in escapes:
        value = value.replace(raw, escaped)
    return value


def _visible(ch: str) -> str:
    """CR and LF as they are (escaped as the runner reads them); other controls as escapes."""
    return ch if ch.isprintable() or ch in "\r\n" else ch.encode("unicode_escape").decode()
