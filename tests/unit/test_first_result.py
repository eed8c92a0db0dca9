"""Time to first result: when the first trial finishes, worst and expected."""

from __future__ import annotations

from decimal import Decimal

from tests.conftest import make_estimate, make_policy, make_spec


def test_plain_search_first_result_is_one_trial_plus_the_queue():
    # 10 trials of 1 h, 2 at a time: 5 waves (5 h), the first done after 1 h + 0.5 h queue.
    spec = make_spec({"search": {"max_trials": 10, "max_concurrent_trials": 2}})
    policy = make_policy({"estimation": {"queue_wait_hours": 0.5}})
    est = make_estimate(spec, policy)
    assert est.worst.wall_clock_hours == Decimal("7.5")
    assert est.worst.first_result_hours == Decimal("1.5")


def _halving(strategy: str, trials: int):
    """Rungs at 1, 3 and 9 epochs of 6 min (η 3), trials resumed, 3 at a time."""
    return make_spec(
        {
            "workload": {"max_epochs": 9, "epoch_minutes": 6},
            "search": {
                "strategy": strategy,
                "max_trials": trials,
                "max_concurrent_trials": 3,
                "scheduler": {"min_epochs": 1, "reduction_factor": 3},
            },
        }
    )


def test_synchronous_halving_waits_for_every_lower_rung():
    # 9 trials, η 3, rungs at 1, 3, 9 epochs of 6 min, resumed, 3 at a time: rung 1 is 3
    # waves of 0.1 h, rung 2 one wave of 0.2 h, rung 3 one trial of 0.6 h: 1.1 h in all,
    # and the only finished trial is the last one.
    est = make_estimate(_halving("successive_halving", 9))
    assert est.worst.first_result_hours == est.worst.wall_clock_hours == Decimal("1.1")


def test_asha_runs_its_first_trial_straight_through():
    est = make_estimate(_halving("asha", 27))
    # 9 epochs of 6 min = 0.9 h for the first trial, long before the last one ends.
    assert est.worst.first_result_hours == Decimal("0.9")
    assert est.worst.wall_clock_hours > Decimal("0.9")
