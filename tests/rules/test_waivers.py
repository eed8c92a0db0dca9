"""gate.policy.rules.waivers and waivers in gate.policy.verdict.apply_policy.

Which waiver applies where.
"""

from __future__ import annotations

import datetime as dt

import pytest

from gate.errors import Location
from gate.policy.findings import Outcome
from gate.policy.loader import LoadedPolicy
from gate.policy.model import Severity
from gate.policy.rules.waivers import applies_to, find_waiver
from gate.policy.verdict import RawFinding, apply_policy, decide
from gate.spec.loader import SourceMap
from tests.conftest import TODAY, make_policy

SPEC = "experiments/llm-7b.yaml"
LATER = dt.date(2099, 12, 31)
WHERE = Location(SPEC, 12, 3)


def _waivers(*waivers: dict):
    return make_policy({"waivers": list(waivers)}).waivers


def _waiver(rule="BG104", specs="experiments/llm-*.yaml", reason="Q4 launch", expires=LATER):
    return {"rule": rule, "specs": specs, "reason": reason, "expires": expires}


def _loaded(*waivers: dict) -> LoadedPolicy:
    return LoadedPolicy(make_policy({"waivers": list(waivers)}), SourceMap(), ("default",))


@pytest.mark.parametrize(
    ("glob", "spec_file", "expected"),
    [
        ("experiments/llm-*.yaml", "experiments/llm-7b.yaml", True),
        ("experiments/llm-*.yaml", "experiments/vit.yaml", False),
        ("*", "anything/at/all.yaml", True),
        ("experiments/llm-7b.yaml", "./experiments/llm-7b.yaml", True),  # ./ is dropped
        ("Experiments/*", "experiments/llm-7b.yaml", False),  # case-sensitive
        ("experiments/*.yaml", "experiments/old/x.yaml", False),  # * stays in one directory
        ("experiments/**/*.yaml", "experiments/old/x.yaml", True),  # ** spans directories
        ("experiments/**/*.yaml", "experiments/x.yaml", True),
        ("llm-*.yaml", "experiments/deep/llm-7b.yaml", True),  # no /: any depth
        ("experiments/llm-*.yaml", "other/experiments/llm-7b.yaml", False),  # anchored
    ],
)
def test_applies_to(glob: str, spec_file: str, expected: bool):
    [waiver] = _waivers(_waiver(specs=glob))
    assert applies_to(waiver, spec_file) is expected


def test_default_glob_matches_every_spec():
    [waiver] = make_policy(
        {"waivers": [{"rule": "BG104", "reason": "all", "expires": LATER}]}
    ).waivers
    assert waiver.specs == "*"
    assert applies_to(waiver, SPEC)


def test_find_waiver_returns_the_first_live_match():
    waivers = _waivers(
        _waiver(rule="BG101"),  # other rule
        _waiver(expires=dt.date(2020, 1, 1)),  # expired
        _waiver(specs="other/*"),  # other spec
        _waiver(reason="this one"),
        _waiver(reason="later duplicate"),
    )
    assert find_waiver(waivers, "BG104", SPEC, TODAY) == 3
    assert find_waiver(waivers, "BG103", SPEC, TODAY) is None


def test_live_waiver_marks_the_finding_waived():
    raw = [RawFinding("BG104", Severity.ERROR, "cost over", WHERE)]
    [finding] = apply_policy(raw, _loaded(_waiver()), SPEC, TODAY)
    assert finding.rule_id == "BG104"
    assert finding.severity is Severity.ERROR
    assert finding.location == WHERE
    assert finding.waived_by == "Q4 launch"
    assert not finding.active
    assert decide([finding]) is Outcome.PASS


def test_waiver_only_waives_its_own_rule():
    raw = [
        RawFinding("BG104", Severity.ERROR, "cost over", None),
        RawFinding("BG101", Severity.ERROR, "gpus over", None),
    ]
    findings = apply_policy(raw, _loaded(_waiver()), SPEC, TODAY)
    assert [(f.rule_id, f.waived_by) for f in findings] == [
        ("BG104", "Q4 launch"),
        ("BG101", None),
    ]
    assert decide(findings) is Outcome.VIOLATION


def test_waiver_whose_glob_does_not_match_changes_nothing():
    raw = [RawFinding("BG104", Severity.ERROR, "cost over", None)]
    findings = apply_policy(raw, _loaded(_waiver(specs="experiments/vit-*")), SPEC, TODAY)
    assert [(f.rule_id, f.waived_by) for f in findings] == [("BG104", None)]


def test_one_waiver_covers_every_finding_of_its_rule():
    raw = [
        RawFinding("BG201", Severity.ERROR, "required label 'cost-center' is missing", None),
        RawFinding("BG201", Severity.ERROR, "required label 'environment' is missing", None),
    ]
    findings = apply_policy(
        raw, _loaded(_waiver(rule="BG201", reason="labels next sprint")), SPEC, TODAY
    )
    assert [f.waived_by for f in findings] == ["labels next sprint"] * 2
