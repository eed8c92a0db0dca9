"""An experiment expensive enough to need an approver.

Spend above ``approval.cost_over`` (in the enforced scenario) needs a named approver
before launch; the approval binds the spec fingerprint and the approved amount.

Passes (policy ``cost_over: 2000``)::

    resources: {accelerator: L4, gpus_per_trial: 1}
    search: {strategy: random, max_trials: 20}

Needs approval::

    resources: {accelerator: H100, gpus_per_trial: 8}
    search: {strategy: random, max_trials: 20}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, money

ID = "BG111"
SLUG = "costly-experiment"
TITLE = "Costly experiment needs approval"
DEFAULT_SEVERITY = Severity.APPROVAL


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Compare the enforced cost with the approval trigger."""
    trigger = ctx.policy.approval.cost_over
    scenario = ctx.enforced
    if trigger is not None and scenario.cost > trigger:
        yield Violation(
            f"{scenario.name}-case cost {money(scenario.cost, ctx)} is over the approval "
            f"trigger of {money(trigger, ctx)}",
            ("search",),
        )
