"""SARIF: golden output, the official 2.1.0 schema, levels, regions, reproducibility."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from gate.errors import Location
from gate.evaluation.report import Report, SpecResult
from gate.policy.findings import Finding, Outcome
from gate.policy.model import Severity
from gate.reporters.sarif import SarifReporter, artifact_uri, level
from tests.conftest import FIXTURES
from tests.reporters.sample import sample_report

GOLDENS = Path(__file__).parent / "goldens"
SCHEMA = json.loads((FIXTURES / "sarif" / "sarif-schema-2.1.0.json").read_text())


def render(report: Report) -> dict:
    return json.loads(SarifReporter().render(report))


def validate(log: dict) -> None:
    # SOURCE.md: the schema is draft-04, so Draft4Validator (validator_for agrees).
    assert jsonschema.validators.validator_for(SCHEMA) is jsonschema.Draft4Validator
    errors = sorted(jsonschema.Draft4Validator(SCHEMA).iter_errors(log), key=str)
    assert errors == []


@pytest.mark.parametrize("report", [sample_report(), Report(())], ids=["sample", "empty"])
def test_valid_against_the_official_schema(report):
    validate(render(report))


def test_the_schema_check_catches_a_broken_log():
    log = render(sample_report())
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    with pytest.raises(AssertionError):
        validate(log)


def test_rules_table_lists_the_fired_rules_and_results_point_into_it():
    log = render(sample_report())
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [
        "BG102",
        "BG104",
        "BG110",
        "BG112",
        "BG201",
        "BG304",
        "BG901",
        "invalid-input",
    ]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    assert rules[1]["helpUri"].endswith("docs/rules.md#bg104-experiment-cost")
    assert rules[1]["defaultConfiguration"] == {"level": "error"}
    assert "```yaml" in rules[1]["help"]["markdown"]


def test_results_are_1_based_regions_at_the_spec_line():
    run = render(sample_report())["runs"][0]
    first = run["results"][0]
    assert first["ruleId"] == "BG104"
    assert first["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "experiments/big-grid.yaml"},
        "region": {"startLine": 12, "startColumn": 3},
    }
    assert run["columnKind"] == "unicodeCodePoints"


def test_a_finding_without_location_points_at_its_spec_file():
    run = render(sample_report())["runs"][0]
    (expired,) = [r for r in run["results"] if r["ruleId"] == "BG901"]
    assert expired["locations"] == [
        {"physicalLocation": {"artifactLocation": {"uri": "experiments/big-grid.yaml"}}}
    ]


@pytest.mark.parametrize(
    ("severity", "sarif"),
    [(Severity.ERROR, "error"), (Severity.APPROVAL, "warning"), (Severity.WARN, "note")],
)
def test_levels(severity, sarif):
    assert level(severity) == sarif


def test_waived_findings_are_suppressed_with_the_reason():
    run = render(sample_report())["runs"][0]
    (waived,) = [r for r in run["results"] if "suppressions" in r]
    assert waived["ruleId"] == "BG102"
    assert waived["suppressions"] == [
        {"kind": "external", "justification": "long runs approved by the board"}
    ]


def test_invalid_specs_are_tool_notifications_at_the_error():
    invocation = render(sample_report())["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    first = invocation["toolExecutionNotifications"][0]
    assert first["message"]["text"] == (
        "unknown key 'gpus_per_trail' in resources — did you mean 'gpus_per_trial'?"
    )
    assert first["locations"][0]["physicalLocation"]["region"] == {"startLine": 9, "startColumn": 3}


def keys(node) -> set[str]:
    if isinstance(node, dict):
        return set(node).union(*(keys(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(keys(v) for v in node))
    return set()


def test_reproducible_and_free_of_timestamps():
    first = SarifReporter().render(sample_report())
    assert SarifReporter().render(sample_report()) == first
    assert not [k for k in keys(json.loads(first)) if "time" in k.lower()]
    assert "startLine" in keys(json.loads(first))


def test_a_rule_missing_from_the_report_still_gets_a_rules_entry():
    finding = Finding("BG101", Severity.ERROR, "m", Location("s.yaml", 1, 1))
    log = render(Report((SpecResult("s.yaml", Outcome.VIOLATION, findings=(finding,)),)))
    validate(log)
    assert log["runs"][0]["tool"]["driver"]["rules"] == [{"id": "BG101"}]


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("experiments/a b#1.yaml", "experiments/a%20b%231.yaml"),
        ("/abs/x.yaml", "file:///abs/x.yaml"),
        ("é/x.yaml", "%C3%A9/x.yaml"),
        ("bad\udcff.yaml", "bad%FF.yaml"),  # a name that is not UTF-8: its bytes
        ("/abs/bad\udcff.yaml", "file:///abs/bad%FF.yaml"),
    ],
)
def test_artifact_uri(path, uri):
    assert artifact_uri(path) == uri


def test_an_input_error_is_a_result_code_scanning_shows():
    run = render(sample_report())["runs"][0]
    errors = [r for r in run["results"] if r["ruleId"] == "invalid-input"]
    assert errors and all(r["level"] == "error" for r in errors)
    region = errors[0]["locations"][0]["physicalLocation"]
    assert region["artifactLocation"]["uri"] == "experiments/broken.yaml"
    assert region["region"] == {"startLine": 9, "startColumn": 3}
    assert "did you mean 'gpus_per_trial'?" in errors[0]["message"]["text"]
