"""Candidate fixes for limit findings: which spec keys to change, and to what (pure).

Each limit rule has knobs that move its number: fewer trials, fewer epochs, more trials at
once, a per-trial cap, an asynchronous pruner. A knob is searched for the value nearest the
current one that the rule itself accepts, re-estimating the edited spec through ``probe``
(a first guess proportional to the overshoot, then bisection, at most :data:`MAX_PROBES`
re-estimates per knob). These are only candidates: :mod:`gate.evaluation.fixing` keeps those
that a re-evaluation with every rule proves (the finding gone, no new error or approval).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gate.policy.findings import Edit
from gate.policy.rules import REGISTRY, cap_stops_every_trial
from gate.policy.rules.base import RuleContext
from gate.spec.experiment import Experiment
from gate.spec.search import Strategy

Probe = Callable[[tuple[Edit, ...]], RuleContext | None]
"""Apply edits to the spec and re-estimate it; ``None`` when the edited spec is invalid."""

MAX_PROBES = 10
"""Re-estimates one knob may spend before settling for the best value found."""
MAX_FIXES = 2
"""Candidates per finding: the first knobs that work (nearest the plan as written)."""

_COST_RULES = ("BG104", "BG111", "BG120")
_CAP_RULE = "BG307"
LIMIT_RULES = frozenset(
    {"BG101", "BG102", "BG103", "BG105", "BG110", "BG402", _CAP_RULE, *_COST_RULES}
)
"""Rules about a number over a limit or trigger, the findings fixes are proposed for."""


@dataclass(frozen=True, slots=True)
class Knob:
    """An integer spec setting to move: its current value, the way that helps, its edits."""

    current: int
    lower: bool
    edits: Callable[[int], tuple[Edit, ...]]
    bound: int = 1


def candidates(rule_id: str, ctx: RuleContext, probe: Probe) -> list[tuple[Edit, ...]]:
    """Up to MAX_FIXES edits, each of which makes ``rule_id`` stop firing on the spec."""
    if rule_id not in LIMIT_RULES:
        return []
    rule = REGISTRY[rule_id]

    def passes(edits: tuple[Edit, ...]) -> bool:
        edited = probe(edits)
        return edited is not None and not any(rule.check(edited))

    found = [edits for edits in _direct(rule_id, ctx) if passes(edits)]
    for knob in _knobs(rule_id, ctx):
        if len(found) >= MAX_FIXES:
            break
        value = _search(knob, _guess(knob, ctx, rule_id), passes)
        if value is not None:
            found.append(knob.edits(value))
    return found


def _direct(rule_id: str, ctx: RuleContext) -> Iterator[tuple[Edit, ...]]:
    """Fixes that need no search: the limit itself as the spec's setting."""
    limits, spec = ctx.policy.limits, ctx.spec
    if rule_id == "BG101" and limits.max_gpus_per_trial is not None:
        yield (Edit(("resources", "gpus_per_trial"), limits.max_gpus_per_trial),)
    if rule_id == "BG102" and limits.max_trial_hours is not None:
        yield (Edit(("stopping", "max_trial_hours"), limits.max_trial_hours),)
    if rule_id == "BG103" and limits.max_trial_cost is not None:
        yield (Edit(("stopping", "max_trial_cost"), _plain(limits.max_trial_cost)),)
    if rule_id == "BG105" and limits.max_concurrent_gpus is not None:
        fit = max(1, limits.max_concurrent_gpus // spec.resources.gpus_per_trial)
        yield (Edit(("search", "max_concurrent_trials"), fit),)
    cut = ctx.estimate.expected_cut
    needed = cap_stops_every_trial.needed_cap(ctx)
    if rule_id == _CAP_RULE and cut is not None and needed is not None:
        yield (Edit(("stopping", cut.field), _plain(needed)),)
    trigger = ctx.policy.approval.trials_over
    if rule_id == "BG110" and trigger is not None and spec.search.strategy is not Strategy.ASHA:
        per_seed = max(1, trigger // len(spec.search.seeds))
        yield (
            Edit(("search", "strategy"), Strategy.ASHA.value),
            Edit(("search", "max_trials"), per_seed),
        )


def _knobs(rule_id: str, ctx: RuleContext) -> Iterator[Knob]:
    spec = ctx.spec
    trials = _trials_knob(spec)
    if rule_id == "BG402":
        limit = ctx.policy.limits.max_concurrent_gpus
        most = ctx.enforced.trials
        if limit is not None:
            most = min(most, max(1, limit // spec.resources.gpus_per_trial))
        yield Knob(
            spec.search.max_concurrent_trials,
            False,
            lambda n: (Edit(("search", "max_concurrent_trials"), n),),
            bound=most,
        )
    if rule_id in ("BG402", "BG110", *_COST_RULES) and trials is not None:
        yield trials
    if rule_id in ("BG402", "BG102", "BG103", _CAP_RULE, *_COST_RULES):
        yield _epochs_knob(spec)


def _epochs_knob(spec: Experiment) -> Knob:
    """Fewer epochs; a scheduler's own ``max_epochs`` and ``min_epochs`` bound them."""
    scheduler = spec.search.scheduler

    def edits(n: int) -> tuple[Edit, ...]:
        top = (Edit(("workload", "max_epochs"), n),)
        if scheduler is not None and scheduler.max_epochs is not None and scheduler.max_epochs > n:
            return (*top, Edit(("search", "scheduler", "max_epochs"), n))
        return top

    bound = scheduler.min_epochs if scheduler is not None else 1
    return Knob(spec.workload.max_epochs, True, edits, bound=bound)


def _trials_knob(spec: Experiment) -> Knob | None:
    """Fewer configurations: ``max_trials``, or the longest value list of a grid."""
    search = spec.search
    if search.max_trials is not None:
        return Knob(search.max_trials, True, lambda n: (Edit(("search", "max_trials"), n),))
    if search.strategy is not Strategy.GRID:
        return None
    lists = {n: p.values for n, p in search.parameters.items() if p.values is not None}
    if not lists:
        return None
    name = max(lists, key=lambda n: len(lists[n] or ()))
    values = list(lists[name] or ())
    if len(values) < 2:
        return None
    return Knob(
        len(values),
        True,
        lambda n: (Edit(("search", "parameters", name, "values"), values[:n]),),
    )


def _search(knob: Knob, guess: int | None, passes: Callable[..., bool]) -> int | None:
    """The passing value nearest ``knob.current``, or ``None``; at most MAX_PROBES probes.

    Start at the proportional guess (else the bound); from a passing value gallop toward
    the current one, from a failing one fall back to the bound; then bisect the gap.
    """
    near, far = knob.current, knob.bound
    toward = 1 if knob.lower else -1

    def within(value: int) -> bool:
        return far <= value < near if knob.lower else near < value <= far

    if not within(far):
        return None
    start = guess if guess is not None and within(guess) else far
    probes = 1
    if passes(knob.edits(start)):
        good, bad, step = start, near, 1
        while probes < MAX_PROBES and within(good + toward * step):
            probes += 1
            if not passes(knob.edits(good + toward * step)):
                bad = good + toward * step
                break
            good, step = good + toward * step, step * 2
    else:
        if start == far or not passes(knob.edits(far)):
            return None
        good, bad = far, start
        probes += 1
    while abs(bad - good) > 1 and probes < MAX_PROBES:
        mid = (good + bad) // 2
        probes += 1
        good, bad = (mid, bad) if passes(knob.edits(mid)) else (good, mid)
    return good


def _guess(knob: Knob, ctx: RuleContext, rule_id: str) -> int | None:
    """The value that would just fit if the rule's number were proportional to the knob."""
    ratio = _overshoot(rule_id, ctx)
    if ratio is None or ratio <= 0:
        return None
    if knob.lower:
        return int(Decimal(knob.current) / ratio)
    return int(Decimal(knob.current) * ratio) + 1


def _overshoot(rule_id: str, ctx: RuleContext) -> Decimal | None:
    """How many times over its limit the rule's number is (``None`` when not a ratio)."""
    s, limits, approval = ctx.enforced, ctx.policy.limits, ctx.policy.approval
    cut = ctx.estimate.expected_cut
    if rule_id == _CAP_RULE:
        return cut.needed_hours / cut.hours if cut is not None and cut.hours > 0 else None
    pairs: dict[str, tuple[Decimal, Any]] = {
        "BG102": (s.hours_per_trial, limits.max_trial_hours),
        "BG103": (s.cost_per_trial, limits.max_trial_cost),
        "BG104": (s.cost, limits.max_experiment_cost),
        "BG110": (Decimal(s.trials), approval.trials_over),
        "BG111": (s.cost, approval.cost_over),
        "BG402": (s.wall_clock_hours, ctx.spec.deadline_hours),
    }
    value, limit = pairs.get(rule_id, (None, None))
    if value is None or limit is None or Decimal(str(limit)) <= 0:
        return None
    return value / Decimal(str(limit))


def _plain(amount: Decimal) -> int | float:
    """A money limit as a YAML number: ``300``, not ``Decimal('300.00')``."""
    return int(amount) if amount == int(amount) else float(amount)
