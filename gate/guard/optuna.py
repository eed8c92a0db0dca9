"""The runtime guard in an Optuna study, across every worker process of one RDB storage.

Each trial keeps the GPU-seconds it has held in its own user attribute (one writer; a
counter in the study's attributes would lose updates), ``budget_gate.gpu_seconds``; the
spend is their sum, read from the storage at every report, so every worker sees the others'
spend at its next report and all stop within one reported step of the ceiling::

    guard = OptunaGuard(gate.open_guard("experiments/sweep.yaml"))

    def objective(trial):
        for epoch in range(1, max_epochs + 1):
            val_loss = train_one_epoch(trial)
            guard.step(trial, epoch, {"val_loss": val_loss})   # raises TrialPruned to stop
        return val_loss

    study.optimize(objective, n_trials=100, callbacks=[guard.callback])

:meth:`OptunaGuard.step` reports the monitored metric (``trial.report``), records the
spend and raises :class:`optuna.TrialPruned` when the guard stops the trial; a stop of the
search also calls ``study.stop()`` so this worker starts no new trial. Objectives that
prefer ``trial.should_prune()`` call :meth:`OptunaGuard.report` and use
:meth:`OptunaGuard.pruner`, which wraps their own pruner; under any other pruner
``report`` raises the stop itself. The callback counts failed trials (every worker's, from
the storage) and stops the worker once the search is over. One guard may hold several
studies (a coarse search, then a fine one) under its approval, each told apart by its
storage and id (not its name), its trials named apart by the guard
(:mod:`gate.guard.names`); ``optimize(n_jobs=...)``'s threads share one guard.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NoReturn

from gate.guard.engines import missing_engine

try:
    import optuna
except ModuleNotFoundError:
    raise missing_engine(__name__, "Optuna") from None

from gate.guard.core import Guard
from gate.guard.marks import RunMarks
from gate.guard.model import (
    GPU_SECONDS_ATTR,
    GPU_SECONDS_OF_ATTR,
    STOPPED_BY,
    Decision,
    Report,
    at_least_the_clock,
    seconds_held,
)
from gate.guard.optuna_storage import (
    LaunchStudies,
    anchor,
    charge,
    completed,
    storage_of,
)
from gate.guard.optuna_storage import spend_of as spend_of  # NOTE: the adapter's public API
from gate.integrations.mlflow.tracking_uri import resolve_tracking_uri

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial, Trial

log = logging.getLogger(__name__)

_STATE = optuna.trial.TrialState
_FINISHED = (_STATE.COMPLETE, _STATE.PRUNED, _STATE.FAIL)


@dataclass(slots=True)
class _Study:
    """What one guard has read of one study: its trials' label, and what to read again."""

    label: str
    """``""`` for the guard's first study (trials named by number alone), else ``name``
    with a count when another study had that name: ``fine#3``, ``sweep(2)#3``."""
    anchor: dt.datetime | None
    """When its trial 0 started: a study re-created under the same id started it later."""
    seen: int = 0
    """Its trials numbered below this were read at least once."""
    open: set[int] = field(default_factory=set)
    """Trials read before that had not finished, read again at every sync."""
    retries: dict[int, int] = field(default_factory=dict)
    """Per trial that retries another (Optuna's ``failed_trial``): the first trial's number."""

    def key(self, number: int) -> str:
        """The guard's name of the study's trial ``number``."""
        return f"{self.label}#{number}" if self.label else str(number)

    def slot(self, number: int) -> tuple[str, int]:
        """The guard's name and attempt of trial ``number``.

        A retry is an attempt of the trial it retries, numbered by its own number.
        NOTE: each retry Optuna made after a worker died (``RetryFailedTrialCallback``)
        started the red lines from zero: a trial of ``max_trial_hours: 3`` ran 5.5 h.
        """
        return self.key(self.retries.get(number, number)), number

    def note_retry(self, trial: FrozenTrial) -> None:
        """Remember the first trial ``trial`` retries, if it is one (an earlier number)."""
        first = trial.system_attrs.get("failed_trial")
        if isinstance(first, int) and not isinstance(first, bool) and 0 <= first < trial.number:
            self.retries[trial.number] = first

    def holds(self, trials: Sequence[FrozenTrial]) -> bool:
        """Whether ``trials`` are still this study's.

        NOTE: sqlite gives a study deleted and re-created under its name the same id (and
        its trials the same ids); it has fewer trials, or a trial 0 started at another time.
        """
        return len(trials) >= self.seen and (self.anchor is None or anchor(trials) == self.anchor)


class OptunaGuard:
    """Holds one worker process's trials to the guard, with the study's storage as truth."""

    def __init__(self, guard: Guard, tracking_uri: str | None = None) -> None:
        self.guard = guard
        self.tracking_uri = tracking_uri
        self._studies: dict[tuple[object, int], _Study] = {}
        """Per study (its storage and id): what was read of it."""
        self._marks: RunMarks | None = None
        self._lock = threading.RLock()
        """One thread at a time reads the storage into the guard and decides."""
        self._warned = False
        self._starts: dict[tuple[str, int], float] = {}
        """Per attempt reported without ``held_seconds``: its start on the monotonic clock."""
        self._given: dict[tuple[str, int], tuple[float, float]] = {}  # the first, and when
        self._launch = LaunchStudies(guard.launch_key)

    def report(
        self,
        trial: Trial,
        epoch: int,
        metrics: Mapping[str, float],
        held_seconds: float | None = None,
        mlflow_run_id: str | None = None,
    ) -> Decision:
        """Record the trial's spend and metric at ``epoch`` and decide.

        ``held_seconds`` is how long the trial has held its GPUs; by default, since Optuna
        started it. With ``mlflow_run_id`` (the trial's MLflow run, at the guard's
        ``tracking_uri``) the run gets the per-epoch cost and, on a stop, the stop's tags,
        best effort: an MLflow that is down delays the report by at most the ledger's
        timeout (``BUDGET_GATE_LEDGER_TIMEOUT``), is logged once, and never hides the stop.

        Raises:
            optuna.TrialPruned: the trial must stop and the study's pruner is not this
                guard's :meth:`pruner`, so ``trial.should_prune()`` would never say so.
            ValueError: ``held_seconds`` is NaN, infinite or negative (a broken timer).
        """
        decision = self._report(trial, epoch, metrics, held_seconds, mlflow_run_id)
        if decision.stop and not self._prunes(trial.study):
            if not self._warned and not _multi(trial.study):
                self._warned = True
                log.warning(
                    "budget-gate guard: the study's pruner is not the guard's, so report() "
                    "raised optuna.TrialPruned itself; pass pruner=guard.pruner(...) to "
                    "create_study to prune through trial.should_prune()"
                )
            _halt(trial, decision)
        return decision

    def step(
        self,
        trial: Trial,
        epoch: int,
        metrics: Mapping[str, float],
        held_seconds: float | None = None,
        mlflow_run_id: str | None = None,
    ) -> Decision:
        """:meth:`report`, then raise :class:`optuna.TrialPruned` when the trial must stop."""
        decision = self._report(trial, epoch, metrics, held_seconds, mlflow_run_id)
        if decision.stop:
            _halt(trial, decision)
        return decision

    def admit(self, trial: Trial) -> None:
        """Call first in the objective: prune a trial that starts after the search stopped."""
        with self._lock:
            self._sync(_study_of(trial), skip=trial.number)
            decision = self.guard.check()
        if decision.stop_search:
            trial.set_user_attr(STOPPED_BY, decision.tags().get(STOPPED_BY, ""))
            _halt(trial, decision)

    def callback(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """A study callback: count the finished trial, and stop this worker if the search is."""
        with self._lock:
            self._sync(study)
            stop = self.guard.check().stop_search
        if stop:
            study.stop()

    def pruner(self, wrapped: optuna.pruners.BasePruner | None = None) -> GuardPruner:
        """A pruner that prunes when the guard stops a trial, else when ``wrapped`` would."""
        return GuardPruner(self, wrapped)

    def _search_stopped(self) -> bool:
        """Whether the search is stopped (the ceiling, a revocation or failures)."""
        with self._lock:
            return self.guard.check().stop_search

    def _report(
        self,
        trial: Trial,
        epoch: int,
        metrics: Mapping[str, float],
        held_seconds: float | None,
        mlflow_run_id: str | None,
    ) -> Decision:
        """Count and decide under the lock; the MLflow marks after it, best effort."""
        with self._lock:
            key, attempt = self._sync(_study_of(trial), skip=trial.number).slot(trial.number)
            # NOTE: refuses a broken timer before the storage holds it (stored, every
            # worker read it back), and stores a plain float (a numpy.float32 is no JSON).
            held = self._held(trial, (key, attempt), held_seconds)
            gpu_seconds = held * float(self.guard.limits.gpus)
            self.guard.record(key, gpu_seconds, attempt)
            if trial.user_attrs.get(GPU_SECONDS_OF_ATTR) != trial.number:
                trial.set_user_attr(GPU_SECONDS_OF_ATTR, trial.number)  # first: fails closed
            trial.set_user_attr(GPU_SECONDS_ATTR, gpu_seconds)
            report = Report(key, epoch, metrics, gpu_seconds, attempt)
            decision = self.guard.observe(report)  # checks
            value = metrics.get(self.guard.limits.monitor)
            if value is not None and not _multi(trial.study):
                trial.report(float(value), epoch)
            if decision.stop:
                for name, text in decision.tags().items():
                    trial.set_user_attr(name, text)
            marks = self._run_marks() if mlflow_run_id is not None else None
        if marks is not None and mlflow_run_id is not None:
            # NOTE: after the stop is on the trial; best effort, bounded, raises nothing.
            marks.write(mlflow_run_id, epoch, self.guard.limits.cost(gpu_seconds), decision)
        return decision

    def _held(self, trial: Trial, slot: tuple[str, int], held_seconds: float | None) -> float:
        """The seconds ``trial`` has held its GPUs: the caller's, else since Optuna started it.

        The caller's counts at least the clock's time since its first (one that grew slower,
        0 each time, ran a trial past the ceiling): the time before it is the caller's to say.

        NOTE: Optuna's start is local wall time, which goes back (summer time ends): now
        minus it went negative and every report raised. The monotonic clock counts from
        this guard's first sight of the trial, plus the wall time before it (at least 0).
        """
        now = time.monotonic()
        if held_seconds is not None:
            given = seconds_held(held_seconds, slot[0])
            return at_least_the_clock(given, self._given.setdefault(slot, (given, now)), now)
        if slot not in self._starts:
            wall = dt.datetime.now() - (trial.datetime_start or dt.datetime.now())
            self._starts[slot] = now - max(wall.total_seconds(), 0.0)
        return now - self._starts[slot]

    def _sync(self, study: optuna.Study, skip: int | None = None) -> _Study:
        """:meth:`_read` ``study``, and every other study of the launch in its storage."""
        state = self._read(study, skip)
        for other in self._launch.others(study):
            self._read(other)
        return state

    def _read(self, study: optuna.Study, skip: int | None = None) -> _Study:
        """Count every trial's spend and every finished trial's outcome from the storage.

        A finished trial is counted once (its spend is final, its end counted); later syncs
        read only the trials still open and the new ones, found by number (a study numbers
        its trials 0, 1, 2, … in the order it lists them), so a report costs the same
        however many trials have ended. The caller holds the lock.
        """
        trials = study.get_trials(deepcopy=False)
        state = self._study(study, trials)
        numbers = [*sorted(state.open), *range(state.seen, len(trials))]
        by_number: Sequence[FrozenTrial] | dict[int, FrozenTrial] = trials
        if any(n >= len(trials) or trials[n].number != n for n in numbers):
            by_number = {t.number: t for t in trials}  # NOTE: numbered otherwise: read all
            numbers = sorted(by_number)
        state.seen = len(trials)
        now, gpus = dt.datetime.now(), float(self.guard.limits.gpus)
        ended = []
        for number in numbers:
            other = by_number[number]
            state.note_retry(other)
            done = other.state in _FINISHED and other.datetime_complete is not None
            if done:
                ended.append(other)
                state.open.discard(number)
            else:
                state.open.add(number)
            held = None if number == skip else charge(other, gpus, now, done)
            if held is not None:
                key, attempt = state.slot(number)
                self.guard.record(key, held, attempt)
        for other in sorted(ended, key=completed):
            failed = other.state is optuna.trial.TrialState.FAIL
            key, attempt = state.slot(other.number)
            self.guard.end(key, failed=failed, attempt=attempt)
        return state

    def _study(self, study: optuna.Study, trials: Sequence[FrozenTrial]) -> _Study:
        """What was read of ``study``: a fresh record for a study new to this guard.

        NOTE: told apart by storage and id, not name: two in-memory studies of one name,
        or one deleted and re-created, shared trial keys and hid each other's spend.
        """
        ident = (storage_of(study), study._study_id)
        state = self._studies.get(ident)
        if state is None or not state.holds(trials):
            state = _Study(self.guard.names.study_label(study.study_name), anchor(trials))
            self._studies[ident] = state
        elif state.anchor is None:
            state.anchor = anchor(trials)
        return state

    def _prunes(self, study: optuna.Study) -> bool:
        """Whether ``study`` prunes through this guard's pruner (never a multi-objective one)."""
        pruner = study.pruner
        return isinstance(pruner, GuardPruner) and pruner._guard is self and not _multi(study)

    def _run_marks(self) -> RunMarks:
        """One writer for every run: an MLflow found down is waited on once, not per trial."""
        if self._marks is None:
            self._marks = RunMarks(
                resolve_tracking_uri(self.tracking_uri, os.environ, named="tracking_uri")
            )
        return self._marks


def _halt(trial: Trial, decision: Decision) -> NoReturn:
    """Stop the trial (and this worker's study, when the search stops)."""
    if decision.stop_search:
        # NOTE: a trial asked for outside ``optimize`` (ask-and-tell) has no loop to stop,
        # and Optuna raises RuntimeError for it: the trial's stop must still come through.
        with contextlib.suppress(RuntimeError):
            trial.study.stop()
    raise optuna.TrialPruned(decision.reason)


def _study_of(trial: Trial) -> optuna.Study:
    """The study ``trial`` belongs to; a ``FixedTrial`` (a retrain) belongs to none."""
    study = getattr(trial, "study", None)
    if not isinstance(study, optuna.Study):
        raise TypeError(
            f"budget-gate guard: a {type(trial).__name__} belongs to no study, whose storage "
            "the guard counts: guard a retrain with gate.guard.loop.LoopGuard, or run it as a "
            "study trial (study.enqueue_trial(params))"
        )
    return study


def _multi(study: optuna.Study) -> bool:
    """Whether ``study`` has several objectives (no ``trial.report`` there: stops raised).

    NOTE: Optuna refuses ``trial.report`` and ``trial.should_prune`` with several.
    """
    return len(study.directions) > 1


class GuardPruner(optuna.pruners.BasePruner):
    """Prune when the guard stops the trial (decided in :meth:`OptunaGuard.report`)."""

    def __init__(self, guard: OptunaGuard, wrapped: optuna.pruners.BasePruner | None) -> None:
        self._guard, self._wrapped = guard, wrapped

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        """Whether ``trial`` stops: the guard's stop tags on it, or the wrapped pruner."""
        if STOPPED_BY in trial.user_attrs or self._guard._search_stopped():
            return True
        return self._wrapped.prune(study, trial) if self._wrapped is not None else False
