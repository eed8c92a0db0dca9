"""What a search runs in each scenario: its stages of rungs, and when early stopping ends trials.

This maps a spec onto :mod:`gate.estimate.schedule` and says, in words, what was assumed.
"""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import Decimal

from gate.estimate.measured import Measured, minutes_for, plateau_note
from gate.estimate.returns import Threshold, curve_plateau, threshold_for
from gate.estimate.schedule import (
    STARTUP_TRIALS,
    RankPersistence,
    Rung,
    Stage,
    flat,
    halving,
    hyperband_brackets,
    no_pruning,
    optuna_brackets,
    rung_marks,
    simulation_shares,
    split,
)
from gate.estimate.settings import PricingPolicy, ScenarioName
from gate.spec.experiment import Experiment
from gate.spec.search import HALVING, LearningCurve, Scheduler, Strategy
from gate.words import every_epoch


def plan(
    spec: Experiment,
    scenario: ScenarioName,
    trials: int,
    top_epoch: int,
    persistence: RankPersistence | None = None,
    *,
    rungs_only: bool = False,
) -> tuple[Stage, ...]:
    """The stages the search runs, with trials counted over all seeds.

    ``persistence`` is how well trials keep their ranks in ASHA's expected case. With
    ``rungs_only`` an asynchronous expected case is laid out without simulating ASHA: its
    rungs (epochs, marks, relaunches) are the plan's, but their trial counts are not: good
    for where one trial goes (how far a per-trial cap lets it), never for what all cost.
    """
    search = spec.search
    if search.strategy not in HALVING:
        return flat(trials, top_epoch)
    scheduler = search.scheduler or Scheduler()
    top = min(scheduler.max_epochs or spec.workload.max_epochs, spec.workload.max_epochs)
    eta = Decimal(str(scheduler.reduction_factor))
    seeds = len(search.seeds)
    configurations = trials // seeds
    if search.strategy is Strategy.HYPERBAND:
        layout = hyperband_brackets if is_synchronous(spec, scheduler) else optuna_brackets
        brackets = layout(scheduler.min_epochs, top, eta, scheduler.brackets)
        sizes = [n for n, _ in brackets]
        counts = sizes if search.max_trials is None else split(configurations, sizes)
        pairs = [(n, marks) for n, (_, marks) in zip(counts, brackets, strict=True) if n]
    else:
        pairs = [(configurations, rung_marks(scheduler.min_epochs, top, eta))]
    brackets = [(n, _stop_at(marks, top_epoch)) for n, marks in pairs]
    shares = simulation_shares(brackets)  # the brackets share ASHA's one bound on simulation
    stages = [
        _bracket(spec, scenario, scheduler, n, marks, eta, persistence, steps, rungs_only)
        for (n, marks), steps in zip(brackets, shares, strict=True)
    ]
    return tuple(_times(stage, seeds) for stage in stages)


def _stop_at(marks: list[int], stop: int) -> list[int]:
    """Rungs as early stopping leaves them.

    The rung structure stays the scheduler's, but no trial trains past ``stop``, and a
    trial that stopped early is not promoted further.
    """
    clipped = []
    for mark in marks:
        clipped.append(min(mark, stop))
        if mark >= stop:
            break
    return clipped


def _bracket(
    spec: Experiment,
    scenario: ScenarioName,
    scheduler: Scheduler,
    configurations: int,
    marks: list[int],
    eta: Decimal,
    persistence: RankPersistence | None,
    steps: int,
    rungs_only: bool,
) -> Stage:
    n = Decimal(configurations)
    if is_synchronous(spec, scheduler):
        return halving(n, marks, eta, resume=scheduler.resume, exact=True, barrier=True)
    if scenario == "worst":
        return no_pruning(n, marks, resume=scheduler.resume)
    if rungs_only:  # NOTE: the same rungs as ASHA's simulated counts get, with floored ones
        return halving(n, marks, eta, resume=scheduler.resume, exact=True, barrier=False)
    return halving(
        n,
        marks,
        eta,
        resume=scheduler.resume,
        exact=False,
        barrier=False,
        persistence=persistence,
        steps=steps,
    )


def _times(stage: Stage, seeds: int) -> Stage:
    if seeds == 1:
        return stage
    rungs = tuple(Rung(r.trials * seeds, r.epochs, r.reached, r.launches) for r in stage.rungs)
    return replace(stage, rungs=rungs)


def is_synchronous(spec: Experiment, scheduler: Scheduler) -> bool:
    """ASHA is asynchronous; the others are synchronous unless the scheduler says otherwise."""
    if scheduler.synchronous is not None:
        return scheduler.synchronous
    return spec.search.strategy is not Strategy.ASHA


def describe_plan(
    spec: Experiment,
    scenario: ScenarioName,
    stages: tuple[Stage, ...],
    persistence: RankPersistence | None = None,
) -> list[str]:
    """Say how the search was counted: rung marks and survivors, or why there is no saving."""
    search = spec.search
    if search.strategy not in HALVING:
        return []
    scheduler = search.scheduler or Scheduler()
    synchronous = is_synchronous(spec, scheduler)
    mode = "synchronous" if synchronous else "asynchronous"
    carry = "resume from checkpoints" if scheduler.resume else "restart at each rung"
    head = f"{search.strategy.value} ({mode}, η={scheduler.reduction_factor:g}, trials {carry})"
    notes = [_setup_note(spec, synchronous, scheduler.resume)]
    if search.strategy is Strategy.HYPERBAND:
        notes.append(
            "brackets of Li et al. (2018)"
            if synchronous
            else "brackets as Optuna's HyperbandPruner lays them out: ⌊log_η(R/r)⌋ + 1 brackets, "
            "bracket b pruning at r·η^(b+i) epochs, trials shared by bracket budget"
        )
    if not synchronous and scenario == "worst":
        return [
            f"{head}: worst case assumes no saving — an arrival order exists in which every "
            "trial is promoted through every rung",
            *notes,
        ]
    parts = []
    for stage in stages:
        rungs = [f"{_count(r.trials)} to epoch {r.reached}" for r in stage.rungs]
        rungs[0] = rungs[0].replace(" to ", " trials to ", 1)
        average = any(r.trials != r.trials.to_integral_value() for r in stage.rungs)
        parts.append(f"rungs: {', '.join(rungs)}" + (" (on average)" if average else ""))
    if not synchronous:
        parts[-1] += "; expected: " + _asha_rule(persistence or RankPersistence())
    return [f"{head}: " + "; ".join(parts), *notes]


def _asha_rule(persistence: RankPersistence) -> str:
    sampler = (
        f"the sampler proposing trials {persistence.sampler_gain:g} SD better after its first "
        f"{STARTUP_TRIALS}"
        if persistence.sampler_gain
        else "trials sampled at random"
    )
    return (
        "the j-th trial to reach a rung goes on when it ranks in the top max(1, ⌊j/η⌋) of the "
        f"j so far (simulated), a trial's rank kept from rung to rung with correlation "
        f"{persistence.correlation:g} and {sampler} (policy estimation.rank_correlation, "
        "estimation.sampler_gain)"
    )


def _setup_note(spec: Experiment, synchronous: bool, resume: bool) -> str:
    setup = spec.workload.setup_minutes
    if synchronous or not resume:
        return f"setup_minutes ({setup:g} min) charged at every rung a trial runs (each relaunches)"
    return f"setup_minutes ({setup:g} min) charged once per trial (promoted trials continue)"


def _count(value: Decimal) -> str:
    return f"{value:,.0f}" if value == value.to_integral_value() else f"{value:,.1f}"


def expected_stop(
    spec: Experiment, policy: PricingPolicy, measured: Measured | None = None
) -> tuple[int, str | None]:
    """The epoch at which early stopping is expected to end a trial, and why.

    The plateau comes from the spec's ``expected_plateau_epoch``, else from a learning
    curve (spec, then policy): the first epoch after which the next patience window no
    longer pays the policy's accepted return (:mod:`gate.estimate.returns`: ``min_delta``
    and ε per GPU-hour), else from the policy's plateau_fraction. A measured plateau
    (``measured``, from calibration) overrules all of these, and says what it replaced.
    Early stopping then waits ``patience`` more epochs.
    """
    max_epochs = spec.workload.max_epochs
    early = spec.stopping.early_stopping
    if early is None:
        return max_epochs, f"every trial runs {every_epoch(max_epochs)} (nothing stops early)"
    curve = early.learning_curve or policy.estimation.learning_curve
    measured_epoch = measured.plateau_epoch(max_epochs) if measured is not None else None
    if measured is not None and measured.plateau is not None and measured_epoch is not None:
        plateau = measured_epoch
        source = plateau_note(measured.plateau, early.expected_plateau_epoch)
    elif early.expected_plateau_epoch is not None:
        plateau, source = early.expected_plateau_epoch, "the spec's expected_plateau_epoch"
    elif curve is not None:
        threshold = threshold_for(policy.returns, early.patience, early.min_delta)
        plateau, source = _curve_plateau(spec, curve, threshold, measured)
    else:
        fraction = policy.estimation.plateau_fraction
        plateau = math.ceil(fraction * max_epochs)
        source = f"the policy's plateau_fraction {fraction:g} × {max_epochs}"
    stop = min(max_epochs, plateau + early.patience)
    if stop >= max_epochs:
        return stop, (
            f"{early.monitor} plateaus at epoch {plateau} ({source}); early stopping with "
            f"patience {early.patience} would end trials after epoch {plateau + early.patience}, "
            f"so every trial runs {every_epoch(max_epochs)}"
        )
    return stop, (
        f"{early.monitor} plateaus at epoch {plateau} ({source}); early stopping with "
        f"patience {early.patience} ends trials at epoch {stop} instead of {max_epochs}"
    )


def _curve_plateau(
    spec: Experiment, curve: LearningCurve, threshold: Threshold, measured: Measured | None
) -> tuple[int, str]:
    """Where a learning curve's next window stops paying (min_delta, ε per GPU-hour)."""
    max_epochs = spec.workload.max_epochs
    described = (
        f"a learning curve gaining {curve.total_gain:g} "
        f"with half-life {curve.half_life_epochs:g} epochs"
    )
    if threshold.per_gpu_hour is None and threshold.min_delta <= 0:
        return max_epochs, f"{described}; min_delta 0 never plateaus"
    resources = spec.resources
    epoch_gpu_hours = float(
        minutes_for(spec, "expected", measured) / 60 * resources.gpus_per_trial
    ) * float(resources.gpu_share)
    plateau = curve_plateau(
        curve.total_gain, curve.half_life_epochs, threshold, max_epochs, epoch_gpu_hours
    )
    if plateau == 0:
        return 0, f"{described}, whose first window already gains less than it must"
    wanted = f"more than min_delta {threshold.min_delta:g} per {threshold.window} epochs"
    if threshold.per_gpu_hour is not None:
        wanted += f" and {threshold.per_gpu_hour:g} per GPU-hour"
    return plateau, f"{described}, a window of which must gain {wanted}"
