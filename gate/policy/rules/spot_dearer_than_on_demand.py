"""Spot capacity expected to cost more than on-demand.

Spot net saving = on-demand cost − spot cost − recompute − extra ops, both sides pricing the
same training work: the plan's epochs in the expected case, per-trial caps left out (a cost
cap would stop spot trials later than on-demand ones, which is no saving). Preemptions arrive
at the policy's ``spot.preemptions_per_hour``; without checkpoints each one restarts the
run, so recompute grows exponentially with trial length and can eat the whole discount.
Checkpoint more often, shorten trials, or use on-demand.

Passes::

    resources: {accelerator: A100-80GB, gpus_per_trial: 1, capacity: spot,
                checkpoint_every_minutes: 30}

Fails (trials of 90 h, no checkpoints, policy ``preemptions_per_hour: 0.05``)::

    resources: {accelerator: H100, gpus_per_trial: 8, capacity: spot}
    workload: {max_epochs: 400, epoch_minutes: 12}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, money

ID = "BG306"
SLUG = "spot-dearer-than-on-demand"
TITLE = "Spot expected to cost more than on-demand"
DEFAULT_SEVERITY = Severity.WARN


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Flag a negative expected spot net saving."""
    spot = ctx.estimate.spot
    if spot is not None and spot.net_saving < 0:
        ops = spot.extra_ops_cost and f", {money(spot.extra_ops_cost, ctx)} in spot's extra ops"
        yield Violation(
            f"spot is expected to cost {money(-spot.net_saving, ctx)} more than on-demand "
            f"({money(spot.recompute_cost, ctx)} of it recomputing preempted work{ops or ''})",
            ("resources", "capacity"),
        )
