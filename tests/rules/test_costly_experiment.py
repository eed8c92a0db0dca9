"""BG111 costly-experiment: enforced cost over approval.cost_over."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import costly_experiment
from tests.conftest import make_policy, make_spec, run_rule

PATH = ("search",)


def _trigger(value: str, **extra):
    return make_policy({"approval": {"cost_over": value}, **extra})


def _h100_sweep():
    # Docstring "Needs approval": 20 trials × 8 H100 × 1 h = 160 GPU-hours.
    return make_spec(
        {
            "resources": {"accelerator": "H100", "gpus_per_trial": 8},
            "search": {"max_trials": 20},
        }
    )


def test_constants():
    assert (costly_experiment.ID, costly_experiment.SLUG) == ("BG111", "costly-experiment")
    assert costly_experiment.DEFAULT_SEVERITY is Severity.APPROVAL


def test_base_spec_passes():
    # 16 ≤ 2,000.
    assert run_rule(costly_experiment, make_spec(), _trigger("2000")) == []


def test_equal_to_the_trigger_passes():
    # 160 GPU-hours × 12.5 = 2,000 ≤ 2,000.
    assert run_rule(costly_experiment, _h100_sweep(), _trigger("2000"), price="12.5") == []


def test_docstring_example_over_the_trigger_needs_approval():
    # 160 GPU-hours × 13 = 2,080 > 2,000.
    [violation] = run_rule(costly_experiment, _h100_sweep(), _trigger("2000"), price="13")
    assert violation.message == (
        "worst-case cost 2,080.00 USD is over the approval trigger of 2,000.00 USD"
    )
    assert violation.path == PATH


def test_just_over_the_trigger_needs_approval():
    # 16 > 15.99.
    [violation] = run_rule(costly_experiment, make_spec(), _trigger("15.99"))
    assert (
        violation.message == "worst-case cost 16.00 USD is over the approval trigger of 15.99 USD"
    )
    assert violation.path == PATH


def test_expected_scenario_is_enforced_when_asked():
    # Early stopping at epoch 5 + 2 = 7: 4 × 0.7 h × 4 = 11.2 expected (worst 16).
    spec = make_spec({"stopping": {"early_stopping": {"monitor": "val_loss", "patience": 2}}})
    expected = {"limits": {"scenario": "expected"}}
    assert run_rule(costly_experiment, spec, _trigger("11.2", **expected)) == []
    [violation] = run_rule(costly_experiment, spec, _trigger("11", **expected))
    assert violation.message == (
        "expected-case cost 11.20 USD is over the approval trigger of 11.00 USD"
    )


def test_trigger_unset_reports_nothing():
    assert run_rule(costly_experiment, _h100_sweep(), make_policy(), price="1000") == []
