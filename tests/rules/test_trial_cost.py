"""BG103 trial-cost: cost per trial (enforced scenario) over limits.max_trial_cost."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import trial_cost
from tests.conftest import make_policy, make_spec, run_rule

PATH = ("resources", "gpus_per_trial")


def _limit(value: str, **extra):
    return make_policy({"limits": {"max_trial_cost": value}, **extra})


def test_constants():
    assert (trial_cost.ID, trial_cost.SLUG) == ("BG103", "trial-cost")
    assert trial_cost.DEFAULT_SEVERITY is Severity.ERROR


def test_base_spec_passes_the_default_limit():
    # 1 GPU × 1 h × 4 = 4 per trial ≤ 300.
    assert run_rule(trial_cost, make_spec(), _limit("300")) == []


def test_docstring_passing_example():
    # 1 GPU × 30 epochs × 10 min = 5 h; at 4 per GPU-hour: 20 ≤ 300.
    spec = make_spec({"workload": {"max_epochs": 30, "epoch_minutes": 10}})
    assert run_rule(trial_cost, spec, _limit("300")) == []


def test_docstring_failing_example():
    # 8 GPUs × (100 × 30 min = 50 h) = 400 GPU-hours; at 8 per GPU-hour: 3,200 > 300.
    spec = make_spec(
        {
            "resources": {"accelerator": "H100", "gpus_per_trial": 8},
            "workload": {"max_epochs": 100, "epoch_minutes": 30},
        }
    )
    [violation] = run_rule(trial_cost, spec, _limit("300"), price="8")
    assert violation.message == (
        "worst-case cost per trial 3,200.00 USD exceeds max_trial_cost 300.00 USD"
    )
    assert violation.path == PATH


def test_equal_to_the_limit_passes():
    # 4 per trial against a limit of 4.
    assert run_rule(trial_cost, make_spec(), _limit("4")) == []


def test_just_over_the_limit_fails():
    # 4 > 3.99.
    [violation] = run_rule(trial_cost, make_spec(), _limit("3.99"))
    assert violation.message == "worst-case cost per trial 4.00 USD exceeds max_trial_cost 3.99 USD"
    assert violation.path == PATH


def test_gpus_multiply_the_trial_cost():
    # 2 GPUs × 1 h × 4 = 8 per trial: passes 8, fails 7.99.
    spec = make_spec({"resources": {"gpus_per_trial": 2}})
    assert run_rule(trial_cost, spec, _limit("8")) == []
    [violation] = run_rule(trial_cost, spec, _limit("7.99"))
    assert "8.00 USD exceeds max_trial_cost 7.99 USD" in violation.message


def test_message_uses_the_policy_currency():
    [violation] = run_rule(trial_cost, make_spec(), _limit("3", currency="EUR"))
    assert violation.message == "worst-case cost per trial 4.00 EUR exceeds max_trial_cost 3.00 EUR"


def test_spec_max_trial_cost_caps_the_trial():
    # The spec stops trials at 3: 3 / (1 GPU × 4) = 0.75 h → 3 per trial ≤ 3.
    spec = make_spec({"stopping": {"max_trial_cost": "3"}})
    assert run_rule(trial_cost, spec, _limit("3")) == []


def test_expected_scenario_is_enforced_when_asked():
    # Early stopping at epoch 5 + 2 = 7 → 0.7 h × 4 = 2.8 expected; worst stays 4.
    spec = make_spec({"stopping": {"early_stopping": {"monitor": "val_loss", "patience": 2}}})
    expected = {"limits": {"max_trial_cost": "2.8", "scenario": "expected"}}
    assert run_rule(trial_cost, spec, make_policy(expected)) == []
    [violation] = run_rule(trial_cost, spec, _limit("2.8"))
    assert violation.message == "worst-case cost per trial 4.00 USD exceeds max_trial_cost 2.80 USD"


def test_limit_unset_reports_nothing():
    spec = make_spec({"resources": {"gpus_per_trial": 8}})
    assert run_rule(trial_cost, spec, make_policy(), price="1000") == []


def test_exactly_at_the_limit_with_an_inexact_epoch_time_passes():
    # 60 epochs × 7 min = exactly 7 h; × 1 GPU × 4 = exactly 28.
    spec = make_spec({"workload": {"max_epochs": 60, "epoch_minutes": 7}})
    assert run_rule(trial_cost, spec, _limit("28")) == []
