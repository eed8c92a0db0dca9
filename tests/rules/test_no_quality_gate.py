"""BG303 no-quality-gate: an empty quality_gate (no threshold)."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import no_quality_gate
from tests.conftest import make_spec, run_rule


def test_constants():
    assert (no_quality_gate.ID, no_quality_gate.SLUG) == ("BG303", "no-quality-gate")
    assert no_quality_gate.DEFAULT_SEVERITY is Severity.WARN


def test_spec_with_a_gate_passes():
    # The base spec gates on val_f1 >= 0.8.
    assert run_rule(no_quality_gate, make_spec()) == []


def test_empty_gate_fails():
    [violation] = run_rule(no_quality_gate, make_spec({"quality_gate": []}))
    assert violation.message == "no quality_gate: qualified models cannot be counted"
    assert violation.path == ()


def test_any_condition_is_enough():
    gate = [{"metric": "val_*_recall", "op": ">", "value": 0.5}]
    assert run_rule(no_quality_gate, make_spec({"quality_gate": gate})) == []
