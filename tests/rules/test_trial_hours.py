"""BG102 trial-hours: hours per trial (enforced scenario) over limits.max_trial_hours."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import trial_hours
from tests.conftest import make_policy, make_spec, run_rule

PATH = ("workload", "max_epochs")


def _limit(value: float, **limits):
    return make_policy({"limits": {"max_trial_hours": value, **limits}})


def test_constants():
    assert (trial_hours.ID, trial_hours.SLUG) == ("BG102", "trial-hours")
    assert trial_hours.DEFAULT_SEVERITY is Severity.ERROR


def test_base_spec_passes_the_default_limit():
    # 10 epochs × 6 min = 1 h per trial, well under 48 h.
    assert run_rule(trial_hours, make_spec(), _limit(48)) == []


def test_docstring_passing_example():
    # 100 epochs × 6 min = 600 min = 10 h ≤ 48 h.
    spec = make_spec({"workload": {"max_epochs": 100, "epoch_minutes": 6}})
    assert run_rule(trial_hours, spec, _limit(48)) == []


def test_docstring_failing_example():
    # 400 epochs × 12 min = 4,800 min = 80 h > 48 h.
    spec = make_spec({"workload": {"max_epochs": 400, "epoch_minutes": 12}})
    [violation] = run_rule(trial_hours, spec, _limit(48))
    assert violation.message == "worst-case trial time 80.00 h exceeds max_trial_hours 48 h"
    assert violation.path == PATH


def test_equal_to_the_limit_passes():
    # 1 h per trial against a 1 h limit.
    assert run_rule(trial_hours, make_spec(), _limit(1)) == []


def test_just_over_the_limit_fails():
    # 1 h > 0.99 h.
    [violation] = run_rule(trial_hours, make_spec(), _limit(0.99))
    assert violation.message == "worst-case trial time 1.00 h exceeds max_trial_hours 0.99 h"
    assert violation.path == PATH


def test_setup_and_eval_overhead_count():
    # 30 min setup + 10 × 6 min × (1 + 0.5 eval) = 0.5 h + 1.5 h = 2 h.
    spec = make_spec({"workload": {"setup_minutes": 30, "eval_overhead": 0.5}})
    assert run_rule(trial_hours, spec, _limit(2)) == []
    [violation] = run_rule(trial_hours, spec, _limit(1.9))
    assert violation.message == "worst-case trial time 2.00 h exceeds max_trial_hours 1.9 h"


def test_spec_max_trial_hours_caps_the_trial():
    # 1 h of work, but the spec stops every trial at 0.5 h: 0.5 h ≤ 0.5 h.
    spec = make_spec({"stopping": {"max_trial_hours": 0.5}})
    assert run_rule(trial_hours, spec, _limit(0.5)) == []


def test_expected_scenario_uses_early_stopping():
    # Early stopping, patience 2, plateau at ceil(0.5 × 10) = 5 → stops at epoch 7:
    # expected 7 × 6 min = 0.7 h; worst is still 10 × 6 min = 1 h.
    spec = make_spec({"stopping": {"early_stopping": {"monitor": "val_loss", "patience": 2}}})
    assert run_rule(trial_hours, spec, _limit(0.7, scenario="expected")) == []
    [expected] = run_rule(trial_hours, spec, _limit(0.6, scenario="expected"))
    assert expected.message == "expected-case trial time 0.70 h exceeds max_trial_hours 0.6 h"
    [worst] = run_rule(trial_hours, spec, _limit(0.7))
    assert worst.message == "worst-case trial time 1.00 h exceeds max_trial_hours 0.7 h"


def test_limit_unset_reports_nothing():
    spec = make_spec({"workload": {"max_epochs": 400, "epoch_minutes": 12}})  # 80 h
    assert run_rule(trial_hours, spec, make_policy()) == []


def test_exactly_at_the_limit_with_an_inexact_epoch_time_passes():
    # 60 epochs × 7 min = 420 min = exactly 7 h, against a 7 h limit.
    spec = make_spec({"workload": {"max_epochs": 60, "epoch_minutes": 7}})
    assert run_rule(trial_hours, spec, _limit(7)) == []
