"""The words behind each estimate: what was counted, assumed and charged, per scenario."""

from __future__ import annotations

from decimal import Decimal

from gate.estimate.measured import Measured, declared_minutes, epoch_note
from gate.estimate.settings import PricingPolicy, ScenarioName
from gate.money import format_amount
from gate.spec.experiment import Experiment
from gate.spec.trial import Range
from gate.words import counted, every_epoch


def shared_notes(
    spec: Experiment, trials: int, name: ScenarioName, measured: Measured | None = None
) -> list[str]:
    """Trial count and origin, grid caveats, the epoch time used and its basis, MIG slices."""
    notes = [f"{counted(trials, 'trial')} ({_trial_origin(spec)})"]
    notes.extend(
        f"continuous parameter {p!r} counted as one grid value (a grid cannot enumerate it)"
        for p, param in spec.search.parameters.items()
        if spec.search.strategy.value == "grid" and param.is_continuous
    )
    if measured is not None:
        notes.extend(measured.notes)
        if measured.epoch is not None:
            declared = declared_minutes(spec, name)
            notes.append(epoch_note(measured.epoch, name, declared))
            return [*notes, *_mig(spec)]
    if isinstance(spec.workload.epoch_minutes, Range):
        r = spec.workload.epoch_minutes
        used = spec.workload.epoch_minutes_for(name)
        notes.append(
            f"epoch time {r.low:g}–{r.high:g} min; this case uses {format_amount(used)} min"
        )
    work = spec.workload
    if work.samples_per_second is not None and work.train_samples is not None:
        gpus = spec.resources.gpus_per_trial
        notes.append(
            f"epoch time {format_amount(work.epoch_minutes_for(name))} min = "
            f"{work.train_samples:,} train_samples ÷ {work.samples_per_second:g} "
            f"samples_per_second, the throughput of one trial on its {gpus} "
            f"GPU{'s' if gpus != 1 else ''} together"
        )
    return [*notes, *_mig(spec)]


def _mig(spec: Experiment) -> list[str]:
    profile = spec.resources.mig_profile
    if not profile:
        return []
    return [f"MIG slice {profile}: each unit is {profile[0]}/7 of a GPU"]


def _trial_origin(spec: Experiment) -> str:
    search = spec.search
    seeds = len(search.seeds)
    if search.strategy.value == "grid":
        counts = " × ".join(
            str(len(p.values)) if p.values is not None else "1" for p in search.parameters.values()
        )
        return f"grid {counts or '1'} × {counted(seeds, 'seed')}"
    if search.max_trials is None:
        return f"{search.strategy.value} brackets × {counted(seeds, 'seed')}"
    return f"{search.strategy.value} max_trials {search.max_trials} × {counted(seeds, 'seed')}"


def reliability_notes(
    policy: PricingPolicy, retry_runs: Decimal, name: ScenarioName, measured: bool = False
) -> list[str]:
    """The retry charge, and in the worst case the ceiling if every retry were used.

    ``measured``: the calibration's note already gives the failure rate, so this one does
    not say it twice.
    """
    r = policy.reliability
    if not r.failure_rate or not r.max_retries:
        return []
    who = "failed attempts stop" if measured else f"{r.failure_rate:.0%} of attempts fail"
    note = (
        f"{who} {r.failure_point:.0%} of the way through and are "
        f"retried up to {r.max_retries}×: +{format_amount(retry_runs * 100, 1)}% GPU time"
    )
    if name == "worst":
        note += f" (if every retry were used: +{r.max_retries * 100}%)"
    return [note]


def default_notes(policy: PricingPolicy) -> list[str]:
    """The policy defaults that shaped this estimate without being said elsewhere."""
    r = policy.reliability
    used = []
    if not r.failure_rate:
        used.append("no failures (reliability.failure_rate 0), so no retries")
    elif not r.max_retries:
        used.append("failed attempts are not retried (reliability.max_retries 0)")
    if not policy.estimation.queue_wait_hours:
        used.append("no queue wait (estimation.queue_wait_hours 0)")
    return [f"policy defaults: {'; '.join(used)}"] if used else []


def preemption_note(spec: Experiment, policy: PricingPolicy, gpu_hours: Decimal) -> str:
    """How often spot runs are preempted, what saves work, and what is recomputed."""
    every = spec.resources.checkpoint_every_minutes
    saved = (
        f"checkpoints every {every:g} min"
        if every
        else "no checkpoints (a preemption restarts the run)"
    )
    return (
        f"spot: {policy.spot.preemptions_per_hour:g} preemptions per hour, {saved}: "
        f"{format_amount(gpu_hours, 1)} GPU-h recomputed"
    )


def stop_line(spec: Experiment, top_epoch: int, stop_note: str | None, unfinished: bool) -> str:
    """What ends the scenario's trials, in words."""
    if unfinished and spec.stopping.early_stopping is None:
        return f"no early stopping: a per-trial cap ends trials before {every_epoch(top_epoch)}"
    return stop_note or f"every trial runs {every_epoch(top_epoch)} (nothing stops early)"


def concurrency(spec: Experiment, policy: PricingPolicy, trials: int) -> tuple[int, list[str]]:
    """Trials at once, and the team limit that lowers them, said."""
    wanted = min(spec.search.max_concurrent_trials, trials)
    gpus = spec.resources.gpus_per_trial
    limit = policy.limits.max_concurrent_gpus
    if limit is not None and wanted * gpus > limit:
        allowed = max(1, limit // gpus)
        return allowed, [f"team limit of {limit} concurrent GPUs runs {allowed} trials at once"]
    return wanted, []
