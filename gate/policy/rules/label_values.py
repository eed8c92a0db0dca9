"""An attribution label has a value the policy does not allow.

Free-typed labels fragment the cost report ("research", "Research", "rnd"). For labels
listed under ``labels.allowed`` the value must be one of the listed values.

Passes (policy ``allowed: {environment: [research, production]}``)::

    metadata: {name: sweep, labels: {environment: research}}

Fails::

    metadata: {name: sweep, labels: {environment: Research}}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG202"
SLUG = "label-values"
TITLE = "Label value not allowed"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Yield one violation per label whose value is not in its allowed list."""
    labels = ctx.spec.metadata.labels
    for name, allowed in sorted(ctx.policy.labels.allowed.items()):
        value = labels.get(name)
        if value and value not in allowed:
            yield Violation(
                f"label {name}={value!r} is not one of {', '.join(allowed)}",
                ("metadata", "labels", name),
            )
