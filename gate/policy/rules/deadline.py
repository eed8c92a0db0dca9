"""Wall-clock past the spec's deadline.

Wall-clock = waves of ``max_concurrent_trials`` (fewer if the team's concurrent-GPU limit
binds) × hours per trial, in the enforced scenario. Faster is not always cheaper, but a
plan that cannot deliver by ``deadline_hours`` is the wrong plan.

Passes::

    resources: {gpus_per_trial: 2}
    workload: {max_epochs: 10, epoch_minutes: 15}     # 2.5 h
    deadline_hours: 3

Fails::

    resources: {gpus_per_trial: 1}
    workload: {max_epochs: 16, epoch_minutes: 15}     # 4 h
    deadline_hours: 3
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.money import to_decimal
from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, as_given, hours, plural

ID = "BG402"
SLUG = "deadline"
TITLE = "Wall-clock past the deadline"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Compare the enforced scenario's wall-clock with deadline_hours."""
    deadline = ctx.spec.deadline_hours
    scenario = ctx.enforced
    if deadline is not None and scenario.wall_clock_hours > to_decimal(deadline):
        yield Violation(
            f"{scenario.name}-case wall-clock {hours(scenario.wall_clock_hours)} "
            f"({plural(scenario.waves, 'wave')} of {scenario.concurrency}) is past deadline_hours "
            f"{as_given(deadline)} h",
            ("deadline_hours",),
        )
