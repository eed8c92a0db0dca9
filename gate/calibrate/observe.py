"""One finished run as calibration sees it: its key, epoch time, setup, plateau, failure (pure).

- epoch time = training seconds ÷ epochs run, where training seconds are the logged
  ``budget_gate.train_seconds``, else the time held minus the logged setup (and eval)
  seconds, else the whole time held; epochs run are the monitored metric's logged steps;
- the plateau is :func:`gate.estimate.returns.plateau` (the marginal-return definition the
  estimate, reconcile and the guard share) over the monitored metric, as a fraction of the
  run's ``max_epochs``;
- a FAILED or KILLED run failed ``epochs ÷ max_epochs`` of the way through; a KILLED run
  on spot capacity counts as a preemption; ``attempt`` above 1 is a retry.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from gate.calibrate.model import Key
from gate.estimate.returns import Mode, Threshold, plateau
from gate.ledger import tracking
from gate.reconcile.actuals import RunFacts

FAILED = ("FAILED", "KILLED")
DONE = ("FINISHED", *FAILED)


@dataclass(frozen=True, slots=True)
class Observation:
    """What one finished run measured; ``None`` where it logged too little to say."""

    run_id: str
    key: Key
    experiment: str
    spec: str
    team: str
    start: dt.datetime
    status: str
    epoch_minutes: float | None
    setup_minutes: float | None
    plateau_fraction: float | None
    failure_point: float | None
    retry: bool
    preempted: bool
    declared_minutes: float | None = None
    declared_worst: float | None = None

    @property
    def failed(self) -> bool:
        """FAILED or KILLED."""
        return self.status in FAILED


def observe(facts: RunFacts, experiment: str, relative_gain: float) -> Observation | None:
    """The run's measurements; ``None`` for a run not finished (running, scheduled).

    ``relative_gain`` is the accepted return per patience window (the policy's
    ``returns.min_relative_gain``) that defines the plateau.
    """
    if facts.status not in DONE or facts.start_ms is None or facts.end_ms is None:
        return None
    tags = facts.tags
    held = max(0.0, (facts.end_ms - facts.start_ms) / 1000)
    setup = _seconds(facts, tracking.SETUP_SECONDS)
    epochs = len(facts.history)
    max_epochs = _int(tags.get(tracking.MAX_EPOCHS))
    failed = facts.status in FAILED
    return Observation(
        run_id=facts.run_id,
        key=Key(
            model=tags.get(tracking.MODEL),
            accelerator=tags.get(tracking.ACCELERATOR),
            gpus=_int(tags.get(tracking.GPUS)),
            precision=tags.get(tracking.PRECISION),
        ),
        experiment=experiment,
        spec=tags.get(tracking.FINGERPRINT, ""),
        team=tags.get(tracking.TEAM, ""),
        start=dt.datetime.fromtimestamp(facts.start_ms / 1000, dt.timezone.utc),
        status=facts.status,
        epoch_minutes=_epoch_minutes(facts, held, setup, epochs),
        setup_minutes=None if setup is None else setup / 60,
        plateau_fraction=None if failed else _plateau(facts, max_epochs, relative_gain),
        failure_point=min(1.0, epochs / max_epochs) if failed and max_epochs else None,
        retry=(_int(tags.get(tracking.ATTEMPT)) or 1) > 1,
        preempted=facts.status == "KILLED" and tags.get(tracking.CAPACITY) == "spot",
        declared_minutes=_float(tags.get(tracking.EPOCH_MINUTES)),
        declared_worst=_float(tags.get(tracking.EPOCH_MINUTES_WORST)),
    )


def _epoch_minutes(facts: RunFacts, held: float, setup: float | None, epochs: int) -> float | None:
    if epochs == 0:
        return None
    train = _seconds(facts, tracking.TRAIN_SECONDS)
    if train is None:
        evaluation = _seconds(facts, tracking.EVAL_SECONDS) or 0.0
        train = max(0.0, held - (setup or 0.0) - evaluation)
    return train / epochs / 60


def _plateau(facts: RunFacts, max_epochs: int | None, relative_gain: float) -> float | None:
    if not facts.history or not max_epochs:
        return None
    mode: Mode = "max" if facts.tags.get(tracking.MONITOR_MODE) == "max" else "min"
    window = _int(facts.tags.get(tracking.PATIENCE)) or 10
    found = plateau(facts.history, mode, Threshold(window=window, relative=relative_gain))
    return None if found is None else min(1.0, found / max_epochs)


def _seconds(facts: RunFacts, key: str) -> float | None:
    value = facts.metrics.get(key)
    if value is None:
        value = _float(facts.params.get(key))
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def _float(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() and int(text) > 0 else None
