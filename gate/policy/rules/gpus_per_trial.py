"""GPUs per trial over the team limit.

Oversized requests hold GPUs the model does not need; most models that fit in one GPU's
memory gain little from a second one per trial. The limit is ``limits.max_gpus_per_trial``.

Passes (policy ``max_gpus_per_trial: 8``)::

    resources: {accelerator: A100-80GB, gpus_per_trial: 4}

Fails::

    resources: {accelerator: A100-80GB, gpus_per_trial: 16}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG101"
SLUG = "gpus-per-trial"
TITLE = "GPUs per trial over the limit"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Compare gpus_per_trial with the policy limit."""
    limit = ctx.policy.limits.max_gpus_per_trial
    gpus = ctx.spec.resources.gpus_per_trial
    if limit is not None and gpus > limit:
        yield Violation(
            f"{gpus} GPUs per trial exceeds max_gpus_per_trial {limit}",
            ("resources", "gpus_per_trial"),
        )
