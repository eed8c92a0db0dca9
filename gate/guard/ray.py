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
stopper alone) starts the driver's count there. Whenever Tune asks the stopper (each
result, and ``stop_all`` at every step of its loop), every running attempt of a started
trial is charged its time so far, so a trainable that reports rarely or only at its end
still meets the ceiling. A held-seconds figure that is no finite number >= 0 (NaN, inf,
negative, text) is a broken timer: the attempt is charged the driver's wall time, and the
search goes on. GPU time is charged at the GPUs Tune gives the trial (its placement
group's, as ``tune.with_resources`` asks; a fraction as held) or the spec's
``gpus_per_trial``, whichever is more.
A search resumed with ``Tuner.restore`` carries on from what the guard had counted: Tune
restores the stopper with the experiment (``tests/test_guard_ray.py`` checks it).
The epoch is the result's ``epoch``, else ``training_iteration``; metrics are named as Tune
names them (``val/loss`` for a nested ``{"val": {"loss": ...}}``). The object pickles (Tune
saves it with the experiment); the guard inside it holds only plain values.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

from gate.guard.engines import missing_engine

try:
    from ray.tune import Callback, Stopper
    from ray.tune.utils import flatten_dict
except ModuleNotFoundError:
    raise missing_engine(__name__, "Ray Tune") from None

from gate.guard.core import Guard
from gate.guard.model import Decision, Report

HELD_SECONDS = "budget_gate_held_seconds"
RUNNING = "RUNNING"
"""Tune's ``Trial.RUNNING``: the status of a trial whose actor holds its resources."""

log = logging.getLogger(__name__)


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
        self._gpus: dict[str, float] = {}
        """Per trial: the GPUs it holds, Tune's count or the spec's, whichever is more."""
        self._trials: dict[str, Any] = {}
        """Per trial started: Tune's ``Trial``, read for its status (not pickled)."""
        self._warned: set[str] = set()

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        """Whether the trial that produced ``result`` stops."""
        self._charge_running()
        attempt = self._attempt(trial_id)
        claimed = self._claimed(trial_id, attempt, result)
        held = max(claimed, self._measure(trial_id, attempt))
        epoch = _epoch(result)
        # NOTE: named as Tune names them (``val/loss`` for ``{"val": {"loss": ...}}``), and
        # numbers.Real, not (int, float): a nested or numpy.float32 metric was left out, and
        # the plateau rule never saw it.
        flat = flatten_dict(result)
        metrics = {k: number for k, v in flat.items() if (number := _real(v)) is not None}
        gpu_seconds = held * self._gpus_of(trial_id)
        decision = self.guard.observe(Report(trial_id, epoch, metrics, gpu_seconds, attempt))
        if decision.stop:
            self.decisions.setdefault(trial_id, decision)
        return decision.stop

    def stop_all(self) -> bool:
        """Whether the search stops (the ceiling, the approval, failures).

        Every running attempt is charged its time so far first: a trial that reports
        rarely, or only at its end, holds its GPUs between reports too.
        """
        self._charge_running()
        return self.guard.check().stop_search

    def on_trial_start(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        """Start the driver's count of the time the trial's actor holds its resources."""
        trial_id = str(trial.trial_id)
        self._trials[trial_id] = trial
        gpus = max(_tune_gpus(trial), float(self.guard.limits.gpus))
        self._gpus[trial_id] = gpus
        self.guard.hold(trial_id, gpus)
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
        return {**self.__dict__, "_since": {}, "_trials": {}}

    def _claimed(self, trial_id: str, attempt: int, result: dict[str, Any]) -> float:
        """The seconds held the trainable claims (0 for a figure that is no such number).

        NOTE: a NaN, infinite, negative or non-numeric figure is a broken timer, not a
        reason to stop the whole search: the driver's wall time for the attempt counts.
        """
        if HELD_SECONDS in result:
            held = _non_negative(result[HELD_SECONDS])
            if held is None:
                self._warn(trial_id, HELD_SECONDS, result[HELD_SECONDS])
            return held or 0.0
        raw = result.get("time_this_iter_s")
        this_iter = _non_negative(raw or 0.0)
        if this_iter is None:
            self._warn(trial_id, "time_this_iter_s", raw)
        claimed = self._iter_seconds.get((trial_id, attempt), 0.0) + (this_iter or 0.0)
        self._iter_seconds[(trial_id, attempt)] = claimed
        return claimed

    def _warn(self, trial_id: str, key: str, value: Any) -> None:
        if trial_id not in self._warned:
            self._warned.add(trial_id)
            log.warning(
                "budget-gate guard: trial %s reported %s %.80r, not a finite number of "
                "seconds >= 0: charged the driver's wall time for it",
                trial_id,
                key,
                value,
            )

    def _charge_running(self) -> None:
        """Charge every running attempt of a started trial its time so far.

        An attempt whose trial no longer runs (paused) is charged up to now and its count
        stops; its next start counts afresh. A trial the stopper alone has seen (no
        ``on_trial_start``) is charged at its reports only: nothing says when it ended.
        """
        for key in list(self._since):
            trial = self._trials.get(key[0])
            if trial is None:
                continue
            wall = self._measure(*key)
            self.guard.record(key[0], wall * self._gpus_of(key[0]), key[1])
            if getattr(trial, "status", RUNNING) != RUNNING:
                del self._since[key]

    def _gpus_of(self, trial_id: str) -> float:
        return self._gpus.get(trial_id, float(self.guard.limits.gpus))

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
            self.guard.record(trial_id, wall * self._gpus_of(trial_id), attempt)
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


def _non_negative(value: Any) -> float | None:
    """``value`` as a finite number >= 0 (seconds, an epoch, GPUs), else ``None``."""
    number = _real(value)
    return number if number is not None and math.isfinite(number) and number >= 0 else None


def _real(value: Any) -> float | None:
    """A reported number as a float (an int past a float's range: its infinity), else None.

    NOTE: ``10**400`` raised OverflowError in the stopper, and Tune ended the search.
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    try:
        return float(value)
    except OverflowError:  # NOTE: only an int is past a float's range
        return math.inf if isinstance(value, Integral) and int(value) > 0 else -math.inf


def _epoch(result: dict[str, Any]) -> int:
    """The result's ``epoch``, else ``training_iteration``, else 0 (a bad figure is none)."""
    for key in ("epoch", "training_iteration"):
        value = _non_negative(result.get(key))
        if value:
            return int(value)
    return 0


def _tune_gpus(trial: Any) -> float:
    """The GPUs Tune allotted ``trial`` (``tune.with_resources``), 0 where it says none."""
    factory = getattr(trial, "placement_group_factory", None)
    required = getattr(factory, "required_resources", None)
    gpus = _non_negative(required.get("GPU", 0) if isinstance(required, dict) else 0)
    return gpus or 0.0
