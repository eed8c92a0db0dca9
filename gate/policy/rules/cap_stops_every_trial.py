"""A per-trial cap stops every trial before its last epoch: no finished model.

``stopping.max_trial_hours`` and ``stopping.max_trial_cost`` end a trial when it has held
that many hours or cost that much (spot recompute included). When even the trial that
trains furthest is stopped before its last epoch — ``max_epochs``, or the epoch early
stopping is expected to end it — no trial of the plan finishes, so the experiment pays for
training and delivers no finished model. Raise the cap, shorten the trials (fewer epochs,
faster epochs) or use more GPUs per trial. Checked in the expected case; the finding names
the cap that stops the trials and what a whole trial needs, and the fixes offered raise that
cap or train fewer epochs.

Passes (3 epochs of 20 min, a cap of 2 h)::

    workload: {max_epochs: 3, epoch_minutes: 20}
    stopping: {max_trial_hours: 2}

Fails (8 × H100 on spot, 3 epochs of 238 min, 12.75 h a trial; 300 USD buys 11.29 h)::

    resources: {accelerator: H100, gpus_per_trial: 8, capacity: spot}
    workload: {max_epochs: 3, epoch_minutes: 238, setup_minutes: 15, eval_overhead: 0.05}
    stopping: {max_trial_cost: 300}
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import ROUND_CEILING, Decimal

from gate.estimate.caps import Cut
from gate.money import format_amount
from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, as_given, hours, money, plural

ID = "BG307"
SLUG = "cap-stops-every-trial"
TITLE = "A per-trial cap stops every trial before its last epoch"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Flag an expected case in which no trial trains all its epochs."""
    cut = ctx.estimate.expected_cut
    if cut is not None:  # NOTE: a cut is where the furthest trial stopped: it is unfinished
        yield Violation(
            f"no trial finishes its epochs: {_cap(ctx, cut.field)} stops even the furthest one "
            f"after {format_amount(cut.epochs)} of {plural(cut.target, 'epoch')} "
            f"({_needed(ctx, cut)}), so no finished model",
            ("stopping", cut.field),
        )


def needed_cap(ctx: RuleContext) -> Decimal | None:
    """The cap that lets the furthest trial finish: its hours or their cost, rounded up."""
    cut = ctx.estimate.expected_cut
    if cut is None:
        return None
    if cut.field == "max_trial_hours":
        return _up(cut.needed_hours, Decimal("0.1"))
    return _up(_cost(ctx, cut.needed_hours), Decimal(1))


def _cap(ctx: RuleContext, field: str) -> str:
    stop = ctx.spec.stopping
    if field == "max_trial_cost" and stop.max_trial_cost is not None:
        return f"max_trial_cost {money(stop.max_trial_cost, ctx)}"
    if stop.max_trial_hours is not None:
        return f"max_trial_hours {as_given(stop.max_trial_hours)} h"
    return field  # pragma: no cover - a cut always has the cap that made it


def _needed(ctx: RuleContext, cut: Cut) -> str:
    """What the cut trial held, and what a whole one needs, in the cap's unit."""
    if cut.field == "max_trial_hours":
        return f"{hours(cut.hours)} held; a whole trial needs {hours(cut.needed_hours)}"
    return (
        f"{hours(cut.hours)} held, {money(_cost(ctx, cut.hours), ctx)}; a whole trial costs "
        f"{money(_cost(ctx, cut.needed_hours), ctx)}"
    )


def _cost(ctx: RuleContext, held: Decimal) -> Decimal:
    units = ctx.spec.resources.gpus_per_trial * ctx.spec.resources.gpu_share
    return held * units * ctx.estimate.quote.per_gpu_hour


def _up(value: Decimal, step: Decimal) -> Decimal:
    return (value / step).to_integral_value(rounding=ROUND_CEILING) * step
