"""A search large enough to need an approver.

Large searches need approval *before* launch, from someone who can judge whether the
space is worth it. The trigger is ``approval.trials_over`` (32 by default), counted after
seeds: a grid of 4 × 3 values with 3 seeds is 36 trials.

Passes (policy ``trials_over: 32``)::

    search: {strategy: random, max_trials: 24}

Needs approval::

    search: {strategy: random, max_trials: 24, seeds: [0, 1]}   # 48 trials
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG110"
SLUG = "large-search"
TITLE = "Large search needs approval"
DEFAULT_SEVERITY = Severity.APPROVAL


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Compare the trial count with the approval trigger."""
    trigger = ctx.policy.approval.trials_over
    trials = ctx.enforced.trials
    if trigger is not None and trials > trigger:
        yield Violation(f"{trials:,} trials is over the approval trigger of {trigger}", ("search",))
