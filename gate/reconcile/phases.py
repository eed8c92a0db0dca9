"""The phase hours a run logged: setup, training, evaluation; the rest is its idle tail (pure).

A launcher may log :data:`gate.ledger.tracking.SETUP_SECONDS`, ``TRAIN_SECONDS`` and
``EVAL_SECONDS`` as metrics or params. Training is the phase the effective-training ratio
and the cost of epochs after the plateau are measured by, so phases without a training
time are ignored, with a note: counting its training as 0 h showed a 0 % ratio and 0.00
of post-plateau waste for runs that trained every epoch they logged. Without phases the
whole held time counts as training, as for a run that logged none.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

from gate.estimate.accounting import Phases
from gate.ledger import tracking

_PHASES = (
    ("setup", tracking.SETUP_SECONDS),
    ("training", tracking.TRAIN_SECONDS),
    ("evaluation", tracking.EVAL_SECONDS),
)
_MAX_SECONDS = Decimal(10**12)


def logged_phases(
    metrics: Mapping[str, float],
    params: Mapping[str, str],
    gpus: Decimal,
    held: Decimal,
    notes: list[str],
) -> Phases | None:
    """Logged phase hours; the held time they leave out is the idle tail."""
    hours: dict[str, Decimal] = {}
    for name, key in _PHASES:
        seconds = _number(metrics.get(key), params.get(key))
        if seconds is not None:
            hours[name] = seconds / 3600
    if not hours:
        return None
    if "training" not in hours:
        notes.append(
            f"{', '.join(k for n, k in _PHASES if n in hours)} logged without "
            f"{tracking.TRAIN_SECONDS}: phases ignored, the held time counts as training"
        )
        return None
    logged = sum(hours.values(), Decimal(0))
    if logged > held:
        # NOTE: the bill is the held time; phases that overrun it (clock skew, a launcher
        # timing more than the run) are scaled down to it rather than inflating the cost.
        notes.append("phases add up to more than the time held: scaled to fit")
        hours = {name: value * held / logged for name, value in hours.items()}
        logged = held
    return Phases(gpus=gpus, idle_tail=held - logged, **hours)


def _number(metric: float | None, param: str | None) -> Decimal | None:
    """A phase duration from a metric or else a param; an impossible one is ignored.

    Negative, non-finite, or past a trillion seconds (``1e999999999``: no duration, and
    past Decimal's range once divided, which crashed every report of the server).
    """
    for raw in (metric, param):
        if raw is None:
            continue
        try:
            value = Decimal(str(raw))
        except InvalidOperation:
            continue
        if value.is_finite() and 0 <= value <= _MAX_SECONDS:
            return value
    return None
