"""An accelerator the team reserves for approved work.

Expensive accelerator types (``approval.accelerators``, e.g. H100, H200, B200) need an
explicit approval, whatever the size of the experiment.

Passes (policy ``accelerators: [H100]``)::

    resources: {accelerator: A100-80GB, gpus_per_trial: 2}

Needs approval::

    resources: {accelerator: H100, gpus_per_trial: 2}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG112"
SLUG = "restricted-accelerator"
TITLE = "Restricted accelerator needs approval"
DEFAULT_SEVERITY = Severity.APPROVAL


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Look the accelerator up in the approval list."""
    accelerator = ctx.spec.resources.accelerator
    if accelerator in ctx.policy.approval.accelerators:
        yield Violation(
            f"accelerator {accelerator} needs approval under this policy",
            ("resources", "accelerator"),
        )
