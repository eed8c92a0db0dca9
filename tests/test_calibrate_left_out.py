"""What calibrate leaves out, and says it did: steps that are no epochs, and runs not learned.

A review found epochs counted as the monitored metric's logged steps, never checked against
the run's ``max_epochs``: Lightning's ``val_check_interval=0.25`` logs 40 steps in 10 epochs,
and calibrate learned 1 min an epoch instead of 4, with no word. And ``calibrate`` said
"calibration of 8 runs" with epoch times of 6, and nothing of a running run, a deleted one,
or one whose ``budget_gate.monitor`` tag names a metric it never logged.
"""

from __future__ import annotations

from gate import tracking
from gate.calibrate.observe import observe
from gate.estimate.settings import Returns
from gate.ledger.tracking import MAX_EPOCHS, MONITOR
from tests.reconcile_kit import facts
from tests.test_calibrate import LOSS

TEN = {MAX_EPOCHS: "10", MONITOR: "val_loss"}
TRAIN = {tracking.TRAIN_SECONDS: 2400.0}  # 10 epochs of 4 min


def test_more_steps_than_max_epochs_are_no_epochs():
    run = facts("r", tags=TEN, metrics=TRAIN, history=tuple(1 / (i + 1) for i in range(40)))
    seen = observe(run, "e", Returns())
    assert seen is not None and seen.steps_over_max
    assert seen.epoch_minutes is None and seen.plateau_fraction is None and seen.mfu is None
    honest = observe(facts("r", tags=TEN, metrics=TRAIN, history=tuple(LOSS)), "e", Returns())
    assert honest is not None and honest.epoch_minutes == 4.0 and not honest.steps_over_max


def test_a_failed_run_s_extra_steps_give_no_failure_point():
    run = facts("r", status="FAILED", tags=TEN, metrics=TRAIN, history=tuple(LOSS * 3))
    seen = observe(run, "e", Returns())
    assert seen is not None and seen.failure_point is None and seen.steps_over_max
