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
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from gate.policy.findings import Edit
from gate.policy.rules import REGISTRY, cap_stops_every_trial
from gate.policy.rules.base import RuleContext
from gate.spec.experiment import Experiment
from gate.spec.search import Strategy

Probe = Callable[[tuple[Edit, ...]], RuleContext | None]
"""Apply edits to the spec and re-estimate it; ``None`` when the edited spec is invalid."""

MAX_PROBES = 10
"""Re-estimates one knob may spend before settling for the best value found (beside the
crossings of :func:`_search`)."""
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

    def overshoot(edits: tuple[Edit, ...]) -> Decimal | None:
        edited = probe(edits)  # NOTE: probed already, by passes: the probe keeps each
        return _overshoot(rule_id, edited) if edited is not None else None

    found = [edits for edits in _direct(rule_id, ctx) if passes(edits)]
    for knob in _knobs(rule_id, ctx):
        if len(found) >= MAX_FIXES:
            break
        guess = _guess(knob, ctx, rule_id)
        value = _search(knob, guess, passes, _Line(knob, _overshoot(rule_id, ctx), overshoot))
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
    if rule_id == "BG110" and trigger is not None:
        per_seed = max(1, trigger // len(spec.search.seeds))
        if spec.search.strategy is not Strategy.ASHA:
            yield (
                Edit(("search", "strategy"), Strategy.ASHA.value),
                Edit(("search", "max_trials"), per_seed),
            )
        if _counts_max_trials(spec):  # NOTE: max_trials × seeds trials: the search's answer
            yield (Edit(("search", "max_trials"), per_seed),)


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
    if rule_id in ("BG402", *_COST_RULES) and trials is not None:
        yield trials
    if rule_id == "BG110" and trials is not None and not _counts_max_trials(spec):
        yield trials  # a grid's values: its count is their product
    if rule_id in ("BG402", "BG102", "BG103", _CAP_RULE, *_COST_RULES):
        yield _epochs_knob(spec)


def _counts_max_trials(spec: Experiment) -> bool:
    """Whether the search runs exactly ``max_trials`` × seeds trials (any but a grid)."""
    return spec.search.max_trials is not None and spec.search.strategy is not Strategy.GRID


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


def _search(
    knob: Knob, guess: int | None, passes: Callable[..., bool], line: _Line | None = None
) -> int | None:
    """The passing value nearest ``knob.current``, or ``None``.

    Start at the proportional guess (else the bound); from a passing value gallop toward
    the current one. From a failing one, try where the straight ``line`` through the last
    two failing values crosses the limit (a rule's number is often affine in the knob:
    epochs plus a fixed setup), up to :data:`MAX_SECANTS` times; from one that passes, step
    once toward the current value; if none passes, fall back to the bound. Then bisect the
    gap. Apart from the crossings, at most :data:`MAX_PROBES` probes: the crossings only
    narrow the gap the plain search bisects, so it ends no farther from the limit.
    """
    near, far = knob.current, knob.bound
    toward = 1 if knob.lower else -1

    def within(value: int) -> bool:
        return far <= value < near if knob.lower else near < value <= far

    if not within(far):
        return None
    start = guess if guess is not None and within(guess) else far
    probes, good, bad, steps = 1, None, near, MAX_PROBES
    if passes(knob.edits(start)):
        good = start
    else:
        failed, bad = near, start
        for _ in range(MAX_SECANTS if line is not None else 0):
            crossing = line.crossing(failed, bad) if line is not None else None
            if crossing is None or not within(crossing) or (crossing - bad) * toward >= 0:
                break
            if passes(knob.edits(crossing)):
                good, steps = crossing, 1  # NOTE: the line lands near: one step, then bisect
                break
            failed, bad = bad, crossing
        if good is None:
            if bad == far or not passes(knob.edits(far)):
                return None
            good, steps = far, 0  # NOTE: the bound passes: bisect, the gap is wide
            probes += 1
    step = 1
    while steps and probes < MAX_PROBES and (good + toward * step - bad) * toward < 0:
        probes, steps = probes + 1, steps - 1
        if not passes(knob.edits(good + toward * step)):
            bad = good + toward * step
            break
        good, step = good + toward * step, step * 2
    while abs(bad - good) > 1 and probes < MAX_PROBES:
        mid = (good + bad) // 2
        probes += 1
        good, bad = (mid, bad) if passes(knob.edits(mid)) else (good, mid)
    return good


MAX_SECANTS = 3
"""Crossings tried from a failing start before falling back to the bound (beside the
:data:`MAX_PROBES`: each narrows the gap, so a knob's search costs at most 13 re-estimates)."""


@dataclass(frozen=True, slots=True)
class _Line:
    """How far over its limit the rule is at each value of a knob probed (1: at it)."""

    knob: Knob
    at_current: Decimal | None
    overshoot: Callable[[tuple[Edit, ...]], Decimal | None]

    def at(self, value: int) -> Decimal | None:
        """The overshoot at ``value``: the spec's own, or the probed edit's."""
        if value == self.knob.current:
            return self.at_current
        return self.overshoot(self.knob.edits(value))

    def crossing(self, a: int, b: int) -> int | None:
        """Where the straight line through values ``a`` and ``b`` reaches the limit.

        Rounded to the passing side (below it for a knob that helps lower), or ``None``
        without two distinct overshoots to draw the line through.
        """
        at_a, at_b = self.at(a), self.at(b)
        if at_a is None or at_b is None or at_a == at_b:
            return None
        exact = b + (1 - at_b) * (a - b) / (at_a - at_b)
        if abs(exact) > _MOST_KNOB:
            return None
        # NOTE: to the nanounit first: a line through 51 read as 50.99999… would round away
        exact = exact.quantize(_NANO)
        return int(exact.to_integral_value(ROUND_FLOOR if self.knob.lower else ROUND_CEILING))


_NANO = Decimal("1e-9")
_MOST_KNOB = Decimal(10) ** 15
"""Past any knob's value (counts are at most 10¹²): no crossing there to try."""


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
