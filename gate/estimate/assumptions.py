"""The words behind each estimate: what was counted, assumed and charged, per scenario."""

from __future__ import annotations

from decimal import Decimal

from gate.estimate.measured import Measured, declared_minutes, epoch_note
from gate.estimate.reliability import MAX_FACTOR
from gate.estimate.settings import ClusterShape, PricingPolicy, ScenarioName
from gate.money import format_amount, to_decimal
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


def preemption_note(
    spec: Experiment, policy: PricingPolicy, gpu_hours: Decimal, clamped: bool = False
) -> str:
    """How often spot runs are preempted, what saves work, and what is recomputed.

    ``clamped``: a run's expected time under preemptions passed the ceiling of
    :data:`gate.estimate.reliability.MAX_FACTOR` times its length, so the figure is a floor.
    """
    every = spec.resources.checkpoint_every_minutes
    saved = (
        f"checkpoints every {every:g} min"
        if every
        else "no checkpoints (a preemption restarts the run)"
    )
    rate = f"{policy.spot.preemptions_per_hour:g} preemptions per hour"
    if "preemptions_per_hour" not in policy.spot.model_fields_set:
        rate += " (the policy default spot.preemptions_per_hour, no measurement)"
    note = (
        f"spot: {rate}, {saved}: "
        f"{'at least ' if clamped else ''}{format_amount(gpu_hours, 1)} GPU-h recomputed"
    )
    if clamped:
        note += (
            f" (clamped: a run is priced at no more than {MAX_FACTOR:,.0f} times its length "
            "under preemptions; its true expected time is longer, and such a run may never "
            "finish)"
        )
    return note


def stop_line(
    spec: Experiment, top_epoch: int, stop_note: str | None, cap: str | None, pruned: bool
) -> str:
    """What ends the scenario's trials, in words.

    ``cap`` is the per-trial cap (``max_trial_hours``, ``max_trial_cost``) that stops even
    the furthest trial, if one does, and ``pruned`` says a halving search's rungs stop
    trials early: then "every trial runs all its epochs" would be false.
    """
    plain = f"every trial runs {every_epoch(top_epoch)}"
    rungs = f"the {spec.search.strategy.value.replace('_', ' ')} rungs" if pruned else None
    stoppers = [name for name in (rungs, cap) if name]
    if not stoppers:
        return stop_note or f"{plain} (nothing stops early)"
    verb = "stops" if stoppers == [cap] else "stop"  # the rungs, or two of them
    instead = f"trials run until {' or '.join(stoppers)} {verb} them" + (
        f", before {every_epoch(top_epoch)}"
        if cap
        else f"; only those promoted to the top rung run {every_epoch(top_epoch)}"
    )
    if stop_note is None or stop_note == f"{plain} (nothing stops early)":
        return f"no early stopping: {instead}"
    if stop_note.endswith(f"so {plain}"):  # early stopping would come after the last epoch
        return f"{stop_note.removesuffix(plain)}early stopping stops none: {instead}"
    return stop_note


def concurrency(spec: Experiment, policy: PricingPolicy, trials: int) -> tuple[int, list[str]]:
    """Trials at once, and what set them when the spec did not: its default, the team limit."""
    wanted = min(spec.search.max_concurrent_trials, trials)
    notes = []
    if trials > 1 and "max_concurrent_trials" not in spec.search.model_fields_set:
        notes.append(
            "one trial at a time: search.max_concurrent_trials is not set (set it to run "
            "trials side by side)"
        )
    gpus = spec.resources.gpus_per_trial
    limit = policy.limits.max_concurrent_gpus
    if limit is not None and wanted * gpus > limit:
        wanted = max(1, limit // gpus)
        notes.append(f"team limit of {limit} concurrent GPUs runs {wanted} trials at once")
    fits = _cluster_trials(policy.cluster, gpus)
    if fits is not None and wanted > fits:
        # NOTE: with no team limit, 32 trials × 8 GPUs ran in one wave on a 128-GPU cluster
        # and passed a deadline that two waves miss
        wanted = fits
        cluster = policy.cluster
        notes.append(
            f"the cluster's {cluster.nodes} nodes × {cluster.gpus_per_node} GPUs "
            f"(policy cluster:) run {fits} trials of {gpus} GPUs at once"
        )
    return wanted, notes


def _cluster_trials(cluster: ClusterShape, gpus: int) -> int | None:
    """Trials of ``gpus`` GPUs the whole cluster holds at once; ``None`` where not known."""
    if cluster.nodes is None or cluster.gpus_per_node is None:
        return None
    if cluster.multi_node or gpus > cluster.gpus_per_node:
        # NOTE: a trial too big for a node without multi_node is BG401's to refuse
        return max(1, cluster.nodes * cluster.gpus_per_node // gpus)
    return cluster.nodes * (cluster.gpus_per_node // gpus)


def queue_note(policy: PricingPolicy, waves: int, retry_runs: Decimal) -> list[str]:
    """The policy's queue wait in the wall-clock, said: it alone may pass a deadline.

    Retries stretch the whole wall-clock by their share of the work, queue wait included
    (a retried attempt waits again, in proportion).
    """
    hours = policy.estimation.queue_wait_hours
    if not hours or not waves:
        return []
    added = waves * to_decimal(hours) * (1 + retry_runs)
    note = (
        f"queue wait {hours:g} h per wave (estimation.queue_wait_hours): "
        f"+{format_amount(added, 1)} h of the wall-clock"
    )
    if retry_runs:
        note += (
            f" ({counted(waves, 'wave')} × {hours:g} h × {format_amount(1 + retry_runs, 3)}: "
            "retries stretch the whole wall-clock, queue wait included)"
        )
    return [note]


def cost_notes(
    spec: Experiment,
    policy: PricingPolicy,
    name: ScenarioName,
    retry_runs: Decimal,
    waves: int,
    recompute: tuple[Decimal, bool],
    measured_failures: bool = False,
) -> list[str]:
    """What the scenario assumes of failures, retries, queues and preemptions.

    ``recompute``: the GPU-hours recomputed after preemptions, and whether a run's
    preemption factor was clamped at its ceiling.
    """
    notes = [
        *reliability_notes(policy, retry_runs, name, measured_failures),
        *default_notes(policy),
        *queue_note(policy, waves, retry_runs),
    ]
    if recompute[0]:
        notes.append(preemption_note(spec, policy, *recompute))
    return notes
