"""Attribution labels the policy requires are missing.

Every workload carries low-cardinality attribution labels (team, environment, workload
type, model, cost center), checked at admission, so spend can be shown back to whoever
caused it. The list is ``labels.required``.

Passes (policy ``required: [cost-center, environment]``)::

    metadata: {name: sweep, labels: {cost-center: cc-1042, environment: research}}

Fails (a blank value, spaces or invisible characters only, is no label either)::

    metadata: {name: sweep, labels: {environment: research}}
    metadata: {name: sweep, labels: {cost-center: " ", environment: research}}
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG201"
SLUG = "missing-labels"
TITLE = "Required label missing"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Yield one violation per required label that is absent, empty or blank."""
    labels = ctx.spec.metadata.labels
    for name in ctx.policy.labels.required:
        value = labels.get(name)
        if not value:
            yield Violation(f"required label {name!r} is missing", ("metadata", "labels", name))
        elif _blank(value):
            yield Violation(
                f"required label {name!r} is blank (only spaces or invisible characters)",
                ("metadata", "labels", name),
            )


def _blank(value: str) -> bool:
    """Whether ``value`` shows nothing: spaces (any kind) and format characters only."""
    return all(ch.isspace() or unicodedata.category(ch) in ("Cf", "Zs") for ch in value)
