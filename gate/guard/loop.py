"""The runtime guard for a plain training loop: one call per epoch.

::

    guard = gate.open_guard("experiments/sweep.yaml")      # reads the ledger once
    loop = LoopGuard(guard, trial="7", mlflow_run_id=run.info.run_id)
    for epoch in range(1, max_epochs + 1):
        metrics = train_one_epoch()
        if loop.step(epoch, metrics).stop:
            break                          # the decision's reason is on the run's tags
    loop.end()

The GPU time held runs from the helper's creation (or :meth:`LoopGuard.resume`) on the
injected clock, paused by :meth:`LoopGuard.pause`, times the spec's GPUs; pass
``held_seconds`` to :meth:`LoopGuard.step` where the launcher knows better. With
``mlflow_run_id``, each step marks the run (:mod:`gate.guard.marks`), best effort: an
MLflow that is down delays a step by at most ``BUDGET_GATE_LEDGER_TIMEOUT`` and never
hides its decision.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping

from gate.guard.core import Guard
from gate.guard.marks import RunMarks
from gate.guard.model import Decision, Report, at_least_the_clock, seconds_held
from gate.integrations.mlflow.tracking_uri import resolve_tracking_uri

log = logging.getLogger(__name__)


class LoopGuard:
    """One trial attempt's link to the guard, for loops that call it once per epoch."""

    def __init__(
        self,
        guard: Guard,
        trial: str = "0",
        *,
        attempt: int | None = None,
        mlflow_run_id: str | None = None,
        tracking_uri: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        guard.names.loop_trial(trial)
        self.guard = guard
        self.trial = trial
        # NOTE: a loop opened again for the same trial is an attempt of its own; under one
        # attempt, its reports from zero would hide under the last attempt's larger total.
        self.attempt = (
            guard.new_attempt(trial) if attempt is None else guard.take_attempt(trial, attempt)
        )
        self._clock = clock
        self._held = 0.0
        self._since: float | None = clock()
        self._run_id = mlflow_run_id
        self._given: float | None = None  # the last held_seconds a step was given
        self._first: tuple[float, float] | None = None  # the first, and the clock's then
        self._warned = False
        self._marks: RunMarks | None = None
        if mlflow_run_id is not None:
            uri = resolve_tracking_uri(tracking_uri, os.environ, named="tracking_uri")
            self._marks = RunMarks(uri)

    @property
    def held_seconds(self) -> float:
        """Seconds this attempt has held its GPUs (pauses left out)."""
        running = self._clock() - self._since if self._since is not None else 0.0
        return self._held + running

    def pause(self) -> None:
        """Stop counting GPU time (the GPUs were released, e.g. the job was preempted)."""
        self._held, self._since = self.held_seconds, None

    def resume(self) -> None:
        """Count GPU time again from now."""
        if self._since is None:
            self._since = self._clock()

    def step(
        self, epoch: int, metrics: Mapping[str, float], held_seconds: float | None = None
    ) -> Decision:
        """Report one epoch; stop the loop when the decision says so (``.stop``).

        ``held_seconds``: the seconds this attempt has held its GPUs so far, a running
        total (default: counted since the loop began, pauses left out); it counts at least
        the loop's own time since the first one given. One that does not grow from a step
        to the next is said once (an epoch's own seconds are no total). The run's marks come
        after the decision and never stand in its way: an MLflow that is down costs at most
        the ledger's timeout, is logged once, and raises nothing.
        """
        held = self.held_seconds
        if held_seconds is not None:
            self._check_growth(epoch, held_seconds)
            given = seconds_held(held_seconds, self.trial)
            self._first = self._first or (given, held)
            held = at_least_the_clock(given, self._first, held)  # the loop's own clock
        gpu_seconds = seconds_held(held, self.trial) * float(self.guard.limits.gpus)
        decision = self.guard.observe(Report(self.trial, epoch, metrics, gpu_seconds, self.attempt))
        if self._marks is not None and self._run_id is not None:
            cost = self.guard.limits.cost(gpu_seconds)
            self._marks.write(self._run_id, epoch, cost, decision)
        return decision

    def _check_growth(self, epoch: int, given: float) -> None:
        """Say once that a held_seconds did not grow: it is a total, not the epoch's."""
        last, self._given = self._given, given
        if last is not None and given <= last and not self._warned:
            self._warned = True
            log.warning(
                "trial %s: held_seconds %s at epoch %s did not grow from %s: it is the "
                "attempt's seconds held so far (a running total), not the epoch's",
                self.trial,
                given,
                epoch,
                last,
            )

    def end(self, *, failed: bool = False) -> Decision:
        """The attempt is over; ``failed`` counts towards the policy's failure limits.

        The GPU time held since the last step is counted too: an attempt that fails in its
        first epoch reported none.
        """
        self.pause()
        gpu_seconds = self.held_seconds * float(self.guard.limits.gpus)
        self.guard.record(self.trial, gpu_seconds, self.attempt)
        return self.guard.end(self.trial, failed=failed, attempt=self.attempt)
