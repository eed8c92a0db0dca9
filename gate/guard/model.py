"""What the runtime guard observes and what it decides (pure values).

A :class:`Report` is one trial reporting one epoch: its metrics and the GPU-seconds its
attempt has held so far (cumulative, so a report delivered twice counts once). A
:class:`Decision` says continue, stop this trial, or stop the search, always with a reason
and the spend at the time, and gives the MLflow tags that leave the stop visible.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum
from numbers import Real

from gate.ledger.tracking import (
    COST_METRIC,
    PREFIX,
    STOP_EPOCH,
    STOP_KIND,
    STOP_REASON,
    STOP_SPEND,
    STOPPED_BY,
)

__all__ = [
    "COST_METRIC",
    "GPU_SECONDS_ATTR",
    "GPU_SECONDS_OF_ATTR",
    "STOPPED_BY",
    "Action",
    "Decision",
    "Report",
    "StopKind",
]

GPU_SECONDS_ATTR = PREFIX + "gpu_seconds"
"""Where an engine keeps a trial's GPU-seconds held (Optuna trial user attributes)."""
GPU_SECONDS_OF_ATTR = PREFIX + "gpu_seconds_of"
"""The number of the Optuna trial whose figure ``GPU_SECONDS_ATTR`` is: a trial Optuna
retries (``RetryHeartbeatStaleTrialCallback``) starts with a copy of the dead one's."""


class Action(str, Enum):
    """What the guard tells the engine to do."""

    CONTINUE = "continue"
    STOP_TRIAL = "stop-trial"
    STOP_SEARCH = "stop-search"


class StopKind(str, Enum):
    """Why the guard stopped something."""

    BUDGET = "budget"
    APPROVAL = "approval"
    TRIAL_HOURS = "max-trial-hours"
    TRIAL_COST = "max-trial-cost"
    PLATEAU = "plateau"
    FAILURES = "failed-trials"


@dataclass(frozen=True, slots=True)
class Report:
    """One trial's report at one epoch; ``gpu_seconds`` is cumulative for its attempt."""

    trial: str
    epoch: int
    metrics: Mapping[str, float] = field(default_factory=dict)
    gpu_seconds: float = 0.0
    attempt: int = 0


@dataclass(frozen=True, slots=True)
class Decision:
    """Continue or stop, why, and the money at the time (the experiment's and the trial's)."""

    action: Action
    spend: Decimal
    trial_cost: Decimal = Decimal(0)
    currency: str = "USD"
    kind: StopKind | None = None
    reason: str = ""
    trial: str = ""
    epoch: int | None = None

    @property
    def stop(self) -> bool:
        """Whether the trial that reported must stop (it must, when the search stops)."""
        return self.action is not Action.CONTINUE

    @property
    def stop_search(self) -> bool:
        """Whether the whole search must stop."""
        return self.action is Action.STOP_SEARCH

    def tags(self) -> dict[str, str]:
        """MLflow run tags that record a stop (empty when the decision is to continue)."""
        if not self.stop or self.kind is None:
            return {}
        tags = {
            STOPPED_BY: f"budget-gate guard ({self.action.value})",
            STOP_KIND: self.kind.value,
            STOP_REASON: self.reason[:5000],
            STOP_SPEND: f"{self.spend:.2f} {self.currency}",
        }
        if self.epoch is not None:
            tags[STOP_EPOCH] = str(self.epoch)
        return tags


def seconds_held(value: object, trial: str, what: str = "seconds held") -> float:
    """``value`` as a plain ``float`` of seconds, refused unless a finite number >= 0.

    NOTE: numpy's numbers (a loop that times its epochs with numpy) become floats: kept,
    their ``repr`` (``np.float64(360.0)``) is no Decimal, and every decision raised.

    Raises:
        ValueError: NaN, infinite, negative or not a number: a broken timer, which
            counted as nothing would let the trial spend without limit.
    """
    try:
        seconds = float(value) if isinstance(value, Real) else math.nan
    except OverflowError:  # an int past a float's range
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(
            f"budget-gate guard: trial {trial} reported {value!r} {what} — "
            "report the GPU time held so far, a finite number of seconds >= 0"
        )
    return seconds


def at_least_the_clock(given: float, first: tuple[float, float], now: float) -> float:
    """A caller's seconds held, counted at least at the clock's pace since its first figure.

    ``first`` is that figure and the clock's reading then. The time before it is the
    caller's to say (a trial waiting for a GPU); after it, a figure that grows slower than
    the clock (0 at every report, an epoch's own seconds) ran a trial past the ceiling.
    """
    return max(given, first[0] + (now - first[1]))  # NOTE: (360 + t) - t is not always 360
