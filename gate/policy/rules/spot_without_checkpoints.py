"""Spot capacity without checkpoints.

A preempted spot trial without checkpoints restarts from zero, so spot can cost more than
on-demand. Set ``resources.checkpoint_every_minutes`` (30 is a common choice).

Passes::

    resources: {accelerator: A100-80GB, gpus_per_trial: 1, capacity: spot,
                checkpoint_every_minutes: 30}

Fails::

    resources: {accelerator: A100-80GB, gpus_per_trial: 1, capacity: spot}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation
from gate.spec.trial import Capacity

ID = "BG305"
SLUG = "spot-without-checkpoints"
TITLE = "Spot capacity without checkpoints"
DEFAULT_SEVERITY = Severity.WARN


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Flag spot capacity with no checkpoint interval."""
    resources = ctx.spec.resources
    if resources.capacity is Capacity.SPOT and resources.checkpoint_every_minutes is None:
        yield Violation(
            "spot capacity without checkpoint_every_minutes: preemptions restart trials",
            ("resources", "capacity"),
        )
