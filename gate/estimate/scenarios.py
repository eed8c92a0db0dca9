"""Worst and expected cost of an experiment, each with the assumptions it used (pure).

A run of one trial in one rung takes setup + epochs × epoch time × (1 + eval overhead),
capped by the spec's stop conditions, stretched by spot preemptions. GPU-hours are the
sum over rungs of trials × GPUs × run time, plus expected retries; wall-clock is waves of
concurrent trials (rung by rung where the search waits at rung barriers). The worst case
runs every trial as far as the search allows; the expected case applies early stopping,
the middle of uncertain inputs and the expected pruning of asynchronous searches.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import NamedTuple, TypeVar

from gate.estimate.assumptions import concurrency, cost_notes, shared_notes, stop_line
from gate.estimate.caps import Cut, TrialCap, TrialPath, trial_cap
from gate.estimate.flops import with_prior
from gate.estimate.measured import Measured, measured_policy, minutes_for
from gate.estimate.model import Drivers, Estimate, Saving, Scenario, SpotComparison
from gate.estimate.plans import describe_plan, expected_stop, plan
from gate.estimate.prices import Quote
from gate.estimate.reliability import expected_retry_runs, preemption_factor
from gate.estimate.schedule import RankPersistence, Stage, flat
from gate.estimate.settings import PricingPolicy, ScenarioName
from gate.estimate.timeline import Clock, furthest_path, round_hours, walk_stage
from gate.estimate.trials import count_trials
from gate.money import to_decimal
from gate.spec.experiment import Experiment
from gate.spec.search import HALVING
from gate.spec.trial import Capacity, Range

T = TypeVar("T")

RUNG_STEPS = 80
"""One rung of one scenario priced, in ASHA simulation steps of the same CPU time (a fix's
re-estimate prices spot's on-demand pair too): what makes Hyperband at η = 1.1 over 10,000
epochs, 97 brackets of up to 97 rungs, count as the costly estimate it is."""


def estimate(
    spec: Experiment,
    policy: PricingPolicy,
    quote: Quote,
    on_demand: Quote | None = None,
    measured: Measured | None = None,
    *,
    savings: bool = True,
    notes: bool = True,
    lazy: bool = False,
) -> Estimate:
    """Price ``spec`` under ``policy`` at ``quote``, as a worst and an expected case.

    ``on_demand`` is the on-demand price of the same accelerator, used to say whether spot
    capacity really saves money. ``measured`` holds calibrated figures that overrule the
    spec's epoch time and plateau and the policy's failure rate, each said in the notes.
    Without ``savings`` what stop conditions and pruning save is not priced (each is a
    scenario more, a simulation more for ASHA), and without ``notes`` the scenarios state no
    assumptions: a candidate fix is judged by the rules and the enforced scenario, which
    read neither. ``lazy`` prices the expected case and the spot comparison when first read
    (a fix's probe reads the worst case, most often); it takes neither savings nor notes.
    """
    measured = with_prior(spec, measured, policy.estimation.mfu)
    policy = measured_policy(policy, measured)
    trials = count_trials(spec.search, spec.workload.max_epochs)
    inputs = _Pricing(spec, policy, quote, measured, trials, notes)
    worst = _scenario(inputs, "worst", spec.workload.max_epochs)
    if lazy:
        assert not (savings or notes), "a lazy estimate prices no savings and says no notes"
        stopped = _once(lambda: expected_stop(spec, policy, measured))
        return Estimate(
            worst,
            lambda: _scenario(inputs, "expected", *stopped()),
            quote,
            spec.search.strategy,
            spot=lambda: _spot(inputs, on_demand, stopped()[0]),
            epoch_minutes_range=_range(spec),
            measured=measured,
            expected_cut=lambda: _expected_cut(inputs, stopped()[0], worst),
            judged_on=policy.limits.scenario,
            on_demand=on_demand,
        )
    stop, stop_note = expected_stop(spec, policy, measured)
    expected = _scenario(inputs, "expected", stop, stop_note)
    spot = _spot(inputs, on_demand, stop)
    if spot is not None and notes and (worst.unfinished or expected.unfinished):
        note = "spot is compared with on-demand for the same training work: per-trial caps left out"
        expected = replace(expected, assumptions=(*expected.assumptions, note))
    return Estimate(
        worst=worst,
        expected=expected,
        quote=quote,
        strategy=spec.search.strategy,
        savings=_savings(inputs, stop, worst, expected) if savings else (),
        spot=spot,
        epoch_minutes_range=_range(spec),
        measured=measured,
        judged_on=policy.limits.scenario,
        on_demand=on_demand,
    )


def _once(make: Callable[[], T]) -> Callable[[], T]:
    """``make``'s answer, worked out at the first call (functools.cache's wrapper costs more)."""
    found: list[T] = []

    def get() -> T:
        if not found:
            found.append(make())
        return found[0]

    return get


@dataclass(frozen=True, slots=True)
class _Pricing:
    """What every scenario of one estimate is priced from."""

    spec: Experiment
    policy: PricingPolicy
    quote: Quote
    measured: Measured | None
    trials: int
    notes: bool = True
    """Whether the scenarios state their assumptions (a fix's re-estimate needs none)."""
    plans: dict[tuple[ScenarioName, int], tuple[Stage, ...]] = field(default_factory=dict)
    """The plans priced so far: spot's comparison and the savings price the same plan again."""

    @property
    def persistence(self) -> RankPersistence:
        """How ASHA's trials keep their ranks, as the policy says."""
        settings = self.policy.estimation
        return RankPersistence(settings.rank_correlation, settings.sampler_gain)

    def plan(self, name: ScenarioName, top_epoch: int) -> tuple[Stage, ...]:
        """The stages of scenario ``name`` with trials running to ``top_epoch``, planned once."""
        key = (name, top_epoch)
        if key not in self.plans:
            self.plans[key] = plan(self.spec, name, self.trials, top_epoch, self.persistence)
        return self.plans[key]


Walked = tuple[TrialPath, Decimal, list[tuple[Decimal, Decimal, Decimal]]]
"""A stage's trial up its rungs: its path, what it would hold uncapped, each rung's runs."""


class _Usage(NamedTuple):
    trial_hours: Decimal
    recompute_hours: Decimal
    longest_trial: Decimal
    top_epoch: Decimal
    waves: int
    wall_clock: Decimal
    cap_notes: tuple[str, ...]
    unfinished: bool = False
    first_result: Decimal = Decimal(0)
    cut: Cut | None = None
    clamped: bool = False


def _scenario(
    inputs: _Pricing,
    name: ScenarioName,
    top_epoch: int,
    stop_note: str | None = None,
    *,
    prune: bool = True,
    preempt: bool = True,
    capped: bool = True,
) -> Scenario:
    """One scenario: trials run to ``top_epoch``, pruned, preempted and capped as asked."""
    spec, policy, quote, trials = inputs.spec, inputs.policy, inputs.quote, inputs.trials
    stages = inputs.plan(name, top_epoch) if prune else flat(trials, top_epoch)
    at_once, limit_notes = concurrency(spec, policy, trials)
    usage = _usage(inputs, name, stages, at_once, preempt=preempt, capped=capped)
    units = spec.resources.gpus_per_trial * spec.resources.gpu_share
    retry_runs = _retry(policy)
    trial_hours = usage.trial_hours * (1 + retry_runs)
    exact_gpu_hours = units * trial_hours
    other = policy.spot.extra_ops_per_trial * trials if _is_spot(spec) else Decimal(0)
    notes = _notes(inputs, name, stages, (top_epoch, stop_note), usage, limit_notes, prune=prune)
    return Scenario(
        name=name,
        trials=trials,
        epochs_per_trial=int(usage.top_epoch),
        epochs_trained=usage.top_epoch,
        unfinished=usage.unfinished,
        hours_per_trial=usage.longest_trial,
        gpu_hours=round_hours(exact_gpu_hours),
        cost=round_hours(exact_gpu_hours * quote.per_gpu_hour) + other,
        cost_per_trial=round_hours(units * usage.longest_trial * quote.per_gpu_hour),
        concurrency=at_once,
        waves=usage.waves,
        wall_clock_hours=usage.wall_clock * (1 + retry_runs),
        drivers=Drivers(
            trials=trials,
            gpus_per_trial=spec.resources.gpus_per_trial,
            hours_per_trial=trial_hours / trials,
            price_per_gpu_hour=quote.per_gpu_hour,
            gpu_share=spec.resources.gpu_share,
        ),
        assumptions=tuple(notes),
        retry_gpu_hours=units * usage.trial_hours * retry_runs,
        recompute_gpu_hours=units * usage.recompute_hours,
        other_cost=other,
        first_result_hours=usage.first_result,
        cut=usage.cut,
        work_steps=sum(stage.simulated + RUNG_STEPS * len(stage.rungs) for stage in stages),
    )


def _notes(
    inputs: _Pricing,
    name: ScenarioName,
    stages: tuple[Stage, ...],
    stop: tuple[int, str | None],
    usage: _Usage,
    limit_notes: list[str],
    *,
    prune: bool,
) -> list[str]:
    """What one scenario assumes, in words: ``stop`` is its top epoch and what ends it there."""
    if not inputs.notes:
        return []
    spec, policy, measured = inputs.spec, inputs.policy, inputs.measured
    units = spec.resources.gpus_per_trial * spec.resources.gpu_share
    measured_failures = measured is not None and measured.failure_rate is not None
    recompute = (usage.recompute_hours * units, usage.clamped)
    retry_runs = _retry(policy)
    cap = usage.cut.field if usage.unfinished and usage.cut is not None else None
    rungs = prune and spec.search.strategy in HALVING and any(len(s.rungs) > 1 for s in stages)
    return [
        *shared_notes(spec, inputs.trials, name, measured),
        *(describe_plan(spec, name, stages, inputs.persistence) if prune else []),
        stop_line(spec, *stop, cap, rungs),
        *usage.cap_notes,
        *limit_notes,
        *cost_notes(spec, policy, name, retry_runs, usage.waves, recompute, measured_failures),
    ]


def _usage(
    inputs: _Pricing,
    name: ScenarioName,
    stages: tuple[Stage, ...],
    concurrency: int,
    *,
    preempt: bool,
    capped: bool,
) -> _Usage:
    """Hours held, recomputed and waited over the plan's stages, rung by rung."""
    cap, walked = _walk(inputs, name, stages, preempt=preempt, capped=capped)
    queue = to_decimal(inputs.policy.estimation.queue_wait_hours)
    clock = Clock()
    for stage, (path, _, runs) in zip(stages, walked, strict=True):
        clock.add(stage, runs, path.held, concurrency, queue)
    paths = [path for path, _, _ in walked]
    furthest, cut, notes = _furthest(stages, walked, cap, inputs.notes)
    return _Usage(
        clock.trial_hours,
        clock.recompute,
        max([Decimal(0), *(path.held for path in paths)]),
        furthest.trained,
        clock.waves,
        clock.wall,
        notes,
        furthest.cut,
        clock.first or Decimal(0),
        cut,
        clock.clamped,
    )


def _walk(
    inputs: _Pricing, name: ScenarioName, stages: tuple[Stage, ...], *, preempt: bool, capped: bool
) -> tuple[TrialCap | None, list[Walked]]:
    """The per-trial cap, and one trial of each stage taken up its rungs under it."""
    spec, policy, quote = inputs.spec, inputs.policy, inputs.quote
    work = spec.workload
    setup = to_decimal(work.setup_minutes) / 60
    per_epoch = minutes_for(spec, name, inputs.measured) * (1 + to_decimal(work.eval_overhead)) / 60
    units = spec.resources.gpus_per_trial * spec.resources.gpu_share
    cap = trial_cap(spec, units * quote.per_gpu_hour) if capped else None

    factors: dict[Decimal, Decimal] = {}  # a plan of many brackets repeats a few run lengths

    def held(run: Decimal) -> Decimal:
        if not spot:
            return run
        factor = factors.get(run)
        if factor is None:
            factor = factors[run] = _preemption(spec, policy, run, setup)
        return run * factor

    spot = preempt and _is_spot(spec)  # NOTE: on-demand holds what it runs: no factor of 1
    return cap, [walk_stage(stage, setup, per_epoch, cap, held) for stage in stages]


def _expected_cut(inputs: _Pricing, top_epoch: int, worst: Scenario) -> Cut | None:
    """Where a per-trial cap cuts the expected case's furthest trial, if it does.

    The very cut the expected scenario finds, from its rungs alone (how far one trial gets
    does not depend on how many trials ASHA promotes). Without rungs, a worst-case trial the
    cap leaves whole says it at once: the expected one trains no more epochs, none longer.
    """
    spec = inputs.spec
    if spec.stopping.max_trial_hours is None and spec.stopping.max_trial_cost is None:
        return None  # NOTE: no cap, no cut
    if (
        worst.cut is None
        and not worst.unfinished
        and spec.search.strategy not in HALVING
        and top_epoch <= spec.workload.max_epochs
        and minutes_for(spec, "expected", inputs.measured)
        <= minutes_for(spec, "worst", inputs.measured)
    ):
        return None
    key: tuple[ScenarioName, int] = ("expected", top_epoch)
    stages = inputs.plans.get(key) or plan(
        inputs.spec, "expected", inputs.trials, top_epoch, inputs.persistence, rungs_only=True
    )
    cap, walked = _walk(inputs, "expected", stages, preempt=True, capped=True)
    return _furthest(stages, walked, cap, notes=False)[1]


def _furthest(
    stages: tuple[Stage, ...], walked: list[Walked], cap: TrialCap | None, notes: bool
) -> tuple[TrialPath, Cut | None, tuple[str, ...]]:
    """The trial that trains furthest over the walked stages, where the cap cut it, and why."""
    paths = [path for path, _, _ in walked]
    uncut = [held for _, held, _ in walked]  # what each stage's furthest trial held uncapped
    return furthest_path(stages, paths, uncut, cap, notes)


def _preemption(spec: Experiment, policy: PricingPolicy, run: Decimal, setup: Decimal) -> Decimal:
    if not _is_spot(spec):
        return Decimal(1)
    every = spec.resources.checkpoint_every_minutes
    interval = to_decimal(every) / 60 if every is not None else None
    return preemption_factor(run, policy.spot.preemptions_per_hour, interval, setup)


def _is_spot(spec: Experiment) -> bool:
    return spec.resources.capacity is Capacity.SPOT


def _savings(
    inputs: _Pricing, stop: int, worst: Scenario, expected: Scenario
) -> tuple[Saving, ...]:
    found = []
    spec = inputs.spec
    max_epochs = spec.workload.max_epochs
    inputs = replace(inputs, notes=False)  # NOTE: a baseline's figures, never its words
    if stop < max_epochs:
        baseline = _scenario(inputs, "expected", max_epochs)
        found.append(_saving("early stopping", expected, baseline))
    if spec.search.strategy.value in ("successive_halving", "hyperband", "asha"):
        for mine, top in ((worst, max_epochs), (expected, stop)):
            baseline = _scenario(inputs, mine.name, top, prune=False)
            found.append(_saving(f"{spec.search.strategy.value} pruning", mine, baseline))
    return tuple(s for s in found if s.gpu_hours > 0)


def _saving(what: str, mine: Scenario, baseline: Scenario) -> Saving:
    return Saving(what, mine.name, baseline.gpu_hours - mine.gpu_hours, baseline.cost - mine.cost)


def _spot(inputs: _Pricing, on_demand: Quote | None, stop: int) -> SpotComparison | None:
    if not _is_spot(inputs.spec) or on_demand is None:
        return None
    # The same training work on both sides: per-trial caps would stop spot and on-demand
    # trials at different epochs (a cost cap buys more hours at the spot price).
    inputs = replace(inputs, notes=False)  # NOTE: the comparison's figures, never its words
    at_on_demand = replace(inputs, quote=on_demand)
    plain = _scenario(at_on_demand, "expected", stop, preempt=False, capped=False)
    spot = _scenario(inputs, "expected", stop, capped=False)
    recompute = spot.recompute_gpu_hours * (1 + _retry(inputs.policy)) * inputs.quote.per_gpu_hour
    # NOTE: near a zero price, rounding three products can leave -3e-26: never below zero
    spot_gpu = max(spot.cost - spot.other_cost - recompute, Decimal(0))
    # NOTE: spot's extra ops left out on-demand's side (they cancelled out; BG306 missed them)
    return SpotComparison(plain.cost - plain.other_cost, spot_gpu, recompute, spot.other_cost)


def _retry(policy: PricingPolicy) -> Decimal:
    r = policy.reliability
    return _retry_runs(r.failure_rate, r.max_retries, r.failure_point)


_retry_runs = functools.lru_cache(maxsize=64)(expected_retry_runs)
"""The policy's retries, computed once per policy (every scenario reads them)."""


def _range(spec: Experiment) -> tuple[Decimal, Decimal] | None:
    value = spec.workload.epoch_minutes
    if isinstance(value, Range):
        return to_decimal(value.low), to_decimal(value.high)
    return None
