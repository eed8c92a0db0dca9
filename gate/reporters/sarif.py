"""SARIF 2.1.0 for code scanning: the rules that fired, results at 1-based spec positions.

Levels: ``error`` → ``error``, ``approval`` → ``warning`` (the change may not launch
until someone approves it), ``warn`` → ``note``. A waived finding is kept with an external
suppression carrying the waiver's reason. Each input error is an ``error`` result of the
rule ``invalid-input`` at its place (code scanning shows results, not notifications) and a
tool notification; what the verdict took as given (the built-in default policy, a team no
policy owns) is a warning notification. Nothing depends on the clock, so the output is
reproducible.
"""

from __future__ import annotations

import os
from pathlib import PurePath
from typing import Any, ClassVar
from urllib.parse import quote

from gate.errors import Location, Problem
from gate.evaluation.report import Report, SpecResult
from gate.policy.findings import Finding, RuleInfo
from gate.policy.model import Severity
from gate.reporters import assert_never, indented_json
from gate.reporters.docstring import to_markdown

SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)


class SarifReporter:
    """One SARIF run per evaluation; results in report order, rules sorted by id."""

    name: ClassVar[str] = "sarif"

    def render(self, report: Report) -> str:
        """Render the SARIF log as indented JSON with a trailing newline."""
        fired = report.fired
        index = {rule_id: i for i, rule_id in enumerate(fired)}
        problems = [(p, r) for r in report.results for p in r.errors]
        rules = [_rule(rule_id, report) for rule_id in fired]
        if problems:
            rules.append(INVALID_INPUT_RULE)
        driver: dict[str, Any] = {
            "name": "budget-gate",
            "version": report.version or "0",
            "informationUri": report.context.docs_url,
            "rules": rules,
        }
        run = {
            "tool": {"driver": driver},
            "invocations": [_invocation(report)],
            "columnKind": "unicodeCodePoints",
            "results": [
                *(_result(f, r, index[f.rule_id]) for r in report.results for f in r.findings),
                *(_input_error(p, r, len(fired)) for p, r in problems),
            ],
        }
        log = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
        return indented_json.dumps(log) + "\n"


INVALID_INPUT_RULE: dict[str, Any] = {
    "id": "invalid-input",
    "name": "invalid-input",
    "shortDescription": {"text": "The spec or its policy could not be read or validated"},
    "fullDescription": {
        "text": "budget-gate could not price or judge this spec: fix the input error first."
    },
    "defaultConfiguration": {"level": "error"},
}
"""Not a policy rule: the place where input errors (exit 3) show up in code scanning."""


def level(severity: Severity) -> str:
    """The SARIF level of a severity."""
    match severity:
        case Severity.ERROR:
            return "error"
        case Severity.APPROVAL:
            return "warning"
        case Severity.WARN:
            return "note"
        case _:
            assert_never(severity)


def _rule(rule_id: str, report: Report) -> dict[str, Any]:
    info: RuleInfo | None = report.rules.get(rule_id)
    if info is None:
        return {"id": rule_id}
    summary = info.help.splitlines()[0] if info.help else info.title
    return {
        "id": info.id,
        "name": info.slug,
        "shortDescription": {"text": info.title},
        "fullDescription": {"text": summary},
        "help": {"text": info.help, "markdown": to_markdown(info.help)},
        "helpUri": report.context.rule_url(info),
        "defaultConfiguration": {"level": level(info.default_severity)},
    }


def _result(finding: Finding, spec: SpecResult, rule_index: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.rule_id,
        "ruleIndex": rule_index,
        "level": level(finding.severity),
        "message": {"text": finding.message},
        "locations": [_location(finding.location, spec.file)],
        "properties": {"severity": finding.severity.value, "outcome": spec.outcome.value},
    }
    if finding.waived_by is not None:
        result["suppressions"] = [{"kind": "external", "justification": finding.waived_by}]
    elif finding.approved_by is not None:
        justification = f"approved by {finding.approved_by}"
        result["suppressions"] = [{"kind": "external", "justification": justification}]
    return result


def _input_error(problem: Problem, spec: SpecResult, rule_index: int) -> dict[str, Any]:
    text = f"{problem.message} — {problem.hint}" if problem.hint else problem.message
    return {
        "ruleId": INVALID_INPUT_RULE["id"],
        "ruleIndex": rule_index,
        "level": "error",
        "message": {"text": text},
        "locations": [_location(problem.location, spec.file)],
        "properties": {"outcome": spec.outcome.value},
    }


def _invocation(report: Report) -> dict[str, Any]:
    problems = [(p, r.file) for r in report.results for p in r.errors]
    given = [
        {"level": "warning", "message": {"text": note}, "locations": [_location(None, r.file)]}
        for r in report.results
        for note in r.fallbacks
    ]
    return {
        "executionSuccessful": not problems,
        "toolExecutionNotifications": [*(_notification(p, f) for p, f in problems), *given],
    }


def _notification(problem: Problem, file: str) -> dict[str, Any]:
    text = f"{problem.message} — {problem.hint}" if problem.hint else problem.message
    return {
        "level": "error",
        "message": {"text": text},
        "locations": [_location(problem.location, file)],
    }


def _location(location: Location | None, fallback_file: str) -> dict[str, Any]:
    physical: dict[str, Any] = {
        "artifactLocation": {"uri": artifact_uri(location.file if location else fallback_file)}
    }
    if location is not None:
        physical["region"] = {"startLine": location.line, "startColumn": location.col}
    return {"physicalLocation": physical}


def artifact_uri(path: str) -> str:
    """A path as a URI reference: relative paths stay relative, absolute ones ``file://``."""
    native = PurePath(path)
    # NOTE: as bytes, as as_uri() quotes them: a name that is not UTF-8 is its bytes
    return native.as_uri() if native.is_absolute() else quote(os.fsencode(native.as_posix()))
