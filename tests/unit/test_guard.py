"""The runtime guard's core: budget, red lines, plateau by marginal return, failures."""

from __future__ import annotations

import dataclasses
from decimal import Decimal as D

import pytest

from gate.guard.limits import Ceiling, ceiling_for
from gate.guard.loop import LoopGuard
from gate.guard.model import Action, Report, StopKind, at_least_the_clock
from gate.ledger.records import LedgerRecord, RecordKind
from tests import seed_curve
from tests.conftest import make_estimate, make_spec
from tests.guard_kit import EPOCH_GPU_SECONDS, SEED, Clock, make_guard, make_limits
from tests.reconcile_kit import T0


def test_the_seed_curve_stops_at_the_plateau_plus_patience():
    guard = make_guard(make_limits(SEED))
    decision = None
    for epoch in range(1, 401):
        metrics = {"val_loss": seed_curve.val_loss(epoch)}
        decision = guard.observe(Report("t0", epoch, metrics, epoch * EPOCH_GPU_SECONDS))
        if decision.stop:
            break
    assert decision is not None and decision.action is Action.STOP_TRIAL
    assert decision.kind is StopKind.PLATEAU and decision.epoch == 70
    assert "plateau at epoch 60" in decision.reason
    assert "over epochs 60–70" in decision.reason
    # 70 of 400 epochs at 8 GPUs × 0.1 h × 2 USD = 1.60 USD an epoch.
    assert decision.trial_cost == D("112.00")
    saved = (400 - 70) / 400
    print(
        f"\nseed curve: stopped at epoch {decision.epoch} (plateau 60 + patience 10), "
        f"{saved:.1%} of the trial's epochs saved; {decision.reason}"
    )


def test_early_stopping_patience_is_the_window_and_min_delta_counts():
    spec = {**SEED, "stopping": {"early_stopping": {"monitor": "val_loss", "patience": 5}}}
    guard = make_guard(make_limits(spec))
    stops = [
        e
        for e in range(1, 401)
        if guard.observe(Report("t", e, {"val_loss": seed_curve.val_loss(e)}, e * 1.0)).stop
    ]
    assert stops[0] == 65


def test_no_plateau_stop_when_the_policy_turns_it_off():
    guard = make_guard(make_limits(SEED, {"guard": {"stop_at_plateau": False}}))
    flat = [guard.observe(Report("t", e, {"val_loss": 0.5}, e * 1.0)) for e in range(1, 50)]
    assert not any(d.stop for d in flat)


def test_spend_reaches_the_ceiling_and_the_search_stays_stopped():
    # 4 trials × 1 GPU × 1 h at 2 USD: the worst case, and the ceiling, is 8 USD.
    limits = make_limits(policy={"guard": {"stop_at_plateau": False}})
    assert limits.ceiling == Ceiling(D(8), "worst-case estimate")
    guard = make_guard(limits)
    assert not guard.observe(Report("a", 1, gpu_seconds=3600 * 3)).stop
    # The same report again (a retry of the delivery) counts once.
    assert not guard.observe(Report("a", 1, gpu_seconds=3600 * 3)).stop
    assert guard.spend == D(6)
    decision = guard.observe(Report("b", 1, gpu_seconds=3600))
    assert decision.action is Action.STOP_SEARCH and decision.kind is StopKind.BUDGET
    assert decision.reason == "spend 8.00 USD reaches the worst-case estimate 8.00 USD"
    assert decision.spend == D(8) and decision.trial == "b"
    assert guard.observe(Report("c", 1, gpu_seconds=1)).stop_search
    assert guard.check().stop_search


@pytest.mark.parametrize("seconds", [float("nan"), float("inf"), -1.0])
def test_a_broken_timer_is_refused_not_counted_as_nothing(seconds):
    """NaN compares false to everything: counted as no spend, the trial would run unbounded."""
    guard = make_guard(make_limits())
    guard.observe(Report("a", 1, gpu_seconds=3600))
    with pytest.raises(ValueError, match=r"trial a reported .* GPU-seconds — report the GPU"):
        guard.observe(Report("a", 2, gpu_seconds=seconds))
    with pytest.raises(ValueError, match="finite number of seconds"):
        LoopGuard(guard, "b").step(1, {"val_loss": 1.0}, held_seconds=seconds)
    assert guard.spend == D(2)  # the hour before, at 2 USD, and nothing of the bad reports


def test_a_figure_at_its_first_report_is_the_figure_to_the_last_bit():
    """``360 + now - now`` was 360.00000000000364 at some clock readings: a trial reported at
    360 s was charged a hair more, and a thread test's exact total failed a third of runs."""
    now = 32728.185951439325  # a monotonic clock reading where the sum rounds up
    assert at_least_the_clock(360.0, (360.0, now), now) == 360.0
    assert at_least_the_clock(360.0, (360.0, now), now + 1.5) == 361.5


def test_pause_resume_and_retries_are_each_counted_once():
    guard = make_guard(make_limits(policy={"guard": {"stop_at_plateau": False}}))
    guard.observe(Report("a", 1, gpu_seconds=1800))
    # Paused and resumed: the attempt keeps counting from where it was.
    guard.observe(Report("a", 2, gpu_seconds=3600))
    assert guard.spend == D(2)
    # A retry of trial a is a new attempt: its GPU time is charged as well.
    guard.observe(Report("a", 1, gpu_seconds=900, attempt=1))
    assert guard.spend == D("2.5") and guard.trial_cost("a") == D("2.5")
    # An older (smaller) cumulative value arriving late changes nothing.
    guard.observe(Report("a", 1, gpu_seconds=100))
    assert guard.gpu_seconds == 4500


@pytest.mark.parametrize(
    ("spec", "policy", "kind", "seconds"),
    [
        ({"stopping": {"max_trial_hours": 2}}, {"limits": {"max_trial_hours": 1.5}}, "hours", 5400),
        ({"stopping": {"max_trial_hours": 1}}, {"limits": {"max_trial_hours": 3}}, "hours", 3600),
        ({"stopping": {"max_trial_cost": 3}}, {"limits": {"max_trial_cost": 5}}, "cost", 5400),
    ],
)
def test_trials_stop_at_the_stricter_red_line(spec, policy, kind, seconds):
    policy = {**policy, "guard": {"stop_at_plateau": False}}
    limits = make_limits({"workload": {"max_epochs": 100}, **spec}, policy)
    guard = make_guard(limits)
    assert not guard.observe(Report("t", 1, gpu_seconds=seconds - 1)).stop
    decision = guard.observe(Report("t", 2, gpu_seconds=seconds))
    assert decision.action is Action.STOP_TRIAL
    expected = StopKind.TRIAL_HOURS if kind == "hours" else StopKind.TRIAL_COST
    assert decision.kind is expected and f"max_trial_{kind}" in decision.reason
    # The search goes on for the other trials.
    assert not guard.observe(Report("u", 1, gpu_seconds=1)).stop


def test_failed_trials_in_a_row_and_in_all_stop_the_search():
    guard = make_guard(make_limits(policy={"guard": {"max_failed_in_a_row": 2}}))
    assert not guard.end("a", failed=True).stop
    assert not guard.end("b", failed=False).stop
    assert not guard.end("c", failed=True).stop
    assert not guard.end("c", failed=True).stop  # the same end, reported twice
    decision = guard.end("c", failed=True, attempt=1)
    assert decision.kind is StopKind.FAILURES
    assert decision.reason == "2 failed trials in a row (policy: at most 2)"
    total = make_guard(make_limits(policy={"guard": {"max_failed_trials": 2}}))
    total.end("a", failed=True)
    total.end("b", failed=False)
    assert total.end("c", failed=True).reason == "2 failed trials in all (policy: at most 2)"


def test_the_ledger_is_refreshed_at_most_once_a_minute():
    clock = Clock()
    calls = []

    def refresh():
        calls.append(clock.now)
        return None if clock.now >= 180 else Ceiling(D(20), "approved amount (new)")

    guard = make_guard(make_limits(), clock, refresh=refresh)
    for t in range(0, 170, 5):
        clock.now = t
        guard.observe(Report("a", t + 1, gpu_seconds=1))
    assert calls == [60, 120]
    assert guard.ceiling.amount == D(20)
    clock.now = 185
    decision = guard.check()
    assert decision.kind is StopKind.APPROVAL and "no longer holds" in decision.reason


def test_the_ceiling_is_the_approval_in_the_same_currency():
    estimate = make_estimate(make_spec(), price="2")
    record = LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec="s.yaml",
        fingerprint="sha256:x",
        experiment="e",
        recorded_at=T0,
        currency="USD",
        worst_cost=D(50),
        record_id="r1",
    )
    assert ceiling_for(estimate, record) == Ceiling(D(50), "approved amount (r1)")
    euros = dataclasses.replace(record, currency="EUR")
    assert ceiling_for(estimate, euros).amount == D(8)
    assert "the approval is in EUR" in ceiling_for(estimate, euros).source


def test_a_trial_resumed_from_an_earlier_checkpoint_rewinds_its_curve():
    guard = make_guard(make_limits({"workload": {"max_epochs": 100}}))
    for e in range(1, 9):
        guard.observe(Report("t", e, {"val_loss": 1.0 / e}, e * 10.0))
    # Back to epoch 5 after a preemption: epochs 5–8 are trained (and paid) again.
    assert not guard.observe(Report("t", 5, {"val_loss": 0.2}, 90.0, attempt=1)).stop
    assert guard.gpu_seconds == 80.0 + 90.0


def test_a_stop_leaves_tags_and_continuing_leaves_none():
    guard = make_guard(make_limits(policy={"guard": {"stop_at_plateau": False}}))
    assert guard.observe(Report("a", 1, gpu_seconds=10)).tags() == {}
    stop = guard.observe(Report("a", 2, gpu_seconds=3600 * 4))
    assert stop.tags() == {
        "budget_gate.stopped_by": "budget-gate guard (stop-search)",
        "budget_gate.stop_kind": "budget",
        "budget_gate.stop_reason": "spend 8.00 USD reaches the worst-case estimate 8.00 USD",
        "budget_gate.stop_spend": "8.00 USD",
        "budget_gate.stop_epoch": "2",
    }


def test_a_loop_that_fails_before_its_first_step_is_charged_the_time_it_held():
    """An attempt that dies in its first epoch reports nothing: its end counts the time."""
    clock = Clock()
    guard = make_guard(make_limits(policy={"guard": {"stop_at_plateau": False}}))
    loop = LoopGuard(guard, "a", clock=clock)
    clock.now += 1800  # half an hour on the GPUs, then the trial raises
    loop.end(failed=True)
    assert guard.spend == D(1)  # 1 GPU × 0.5 h × 2 USD
    again = LoopGuard(guard, "a", clock=clock)  # a loop opened again: an attempt of its own
    assert again.attempt == 1
    clock.now += 1800
    again.step(1, {"val_loss": 1.0})
    assert guard.spend == D(2)  # reports from zero no longer hide under the first's total


def test_a_metric_with_no_finite_value_stops_at_the_window():
    """A loss NaN from epoch 1 gains nothing: it stops where a flat one does, not at 400."""
    stopped = {}
    for name, values in {
        "flat": lambda e: 0.5,
        "nan": lambda e: float("nan"),
        "late": lambda e: float("nan") if e < 5 else 1.0 / e,
        "inf": lambda e: float("inf"),
        "-inf once": lambda e: float("-inf") if e == 3 else 1.0 / e,
    }.items():
        guard = make_guard(make_limits(SEED))
        for epoch in range(1, 401):
            report = Report(name, epoch, {"val_loss": values(epoch)}, epoch * EPOCH_GPU_SECONDS)
            decision = guard.observe(report)
            if decision.stop:
                stopped[name] = (decision.epoch, decision.kind, decision.reason)
                break
    assert stopped["flat"][:2] == stopped["nan"][:2] == (11, StopKind.PLATEAU)
    assert "val_loss has had no finite value over epochs 1–11" in stopped["nan"][2]
    # An infinite loss read "gained nan … no more than the inf the policy accepts".
    assert stopped["inf"][:2] == (11, StopKind.PLATEAU)
    assert "val_loss has had no finite value over epochs 1–11" in stopped["inf"][2]
    assert stopped["-inf once"][:2] == (13, StopKind.PLATEAU)
    assert "val_loss has been -inf (it diverged) over epochs 3–13" in stopped["-inf once"][2]
    assert "late" not in stopped or stopped["late"][0] > 11  # its first value is a gain


def test_a_clock_behind_the_guards_last_refresh_refreshes_at_once():
    """A Ray Tune search restored on another host unpickles the first host's monotonic
    reading: a clock behind it must not put off the ledger's reads (and its revocations)."""
    clock = Clock()
    clock.now = 8_652_523.0  # the first host's uptime
    calls = []
    guard = make_guard(make_limits(), clock, refresh=lambda: calls.append(clock.now))
    clock.now = 12_528.0  # the new host's
    decision = guard.check()
    assert calls == [12_528.0]
    assert decision.kind is StopKind.APPROVAL


def test_attempts_opened_before_either_reports_are_two():
    guard = make_guard(make_limits(policy={"guard": {"stop_at_plateau": False}}))
    first, second = guard.new_attempt("t"), guard.new_attempt("t")
    assert (first, second) == (0, 1)
    for attempt in (first, second):
        guard.observe(Report("t", 10, gpu_seconds=10 * EPOCH_GPU_SECONDS, attempt=attempt))
    assert guard.gpu_seconds == 20 * EPOCH_GPU_SECONDS
    given = LoopGuard(guard, "u", attempt=0)  # a number the caller gives is taken too
    assert (given.attempt, LoopGuard(guard, "u").attempt) == (0, 1)
