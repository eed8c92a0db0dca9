"""gate.policy.verdict: policy severities (apply_policy) and the pass/fail decision (decide)."""

from __future__ import annotations

import pytest

from gate.policy.findings import Finding, Outcome
from gate.policy.loader import LoadedPolicy
from gate.policy.model import Severity
from gate.policy.verdict import RawFinding, apply_policy, decide
from gate.spec.loader import SourceMap
from tests.conftest import TODAY, make_policy

SPEC = "exp/spec.yaml"
GPUS = RawFinding("BG101", Severity.ERROR, "9 GPUs per trial exceeds max_gpus_per_trial 8", None)
NO_GATE = RawFinding(
    "BG303", Severity.WARN, "no quality_gate: qualified models cannot be counted", None
)
LARGE = RawFinding("BG110", Severity.APPROVAL, "48 trials is over the approval trigger of 32", None)


def _loaded(severity: dict[str, str] | None = None) -> LoadedPolicy:
    return LoadedPolicy(make_policy({"severity": severity or {}}), SourceMap(), ("default",))


def _finding(severity: Severity, waived_by: str | None = None) -> Finding:
    return Finding("BG000", severity, "message", None, waived_by)


def test_default_severities_are_kept():
    findings = apply_policy([GPUS, NO_GATE, LARGE], _loaded(), SPEC, TODAY)
    assert [(f.rule_id, f.severity, f.message) for f in findings] == [
        ("BG101", Severity.ERROR, GPUS.message),
        ("BG303", Severity.WARN, NO_GATE.message),
        ("BG110", Severity.APPROVAL, LARGE.message),
    ]
    assert all(f.active for f in findings)


def test_severity_off_drops_the_finding():
    findings = apply_policy([GPUS, NO_GATE], _loaded({"BG101": "off"}), SPEC, TODAY)
    assert [f.rule_id for f in findings] == ["BG303"]


def test_severity_error_upgrades_a_warning():
    findings = apply_policy([NO_GATE], _loaded({"BG303": "error"}), SPEC, TODAY)
    assert [(f.rule_id, f.severity) for f in findings] == [("BG303", Severity.ERROR)]
    assert decide(findings) is Outcome.VIOLATION


def test_severity_can_downgrade_an_error():
    findings = apply_policy([GPUS], _loaded({"BG101": "warn"}), SPEC, TODAY)
    assert [f.severity for f in findings] == [Severity.WARN]
    assert decide(findings) is Outcome.PASS


def test_override_for_another_rule_changes_nothing():
    findings = apply_policy([GPUS], _loaded({"BG102": "off"}), SPEC, TODAY)
    assert [(f.rule_id, f.severity) for f in findings] == [("BG101", Severity.ERROR)]


@pytest.mark.parametrize(
    ("severities", "fail_on_warn", "outcome"),
    [
        ([], False, Outcome.PASS),
        ([Severity.ERROR], False, Outcome.VIOLATION),
        ([Severity.APPROVAL], False, Outcome.APPROVAL_REQUIRED),
        ([Severity.WARN], False, Outcome.PASS),
        ([Severity.WARN], True, Outcome.VIOLATION),
        ([Severity.APPROVAL, Severity.WARN], False, Outcome.APPROVAL_REQUIRED),
        ([Severity.APPROVAL, Severity.WARN], True, Outcome.VIOLATION),
        ([Severity.ERROR, Severity.APPROVAL], False, Outcome.VIOLATION),
    ],
)
def test_decide(severities: list[Severity], fail_on_warn: bool, outcome: Outcome):
    findings = [_finding(s) for s in severities]
    assert decide(findings, fail_on_warn=fail_on_warn) is outcome


def test_waived_error_passes():
    assert decide([_finding(Severity.ERROR, waived_by="Q4 launch")]) is Outcome.PASS


def test_waived_approval_needs_no_approver():
    assert decide([_finding(Severity.APPROVAL, waived_by="pre-approved")]) is Outcome.PASS


def test_waived_warning_does_not_fail_on_warn():
    waived = _finding(Severity.WARN, waived_by="known")
    assert decide([waived], fail_on_warn=True) is Outcome.PASS


def test_waived_error_beside_an_active_approval_needs_approval():
    findings = [_finding(Severity.ERROR, waived_by="ok"), _finding(Severity.APPROVAL)]
    assert decide(findings) is Outcome.APPROVAL_REQUIRED
