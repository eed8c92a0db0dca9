"""DOMAIN.md worked examples A and B, asserted to the digit."""

from __future__ import annotations

from decimal import Decimal

from gate.estimate.accounting import Phases, run_cost
from gate.policy.rules import deadline
from tests.conftest import make_estimate, make_policy, make_spec, run_rule

D = Decimal


def test_example_a_one_job_phase_by_phase():
    # 2 GPUs; queued 0.5 h, then held 2 h: setup 0.25, training 1.25, eval 0.25, idle tail 0.25.
    job = Phases(
        gpus=D(2),
        queue=D("0.5"),
        setup=D("0.25"),
        training=D("1.25"),
        evaluation=D("0.25"),
        idle_tail=D("0.25"),
    )
    assert job.allocated_gpu_hours == D(4)
    assert job.effective_gpu_hours == D("2.5")
    assert job.effective_training_ratio == D("0.625")
    assert run_cost(job.allocated_gpu_hours, D(8)) == D(32)
    assert run_cost(job.allocated_gpu_hours, D(8), other=D(6)) == D(38)
    assert job.end_to_end_hours == D("2.5")


def test_example_a_moving_setup_out_and_releasing_on_exit():
    improved = Phases(gpus=D(2), training=D("1.25"), evaluation=D("0.25"))
    assert improved.allocated_gpu_hours == D(3)
    assert run_cost(improved.allocated_gpu_hours, D(8)) == D(24)
    assert round(improved.effective_training_ratio * 100, 1) == D("83.3")


def _plan(gpus: int, epochs: int):
    # One trial of `epochs` × 15 min on `gpus` GPUs, due in 3 h.
    return make_spec(
        {
            "resources": {"gpus_per_trial": gpus},
            "workload": {"max_epochs": epochs, "epoch_minutes": 15},
            "search": {"strategy": "random", "max_trials": 1},
            "deadline_hours": 3,
        }
    )


def test_example_b_faster_is_not_cheaper():
    plan_a, plan_b = _plan(gpus=1, epochs=16), _plan(gpus=2, epochs=10)
    a, b = make_estimate(plan_a, price="8").worst, make_estimate(plan_b, price="8").worst
    assert (a.hours_per_trial, a.gpu_hours, a.cost) == (D(4), D(4), D(32))
    assert (b.hours_per_trial, b.gpu_hours, b.cost) == (D("2.5"), D(5), D(40))
    assert a.wall_clock_hours - b.wall_clock_hours == D("1.5")
    assert b.gpu_hours - a.gpu_hours == D(1)


def test_example_b_only_plan_b_meets_a_3h_deadline():
    policy = make_policy()
    missed = run_rule(deadline, _plan(gpus=1, epochs=16), policy, price="8")
    assert [v.message for v in missed] == [
        "worst-case wall-clock 4.00 h (1 wave of 1) is past deadline_hours 3 h"
    ]
    assert run_rule(deadline, _plan(gpus=2, epochs=10), policy, price="8") == []
