"""BG402 deadline: enforced wall-clock (waves × hours per trial) past the spec's deadline_hours."""

from __future__ import annotations

from decimal import Decimal

from gate.policy.model import Severity
from gate.policy.rules import deadline
from tests.conftest import make_estimate, make_policy, make_spec, run_rule

PATH = ("deadline_hours",)


def _due(hours: float, **overrides):
    return make_spec({"deadline_hours": hours, **overrides})


def _plan(gpus: int, epochs: int):
    # DOMAIN example B: one trial of `epochs` × 15 min on `gpus` GPUs, due in 3 h.
    return make_spec(
        {
            "resources": {"gpus_per_trial": gpus},
            "workload": {"max_epochs": epochs, "epoch_minutes": 15},
            "search": {"strategy": "random", "max_trials": 1},
            "deadline_hours": 3,
        }
    )


def test_constants():
    assert (deadline.ID, deadline.SLUG) == ("BG402", "deadline")
    assert deadline.DEFAULT_SEVERITY is Severity.ERROR


def test_base_spec_meets_a_generous_deadline():
    # 4 trials one at a time: 4 waves × 1 h = 4 h ≤ 24 h.
    assert run_rule(deadline, _due(24)) == []


def test_equal_to_the_deadline_passes():
    # 4 waves × 1 h = 4 h ≤ 4 h.
    assert run_rule(deadline, _due(4)) == []


def test_just_past_the_deadline_fails():
    # 4 h > 3.99 h.
    [violation] = run_rule(deadline, _due(3.99))
    assert violation.message == (
        "worst-case wall-clock 4.00 h (4 waves of 1) is past deadline_hours 3.99 h"
    )
    assert violation.path == PATH


def test_concurrency_shortens_the_wall_clock():
    # 4 trials, 2 at a time: 2 waves × 1 h = 2 h.
    spec = _due(2, search={"max_concurrent_trials": 2})
    assert run_rule(deadline, spec) == []
    [violation] = run_rule(deadline, _due(1.5, search={"max_concurrent_trials": 2}))
    assert violation.message == (
        "worst-case wall-clock 2.00 h (2 waves of 2) is past deadline_hours 1.5 h"
    )


def test_team_gpu_limit_slows_the_waves():
    # 4 trials wanted at once × 2 GPUs = 8 > limit 4 → 2 trials at a time:
    # 2 waves × 1 h = 2 h > 1.5 h (without the limit: 1 wave, 1 h).
    spec = _due(1.5, resources={"gpus_per_trial": 2}, search={"max_concurrent_trials": 4})
    assert run_rule(deadline, spec) == []
    policy = make_policy({"limits": {"max_concurrent_gpus": 4}})
    [violation] = run_rule(deadline, spec, policy)
    assert violation.message == (
        "worst-case wall-clock 2.00 h (2 waves of 2) is past deadline_hours 1.5 h"
    )


def test_the_clusters_size_slows_the_waves_where_the_team_sets_no_limit():
    """32 trials of 8 GPUs at once on a 16 × 8-GPU cluster ran in one wave of 256 GPUs with
    no ``max_concurrent_gpus``, and passed a deadline that the two waves the cluster holds
    miss; the estimate said nothing of the cluster."""
    spec = _due(
        3,
        resources={"gpus_per_trial": 8},
        workload={"max_epochs": 4, "epoch_minutes": 30},
        search={"max_trials": 32, "max_concurrent_trials": 32},
    )
    assert run_rule(deadline, spec) == []  # no cluster given: one wave, 2 h
    cluster = {"cluster": {"gpus_per_node": 8, "nodes": 16}}
    [violation] = run_rule(deadline, spec, make_policy(cluster))
    assert violation.message == (
        "worst-case wall-clock 4.00 h (2 waves of 16) is past deadline_hours 3 h"
    )
    said = make_estimate(spec, make_policy(cluster)).worst.assumptions
    assert (
        "the cluster's 16 nodes × 8 GPUs (policy cluster:) run 16 trials of 8 GPUs at once" in said
    )
    multi = {"cluster": {"gpus_per_node": 8, "nodes": 2, "multi_node": True}}
    wide = _due(3, resources={"gpus_per_trial": 6}, search={"max_concurrent_trials": 4})
    assert "run 2 trials of 6 GPUs at once" in "".join(
        make_estimate(wide, make_policy(multi)).worst.assumptions
    )


def test_expected_scenario_is_enforced_when_asked():
    # Early stopping at epoch 5 + 2 = 7 → 0.7 h per trial; 4 waves → 2.8 h expected, 4 h worst.
    spec = _due(3, stopping={"early_stopping": {"monitor": "val_loss", "patience": 2}})
    assert run_rule(deadline, spec, make_policy({"limits": {"scenario": "expected"}})) == []
    [violation] = run_rule(deadline, spec)
    assert violation.message == (
        "worst-case wall-clock 4.00 h (4 waves of 1) is past deadline_hours 3 h"
    )


def test_no_deadline_reports_nothing():
    spec = make_spec({"search": {"max_trials": 1000}})  # 1,000 h of wall-clock
    assert run_rule(deadline, spec) == []


def test_example_b_costs_to_the_digit():
    # Plan A: 1 trial × 1 GPU × 16 × 15 min = 4 h → 4 GPU-hours × 8 = 32.
    # Plan B: 1 trial × 2 GPUs × 10 × 15 min = 2.5 h → 5 GPU-hours × 8 = 40.
    plan_a = make_estimate(_plan(gpus=1, epochs=16), price="8").worst
    plan_b = make_estimate(_plan(gpus=2, epochs=10), price="8").worst
    assert plan_a.cost == Decimal("32")
    assert plan_b.cost == Decimal("40")
    assert plan_a.wall_clock_hours == Decimal("4")
    assert plan_b.wall_clock_hours == Decimal("2.5")


def test_example_b_plan_a_misses_the_3h_deadline():
    [violation] = run_rule(deadline, _plan(gpus=1, epochs=16), price="8")
    assert violation.message == (
        "worst-case wall-clock 4.00 h (1 wave of 1) is past deadline_hours 3 h"
    )
    assert violation.path == PATH


def test_example_b_plan_b_meets_the_3h_deadline():
    assert run_rule(deadline, _plan(gpus=2, epochs=10), price="8") == []


def test_exactly_at_the_deadline_with_an_inexact_epoch_time_passes():
    # 1 trial × 60 epochs × 7 min = 420 min = exactly 7 h, due in 7 h.
    spec = _due(7, workload={"max_epochs": 60, "epoch_minutes": 7}, search={"max_trials": 1})
    assert run_rule(deadline, spec) == []
