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
errored and completed trials. GPU time is the result's ``budget_gate_held_seconds`` when
the trainable reports it (seconds this trial has held its GPUs), else the sum of Tune's
``time_this_iter_s`` per trial in the driver, which charges a trial restarted from a
checkpoint for the epochs it trains again (``time_total_s`` goes back to the checkpoint's).
A search resumed with ``Tuner.restore`` carries on from what the guard had counted: Tune
restores the stopper with the experiment (``tests/test_guard_ray.py`` checks it).
The epoch is the result's ``epoch``, else ``training_iteration``. The object pickles (Tune
saves it with the experiment); the guard inside it holds only plain values.
"""

from __future__ import annotations

from typing import Any

from ray.tune import Callback, Stopper

from gate.guard.core import Guard
from gate.guard.model import Decision, Report

HELD_SECONDS = "budget_gate_held_seconds"


class RayGuard(Stopper, Callback):
    """Stops Tune trials and the whole search as the guard decides."""

    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self.decisions: dict[str, Decision] = {}
        self._iter_seconds: dict[str, float] = {}

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        """Whether the trial that produced ``result`` stops."""
        held = result.get(HELD_SECONDS)
        if held is None:
            held = self._iter_seconds.get(trial_id, 0.0) + float(
                result.get("time_this_iter_s") or 0.0
            )
            self._iter_seconds[trial_id] = held
        epoch = int(result.get("epoch") or result.get("training_iteration") or 0)
        metrics = {k: v for k, v in result.items() if isinstance(v, (int, float))}
        gpu_seconds = float(held) * float(self.guard.limits.gpus)
        decision = self.guard.observe(Report(trial_id, epoch, metrics, gpu_seconds))
        if decision.stop:
            self.decisions.setdefault(trial_id, decision)
        return decision.stop

    def stop_all(self) -> bool:
        """Whether the search stops (the ceiling, the approval, failures)."""
        return self.guard.check().stop_search

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        """Count a failed trial."""
        self.guard.end(str(trial.trial_id), failed=True)

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        """Count a trial that ended without an error (stopped ones included)."""
        self.guard.end(str(trial.trial_id), failed=False)
