"""The guard in real Optuna studies: two worker processes on one sqlite storage, the pruner,
failed trials, and what a stop leaves on the trials."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from decimal import Decimal

import optuna
import pytest

from gate.guard.core import Guard
from gate.guard.model import GPU_SECONDS_ATTR, STOP_KIND, STOPPED_BY
from gate.guard.optuna import OptunaGuard, spend_of
from tests.conftest import ROOT
from tests.guard_kit import approved_limits, guard_spec_4_trials, make_limits

EPOCH_COST = Decimal("1.6")  # 6 minutes × 8 GPUs × 2 USD


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_two_worker_processes_stop_at_the_approved_ceiling(tmp_path):
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    optuna.create_study(study_name="guarded", storage=url)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "tests.optuna_guard_worker", url, "guarded"]
    started = time.monotonic()
    workers = [subprocess.Popen(command, cwd=ROOT, env=env) for _ in range(2)]
    assert [w.wait(timeout=240) for w in workers] == [0, 0]
    seconds = time.monotonic() - started
    study = optuna.load_study(study_name="guarded", storage=url)
    trials = study.get_trials()
    assert len({t.user_attrs["worker"] for t in trials}) == 2  # both processes ran trials
    spend = Decimal(repr(sum(spend_of(study).values()))) / 3600 * 2
    overshoot = spend - 64
    stopped = [t for t in trials if t.user_attrs.get(STOP_KIND) == "budget"]
    reason = stopped[0].user_attrs["budget_gate.stop_reason"] if stopped else ""
    assert reason.startswith("spend ") and "reaches the approved amount (approval-run-1)" in reason
    print(
        f"\noptuna, 2 workers on sqlite: {len(trials)} trials, spend {spend:.2f} USD at a "
        f"ceiling of 64.00 USD, overshoot {overshoot:.2f} USD "
        f"({overshoot / EPOCH_COST:.0f} epoch(s) of 1.60 USD), {seconds:.1f} s"
    )
    # Stopped within one reported step per worker of the ceiling, never short of it.
    assert 0 <= overshoot <= 2 * EPOCH_COST
    assert stopped and all(t.state is optuna.trial.TrialState.PRUNED for t in stopped)
    # Neither worker ran on to its 50 trials: both stopped the search.
    assert len(trials) < 20
    running = [t for t in trials if t.state is optuna.trial.TrialState.RUNNING]
    assert not running


def _two_workers_of_launch_1(url: str) -> list[optuna.Study]:
    """Two worker processes of launch ``launch-1``, each in a study of its own, run to the end."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.optuna_guard_worker", url, f"sweep-{i}", "launch-1"],
            cwd=ROOT,
            env=env,
        )
        for i in range(2)
    ]
    assert [w.wait(timeout=240) for w in workers] == [0, 0]
    return [optuna.load_study(study_name=f"sweep-{i}", storage=url) for i in range(2)]


def test_workers_of_one_launch_in_studies_of_their_own_share_the_ceiling(tmp_path):
    """Each worker ran ``study_name=f"sweep-{i}"`` on one storage under one launch key:
    each counted its own study alone and stopped at the whole 64 USD, 128 USD in all.
    The guard now reads every study of its launch in the storage."""
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    optuna.create_study(study_name="sweep-0", storage=url)
    optuna.create_study(study_name="sweep-1", storage=url)  # NOTE: no race to create
    studies = _two_workers_of_launch_1(url)
    assert all(study.get_trials() for study in studies)  # both workers ran trials
    seconds = sum(sum(spend_of(study).values()) for study in studies)
    spend = Decimal(repr(seconds)) / 3600 * 2
    assert 64 <= spend <= 64 + 2 * EPOCH_COST  # within one step per worker of one ceiling
    assert all(s.user_attrs.get("budget_gate.launch.launch-1") is True for s in studies)


def test_a_relaunch_that_joins_its_studies_again_shares_one_ceiling(tmp_path):
    """A relaunch (a new launch key) ran the same script, ``load_if_exists=True`` on the
    studies an earlier launch had marked: each study kept the old key, no worker counted
    the other's, and two workers spent 128 USD against a 64 USD ceiling. The earlier
    launch's trials count against the new ceiling too (the storage cannot say who paid)."""
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    for i in range(2):  # launch-0: one trial of one epoch in each study (1.60 USD each)
        study = optuna.create_study(study_name=f"sweep-{i}", storage=url)
        guard = OptunaGuard(Guard(approved_limits(), clock=time.monotonic, launch_key="launch-0"))
        trial = study.ask()
        guard.report(trial, 1, {"val_loss": 1.0}, held_seconds=360.0)
        study.tell(trial, 1.0)
    studies = _two_workers_of_launch_1(url)
    seconds = sum(sum(spend_of(study).values()) for study in studies)
    spend = Decimal(repr(seconds)) / 3600 * 2
    assert 64 <= spend <= 64 + 2 * EPOCH_COST  # one ceiling in all, not one per worker
    marks = [{k for k in s.user_attrs if k.startswith("budget_gate.launch.")} for s in studies]
    assert marks == [{"budget_gate.launch.launch-0", "budget_gate.launch.launch-1"}] * 2


def _objective(guard: OptunaGuard, fail: bool = False):
    def objective(trial: optuna.Trial) -> float:
        guard.admit(trial)
        x = trial.suggest_float("x", 0.0, 1.0)
        if fail:
            raise RuntimeError("out of memory")
        for epoch in range(1, 11):
            guard.report(trial, epoch, {"val_loss": x + 1.0 / epoch}, held_seconds=epoch * 360.0)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return x

    return objective


def test_the_pruner_stops_trials_through_should_prune():
    guard = OptunaGuard(Guard(make_limits(guard_spec_4_trials()), clock=time.monotonic))
    study = optuna.create_study(pruner=guard.pruner(optuna.pruners.NopPruner()))
    study.optimize(_objective(guard), n_trials=10, callbacks=[guard.callback])
    trials = study.get_trials()
    # 4 trials of 10 epochs reach 64 USD exactly: the 4th is stopped at its last epoch.
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3 + ["PRUNED"]
    assert trials[-1].user_attrs[STOPPED_BY] == "budget-gate guard (stop-search)"
    assert trials[-1].user_attrs[GPU_SECONDS_ATTR] == 10 * 360.0 * 8


def test_one_guard_over_two_studies_counts_both(tmp_path):
    """A coarse study, then a fine one, under one approval: each numbers its trials from 0,
    and the fine study's spend must not hide under the coarse one's numbers."""
    guard = OptunaGuard(Guard(make_limits(guard_spec_4_trials()), clock=time.monotonic))
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    coarse = optuna.create_study(study_name="coarse", storage=storage)
    coarse.optimize(_objective(guard), n_trials=2, callbacks=[guard.callback])
    assert guard.guard.spend == Decimal("32.00")  # 2 trials × 10 epochs × 1.60
    fine = optuna.create_study(study_name="fine", storage=storage)
    fine.optimize(_objective(guard), n_trials=4, callbacks=[guard.callback])
    # the 2nd fine trial takes the spend to 64.00: report prunes it (the study's pruner is
    # not the guard's) and the study stops, no other trial starts
    assert [t.state.name for t in fine.get_trials()] == ["COMPLETE", "PRUNED"]
    assert guard.guard.spend == Decimal("64.00")
    assert guard.guard.check().kind is not None


def test_failed_trials_in_a_row_stop_the_study():
    limits = make_limits(guard_spec_4_trials(), {"guard": {"max_failed_in_a_row": 3}})
    guard = OptunaGuard(Guard(limits, clock=time.monotonic))
    study = optuna.create_study()
    study.optimize(
        _objective(guard, fail=True), n_trials=10, callbacks=[guard.callback], catch=(RuntimeError,)
    )
    assert [t.state.name for t in study.get_trials()] == ["FAIL"] * 3
    assert guard.guard.check().reason == "3 failed trials in a row (policy: at most 3)"


def test_a_stopped_trial_tags_its_mlflow_run_and_every_epoch_logs_its_cost(lab):
    limits = make_limits(guard_spec_4_trials())
    guard = OptunaGuard(Guard(limits, clock=time.monotonic), tracking_uri=lab.team.uri)
    runs: list[str] = []

    def objective(trial: optuna.Trial) -> float:
        guard.admit(trial)
        run_id = lab.client.create_run(lab.experiment_id).info.run_id
        runs.append(run_id)
        try:
            for epoch in range(1, 11):
                metrics = {"val_loss": 1.0 / epoch}
                guard.step(trial, epoch, metrics, held_seconds=epoch * 360.0, mlflow_run_id=run_id)
        finally:
            lab.client.set_terminated(run_id)
        return 0.0

    study = optuna.create_study()
    study.optimize(objective, n_trials=6, callbacks=[guard.callback])
    assert len(runs) == 4  # the fourth reaches the ceiling; the study stops
    tags = lab.client.get_run(runs[-1]).data.tags
    assert tags[STOPPED_BY] == "budget-gate guard (stop-search)"
    assert tags["budget_gate.stop_spend"] == "64.00 USD"
    costs = lab.client.get_metric_history(runs[0], "budget_gate.cost")
    assert [m.value for m in sorted(costs, key=lambda m: m.step)] == [
        pytest.approx(1.6 * e) for e in range(1, 11)
    ]
    assert STOPPED_BY not in lab.client.get_run(runs[0]).data.tags


def test_a_sync_reads_each_finished_trial_once_and_misses_none():
    # one worker's guard syncs as other workers' trials run, finish or fail between its
    # reports; what it counts must equal what a guard that reads the whole study counts
    limits = make_limits(guard_spec_4_trials())
    mine = OptunaGuard(Guard(limits, clock=time.monotonic))
    study = optuna.create_study(pruner=mine.pruner())  # its reports return their stops
    running = study.ask()
    mine.admit(running)
    others = [study.ask() for _ in range(3)]
    for n, other in enumerate(others):
        other.set_user_attr(GPU_SECONDS_ATTR, 100.0 * (n + 1))
    mine.report(running, 1, {limits.monitor: 1.0}, held_seconds=10)  # sees them running
    for n, other in enumerate(others):
        other.set_user_attr(GPU_SECONDS_ATTR, 1000.0 * (n + 1))  # their final spend
        if n:
            study.tell(other, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(other, 1.0)
    late = study.ask()  # started and failed between two reports: never seen running
    late.set_user_attr(GPU_SECONDS_ATTR, 5000.0)
    study.tell(late, state=optuna.trial.TrialState.FAIL)
    for epoch in (2, 3):
        mine.report(running, epoch, {limits.monitor: 1.0 / epoch}, held_seconds=10 * epoch)
    fresh = OptunaGuard(Guard(limits, clock=time.monotonic))
    fresh._sync(study)  # a first sync reads the whole study
    assert mine.guard.spend == fresh.guard.spend
    assert mine.guard.spend == limits.cost(1000 + 2000 + 3000 + 5000 + 30 * float(limits.gpus))
    assert mine.guard._failed == fresh.guard._failed == 3  # 2 of the others and the late one


def test_a_trial_that_fails_before_it_reports_is_charged_its_duration():
    """A trial that raised before its first report (or ran on after its last) held its
    GPUs from start to end: the storage's times are charged, not the last report."""
    limits = make_limits(guard_spec_4_trials(), {"guard": {"max_failed_in_a_row": 100}})
    guard = OptunaGuard(Guard(limits, clock=time.monotonic))
    study = optuna.create_study()

    def objective(trial: optuna.Trial) -> float:
        guard.admit(trial)
        time.sleep(0.2)
        raise RuntimeError("out of memory in the first batch")

    study.optimize(objective, n_trials=3, callbacks=[guard.callback], catch=(RuntimeError,))
    held = [
        (t.datetime_complete - t.datetime_start).total_seconds()
        for t in study.trials
        if t.datetime_complete and t.datetime_start
    ]
    assert len(held) == 3 and min(held) >= 0.2
    gpus = float(limits.gpus)
    assert guard.guard.gpu_seconds == pytest.approx(sum(held) * gpus)
    assert all(GPU_SECONDS_ATTR not in t.user_attrs for t in study.trials)  # none reported
