"""The guard where a launch script or its objective had a way past the count.

Two ``OptunaGuard``s over one guard (a coarse study, then a fine one) named their trials
alike and one study's spend hid under the other's; so did a loop's trial ``"0"`` beside an
Optuna study's trial 0. A ``held_seconds`` that grows slower than the clock (0 at every
report, an epoch's own seconds) let a trial run past the ceiling, counted only at its end.
A metric that is no number skipped the trial's red lines.
"""

from __future__ import annotations

import time
from decimal import Decimal

import optuna
import pytest

from gate.guard.core import Guard
from gate.guard.loop import LoopGuard
from gate.guard.model import STOP_KIND
from gate.guard.optuna import OptunaGuard, spend_of
from tests.guard_kit import Clock, approved_limits, guard_spec_4_trials, make_limits
from tests.reconcile_kit import approval
from tests.test_guard_optuna_studies import _stepping


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_two_optuna_guards_over_one_guard_count_both_studies() -> None:
    """A coarse study (2 trials, 32 USD) then a fine one, each wrapped in its own
    ``OptunaGuard``: the fine study's trials 0 and 1 were counted under the coarse study's
    names, the guard saw 32 USD of 64 held and all four fine trials ran. Now the fine
    study's second trial reaches the 64 USD approval and is pruned."""
    guard = Guard(approved_limits(), clock=time.monotonic)
    coarse, fine = OptunaGuard(guard), OptunaGuard(guard)
    first = optuna.create_study(study_name="coarse")
    first.optimize(_stepping(coarse), n_trials=2, callbacks=[coarse.callback])
    second = optuna.create_study(study_name="fine")
    second.optimize(_stepping(fine), n_trials=4, callbacks=[fine.callback])
    assert [t.state.name for t in second.get_trials()] == ["COMPLETE", "PRUNED"]
    assert guard.spend == Decimal(64)
    assert guard.trial_cost("fine#1") == Decimal(16)
    held = sum(sum(spend_of(s).values()) for s in (first, second))
    assert guard.gpu_seconds == pytest.approx(held)


def test_a_loop_trial_and_a_studys_trial_are_never_one_name() -> None:
    """A loop's baseline trial ``"0"``, then an Optuna study: the study's trial 0 hid under
    the loop's figure. The study now names its trials apart; a loop trial named like a
    study's trial after it is refused."""
    guard = Guard(approved_limits(), clock=Clock())
    loop = LoopGuard(guard, "0", clock=Clock())
    for epoch in range(1, 11):
        loop.step(epoch, {"val_loss": 1.0 / epoch}, held_seconds=epoch * 360.0)
    loop.end()
    tuned = OptunaGuard(guard)
    study = optuna.create_study(study_name="tune")
    study.optimize(_stepping(tuned), n_trials=1, callbacks=[tuned.callback])
    assert guard.trial_cost("0") == guard.trial_cost("tune#0") == Decimal(16)
    assert guard.spend == Decimal(32)
    first = Guard(approved_limits(), clock=Clock())
    untitled = OptunaGuard(first)
    optuna.create_study().optimize(_stepping(untitled), n_trials=1)
    with pytest.raises(ValueError, match="trial '0' is the name of an Optuna study's trial"):
        LoopGuard(first, "0")
    LoopGuard(first, "baseline")  # a name of its own is taken


def test_an_objective_claiming_no_time_held_is_stopped_at_the_ceiling() -> None:
    """``held_seconds=0.0`` at every report: the trial ran on past the approval and was
    charged only when it ended. It is charged at least the time since its first report."""
    limits = make_limits(guard_spec_4_trials(), approval=approval("0.01"))  # 2.25 s of 8 GPUs
    guard = OptunaGuard(Guard(limits, clock=time.monotonic))
    reached: list[int] = []

    def objective(trial: optuna.Trial) -> float:
        for epoch in range(1, 101):
            reached.append(epoch)
            time.sleep(0.05)
            guard.step(trial, epoch, {"val_loss": 1.0 - epoch / 100}, held_seconds=0.0)
        return 1.0

    study = optuna.create_study()
    began = time.monotonic()
    study.optimize(objective, n_trials=1, callbacks=[guard.callback])
    assert study.trials[0].state.name == "PRUNED"
    assert study.trials[0].user_attrs[STOP_KIND] == "budget"
    assert len(reached) < 100 and time.monotonic() - began >= 2.25  # not before it was held


def test_a_loop_passing_each_epochs_seconds_is_stopped_at_the_ceiling() -> None:
    """An epoch's own 360 s passed as the total at each step: the guard counted 360 s in
    all while the loop ran; the loop's clock now counts the time since the first figure."""
    clock = Clock()
    guard = Guard(approved_limits(), clock=clock)
    loop = LoopGuard(guard, "0", clock=clock)
    stopped_at = None
    for epoch in range(1, 101):
        clock.now += 360.0
        if loop.step(epoch, {"val_loss": 1.0 / epoch}, held_seconds=360.0).stop_search:
            stopped_at = epoch
            break
    assert stopped_at == 40  # 64 USD = 40 epochs of 8 GPUs × 6 min at 2 USD a GPU-hour


def test_a_metric_that_is_no_number_skips_no_red_line() -> None:
    """A loop that logs the ValueError of a metric that is no number and goes on: the
    trial's hours were never checked, and it ran 4 h past ``max_trial_hours: 1``."""
    clock = Clock()
    spec = {**guard_spec_4_trials(), "stopping": {"max_trial_hours": 1}}
    guard = Guard(make_limits(spec, approval=approval("64")), clock=clock)
    loop = LoopGuard(guard, "0", clock=clock)
    stop = None
    for epoch in range(1, 41):
        try:
            metrics = {"val_loss": [0.5]}
            decision = loop.step(epoch, metrics, held_seconds=epoch * 360.0)  # type: ignore[arg-type]
        except ValueError:
            continue
        stop = decision
        break
    assert stop is not None and stop.stop and not stop.stop_search
    assert "max_trial_hours" in stop.reason


def test_the_ray_stopper_raises_for_no_int_a_trainable_reports() -> None:
    """``10**400`` as the seconds held, the epoch or a metric raised OverflowError in the
    stopper at the trial's first report, which ended the Tune search. The stopper takes it
    as a broken timer (the driver's time counts), the iteration, and an infinite metric.
    (Tune's own running average of a result then fails at its second report: that ends
    the search too, failing closed, so this calls the stopper as Tune calls it.)"""
    from gate.guard.ray import RayGuard

    clock = Clock()
    guard = RayGuard(Guard(approved_limits(), clock=clock), clock=clock)
    huge = 10**400
    for iteration in (1, 2):
        clock.now += 360.0
        result = {"val_loss": huge, "grad_norm": -huge, "epoch": huge}
        stop = guard("t1", {**result, "budget_gate_held_seconds": huge, "training_iteration": 1})
        assert stop is False, iteration
    # the driver's time between the two reports, on the spec's 8 GPUs
    assert guard.guard.gpu_seconds == 360.0 * float(guard.guard.limits.gpus)


def test_a_loop_attempt_number_opened_twice_is_refused() -> None:
    """A loop resumed in the same process with ``attempt=0`` given again hid its spend under
    the first attempt's total (64 USD trained, 32 shown) until it passed it; the number is
    refused, naming the next free one, and left out the loop numbers its own."""
    clock = Clock()
    guard = Guard(approved_limits(), clock=clock)
    first = LoopGuard(guard, "7", attempt=0, clock=clock)
    for epoch in range(1, 21):
        clock.now += 360.0
        first.step(epoch, {"val_loss": 1.0 / epoch})
    first.end()
    assert guard.spend == Decimal("32.00")
    refused = "attempt 0 of trial 7 was opened before; a new attempt is 1"
    with pytest.raises(ValueError, match=refused):
        LoopGuard(guard, "7", attempt=0, clock=clock)
    second = LoopGuard(guard, "7", clock=clock)
    assert second.attempt == 1
    for epoch in range(21, 41):
        clock.now += 360.0
        decision = second.step(epoch, {"val_loss": 1.0 / epoch})
    assert decision.stop_search and guard.spend == Decimal("64.00")
    assert LoopGuard(guard, "7", attempt=5, clock=clock).attempt == 5  # an unused number is fine
