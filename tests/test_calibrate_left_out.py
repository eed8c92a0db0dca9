"""What calibrate leaves out, and says it did: steps that are no epochs, and runs not learned.

A review found epochs counted as the monitored metric's logged steps, never checked against
the run's ``max_epochs``: Lightning's ``val_check_interval=0.25`` logs 40 steps in 10 epochs,
and calibrate learned 1 min an epoch instead of 4, with no word. And ``calibrate`` said
"calibration of 8 runs" with epoch times of 6, and nothing of a running run, a deleted one,
or one whose ``budget_gate.monitor`` tag names a metric it never logged.
"""

from __future__ import annotations

import json

from gate import tracking
from gate.calibrate.observe import observe
from gate.estimate.settings import Returns
from gate.ledger.tracking import MAX_EPOCHS, MONITOR
from tests.reconcile_kit import Lab, facts, log_run
from tests.test_calibrate import LOSS, write_spec

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


def test_calibrate_says_which_runs_it_left_out_and_why(lab: Lab):
    spec = write_spec(lab, 4, 1, lab.team.name)

    def run(trial: int, history: dict[str, list[float]], hours: float | None = 0.7,
            tags: dict[str, str] | None = None) -> str:  # fmt: skip
        tags = {**tracking.run_tags(spec, trial_id=trial, attempt=1), **(tags or {})}
        return log_run(lab.client, lab.experiment_id, tags=tags, start=trial, hours=hours,
                       metrics=TRAIN, history=history)  # fmt: skip

    for trial in range(3):
        run(trial, {"val_loss": LOSS})
    run(3, {"val_loss": LOSS}, hours=None)  # running
    lab.client.delete_run(run(4, {"val_loss": LOSS}))
    run(5, {})  # no val_loss at all
    run(6, {"val_loss": LOSS}, tags={MONITOR: "nope"})
    run(7, {"val_loss": LOSS * 4})  # validated 4 times an epoch
    code, out, err = lab.team.cli("calibrate", "--experiment", lab.experiment)
    assert code == 0, err
    assert "1 run not finished (running, scheduled, or with no end time) left out" in out
    assert "1 run deleted in MLflow left out" in out
    assert "2 runs whose budget_gate.monitor tag names a metric never logged: no epoch" in out
    assert "1 run with more steps of the monitored metric than max_epochs" in out
    assert "log the monitored metric once per epoch, with step=epoch" in out
    code, out, err = lab.team.cli("calibrate", "--experiment", lab.experiment, "--format", "json")
    assert code == 0, err
    left = json.loads(out)["left_out"]
    assert left == {"running": 1, "deleted": 1, "no_monitor": 0, "never_logged": 2,
                    "no_history": 0, "steps_over_max_epochs": 1}  # fmt: skip
    epoch = json.loads(out)["calibration"]["entries"][0]["epoch_minutes"]
    assert epoch["runs"] == 3 and epoch["median"] == 4.0
