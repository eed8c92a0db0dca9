"""JUnit XML for CI systems that read test reports: one test case per spec × rule.

Each spec is a ``<testsuite>`` named by its file; each rule evaluated is a test case
named ``BG104 experiment-cost`` (class name: the spec file), so names are unique. Active
``error`` and ``approval`` findings are failures; a ``warn`` finding passes with its message
in ``system-out``; a waived finding is skipped with the waiver's reason. One more test
case per spec, ``verdict``, fails unless the spec passed, so the XML agrees with the exit
code (``--fail-on-warn`` included); an invalid spec has only that case, as an error.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from typing import ClassVar

from gate.evaluation.report import Report, SpecResult
from gate.policy.findings import Finding, Outcome
from gate.policy.model import Severity
from gate.reporters import assert_never

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_COUNTED = ("failure", "error", "skipped")


class JunitReporter:
    """JUnit XML with a stable order and no timings."""

    name: ClassVar[str] = "junit"

    def render(self, report: Report) -> str:
        """Render ``<testsuites>`` with one suite per spec."""
        root = ET.Element("testsuites", name="budget-gate")
        for result in report.results:
            root.append(_suite(result, report))
        _count(root, [case for suite in root for case in suite.iter("testcase")])
        ET.indent(root)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def outcome_of(severity: Severity) -> str | None:
    """The JUnit element a finding of this severity puts in its test case (None: passes)."""
    match severity:
        case Severity.ERROR | Severity.APPROVAL:
            return "failure"
        case Severity.WARN:
            return None
        case _:
            assert_never(severity)


def _suite(result: SpecResult, report: Report) -> ET.Element:
    suite = ET.Element("testsuite", name=_safe(result.file))
    properties = ET.SubElement(suite, "properties")
    for key, value in (("name", result.name), ("policy", result.policy)):
        if value is not None:
            ET.SubElement(properties, "property", name=key, value=_safe(value))
    ET.SubElement(properties, "property", name="outcome", value=result.outcome.value)
    cases = [_verdict_case(result)]
    if result.outcome is not Outcome.INVALID:
        rule_ids = sorted(set(report.rules) | {f.rule_id for f in result.findings})
        cases.extend(_rule_case(rule_id, result, report) for rule_id in rule_ids)
    suite.extend(cases)
    _count(suite, cases)
    return suite


def _verdict_case(result: SpecResult) -> ET.Element:
    case = _case(result.file, "verdict")
    if result.outcome is Outcome.INVALID:
        text = "\n".join(str(p) for p in result.errors)
        _child(case, "error", f"invalid input ({len(result.errors)} error(s))", text, "invalid")
    elif result.outcome is not Outcome.PASS:
        _child(case, "failure", result.outcome.value, "", result.outcome.value)
    if result.fallbacks:  # NOTE: what the verdict took as given, said as the other formats do
        notes = "\n".join(f"note: {note}" for note in result.fallbacks)
        ET.SubElement(case, "system-out").text = _safe(notes)
    return case


def _rule_case(rule_id: str, result: SpecResult, report: Report) -> ET.Element:
    info = report.rules.get(rule_id)
    case = _case(result.file, f"{rule_id} {info.slug}" if info else rule_id)
    findings = [f for f in result.findings if f.rule_id == rule_id]
    active = [f for f in findings if f.active]
    failing = [f for f in active if outcome_of(f.severity) == "failure"]
    if failing:
        first = failing[0]
        if first.location is not None and first.location.file == result.file:
            case.set("line", str(first.location.line))
        text = "\n".join(_line(f) for f in findings)
        _child(case, "failure", first.message, text, first.severity.value)
    elif active:
        ET.SubElement(case, "system-out").text = _safe("\n".join(_line(f) for f in findings))
    elif any(f.waived_by is not None for f in findings):
        reasons = "; ".join(sorted({f.waived_by for f in findings if f.waived_by is not None}))
        ET.SubElement(case, "skipped", message=_safe(f"waived: {reasons}"))
    elif findings:  # every finding approved: the case passes and says by whom
        ET.SubElement(case, "system-out").text = _safe("\n".join(_line(f) for f in findings))
    return case


def _case(file: str, name: str) -> ET.Element:
    return ET.Element("testcase", classname=_safe(file), name=_safe(name), file=_safe(file))


def _child(case: ET.Element, tag: str, message: str, text: str, kind: str) -> None:
    element = ET.SubElement(case, tag, message=_safe(message), type=kind)
    element.text = _safe(text) if text else None


def _line(finding: Finding) -> str:
    where = f"{finding.location}: " if finding.location else ""
    waived = f" (waived: {finding.waived_by})" if finding.waived_by else ""
    approved = f" (approved by {finding.approved_by})" if finding.approved_by else ""
    return f"{where}{finding.severity.value} {finding.rule_id} {finding.message}{waived}{approved}"


def _count(element: ET.Element, cases: list[ET.Element]) -> None:
    tally = Counter(child.tag for case in cases for child in case if child.tag in _COUNTED)
    element.set("tests", str(len(cases)))
    element.set("failures", str(tally["failure"]))
    element.set("errors", str(tally["error"]))
    element.set("skipped", str(tally["skipped"]))


def _safe(text: str) -> str:
    """XML 1.0 cannot carry most control characters, even escaped."""
    return _NOT_XML.sub("\ufffd", text)
