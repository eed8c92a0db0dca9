"""BG309 ignored-setting: max_trials on a grid, a scheduler outside the halving family."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import ignored_setting
from tests.conftest import make_spec, run_rule

GRID = {"lr": {"values": [1e-4, 3e-4, 1e-3]}, "wd": {"values": [0, 0.01]}}


def test_constants():
    assert (ignored_setting.ID, ignored_setting.SLUG) == ("BG309", "ignored-setting")
    assert ignored_setting.DEFAULT_SEVERITY is Severity.WARN


def test_max_trials_on_a_grid_says_how_many_trials_are_priced():
    # issue 22: max_trials 4 on a grid of 6 points × 2 seeds priced 12 trials without a word
    spec = make_spec(
        {"search": {"strategy": "grid", "max_trials": 4, "seeds": [0, 1], "parameters": GRID}}
    )
    [violation] = run_rule(ignored_setting, spec)
    assert violation.message == (
        "max_trials 4 is ignored by strategy grid, which runs every point of its grid: "
        "12 trials priced — remove max_trials, or sample 4 points with strategy: random"
    )
    assert violation.path == ("search", "max_trials")


def test_a_grid_without_max_trials_and_random_with_it_pass():
    grid = make_spec({"search": {"strategy": "grid", "max_trials": None, "parameters": GRID}})
    assert run_rule(ignored_setting, grid) == []
    assert run_rule(ignored_setting, make_spec({"search": {"parameters": GRID}})) == []


def test_a_scheduler_on_random_search_is_ignored_and_said():
    spec = make_spec({"search": {"scheduler": {"min_epochs": 1, "reduction_factor": 3}}})
    [violation] = run_rule(ignored_setting, spec)
    assert violation.path == ("search", "scheduler")
    assert "ignored by strategy random" in violation.message
    asha = make_spec({"search": {"strategy": "asha", "scheduler": {"min_epochs": 1}}})
    assert run_rule(ignored_setting, asha) == []


def test_brackets_outside_hyperband_are_ignored_and_said():
    """successive_halving with brackets: 3 was priced as its one, most aggressive bracket
    (14.2 GPU-h against hyperband's 24.9) without a word."""
    scheduler = {"min_epochs": 3, "reduction_factor": 3, "brackets": 3}
    for strategy in ("successive_halving", "asha"):
        spec = make_spec(
            {"search": {"strategy": strategy, "max_trials": 30, "scheduler": scheduler}}
        )
        [violation] = run_rule(ignored_setting, spec)
        assert violation.path == ("search", "scheduler", "brackets")
        assert violation.message.startswith(
            f"scheduler.brackets 3 is ignored by strategy {strategy}, which runs one bracket"
        )
    hyperband = make_spec({"search": {"strategy": "hyperband", "scheduler": scheduler}})
    assert run_rule(ignored_setting, hyperband) == []


def test_asha_declared_synchronous_is_refused():
    """ASHA's worst case promotes every trial; declared synchronous it was priced at a fifth."""
    import pytest

    from gate.model.base import ValidationError

    scheduler = {"min_epochs": 2, "reduction_factor": 3, "synchronous": True}
    with pytest.raises(ValidationError, match="strategy asha is asynchronous, but scheduler"):
        make_spec({"search": {"strategy": "asha", "max_trials": 40, "scheduler": scheduler}})
    halving = {"strategy": "successive_halving", "max_trials": 40, "scheduler": scheduler}
    assert make_spec({"search": halving}).search.scheduler.synchronous is True
