"""BG901 expired-waiver, applied by gate.policy.verdict.apply_policy."""

from __future__ import annotations

import datetime as dt

from gate.errors import Location
from gate.policy.findings import Finding, Outcome
from gate.policy.loader import LoadedPolicy
from gate.policy.model import Severity
from gate.policy.rules import expired_waiver
from gate.policy.verdict import RawFinding, apply_policy, decide
from gate.spec.loader import SourceMap
from tests.conftest import TODAY, make_policy

SPEC = "exp/spec.yaml"
BG104 = RawFinding("BG104", Severity.ERROR, "worst-case cost 16.00 USD exceeds ...", None)


def _loaded(waivers: list[dict], source_map: SourceMap | None = None, **extra) -> LoadedPolicy:
    policy = make_policy({"waivers": waivers, **extra})
    return LoadedPolicy(policy, source_map or SourceMap(), ("default",))


def _waiver(expires: dt.date, specs: str = "exp/*.yaml", rule: str = "BG104") -> dict:
    return {"rule": rule, "specs": specs, "reason": "Q4 launch", "expires": expires}


def test_constants():
    assert (expired_waiver.ID, expired_waiver.SLUG) == ("BG901", "expired-waiver")
    assert expired_waiver.DEFAULT_SEVERITY is Severity.WARN


def test_live_waiver_is_not_reported_expired():
    findings = apply_policy([BG104], _loaded([_waiver(dt.date(2099, 12, 31))]), SPEC, TODAY)
    assert [f.rule_id for f in findings] == ["BG104"]
    assert findings[0].waived_by == "Q4 launch"


def test_expired_waiver_does_not_suppress_and_is_reported():
    findings = apply_policy([BG104], _loaded([_waiver(dt.date(2020, 1, 31))]), SPEC, TODAY)
    assert findings == [
        Finding("BG104", Severity.ERROR, BG104.message, None, None),
        Finding(
            "BG901",
            Severity.WARN,
            "waiver for BG104 on 'exp/*.yaml' expired on 2020-01-31 (Q4 launch)",
            None,
        ),
    ]
    assert decide(findings) is Outcome.VIOLATION


def test_waiver_expiring_today_is_still_live():
    findings = apply_policy([BG104], _loaded([_waiver(TODAY)]), SPEC, TODAY)
    assert [(f.rule_id, f.waived_by) for f in findings] == [("BG104", "Q4 launch")]


def test_waiver_that_expired_yesterday_is_reported():
    yesterday = TODAY - dt.timedelta(days=1)  # 2026-11-28
    findings = apply_policy([BG104], _loaded([_waiver(yesterday)]), SPEC, TODAY)
    assert [(f.rule_id, f.waived_by) for f in findings] == [("BG104", None), ("BG901", None)]
    assert findings[1].message == (
        "waiver for BG104 on 'exp/*.yaml' expired on 2026-11-28 (Q4 launch)"
    )


def test_expired_waiver_is_reported_even_when_its_rule_did_not_fire():
    findings = apply_policy([], _loaded([_waiver(dt.date(2020, 1, 31))]), SPEC, TODAY)
    assert [f.rule_id for f in findings] == ["BG901"]


def test_expired_waiver_for_another_spec_yields_nothing():
    loaded = _loaded([_waiver(dt.date(2020, 1, 31), specs="other/*.yaml")])
    assert apply_policy([], loaded, SPEC, TODAY) == []


def test_finding_points_at_the_waiver_in_the_policy():
    where = Location("policies/default.yaml", 14, 5)
    source_map = SourceMap(values={("waivers", 1): where})
    waivers = [_waiver(dt.date(2099, 1, 1), specs="other/*"), _waiver(dt.date(2020, 1, 31))]
    findings = apply_policy([], _loaded(waivers, source_map), SPEC, TODAY)
    assert [(f.rule_id, f.location) for f in findings] == [("BG901", where)]


def test_severity_override_applies_to_the_waiver_rule():
    waivers = [_waiver(dt.date(2020, 1, 31))]
    off = apply_policy([], _loaded(waivers, severity={"BG901": "off"}), SPEC, TODAY)
    assert off == []
    error = apply_policy([], _loaded(waivers, severity={"BG901": "error"}), SPEC, TODAY)
    assert [(f.rule_id, f.severity) for f in error] == [("BG901", Severity.ERROR)]
    assert decide(error) is Outcome.VIOLATION


def test_check_waivers_yields_index_and_message():
    waivers = make_policy(
        {"waivers": [_waiver(dt.date(2099, 1, 1)), _waiver(dt.date(2020, 1, 31))]}
    ).waivers
    assert list(expired_waiver.check_waivers(waivers, SPEC, TODAY)) == [
        (1, "waiver for BG104 on 'exp/*.yaml' expired on 2020-01-31 (Q4 launch)")
    ]
