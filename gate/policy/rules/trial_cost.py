"""Cost of one trial over the team limit.

A per-trial cap (300 USD by default) bounds what one bad configuration can burn. The
cost of a trial is GPUs × hours per trial × price per GPU-hour, in the enforced scenario.
Setting ``stopping.max_trial_cost`` in the spec caps trials at that amount.

Passes (policy ``max_trial_cost: 300``)::

    resources: {accelerator: A100-80GB, gpus_per_trial: 1}
    workload: {max_epochs: 30, epoch_minutes: 10}        # 5 h ≈ 20 USD

Fails::

    resources: {accelerator: H100, gpus_per_trial: 8}
    workload: {max_epochs: 100, epoch_minutes: 30}       # 50 h × 8 GPUs ≈ 3,400 USD
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, money

ID = "BG103"
SLUG = "trial-cost"
TITLE = "Trial cost over the limit"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Compare the enforced scenario's cost per trial with the limit."""
    limit = ctx.policy.limits.max_trial_cost
    scenario = ctx.enforced
    if limit is not None and scenario.cost_per_trial > limit:
        yield Violation(
            f"{scenario.name}-case cost per trial {money(scenario.cost_per_trial, ctx)} "
            f"exceeds max_trial_cost {money(limit, ctx)}",
            ("resources", "gpus_per_trial"),
        )
