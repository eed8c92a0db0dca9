"""BG104 experiment-cost: total cost (enforced scenario) over limits.max_experiment_cost."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import experiment_cost
from tests.conftest import make_policy, make_spec, run_rule

PATH = ("search",)


def _limit(value: str, **limits):
    return make_policy({"limits": {"max_experiment_cost": value, **limits}})


def test_constants():
    assert (experiment_cost.ID, experiment_cost.SLUG) == ("BG104", "experiment-cost")
    assert experiment_cost.DEFAULT_SEVERITY is Severity.ERROR


def test_base_spec_passes_the_default_limit():
    # 4 trials × 1 GPU × 1 h × 4 = 16 ≤ 20,000.
    assert run_rule(experiment_cost, make_spec(), _limit("20000")) == []


def test_docstring_passing_example():
    # 16 random trials × 1 GPU × 1 h × 4 = 64 ≤ 20,000.
    spec = make_spec({"search": {"strategy": "random", "max_trials": 16}})
    assert run_rule(experiment_cost, spec, _limit("20000")) == []


def test_docstring_failing_example():
    # Grid 4 × 3 values × 5 seeds = 60 trials; 8 GPUs × 40 h (40 epochs × 60 min);
    # 60 × 8 × 40 = 19,200 GPU-hours × 4 = 76,800 > 20,000.
    spec = make_spec(
        {
            "resources": {"accelerator": "H100", "gpus_per_trial": 8},
            "workload": {"max_epochs": 40, "epoch_minutes": 60},
            "search": {
                "strategy": "grid",
                "max_trials": None,
                "parameters": {
                    "lr": {"values": [1e-4, 3e-4, 1e-3, 3e-3]},
                    "wd": {"values": [0, 1e-4, 1e-2]},
                },
                "seeds": [0, 1, 2, 3, 4],
            },
        }
    )
    [violation] = run_rule(experiment_cost, spec, _limit("20000"))
    assert violation.message == (
        "worst-case cost 76,800.00 USD exceeds max_experiment_cost 20,000.00 USD"
    )
    assert violation.path == PATH


def test_equal_to_the_limit_passes():
    assert run_rule(experiment_cost, make_spec(), _limit("16")) == []


def test_just_over_the_limit_fails():
    # 16 > 15.99.
    [violation] = run_rule(experiment_cost, make_spec(), _limit("15.99"))
    assert violation.message == "worst-case cost 16.00 USD exceeds max_experiment_cost 15.99 USD"
    assert violation.path == PATH


def test_seeds_multiply_the_trials():
    # 4 trials × 2 seeds = 8 trials × 1 h × 4 = 32.
    spec = make_spec({"search": {"seeds": [0, 1]}})
    assert run_rule(experiment_cost, spec, _limit("32")) == []
    [violation] = run_rule(experiment_cost, spec, _limit("31"))
    assert violation.message == "worst-case cost 32.00 USD exceeds max_experiment_cost 31.00 USD"


def test_expected_scenario_is_enforced_when_asked():
    # Early stopping ends trials at epoch 5 + 2 = 7: 4 × 0.7 h × 4 = 11.2 expected; worst 16.
    spec = make_spec({"stopping": {"early_stopping": {"monitor": "val_loss", "patience": 2}}})
    assert run_rule(experiment_cost, spec, _limit("11.2", scenario="expected")) == []
    [expected] = run_rule(experiment_cost, spec, _limit("11", scenario="expected"))
    assert expected.message == "expected-case cost 11.20 USD exceeds max_experiment_cost 11.00 USD"
    [worst] = run_rule(experiment_cost, spec, _limit("11.2"))
    assert worst.message == "worst-case cost 16.00 USD exceeds max_experiment_cost 11.20 USD"


def test_limit_unset_reports_nothing():
    spec = make_spec({"search": {"max_trials": 10_000}})
    assert run_rule(experiment_cost, spec, make_policy(), price="1000") == []


def test_exactly_at_the_limit_with_an_inexact_epoch_time_passes():
    # 1 trial × 60 epochs × 7 min = exactly 7 h; × 1 GPU × 4 = exactly 28.
    spec = make_spec(
        {"workload": {"max_epochs": 60, "epoch_minutes": 7}, "search": {"max_trials": 1}}
    )
    assert run_rule(experiment_cost, spec, _limit("28")) == []
