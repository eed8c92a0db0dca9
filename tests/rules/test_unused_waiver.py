"""BG902 unused-waiver, applied by gate.policy.verdict.apply_policy."""

from __future__ import annotations

import datetime as dt

from gate.policy.findings import Outcome
from gate.policy.loader import LoadedPolicy
from gate.policy.model import Severity
from gate.policy.rules import unused_waiver
from gate.policy.verdict import RawFinding, apply_policy, decide
from gate.spec.loader import SourceMap
from tests.conftest import TODAY, make_policy

SPEC = "exp/big.yaml"
LATER = dt.date(2099, 1, 1)
BG104 = RawFinding("BG104", Severity.ERROR, "worst-case cost ... exceeds max_experiment_cost", None)


def _loaded(waivers: list[dict], **extra) -> LoadedPolicy:
    return LoadedPolicy(make_policy({"waivers": waivers, **extra}), SourceMap(), ("default",))


def _waiver(
    rule: str = "BG104", specs: str = "exp/big.yaml", reason: str = "board approved", expires=LATER
) -> dict:
    return {"rule": rule, "specs": specs, "reason": reason, "expires": expires}


def test_constants():
    assert (unused_waiver.ID, unused_waiver.SLUG) == ("BG902", "unused-waiver")
    assert unused_waiver.DEFAULT_SEVERITY is Severity.WARN


def test_used_waiver_is_not_reported():
    findings = apply_policy([BG104], _loaded([_waiver()]), SPEC, TODAY)
    assert [(f.rule_id, f.waived_by) for f in findings] == [("BG104", "board approved")]
    assert decide(findings) is Outcome.PASS


def test_waiver_whose_rule_did_not_fire_is_reported():
    findings = apply_policy([], _loaded([_waiver()]), SPEC, TODAY)
    assert [(f.rule_id, f.severity, f.message, f.location) for f in findings] == [
        ("BG902", Severity.WARN, "waiver for BG104 on 'exp/big.yaml' suppressed nothing", None)
    ]
    assert decide(findings) is Outcome.PASS
    assert decide(findings, fail_on_warn=True) is Outcome.VIOLATION


def test_waiver_for_another_rule_is_unused():
    # BG104 fires, the waiver is for BG103: BG104 stays active and the waiver is stale.
    findings = apply_policy([BG104], _loaded([_waiver(rule="BG103")]), SPEC, TODAY)
    assert [(f.rule_id, f.waived_by) for f in findings] == [("BG104", None), ("BG902", None)]
    assert findings[1].message == "waiver for BG103 on 'exp/big.yaml' suppressed nothing"


def test_waiver_for_another_spec_yields_nothing():
    findings = apply_policy([], _loaded([_waiver(specs="exp/small.yaml")]), SPEC, TODAY)
    assert findings == []


def test_expired_waiver_is_reported_expired_not_unused():
    findings = apply_policy([], _loaded([_waiver(expires=dt.date(2020, 1, 1))]), SPEC, TODAY)
    assert [f.rule_id for f in findings] == ["BG901"]


def test_second_waiver_for_the_same_finding_is_unused():
    waivers = [_waiver(reason="first"), _waiver(reason="second", specs="exp/*")]
    findings = apply_policy([BG104], _loaded(waivers), SPEC, TODAY)
    assert [(f.rule_id, f.waived_by) for f in findings] == [("BG104", "first"), ("BG902", None)]
    assert findings[1].message == "waiver for BG104 on 'exp/*' suppressed nothing"


def test_waiver_of_a_rule_turned_off_is_unused():
    # Current behaviour: a finding dropped by `severity: off` uses no waiver.
    loaded = _loaded([_waiver()], severity={"BG104": "off"})
    findings = apply_policy([BG104], loaded, SPEC, TODAY)
    assert [f.rule_id for f in findings] == ["BG902"]


def test_severity_off_silences_unused_waivers():
    loaded = _loaded([_waiver()], severity={"BG902": "off"})
    assert apply_policy([], loaded, SPEC, TODAY) == []


def test_check_waivers_skips_used_indexes():
    waivers = make_policy({"waivers": [_waiver(), _waiver(rule="BG101")]}).waivers
    assert list(unused_waiver.check_waivers(waivers, SPEC, TODAY, {0})) == [
        (1, "waiver for BG101 on 'exp/big.yaml' suppressed nothing")
    ]
