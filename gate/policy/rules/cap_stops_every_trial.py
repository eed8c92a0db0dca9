"""A per-trial cap stops every trial before its last epoch: no finished model.

``stopping.max_trial_hours`` and ``stopping.max_trial_cost`` end a trial when it has held
that many hours or cost that much (spot recompute included). When even the trial that
trains furthest is stopped before its last epoch — ``max_epochs``, or the epoch early
stopping is expected to end it — no trial of the plan finishes, so the experiment pays for
training and delivers no finished model. Raise the cap, shorten the trials (fewer epochs,
faster epochs) or use more GPUs per trial. Checked in the expected case.

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

from gate.money import format_amount, to_decimal
from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG307"
SLUG = "cap-stops-every-trial"
TITLE = "A per-trial cap stops every trial before its last epoch"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Flag an expected case in which no trial trains all its epochs."""
    expected = ctx.estimate.expected
    if expected.unfinished:
        field = _binding(ctx)
        yield Violation(
            f"no trial finishes its epochs: {field} stops even the furthest one after "
            f"{format_amount(expected.epochs_trained)} epochs "
            f"({format_amount(expected.hours_per_trial)} h held), so no finished model",
            ("stopping", field),
        )


def _binding(ctx: RuleContext) -> str:
    """The cap that stops trials: max_trial_hours when the hours held reach it."""
    hours = ctx.spec.stopping.max_trial_hours
    held = ctx.estimate.expected.hours_per_trial
    return (
        "max_trial_hours" if hours is not None and held >= to_decimal(hours) else "max_trial_cost"
    )
