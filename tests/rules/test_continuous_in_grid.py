"""BG302 continuous-in-grid: a low/high range in a grid search (no threshold)."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import continuous_in_grid
from tests.conftest import make_policy, make_spec, run_rule

LR_RANGE = {"low": 1.0e-5, "high": 1.0e-2, "log": True}


def _search(strategy: str, parameters: dict, max_trials: int | None = 24):
    return make_spec(
        {"search": {"strategy": strategy, "max_trials": max_trials, "parameters": parameters}}
    )


def test_constants():
    assert (continuous_in_grid.ID, continuous_in_grid.SLUG) == ("BG302", "continuous-in-grid")
    assert continuous_in_grid.DEFAULT_SEVERITY is Severity.ERROR


def test_continuous_range_in_random_search_passes():
    assert run_rule(continuous_in_grid, _search("random", {"lr": LR_RANGE})) == []


def test_grid_of_listed_values_passes():
    spec = _search("grid", {"lr": {"values": [1e-4, 1e-3]}}, max_trials=None)
    assert run_rule(continuous_in_grid, spec) == []


def test_continuous_range_in_grid_fails():
    spec = _search("grid", {"lr": {"low": 1.0e-5, "high": 1.0e-2}}, max_trials=None)
    [violation] = run_rule(continuous_in_grid, spec)
    assert violation.message == (
        "parameter 'lr' is a continuous range in a grid search: random search with the same "
        "1 trial samples it for 4.00 USD, ASHA for 4.00 USD (expected case; the grid: 4.00 USD)"
    )
    assert violation.path == ("search", "parameters", "lr")


def test_one_violation_per_continuous_parameter():
    params = {
        "lr": LR_RANGE,
        "batch": {"values": [32, 64]},
        "wd": {"low": 0.0, "high": 0.1},
    }
    violations = run_rule(continuous_in_grid, _search("grid", params, max_trials=None))
    assert [v.path for v in violations] == [
        ("search", "parameters", "lr"),
        ("search", "parameters", "wd"),
    ]
    # NOTE: the same budget as ASHA prunes one of the two trials at the first rung.
    assert violations[1].message == (
        "parameter 'wd' is a continuous range in a grid search: random search with the same "
        "2 trials samples it for 8.00 USD, ASHA for 6.12 USD (expected case; the grid: 8.00 USD)"
    )


def test_policy_does_not_matter():
    # No threshold: the rule fires under an empty policy too.
    spec = _search("grid", {"lr": LR_RANGE}, max_trials=None)
    assert len(run_rule(continuous_in_grid, spec, make_policy())) == 1
