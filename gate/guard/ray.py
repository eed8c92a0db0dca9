"""The runtime guard in a Ray Tune search: one object that is both a ``Stopper`` and a ``Callback``.

::

    guard = RayGuard(gate.open_guard("experiments/sweep.yaml"))
    tuner = tune.Tuner(
        trainable,
        run_config=tune.RunConfig(stop=guard, callbacks=[guard]),
        tune_config=tune.TuneConfig(num_samples=64),
    )
    tuner.fit()

Tune calls the stopper with every result in the driver: the guard stops that trial (a red
line, the plateau) or, through ``stop_all``, every trial (the ceiling, too many failures),
so the spend overshoots by at most one report per running trial. The callback counts
errored, retried and completed trials. Each run of a trial is an attempt: a retry after a
failure (Tune's ``FailureConfig``) and an errored trial run again by ``Tuner.restore`` add
their GPU time to the earlier attempts'; a trial that fails for good counts as a failure. GPU
time is the result's ``budget_gate_held_seconds`` when the trainable reports it (seconds
this run of the trainable has held its GPUs), else the sum of Tune's ``time_this_iter_s``
per attempt in the driver, which charges a trial restarted from a checkpoint for the
epochs it trains again (``time_total_s`` goes back to the checkpoint's); and at least the
wall time the driver itself measured for the attempt, on its own clock, from each start
of the trial's actor (``on_trial_start``: a start, a retry, a resume after a pause) through
each of its results. NOTE: both reported figures are the trainable's word (Tune takes a
reported ``time_this_iter_s`` as given), so a trainable reporting 0 held its GPUs for
free; the driver's clock is the one the trainable cannot set. The time from an attempt's
last result to its end (an error, a retry, a completion) counts too; the time between a
trial's pause and its resume does not; a result with no start seen (a guard passed as the
stopper alone) starts the driver's count there.
A search resumed with ``Tuner.restore`` carries on from what the guard had counted: Tune
restores the stopper with the experiment (``tests/test_guard_ray.py`` checks it).
The epoch is the result's ``epoch``, else ``training_iteration``. The object pickles (Tune
saves it with the experiment); the guard inside it holds only plain values.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ray.tune import Callback, Stopper

from gate.guard.core import Guard
from gate.guard.model import Decision, Report

HELD_SECONDS = "budget_gate_held_seconds"


class RayGuard(Stopper, Callback):
    """Stops Tune trials and the whole search as the guard decides."""

    def __init__(self, guard: Guard, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.guard = guard
        self.decisions: dict[str, Decision] = {}
        self._iter_seconds: dict[tuple[str, int], float] = {}
        self._attempts: dict[str, int] = {}
        self._clock = clock
        self._wall: dict[tuple[str, int], float] = {}
        """Per attempt: the seconds the driver measured it running."""
        self._since: dict[tuple[str, int], float] = {}
        """Per running attempt: the driver's clock at its start or last result (not pickled)."""

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        """Whether the trial that produced ``result`` stops."""
        attempt = self._attempt(trial_id)
        claimed = result.get(HELD_SECONDS)
        if claimed is None:
            claimed = self._iter_seconds.get((trial_id, attempt), 0.0) + float(
                result.get("time_this_iter_s") or 0.0
            )
            self._iter_seconds[(trial_id, attempt)] = claimed
        held = max(float(claimed), self._measure(trial_id, attempt))
        epoch = int(result.get("epoch") or result.get("training_iteration") or 0)
        metrics = {k: v for k, v in result.items() if isinstance(v, (int, float))}
        gpu_seconds = float(held) * float(self.guard.limits.gpus)
        decision = self.guard.observe(Report(trial_id, epoch, metrics, gpu_seconds, attempt))
        if decision.stop:
            self.decisions.setdefault(trial_id, decision)
        return decision.stop

    def stop_all(self) -> bool:
        """Whether the search stops (the ceiling, the approval, failures)."""
        return self.guard.check().stop_search

    def on_trial_start(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        """Start the driver's count of the time the trial's actor holds its resources."""
        trial_id = str(trial.trial_id)
        self._since[(trial_id, self._attempt(trial_id))] = self._clock()

    def on_trial_recover(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        """End an attempt Tune retries: the retry is an attempt of its own.

        NOTE: not a failed trial: Tune retries lost nodes and spot preemptions too, and one
        preemption of three trials would stop the search at max_failed_in_a_row.
        """
        trial_id = str(trial.trial_id)
        self.guard.retire(trial_id, self._closed(trial_id))

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        """Count a failed trial."""
        trial_id = str(trial.trial_id)
        self.guard.end(trial_id, failed=True, attempt=self._closed(trial_id))

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        """Count a trial that ended without an error (stopped ones included)."""
        trial_id = str(trial.trial_id)
        self.guard.end(trial_id, failed=False, attempt=self._closed(trial_id))

    def __getstate__(self) -> dict[str, Any]:
        # NOTE: a clock reading means nothing in another process (a restored search): the
        # time measured so far is kept, and the count goes on from the trial's next start.
        return {**self.__dict__, "_since": {}}

    def _measure(self, trial_id: str, attempt: int) -> float:
        """The attempt's running time on the driver's clock, counted up to now."""
        key = (trial_id, attempt)
        now = self._clock()
        since = self._since.get(key, now)
        self._wall[key] = self._wall.get(key, 0.0) + max(now - since, 0.0)
        self._since[key] = now
        return self._wall[key]

    def _closed(self, trial_id: str) -> int:
        """The trial's attempt, charged the driver's time from its last result to its end.

        NOTE: an attempt that holds its GPUs and fails before (or long after) its last
        report spent that time too, as a loop's ``end`` and a finished Optuna trial count it.
        """
        attempt = self._attempt(trial_id)
        if (trial_id, attempt) in self._since:
            wall = self._measure(trial_id, attempt)
            del self._since[(trial_id, attempt)]
            self.guard.record(trial_id, wall * float(self.guard.limits.gpus), attempt)
        return attempt

    def _attempt(self, trial_id: str) -> int:
        """The trial's running attempt; after an ended one, a new one.

        A retry, or a restored search's rerun of an errored trial, adds its GPU time to
        the earlier attempts'.
        """
        attempt = self._attempts.get(trial_id)
        if attempt is None or self.guard.has_ended(trial_id, attempt):
            attempt = self.guard.new_attempt(trial_id)
            self._attempts[trial_id] = attempt
        return attempt
