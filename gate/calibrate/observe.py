"""One finished run as calibration sees it: its key, epoch time, setup, plateau, failure (pure).

- epoch time = training seconds ÷ epochs run, where training seconds are the logged
  ``budget_gate.train_seconds``, else the time held minus the logged setup (and eval)
  seconds, else the whole time held; epochs run are the monitored metric's logged steps
  (a run with more steps than its ``max_epochs`` logged them more than once an epoch: its
  epoch time, plateau and failure point are left out, and counted);
- the plateau is :func:`gate.estimate.returns.plateau` (the marginal-return definition the
  estimate, reconcile and the guard share) over the monitored metric, as a fraction of the
  run's ``max_epochs``;
- a FAILED or KILLED run failed ``epochs ÷ max_epochs`` of the way through; a KILLED run
  on spot capacity counts as a preemption; ``attempt`` above 1 is a retry;
- model FLOPs utilization (MFU) = FLOPs trained ÷ (training seconds × the GPUs' dense peak
  at the run's precision × GPUs), where the FLOPs are the logged ``budget_gate.train_flops``,
  else the spec's FLOPs per epoch (tagged from ``workload.model``) × epochs run. A figure
  above 1 is impossible: it is left out and counted, since the FLOPs or the time are wrong.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from gate.calibrate.model import Key
from gate.estimate.flops import load_peaks
from gate.estimate.returns import Mode, plateau, threshold_for
from gate.estimate.settings import Returns
from gate.ledger import tracking
from gate.reconcile.actuals import RunFacts, moment

MIG_PROFILE = tracking.MIG_PROFILE
"""The run's MIG slice, when its tags give one: its key is the slice's, never a whole GPU's.

NOTE: gate.ledger.tracking.spec_tags does not write it yet; until it does, a MIG run's
key reads as whole GPUs."""
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
    mfu: float | None = None
    mfu_over_peak: bool = False
    """The run's FLOPs and time give an MFU above 1: left out of the calibration."""
    end: dt.datetime | None = None
    """When the run ended (``None``: not known, taken as its start): the backtest learns
    from the runs that had ended before an experiment's first run, as ``check`` saw them."""
    steps_over_max: bool = False
    """The monitored metric has more steps than the run's ``max_epochs``: they are no epochs
    (a validation 4 times an epoch), so its epoch time, plateau and failure point are left
    out."""

    @property
    def failed(self) -> bool:
        """FAILED or KILLED."""
        return self.status in FAILED


def observe(
    facts: RunFacts, experiment: str, returns: Returns, price_per_gpu_hour: float | None = None
) -> Observation | None:
    """The run's measurements; ``None`` for a run not finished (running, scheduled).

    ``returns`` is the policy's accepted return, which with the run's own ``min_delta`` and
    patience defines the plateau; ``price_per_gpu_hour`` prices an epoch for a
    ``returns.min_gain_per_cost`` (without one, that part of the threshold is left out).
    """
    if facts.status not in DONE or facts.start_ms is None or facts.end_ms is None:
        return None
    tags = facts.tags
    held = max(0.0, (facts.end_ms - facts.start_ms) / 1000)
    setup = _seconds(facts, tracking.SETUP_SECONDS)
    epochs = len(facts.history)
    max_epochs = _int(tags.get(tracking.MAX_EPOCHS))
    over = max_epochs is not None and epochs > max_epochs
    if over:  # NOTE: 40 steps of a 10-epoch run (val_check_interval=0.25) learned 1 min, not 4
        epochs = 0
    failed = facts.status in FAILED
    key = Key(
        model=tags.get(tracking.MODEL),
        accelerator=tags.get(tracking.ACCELERATOR),
        gpus=_int(tags.get(tracking.GPUS)),
        precision=tags.get(tracking.PRECISION),
        mig_profile=tags.get(MIG_PROFILE) or None,
    )
    minutes = _epoch_minutes(facts, held, setup, epochs)
    mfu = _mfu(facts, key, minutes, epochs)
    epoch_gpu_hours = (key.gpus or 1) * (minutes or 0.0) / 60
    return Observation(
        run_id=facts.run_id,
        key=key,
        experiment=experiment,
        spec=tags.get(tracking.FINGERPRINT, ""),
        team=tags.get(tracking.TEAM, ""),
        start=moment(facts.start_ms),
        status=facts.status,
        epoch_minutes=minutes,
        setup_minutes=None if setup is None else setup / 60,
        plateau_fraction=None
        if failed or over
        else _plateau(facts, max_epochs, returns, epoch_gpu_hours, price_per_gpu_hour),
        failure_point=min(1.0, epochs / max_epochs) if failed and max_epochs and not over else None,
        retry=(_int(tags.get(tracking.ATTEMPT)) or 1) > 1,
        preempted=facts.status == "KILLED" and tags.get(tracking.CAPACITY) == "spot",
        declared_minutes=_float(tags.get(tracking.EPOCH_MINUTES)),
        declared_worst=_float(tags.get(tracking.EPOCH_MINUTES_WORST)),
        mfu=mfu if mfu is not None and mfu <= 1 else None,
        mfu_over_peak=mfu is not None and mfu > 1,
        steps_over_max=over,
        end=moment(facts.end_ms),
    )


def _epoch_minutes(facts: RunFacts, held: float, setup: float | None, epochs: int) -> float | None:
    if epochs == 0:
        return None
    train = _seconds(facts, tracking.TRAIN_SECONDS)
    if train is None:
        evaluation = _seconds(facts, tracking.EVAL_SECONDS) or 0.0
        train = max(0.0, held - (setup or 0.0) - evaluation)
    return train / epochs / 60


def _plateau(
    facts: RunFacts,
    max_epochs: int | None,
    returns: Returns,
    epoch_gpu_hours: float,
    price: float | None,
) -> float | None:
    if not facts.history or not max_epochs:
        return None
    tags = facts.tags
    mode: Mode = "max" if tags.get(tracking.MONITOR_MODE) == "max" else "min"
    threshold = threshold_for(
        returns if price is not None else returns.model_copy(update={"min_gain_per_cost": None}),
        _int(tags.get(tracking.PATIENCE)),
        _float(tags.get(tracking.MIN_DELTA)) or 0.0,
    )
    found = plateau(
        facts.history, mode, threshold, epoch_gpu_hours, epoch_gpu_hours * (price or 0.0)
    )
    return None if found is None else min(1.0, found / max_epochs)


def _mfu(facts: RunFacts, key: Key, minutes: float | None, epochs: int) -> float | None:
    """FLOPs trained ÷ (training seconds × peak × GPUs); ``None`` without FLOPs or a peak."""
    if not minutes or key.gpus is None or key.accelerator is None or key.precision is None:
        return None
    peak = load_peaks().peak(key.accelerator, key.precision)
    flops = _seconds(facts, tracking.TRAIN_FLOPS)
    if flops is None:
        per_epoch = _float(facts.tags.get(tracking.FLOPS_PER_EPOCH))
        flops = None if per_epoch is None else per_epoch * epochs
    if peak is None or not flops:
        return None
    return flops / (minutes * epochs * 60 * peak * key.gpus)


def _seconds(facts: RunFacts, key: str) -> float | None:
    """A non-negative number logged as a metric, else as a param."""
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
    return tracking.tag_count(text) or None
