"""Concurrent GPUs over the team limit.

``max_concurrent_trials × gpus_per_trial`` is what the experiment holds at its peak; the
team's ``limits.max_concurrent_gpus`` keeps one sweep from starving everyone else. The
estimate already runs fewer trials at once to respect the limit, so lower
``max_concurrent_trials`` to make the wall-clock honest.

Passes (policy ``max_concurrent_gpus: 32``)::

    resources: {gpus_per_trial: 4}
    search: {max_concurrent_trials: 8}

Fails::

    resources: {gpus_per_trial: 8}
    search: {max_concurrent_trials: 8}                    # 64 GPUs at once
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG105"
SLUG = "concurrent-gpus"
TITLE = "Concurrent GPUs over the limit"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Compare the peak GPUs held at once with the limit."""
    limit = ctx.policy.limits.max_concurrent_gpus
    trials = min(ctx.spec.search.max_concurrent_trials, ctx.enforced.trials)
    peak = trials * ctx.spec.resources.gpus_per_trial
    if limit is not None and peak > limit:
        yield Violation(
            f"{trials} concurrent trials × {ctx.spec.resources.gpus_per_trial} GPUs = {peak} GPUs "
            f"exceeds max_concurrent_gpus {limit}",
            ("search", "max_concurrent_trials"),
        )
