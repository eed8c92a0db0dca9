"""JUnit XML: golden output, one unique test case per spec × rule, counts, valid XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from gate.errors import Location
from gate.evaluation.report import Report, SpecResult
from gate.policy.findings import Finding, Outcome
from gate.policy.model import Severity
from gate.policy.rules import all_rule_ids
from gate.reporters.junit import JunitReporter, outcome_of
from tests.reporters.sample import hostile_report, sample_report

GOLDENS = Path(__file__).parent / "goldens"


def parse(report: Report) -> ET.Element:
    return ET.fromstring(JunitReporter().render(report))


def case(root: ET.Element, suite: str, name: str) -> ET.Element:
    (found,) = root.findall(f"./testsuite[@name='{suite}']/testcase[@name='{name}']")
    return found


def test_one_case_per_spec_and_rule_plus_the_verdict_with_unique_names():
    report = sample_report()
    root = parse(report)
    cases = root.findall(".//testcase")
    keys = [(c.get("classname"), c.get("name")) for c in cases]
    assert len(keys) == len(set(keys))
    valid = [r for r in report.results if r.outcome is not Outcome.INVALID]
    assert len(cases) == len(valid) * (len(report.rules) + 1) + 1


def test_counts_add_up():
    root = parse(sample_report())
    # 3 valid specs × (every rule + their verdict) + the invalid spec's verdict.
    tests = 3 * (len(all_rule_ids()) + 1) + 1
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        str(tests),
        "6",
        "1",
        "1",
    )
    for suite in root.findall("testsuite"):
        assert int(suite.get("tests")) == len(suite.findall("testcase"))
        assert int(suite.get("failures")) == len(suite.findall("testcase/failure"))


def test_errors_and_approvals_fail_warnings_pass_waived_are_skipped():
    root = parse(sample_report())
    big = "experiments/big-grid.yaml"
    failure = case(root, big, "BG104 experiment-cost").find("failure")
    assert failure is not None and failure.get("type") == "error"
    assert case(root, big, "BG104 experiment-cost").get("line") == "12"
    assert case(root, big, "BG110 large-search").find("failure").get("type") == "approval"
    warn = case(root, big, "BG304 fp32-on-tensor-cores")
    assert warn.find("failure") is None and "warn BG304" in warn.find("system-out").text
    skipped = case(root, big, "BG102 trial-hours").find("skipped")
    assert skipped.get("message") == "waived: long runs approved by the board"
    assert list(case(root, big, "BG101 gpus-per-trial")) == []


def test_the_verdict_case_follows_the_outcome():
    root = parse(sample_report())
    assert case(root, "experiments/small.yaml", "verdict").find("failure") is None
    approval = case(root, "experiments/llm.yaml", "verdict").find("failure")
    assert approval.get("type") == "approval-required"
    broken = root.find("./testsuite[@name='experiments/broken.yaml']")
    assert [c.get("name") for c in broken.findall("testcase")] == ["verdict"]
    error = broken.find("testcase/error")
    assert error.get("message") == "invalid input (2 error(s))"
    assert "gpus_per_trail" in error.text


def test_warnings_alone_fail_only_through_the_verdict():
    finding = Finding("BG304", Severity.WARN, "fp32", Location("s.yaml", 2, 1))
    result = SpecResult("s.yaml", Outcome.VIOLATION, findings=(finding,))  # --fail-on-warn
    root = parse(Report((result,)))
    assert root.get("failures") == "1"
    assert case(root, "s.yaml", "verdict").find("failure") is not None


def test_control_characters_and_markup_still_make_valid_xml():
    report = hostile_report()
    bad = replace(report.results[0].findings[0], message='a\x01b <x> & "q" \ud800')
    report = replace(report, results=(replace(report.results[0], findings=(bad,)),))
    text = JunitReporter().render(report)
    failure = ET.fromstring(text).find(".//testcase[@name='BG202 label-values']/failure")
    assert failure.get("message") == 'a\ufffdb <x> & "q" \ufffd'


@pytest.mark.parametrize(
    ("severity", "element"),
    [(Severity.ERROR, "failure"), (Severity.APPROVAL, "failure"), (Severity.WARN, None)],
)
def test_severity_mapping(severity, element):
    assert outcome_of(severity) == element


def test_a_failure_located_in_the_policy_has_no_spec_line():
    finding = Finding("BG901", Severity.ERROR, "expired", Location("policies/default.yaml", 7, 5))
    result = SpecResult("s.yaml", Outcome.VIOLATION, findings=(finding,))
    failing = case(parse(Report((result,))), "s.yaml", "BG901")
    assert failing.find("failure") is not None and failing.get("line") is None
