"""BG903 extends-none: applied by gate.policy.verdict.apply_policy from the loaded chain."""

from __future__ import annotations

from gate.errors import Location
from gate.policy.loader import LoadedPolicy
from gate.policy.model import Severity
from gate.policy.rules import extends_none
from gate.policy.verdict import apply_policy
from gate.spec.loader import SourceMap
from tests.conftest import TODAY, make_policy

WHERE = Location("policies/solo.yaml", 3, 10)


def test_constants():
    assert (extends_none.ID, extends_none.SLUG) == ("BG903", "extends-none")
    assert extends_none.DEFAULT_SEVERITY is Severity.WARN


def test_a_chain_that_reaches_default_passes():
    loaded = LoadedPolicy(make_policy(), SourceMap(), ("vision", "default"))
    assert apply_policy([], loaded, "exp/a.yaml", TODAY) == []


def test_extends_none_is_a_finding_at_the_extends_line():
    loaded = LoadedPolicy(make_policy(), SourceMap(), ("solo",), WHERE)
    [finding] = apply_policy([], loaded, "exp/a.yaml", TODAY)
    assert (finding.rule_id, finding.severity, finding.location) == ("BG903", Severity.WARN, WHERE)
    assert finding.message.startswith("policy solo says extends: none")


def test_severity_can_be_raised():
    loaded = LoadedPolicy(make_policy({"severity": {"BG903": "error"}}), SourceMap(), ("s",), WHERE)
    [finding] = apply_policy([], loaded, "exp/a.yaml", TODAY)
    assert finding.severity is Severity.ERROR
