"""Worst and expected cost of an experiment, each with the assumptions it used (pure).

Trial time = setup + epochs × epoch time × (1 + eval overhead), capped by the spec's stop
conditions; GPU-hours = trials × GPUs × trial time; wall-clock = waves × trial time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from gate.accounting import gpu_cost
from gate.money import format_amount, to_decimal
from gate.policy import Policy
from gate.prices import Quote
from gate.spec import Experiment, Strategy
from gate.trials import continuous_in_grid, count_trials

ScenarioName = Literal["worst", "expected"]


@dataclass(frozen=True, slots=True)
class Drivers:
    """The four factors whose product is the cost, kept for explaining diffs."""

    trials: int
    gpus_per_trial: int
    hours_per_trial: Decimal
    price_per_gpu_hour: Decimal


@dataclass(frozen=True, slots=True)
class Scenario:
    """One priced outcome of the experiment under stated assumptions."""

    name: ScenarioName
    trials: int
    epochs_per_trial: int
    hours_per_trial: Decimal
    gpu_hours: Decimal
    cost: Decimal
    cost_per_trial: Decimal
    concurrency: int
    waves: int
    wall_clock_hours: Decimal
    drivers: Drivers
    assumptions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Estimate:
    """Both scenarios, the price they used and the search strategy that set the trials."""

    worst: Scenario
    expected: Scenario
    quote: Quote
    strategy: Strategy

    def scenario(self, name: ScenarioName) -> Scenario:
        """The scenario a policy enforces (``worst`` unless it says otherwise)."""
        return self.worst if name == "worst" else self.expected


def estimate(spec: Experiment, policy: Policy, quote: Quote) -> Estimate:
    """Price ``spec`` under ``policy`` at ``quote``, as a worst and an expected case."""
    trials = count_trials(spec.search)
    shared = _shared_assumptions(spec, trials)
    max_epochs = spec.workload.max_epochs
    worst_why = f"every trial runs all {max_epochs} epochs (nothing stops early)"
    worst = _scenario(spec, policy, quote, "worst", trials, max_epochs, (*shared, worst_why))
    epochs, why = _expected_epochs(spec, policy)
    expected = _scenario(spec, policy, quote, "expected", trials, epochs, (*shared, why))
    return Estimate(worst, expected, quote, spec.search.strategy)


def _scenario(
    spec: Experiment,
    policy: Policy,
    quote: Quote,
    name: ScenarioName,
    trials: int,
    epochs: int,
    assumptions: tuple[str, ...],
) -> Scenario:
    gpus = spec.resources.gpus_per_trial
    hours, caps = _trial_hours(spec, quote, epochs)
    gpu_hours = trials * gpus * hours
    concurrency, limit_note = _concurrency(spec, policy, trials)
    waves = -(-trials // concurrency)
    notes = (*assumptions, *caps, *limit_note)
    return Scenario(
        name=name,
        trials=trials,
        epochs_per_trial=epochs,
        hours_per_trial=hours,
        gpu_hours=gpu_hours,
        cost=gpu_cost(gpu_hours, quote.per_gpu_hour),
        cost_per_trial=gpu_cost(gpus * hours, quote.per_gpu_hour),
        concurrency=concurrency,
        waves=waves,
        wall_clock_hours=waves * hours,
        drivers=Drivers(trials, gpus, hours, quote.per_gpu_hour),
        assumptions=notes,
    )


def _trial_hours(spec: Experiment, quote: Quote, epochs: int) -> tuple[Decimal, list[str]]:
    work = spec.workload
    minutes = to_decimal(work.setup_minutes) + epochs * work.epoch_minutes_exact * (
        1 + to_decimal(work.eval_overhead)
    )
    hours = _round_duration(minutes / 60)
    caps: list[str] = []
    stop = spec.stopping
    if stop.max_trial_hours is not None and hours > to_decimal(stop.max_trial_hours):
        hours = to_decimal(stop.max_trial_hours)
        caps.append(f"trials stop at max_trial_hours {format_amount(hours)} h")
    rate = spec.resources.gpus_per_trial * quote.per_gpu_hour
    if stop.max_trial_cost is not None and rate > 0 and hours * rate > stop.max_trial_cost:
        hours = _round_duration(stop.max_trial_cost / rate)
        caps.append(f"trials stop at max_trial_cost {format_amount(stop.max_trial_cost)}")
    return hours, caps


def _round_duration(hours: Decimal) -> Decimal:
    # NOTE: 7 min × 60 / 60 must be exactly 7 h, or a trial at a limit would "exceed" it by
    # a 28th-digit rounding error; a nanohour is far below anything a scheduler measures.
    return hours.quantize(_NANOHOUR) if hours.adjusted() < 18 else hours


_NANOHOUR = Decimal("1e-9")


def _expected_epochs(spec: Experiment, policy: Policy) -> tuple[int, str]:
    max_epochs = spec.workload.max_epochs
    early = spec.stopping.early_stopping
    if early is None:
        return max_epochs, f"no early stopping: every trial runs all {max_epochs} epochs"
    if early.expected_plateau_epoch is not None:
        plateau, source = early.expected_plateau_epoch, "the spec's expected_plateau_epoch"
    else:
        fraction = policy.estimation.plateau_fraction
        plateau = math.ceil(fraction * max_epochs)
        source = f"the policy's plateau_fraction {fraction:g} × {max_epochs}"
    stop = min(max_epochs, plateau + early.patience)
    return stop, (
        f"{early.monitor} plateaus at epoch {plateau} ({source}); early stopping with "
        f"patience {early.patience} ends trials at epoch {stop}"
    )


def _concurrency(spec: Experiment, policy: Policy, trials: int) -> tuple[int, list[str]]:
    wanted = min(spec.search.max_concurrent_trials, trials)
    gpus = spec.resources.gpus_per_trial
    limit = policy.limits.max_concurrent_gpus
    if limit is not None and wanted * gpus > limit:
        allowed = max(1, limit // gpus)
        return allowed, [f"team limit of {limit} concurrent GPUs runs {allowed} trials at once"]
    return wanted, []


def _shared_assumptions(spec: Experiment, trials: int) -> tuple[str, ...]:
    search = spec.search
    notes = [f"{trials:,} trials ({_trial_origin(spec)})"]
    notes.extend(
        f"continuous parameter {name!r} counted as one grid value (a grid cannot enumerate it)"
        for name in continuous_in_grid(search)
    )
    if search.strategy in (Strategy.SUCCESSIVE_HALVING, Strategy.HYPERBAND, Strategy.ASHA):
        notes.append(
            f"{search.strategy.value}: priced as if every trial reaches max_epochs "
            "(an upper bound; rung-by-rung pruning is not modelled yet)"
        )
    return tuple(notes)


def _trial_origin(spec: Experiment) -> str:
    search = spec.search
    seeds = len(search.seeds)
    if search.strategy is Strategy.GRID:
        counts = " × ".join(
            str(len(p.values)) if p.values is not None else "1" for p in search.parameters.values()
        )
        return f"grid {counts or '1'} × {seeds} seeds"
    return f"{search.strategy.value} max_trials {search.max_trials} × {seeds} seeds"
