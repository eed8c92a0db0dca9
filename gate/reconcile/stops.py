"""The runtime guard's stops, as the runs' tags recorded them, and what each saved (pure).

A run the guard stopped carries ``budget_gate.stopped_by`` with the kind, the reason, the
experiment's spend at the time and the epoch (:mod:`gate.ledger.tracking`). What the stop
saved against running on is the epochs it did not train, up to the spec's ``max_epochs``,
at the run's own training cost per epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from gate.ledger import tracking


@dataclass(frozen=True, slots=True)
class GuardStop:
    """One run the guard stopped: why, when, the spend at the time, and what it saved."""

    by: str
    kind: str
    reason: str
    spend: str
    epoch: int | None
    epochs_saved: int
    saved: Decimal


def guard_stop(
    tags: Mapping[str, str], epochs: int | None, max_epochs: int, train_cost: Decimal
) -> GuardStop | None:
    """The stop recorded in ``tags``, ``None`` when the guard did not stop this run."""
    by = tags.get(tracking.STOPPED_BY)
    if by is None:
        return None
    epoch_text = tags.get(tracking.STOP_EPOCH, "")
    epoch = tracking.tag_count(epoch_text)
    ran = epochs or epoch or 0
    left = max(max_epochs - ran, 0)
    saved = train_cost / ran * left if ran else Decimal(0)
    return GuardStop(
        by=by,
        kind=tags.get(tracking.STOP_KIND, "unknown"),
        reason=tags.get(tracking.STOP_REASON, ""),
        spend=tags.get(tracking.STOP_SPEND, ""),
        epoch=epoch,
        epochs_saved=left,
        saved=saved,
    )
