"""A long epoch budget with no early stopping.

The most common waste: hundreds of epochs after validation loss went flat. When
``max_epochs`` is above ``practices.stop_condition_above_epochs`` the spec must say when
a trial stops early (``stopping.early_stopping``). The finding prices the epochs after
the expected plateau (the policy's ``estimation.plateau_fraction`` of ``max_epochs``): the
expected cost of the plan less that of the same plan stopped at the plateau.

Passes (policy ``stop_condition_above_epochs: 50``)::

    workload: {max_epochs: 200, epoch_minutes: 3}
    stopping:
      early_stopping: {monitor: val_loss, mode: min, patience: 10}

Fails::

    workload: {max_epochs: 200, epoch_minutes: 3}
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from gate.policy.counterfactual import reprice
from gate.policy.findings import Edit
from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation, money, plural

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
            f"max_epochs {epochs} is over {threshold} with no early_stopping{_waste(ctx)}",
            ("workload", "max_epochs"),
        )


def _waste(ctx: RuleContext) -> str:
    """``: the 200 epochs after the expected plateau at epoch 200 cost ... (expected case)``."""
    epochs = ctx.spec.workload.max_epochs
    fraction = ctx.policy.estimation.plateau_fraction
    plateau = max(1, math.ceil(fraction * epochs))
    scheduler = ctx.spec.search.scheduler
    if plateau >= epochs or (scheduler is not None and scheduler.min_epochs > plateau):
        return ""
    edits = [Edit(("workload", "max_epochs"), plateau)]
    if (
        scheduler is not None
        and scheduler.max_epochs is not None
        and scheduler.max_epochs > plateau
    ):
        edits.append(Edit(("search", "scheduler", "max_epochs"), plateau))
    stopped = reprice(ctx.spec, ctx.policy, ctx.estimate.quote, edits, ctx.estimate.measured)
    if stopped is None:
        return ""
    waste = ctx.estimate.expected.cost - stopped.expected.cost
    return (
        f": the {plural(epochs - plateau, 'epoch')} after the expected plateau at epoch "
        f"{plateau} (plateau_fraction {fraction:g}) cost {money(waste, ctx)} (expected case)"
    )
