"""BG301 no-stop-condition: max_epochs over practices.stop_condition_above_epochs, no early stop."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import no_stop_condition
from tests.conftest import make_policy, make_spec, run_rule

PATH = ("workload", "max_epochs")
EARLY = {"early_stopping": {"monitor": "val_loss", "mode": "min", "patience": 10}}


def _threshold(value: int):
    return make_policy({"practices": {"stop_condition_above_epochs": value}})


def _epochs(epochs: int, *, early: bool = False):
    overrides: dict = {"workload": {"max_epochs": epochs, "epoch_minutes": 3}}
    if early:
        overrides["stopping"] = EARLY
    return make_spec(overrides)


def test_constants():
    assert (no_stop_condition.ID, no_stop_condition.SLUG) == ("BG301", "no-stop-condition")
    assert no_stop_condition.DEFAULT_SEVERITY is Severity.WARN


def test_long_run_with_early_stopping_passes():
    assert run_rule(no_stop_condition, _epochs(200, early=True), _threshold(50)) == []


def test_short_run_without_early_stopping_passes():
    # Base spec: 10 epochs ≤ 50.
    assert run_rule(no_stop_condition, make_spec(), _threshold(50)) == []


def test_docstring_failing_example():
    [violation] = run_rule(no_stop_condition, _epochs(200), _threshold(50))
    assert violation.message == (
        "max_epochs 200 is over 50 with no early_stopping: the 100 epochs after the expected "
        "plateau at epoch 100 (plateau_fraction 0.5) cost 80.00 USD (expected case)"
    )
    assert violation.path == PATH


def test_equal_to_the_threshold_passes():
    assert run_rule(no_stop_condition, _epochs(50), _threshold(50)) == []


def test_one_over_the_threshold_fails():
    [violation] = run_rule(no_stop_condition, _epochs(51), _threshold(50))
    assert violation.message == (
        "max_epochs 51 is over 50 with no early_stopping: the 25 epochs after the expected "
        "plateau at epoch 26 (plateau_fraction 0.5) cost 20.00 USD (expected case)"
    )
    assert violation.path == PATH


def test_a_trial_hour_cap_is_not_early_stopping():
    # stopping.max_trial_hours bounds the trial but is not an early-stopping condition.
    spec = make_spec(
        {"workload": {"max_epochs": 200, "epoch_minutes": 3}, "stopping": {"max_trial_hours": 1}}
    )
    [violation] = run_rule(no_stop_condition, spec, _threshold(50))
    assert violation.path == PATH


def test_threshold_unset_reports_nothing():
    assert run_rule(no_stop_condition, _epochs(10_000), make_policy()) == []
