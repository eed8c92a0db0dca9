"""Trial hours over the team limit.

A trial that may run for days is a trial nobody watches. Trial time is setup + epochs ×
epoch time × (1 + eval overhead), capped by the spec's own ``max_trial_hours``; the
limit is the policy's ``limits.max_trial_hours`` (48 h by default), checked against the
enforced scenario (worst unless ``limits.scenario`` says otherwise).

Passes (policy ``max_trial_hours: 48``)::

    workload: {max_epochs: 100, epoch_minutes: 6}       # 10 h per trial

Fails::

    workload: {max_epochs: 400, epoch_minutes: 12}      # 80 h per trial
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.money import to_decimal
from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, as_given, hours

ID = "BG102"
SLUG = "trial-hours"
TITLE = "Trial hours over the limit"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Compare the enforced scenario's hours per trial with the limit."""
    limit = ctx.policy.limits.max_trial_hours
    scenario = ctx.enforced
    if limit is not None and scenario.hours_per_trial > to_decimal(limit):
        yield Violation(
            f"{scenario.name}-case trial time {hours(scenario.hours_per_trial)} exceeds "
            f"max_trial_hours {as_given(limit)} h",
            ("workload", "max_epochs"),
        )
