"""A trial Optuna retries after its worker died (``RetryHeartbeatStaleTrialCallback``, with the RDB
storage's heartbeat): the retry is a new trial holding a copy of the dead trial's user
attributes, the guard's figure of GPU-seconds among them.

The dead worker is a real process (``python -m tests.test_guard_optuna_retry URL``) that
reports 5 epochs and exits without a word, as a killed process does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from decimal import Decimal

import optuna
import pytest

from gate.guard.core import Guard
from gate.guard.model import GPU_SECONDS_ATTR
from gate.guard.optuna import OptunaGuard
from tests.conftest import ROOT
from tests.guard_kit import EPOCH_GPU_SECONDS, approved_limits, guard_spec_4_trials, make_limits
from tests.reconcile_kit import approval

GRACE_S = 2
pytestmark = pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.ERROR)


def _storage(url: str) -> optuna.storages.RDBStorage:
    return optuna.storages.RDBStorage(
        url,
        heartbeat_interval=1,
        grace_period=GRACE_S,
        heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(
            max_retry=1
        ),
    )


def _guard() -> OptunaGuard:
    return OptunaGuard(Guard(approved_limits(), clock=time.monotonic))


def _after_a_dead_worker(tmp_path) -> optuna.Study:
    """A study whose worker (a real process) reported 5 epochs of trial 0 and died, loaded
    once its heartbeat went stale."""
    url = f"sqlite:///{tmp_path / 'retry.db'}"
    optuna.create_study(study_name="s", storage=url)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    dead = subprocess.run(
        [sys.executable, "-m", "tests.test_guard_optuna_retry", url],
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )
    assert dead.returncode == 3
    time.sleep(GRACE_S + 1.5)
    return optuna.load_study(study_name="s", storage=_storage(url))


def test_a_retried_trial_is_not_charged_the_copy_of_its_dead_trials_figure(tmp_path):
    """Trial 0 held 5 epochs (8.00 USD) before its worker died; its retry, trial 1, resumes
    from the checkpoint and trains 3 (4.80 USD). A worker that read trial 1 while it waited
    counted the copied 8.00 USD for it, kept it as the larger figure, and charged the
    search 16.00 USD where 12.80 was held: it stops 3.20 USD short of the ceiling."""
    study = _after_a_dead_worker(tmp_path)
    optuna.storages.fail_stale_trials(study)  # as every worker's optimize does first
    waiting = study.get_trials()[1]
    assert waiting.state.name == "WAITING" and waiting.system_attrs["failed_trial"] == 0
    assert waiting.user_attrs[GPU_SECONDS_ATTR] == 5 * EPOCH_GPU_SECONDS  # the copy
    watcher, worker = _guard(), _guard()
    watcher.callback(study, study.get_trials()[0])  # another worker, reading the storage

    def resumed(trial: optuna.Trial) -> float:
        worker.admit(trial)
        for epoch in range(6, 9):
            held = (epoch - 5) * 360.0  # this run's time, from the checkpoint on
            worker.step(trial, epoch, {"val_loss": 1.0 / epoch}, held_seconds=held)
        return 0.0

    study.optimize(resumed, n_trials=1, callbacks=[worker.callback])
    watcher.callback(study, study.get_trials()[1])
    fresh = _guard()
    fresh.callback(study, study.get_trials()[1])
    assert [t.state.name for t in study.get_trials()] == ["FAIL", "COMPLETE"]
    held = Decimal("12.8")  # 5 + 3 epochs of 1.60 USD
    assert fresh.guard.spend == worker.guard.spend == held
    assert watcher.guard.spend == held


def test_a_retry_is_an_attempt_of_the_trial_it_retries_for_the_red_lines(tmp_path):
    """``max_trial_hours`` is a trial's, all its attempts: trial 0 held 0.5 h (5 epochs of
    6 minutes) before its worker died, so its retry may add 0.25 h. The retry was a trial of
    its own, its red line counted from zero: it ran 0.75 h more (a 3 h line ran 5.5 h)."""
    study = _after_a_dead_worker(tmp_path)
    spec = {**guard_spec_4_trials(), "stopping": {"max_trial_hours": 0.75}}
    worker = OptunaGuard(Guard(make_limits(spec, approval=approval("1000")), clock=time.monotonic))
    stopped: list[tuple[int, str]] = []

    def resumed(trial: optuna.Trial) -> float:
        worker.admit(trial)
        for epoch in range(6, 30):
            held = (epoch - 5) * 360.0
            try:
                worker.step(trial, epoch, {"val_loss": 1.0 / epoch}, held_seconds=held)
            except optuna.TrialPruned as stop:
                stopped.append((epoch, str(stop)))
                raise
        return 0.0

    study.optimize(resumed, n_trials=1, callbacks=[worker.callback])
    assert study.get_trials()[1].system_attrs["failed_trial"] == 0
    # 0.5 h + 3 epochs of 0.1 h reach 0.75 h at the retry's third epoch, epoch 8
    assert stopped == [(8, "trial 0 has run 0.80 h, reaching max_trial_hours 0.75")]


def main(url: str) -> int:
    """The worker that dies: 5 epochs reported, then gone without a word."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    guard = _guard()
    study = optuna.load_study(study_name="s", storage=_storage(url))

    def objective(trial: optuna.Trial) -> float:
        guard.admit(trial)
        for epoch in range(1, 6):
            guard.step(trial, epoch, {"val_loss": 1.0 / epoch}, held_seconds=epoch * 360.0)
        os._exit(3)

    study.optimize(objective, n_trials=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
