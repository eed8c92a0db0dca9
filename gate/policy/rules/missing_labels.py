"""Attribution labels the policy requires are missing.

Every workload carries low-cardinality attribution labels (team, environment, workload
type, model, cost center), checked at admission, so spend can be shown back to whoever
caused it. The list is ``labels.required``.

Passes (policy ``required: [cost-center, environment]``)::

    metadata: {name: sweep, labels: {cost-center: cc-1042, environment: research}}

Fails::

    metadata: {name: sweep, labels: {environment: research}}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG201"
SLUG = "missing-labels"
TITLE = "Required label missing"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Yield one violation per required label that is absent or empty."""
    labels = ctx.spec.metadata.labels
    for name in ctx.policy.labels.required:
        if not labels.get(name):
            yield Violation(f"required label {name!r} is missing", ("metadata", "labels", name))
