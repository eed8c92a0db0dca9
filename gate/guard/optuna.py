"""The runtime guard in an Optuna study, across every worker process of one RDB storage.

Each trial keeps the GPU-seconds it has held in its own user attribute
(``budget_gate.gpu_seconds``); the spend is their sum over the study's trials, read from
the storage at every report. A shared counter in the study's attributes would lose updates
when two workers write it at once; a trial's own attribute has one writer. So every worker
sees the others' spend at its next report, and all of them stop within one reported step
of the ceiling::

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
:meth:`OptunaGuard.pruner`, which wraps their own pruner. The callback counts failed trials
(every worker's, from the storage) and stops the worker once the search is over. One guard
may hold several studies (a coarse search, then a fine one) under its approval: their
trials are counted apart.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import optuna

from gate.guard.core import Guard
from gate.guard.marks import RunMarks
from gate.guard.model import GPU_SECONDS_ATTR, STOPPED_BY, Decision, Report
from gate.integrations.mlflow.tracking_uri import resolve_tracking_uri

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial, Trial

_FINISHED = (
    optuna.trial.TrialState.COMPLETE,
    optuna.trial.TrialState.PRUNED,
    optuna.trial.TrialState.FAIL,
)


class OptunaGuard:
    """Holds one worker process's trials to the guard, with the study's storage as truth."""

    def __init__(self, guard: Guard, tracking_uri: str | None = None) -> None:
        self.guard = guard
        self.tracking_uri = tracking_uri
        self._seen: dict[str, int] = {}
        """Per study: its trials numbered below this were read at least once."""
        self._open: dict[str, set[int]] = {}
        """Per study: trials read before that had not finished, read again at every sync."""
        self._home: str | None = None
        """The first study's name: its trials are named by number alone."""
        self._marks: RunMarks | None = None

    def report(
        self,
        trial: Trial,
        epoch: int,
        metrics: Mapping[str, float],
        held_seconds: float | None = None,
        mlflow_run_id: str | None = None,
    ) -> Decision:
        """Record the trial's spend and metric at ``epoch`` and decide (raises nothing).

        ``held_seconds`` is how long the trial has held its GPUs; by default, since Optuna
        started it. With ``mlflow_run_id`` (the trial's MLflow run, at the guard's
        ``tracking_uri``) the run gets the per-epoch cost and, on a stop, the stop's tags,
        best effort: an MLflow that is down delays the report by at most the ledger's
        timeout (``BUDGET_GATE_LEDGER_TIMEOUT``), is logged once, and never hides the stop.
        """
        if held_seconds is None:
            held_seconds = (
                dt.datetime.now() - (trial.datetime_start or dt.datetime.now())
            ).total_seconds()
        gpu_seconds = held_seconds * float(self.guard.limits.gpus)
        trial.set_user_attr(GPU_SECONDS_ATTR, gpu_seconds)
        value = metrics.get(self.guard.limits.monitor)
        if value is not None:
            trial.report(float(value), epoch)
        self._sync(trial.study, skip=trial.number)
        key = self._key(trial.study, trial.number)
        decision = self.guard.observe(Report(key, epoch, metrics, gpu_seconds))
        if decision.stop:
            for key, text in decision.tags().items():
                trial.set_user_attr(key, text)
        if mlflow_run_id is not None:
            # NOTE: after the stop is on the trial; best effort, bounded, raises nothing.
            cost = self.guard.limits.cost(gpu_seconds)
            self._run_marks().write(mlflow_run_id, epoch, cost, decision)
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
        decision = self.report(trial, epoch, metrics, held_seconds, mlflow_run_id)
        if decision.stop_search:
            trial.study.stop()
        if decision.stop:
            raise optuna.TrialPruned(decision.reason)
        return decision

    def admit(self, trial: Trial) -> None:
        """Call first in the objective: prune a trial that starts after the search stopped."""
        self._sync(trial.study, skip=trial.number)
        decision = self.guard.check()
        if decision.stop_search:
            trial.set_user_attr(STOPPED_BY, decision.tags().get(STOPPED_BY, ""))
            trial.study.stop()
            raise optuna.TrialPruned(decision.reason)

    def callback(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """A study callback: count the finished trial, and stop this worker if the search is."""
        self._sync(study)
        if self.guard.check().stop_search:
            study.stop()

    def pruner(self, wrapped: optuna.pruners.BasePruner | None = None) -> GuardPruner:
        """A pruner that prunes when the guard stops a trial, else when ``wrapped`` would."""
        return GuardPruner(self, wrapped)

    def _sync(self, study: optuna.Study, skip: int | None = None) -> None:
        """Count every trial's spend and every finished trial's outcome from the storage.

        A finished trial is counted once (its spend is final, its end counted); later syncs
        read only the trials still open and the new ones, found by number (a study numbers
        its trials 0, 1, 2, … in the order it lists them), so a report costs the same
        however many trials have ended.
        """
        trials = study.get_trials(deepcopy=False)
        opened = self._open.setdefault(study.study_name, set())
        seen = self._seen.get(study.study_name, 0)
        numbers = [*sorted(opened), *range(seen, len(trials))]
        by_number: Sequence[FrozenTrial] | dict[int, FrozenTrial] = trials
        if any(trials[n].number != n for n in numbers):
            by_number = {t.number: t for t in trials}  # NOTE: numbered otherwise: read all
            numbers = sorted(by_number)
        self._seen[study.study_name] = len(trials)
        ended = []
        for number in numbers:
            other = by_number[number]
            if other.state in _FINISHED and other.datetime_complete is not None:
                ended.append(other)
                opened.discard(number)
            else:
                opened.add(number)
            held = other.user_attrs.get(GPU_SECONDS_ATTR)
            if number == skip:
                continue
            if other in ended and other.datetime_start is not None:
                # NOTE: a trial that failed before its first report, or ran on after its
                # last, held its GPUs from start to end: at least that is charged.
                assert other.datetime_complete is not None
                span = (other.datetime_complete - other.datetime_start).total_seconds()
                whole = max(span, 0.0) * float(self.guard.limits.gpus)
                held = max(float(held), whole) if isinstance(held, (int, float)) else whole
            if isinstance(held, (int, float)):
                self.guard.record(self._key(study, number), float(held))
        for other in sorted(ended, key=_completed):
            failed = other.state is optuna.trial.TrialState.FAIL
            self.guard.end(self._key(study, other.number), failed=failed)

    def _run_marks(self) -> RunMarks:
        """One writer for every run: an MLflow found down is waited on once, not per trial."""
        if self._marks is None:
            self._marks = RunMarks(resolve_tracking_uri(self.tracking_uri, os.environ))
        return self._marks

    def _key(self, study: optuna.Study, number: int) -> str:
        """The guard's name of a trial: its number, and another study's name before it.

        NOTE: every study numbers its trials from 0; named by number alone, a second
        study's trials hid under the first's (the larger spend of the two counted).
        """
        if self._home is None:
            self._home = study.study_name
        return str(number) if study.study_name == self._home else f"{study.study_name}#{number}"


def _completed(trial: FrozenTrial) -> tuple[dt.datetime, int]:
    assert trial.datetime_complete is not None
    return trial.datetime_complete, trial.number


class GuardPruner(optuna.pruners.BasePruner):
    """Prune when the guard stops the trial (decided in :meth:`OptunaGuard.report`)."""

    def __init__(self, guard: OptunaGuard, wrapped: optuna.pruners.BasePruner | None) -> None:
        self._guard = guard
        self._wrapped = wrapped

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        """Whether ``trial`` stops: the guard's stop tags on it, or the wrapped pruner."""
        if STOPPED_BY in trial.user_attrs or self._guard.guard.check().stop_search:
            return True
        return self._wrapped.prune(study, trial) if self._wrapped is not None else False


def spend_of(study: optuna.Study) -> dict[str, Any]:
    """The study's GPU-seconds per trial, as its trials recorded them (for reports and tests)."""
    return {
        str(t.number): t.user_attrs[GPU_SECONDS_ATTR]
        for t in study.get_trials(deepcopy=False)
        if GPU_SECONDS_ATTR in t.user_attrs
    }
