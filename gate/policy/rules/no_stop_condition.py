"""A long epoch budget with no early stopping.

The most common waste: hundreds of epochs after validation loss went flat. When
``max_epochs`` is above ``practices.stop_condition_above_epochs`` the spec must say when
a trial stops early (``stopping.early_stopping``).

Passes (policy ``stop_condition_above_epochs: 50``)::

    workload: {max_epochs: 200, epoch_minutes: 3}
    stopping:
      early_stopping: {monitor: val_loss, mode: min, patience: 10}

Fails::

    workload: {max_epochs: 200, epoch_minutes: 3}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG301"
SLUG = "no-stop-condition"
TITLE = "No stop condition on a long run"
DEFAULT_SEVERITY = Severity.WARN


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Flag a large max_epochs without early stopping."""
    threshold = ctx.policy.practices.stop_condition_above_epochs
    epochs = ctx.spec.workload.max_epochs
    if threshold is not None and epochs > threshold and ctx.spec.stopping.early_stopping is None:
        yield Violation(
            f"max_epochs {epochs} is over {threshold} with no early_stopping",
            ("workload", "max_epochs"),
        )
