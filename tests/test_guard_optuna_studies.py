"""The Optuna guard where its studies, pruners, stored figures and threads were taken on trust:
two studies of one name, a study without the guard's pruner, a broken timer's figure in the
storage, and ``optimize(n_jobs=...)`` threads sharing one guard."""

from __future__ import annotations

import threading
import time
from decimal import Decimal
from typing import Any

import optuna
import pytest
from optuna.storages import InMemoryStorage

from gate.guard.core import Guard
from gate.guard.model import GPU_SECONDS_ATTR, STOPPED_BY
from gate.guard.optuna import OptunaGuard, spend_of
from tests.guard_kit import guard_spec_4_trials, make_limits


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def _guard(**policy: Any) -> OptunaGuard:
    limits = make_limits(guard_spec_4_trials(), policy or None)
    return OptunaGuard(Guard(limits, clock=time.monotonic))


def _stepping(guard: OptunaGuard):
    def objective(trial: optuna.Trial) -> float:
        guard.admit(trial)
        x = trial.suggest_float("x", 0.0, 1.0)
        for epoch in range(1, 11):
            guard.step(trial, epoch, {"val_loss": x + 1.0 / epoch}, held_seconds=epoch * 360.0)
        return x

    return objective


def _usd(*studies: optuna.Study) -> Decimal:
    """What the trials of ``studies`` recorded, at 2 USD a GPU-hour."""
    seconds = sum(sum(spend_of(s).values()) for s in studies)
    return Decimal(repr(seconds)) / 3600 * 2


@pytest.mark.parametrize("where", ["two in-memory studies", "deleted and re-created in sqlite"])
def test_two_studies_of_one_name_are_counted_apart(tmp_path, where):
    """Named by study name alone, the second study's trials 0, 1, … hid under the first's:
    the guard counted 64 USD of the 96 USD its trials held and let the search run on."""
    guard = _guard()
    url = f"sqlite:///{tmp_path / 'sweep.db'}" if where.endswith("sqlite") else None
    first = optuna.create_study(study_name="sweep", storage=url)
    first.optimize(_stepping(guard), n_trials=2, callbacks=[guard.callback])
    spent = _usd(first)
    if url is not None:
        optuna.delete_study(study_name="sweep", storage=url)
    second = optuna.create_study(study_name="sweep", storage=url)
    second.optimize(_stepping(guard), n_trials=4, callbacks=[guard.callback])
    # 32 USD in the first study: the second study's 2nd trial reaches the 64 USD ceiling
    assert spent == Decimal(32)
    assert [t.state.name for t in second.get_trials()] == ["COMPLETE", "PRUNED"]
    assert guard.guard.spend == spent + _usd(second) == Decimal(64)
    assert guard.guard.trial_cost("sweep#1") == Decimal(16)


def test_a_study_loaded_twice_is_one_study(tmp_path):
    """Every ``load_study`` of an RDB study is a new object: its trials are counted once."""
    guard = _guard()
    url = f"sqlite:///{tmp_path / 'sweep.db'}"
    optuna.create_study(study_name="sweep", storage=url)
    for _ in range(2):
        study = optuna.load_study(study_name="sweep", storage=url)
        study.optimize(_stepping(guard), n_trials=1, callbacks=[guard.callback])
    assert guard.guard.spend == _usd(study) == Decimal(32)


def _reporting(guard: OptunaGuard, epochs: int = 100):
    """An objective that asks ``should_prune`` after each ``report`` (the pruner's usage)."""

    def objective(trial: optuna.Trial) -> float:
        guard.admit(trial)
        for epoch in range(1, epochs + 1):
            guard.report(trial, epoch, {"val_loss": 0.5}, held_seconds=epoch * 360.0)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return 0.0

    return objective


@pytest.mark.parametrize("pruner", [None, optuna.pruners.NopPruner()])
def test_report_without_the_guards_pruner_stops_the_trial_itself(pruner, caplog):
    """Without ``pruner=guard.pruner(...)``, ``should_prune`` never heard of the guard's stops:
    the first trial ran its 100 epochs to 160 USD against a 64 USD ceiling. ``report`` now
    prunes each trial itself: three at their plateau, the fourth at the ceiling."""
    guard = _guard()
    study = optuna.create_study(pruner=pruner)  # None: Optuna's default, a MedianPruner
    study.optimize(_reporting(guard), n_trials=12, callbacks=[guard.callback])
    trials = study.get_trials()
    assert [t.state.name for t in trials] == ["PRUNED"] * 4  # and the search stopped
    assert [t.user_attrs[STOPPED_BY] for t in trials] == ["budget-gate guard (stop-trial)"] * 3 + [
        "budget-gate guard (stop-search)"
    ]
    assert guard.guard.spend == _usd(study) == Decimal(64)  # 40 epochs of 1.60
    assert "pass pruner=guard.pruner(...)" in caplog.text


def test_report_with_the_guards_pruner_leaves_the_stop_to_should_prune():
    guard = _guard()
    study = optuna.create_study(pruner=guard.pruner(optuna.pruners.MedianPruner()))
    trial = study.ask()
    decisions = [guard.report(trial, e, {"val_loss": 0.5}, held_seconds=e * 360.0) for e in (1, 40)]
    assert [d.stop for d in decisions] == [False, True]  # returned, not raised
    assert trial.should_prune()


def _charged(trial: optuna.trial.FrozenTrial, gpus: float) -> float:
    assert trial.datetime_start is not None and trial.datetime_complete is not None
    return (trial.datetime_complete - trial.datetime_start).total_seconds() * gpus


def test_a_broken_timer_is_not_stored_and_a_stored_one_is_charged_its_time(tmp_path):
    """A NaN stored as a trial's figure made every worker's admit, report and callback raise
    ValueError reading it back: one broken timer killed the whole study."""
    url = f"sqlite:///{tmp_path / 'nan.db'}"
    study = optuna.create_study(study_name="s", storage=url)
    first = _guard()

    def broken(trial: optuna.Trial) -> float:
        first.step(trial, 1, {"val_loss": 1.0}, held_seconds=float("nan"))
        return 0.0

    study.optimize(broken, n_trials=1, catch=(ValueError,))
    assert study.trials[0].state.name == "FAIL"
    assert GPU_SECONDS_ATTR not in study.trials[0].user_attrs  # refused before it was stored
    # figures an older guard or a hand stored: none is a count of GPU-seconds
    for figure in (float("nan"), float("inf"), -5.0, "lots", True, 10**400):
        old = study.ask()
        old.set_user_attr(GPU_SECONDS_ATTR, figure)
        time.sleep(0.01)
        study.tell(old, state=optuna.trial.TrialState.FAIL)
    running = study.ask()
    running.set_user_attr(GPU_SECONDS_ATTR, float("nan"))
    second = _guard(guard={"max_failed_in_a_row": 100})
    study = optuna.load_study(study_name="s", storage=url)
    study.optimize(_stepping(second), n_trials=1, callbacks=[second.callback])
    trials = study.get_trials()
    assert trials[-1].state.name == "COMPLETE" and trials[-1].user_attrs[GPU_SECONDS_ATTR] == 28800
    gpus = float(second.guard.limits.gpus)
    ended = sum(_charged(t, gpus) for t in trials[:7])
    # the running trial is charged the time it has held its GPUs so far: more than nothing
    assert second.guard.gpu_seconds > ended + 28800
    assert second.guard.trial_cost(str(running.number)) > 0


class _SlowStorage(InMemoryStorage):
    """Optuna's in-memory storage, whose reads in one chosen thread wait for the main thread:
    the widest gap between a guard's read of the study and its use of what it read."""

    def __init__(self) -> None:
        super().__init__()
        self.slow: threading.Thread | None = None
        self.read = threading.Event()
        self.done = threading.Event()

    def get_all_trials(self, study_id, deepcopy=True, states=None):
        trials = super().get_all_trials(study_id, deepcopy, states)
        if threading.current_thread() is self.slow and not self.read.is_set():
            self.read.set()
            self.done.wait(timeout=1.0)
        return trials


def test_threads_sharing_one_guard_read_the_study_one_at_a_time():
    """``optimize(n_jobs=8)``: a thread that read the study before another thread's report
    found that report's newer trial in the guard's state and crashed (IndexError)."""
    guard = _guard()
    storage = _SlowStorage()
    study = optuna.create_study(storage=storage)
    mine = study.ask()
    guard.report(mine, 1, {"val_loss": 1.0}, held_seconds=360.0)
    errors: list[BaseException] = []

    def report_late() -> None:
        try:
            guard.report(mine, 2, {"val_loss": 0.5}, held_seconds=720.0)
        except BaseException as error:
            errors.append(error)

    storage.slow = threading.Thread(target=report_late)
    storage.slow.start()
    assert storage.read.wait(timeout=5)
    other = study.ask()  # a trial the slow thread's read does not hold
    guard.report(other, 1, {"val_loss": 1.0}, held_seconds=360.0)
    storage.done.set()
    storage.slow.join(timeout=10)
    assert errors == []
    assert guard.guard.spend == _usd(study) == Decimal("4.8")  # 720 + 360 s on 8 GPUs


def test_optimize_with_threads_counts_what_the_trials_hold(tmp_path):
    guard = _guard()
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'threads.db'}")
    study.optimize(_stepping(guard), n_trials=16, n_jobs=4, callbacks=[guard.callback])
    states = [t.state for t in study.get_trials()]
    assert optuna.trial.TrialState.FAIL not in states
    assert optuna.trial.TrialState.RUNNING not in states
    # trials the guard pruned before their first report are charged their few milliseconds
    assert Decimal(64) <= _usd(study) <= guard.guard.spend < _usd(study) + Decimal("0.1")
