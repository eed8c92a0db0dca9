"""BG110 large-search: trial count (after seeds) over approval.trials_over."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import large_search
from tests.conftest import make_policy, make_spec, run_rule

PATH = ("search",)


def _trigger(value: int):
    return make_policy({"approval": {"trials_over": value}})


def test_constants():
    assert (large_search.ID, large_search.SLUG) == ("BG110", "large-search")
    assert large_search.DEFAULT_SEVERITY is Severity.APPROVAL


def test_base_spec_passes():
    # 4 trials ≤ 32.
    assert run_rule(large_search, make_spec(), _trigger(32)) == []


def test_docstring_passing_example():
    # 24 random trials × 1 seed = 24 ≤ 32.
    spec = make_spec({"search": {"max_trials": 24}})
    assert run_rule(large_search, spec, _trigger(32)) == []


def test_docstring_failing_example_counts_seeds():
    # 24 random trials × 2 seeds = 48 > 32.
    spec = make_spec({"search": {"max_trials": 24, "seeds": [0, 1]}})
    [violation] = run_rule(large_search, spec, _trigger(32))
    assert violation.message == "48 trials is over the approval trigger of 32"
    assert violation.path == PATH


def test_equal_to_the_trigger_passes():
    spec = make_spec({"search": {"max_trials": 32}})
    assert run_rule(large_search, spec, _trigger(32)) == []


def test_one_over_the_trigger_needs_approval():
    spec = make_spec({"search": {"max_trials": 33}})
    [violation] = run_rule(large_search, spec, _trigger(32))
    assert violation.message == "33 trials is over the approval trigger of 32"
    assert violation.path == PATH


def test_grid_counts_values_times_seeds():
    # Grid 4 × 3 values × 3 seeds = 36 > 32.
    spec = make_spec(
        {
            "search": {
                "strategy": "grid",
                "max_trials": None,
                "parameters": {"lr": {"values": [1, 2, 3, 4]}, "wd": {"values": [0, 1, 2]}},
                "seeds": [0, 1, 2],
            }
        }
    )
    [violation] = run_rule(large_search, spec, _trigger(32))
    assert violation.message == "36 trials is over the approval trigger of 32"


def test_large_counts_get_thousands_separators():
    # 1,000 trials × 2 seeds = 2,000.
    spec = make_spec({"search": {"max_trials": 1000, "seeds": [0, 1]}})
    [violation] = run_rule(large_search, spec, _trigger(32))
    assert violation.message == "2,000 trials is over the approval trigger of 32"


def test_trigger_unset_reports_nothing():
    spec = make_spec({"search": {"max_trials": 10_000}})
    assert run_rule(large_search, spec, make_policy()) == []
