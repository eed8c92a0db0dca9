"""No quality gate: nothing says which runs count as a qualified model.

Without a gate, cost per qualified model cannot be computed after the runs, and plans
cannot be compared at equal quality. Gate on per-class metrics or macro F1, not on a
single accuracy number.

Passes::

    quality_gate:
      - {metric: val_macro_f1, op: ">=", value: 0.80}

Fails::

    quality_gate: []
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG303"
SLUG = "no-quality-gate"
TITLE = "No quality gate"
DEFAULT_SEVERITY = Severity.WARN


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Flag a spec with an empty quality gate."""
    if not ctx.spec.quality_gate:
        yield Violation("no quality_gate: qualified models cannot be counted", ())
