"""What a run achieved (pure): the quality gate on its final metrics, and where it plateaued.

A run is a *qualified model* when every quality-gate condition holds on its final metrics
(the latest value of each, as MLflow reports it). A condition whose metric name holds a
``*`` covers every matching metric: ``val_recall_class_*`` passes only if each per-class
recall passes, and fails when no metric matches at all, since a class hidden by the
average is exactly what such a condition is there to catch (DOMAIN.md §2).

The plateau is where the monitored metric stopped paying for its GPU-hours: the first epoch
after which neither the next patience window nor the rest of the run gained the return the
policy accepts (:mod:`gate.estimate.returns`, the definition the estimate and the runtime
guard use too). Every epoch after it is training the gate could have saved.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from gate.estimate.returns import Threshold, plateau, threshold_for
from gate.estimate.settings import Returns
from gate.spec.experiment import Condition, Experiment

Mode = Literal["min", "max"]

DEFAULT_MONITOR = "val_loss"


@dataclass(frozen=True, slots=True)
class GateResult:
    """Whether a run passes the gate, and each reason it does not (empty when it passes)."""

    passed: bool
    failures: tuple[str, ...] = ()


def matching(pattern: str, keys: Iterable[str]) -> list[str]:
    """The metric names that ``pattern`` covers: exact, or ``*`` standing for any text."""
    if "*" not in pattern:
        return [pattern] if pattern in keys else []
    regex = re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)
    return sorted(key for key in keys if regex.fullmatch(key))


def evaluate_gate(conditions: Sequence[Condition], metrics: Mapping[str, float]) -> GateResult:
    """Judge final ``metrics`` against every condition; a NaN value never passes."""
    failures: list[str] = []
    for condition in conditions:
        names = matching(condition.metric, metrics)
        if not names:
            failures.append(f"no metric matches {condition.metric!r}")
            continue
        failures.extend(
            f"{name} = {_shown(metrics[name], condition.value)}, needs {condition.op} "
            f"{_number(condition.value)}"
            for name in names
            if not _holds(metrics[name], condition.op, condition.value)
        )
    return GateResult(not failures, tuple(failures))


def _holds(value: float, op: str, limit: float) -> bool:
    # NOTE: a job's inf or NaN is no model, at any gate; MLflow stores a logged ±inf as
    # ±float max (its stores keep no infinity), so that reads back as one too
    if not math.isfinite(value) or abs(value) >= sys.float_info.max:
        return False
    match op:
        case ">=":
            return value >= limit
        case ">":
            return value > limit
        case "<=":
            return value <= limit
        case "<":
            return value < limit
        case _:
            return value == limit


def _number(value: float) -> str:
    return f"{value:.4g}"


def _shown(value: float, bound: float) -> str:
    """``value`` short, unless it then reads as the bound it failed (0.7999999 as 0.8)."""
    short = _number(value)
    return repr(value) if short == _number(bound) and value != bound else short


@dataclass(frozen=True, slots=True)
class Monitor:
    """The metric whose history shows the plateau, and what counts as an improvement.

    ``source`` says where the choice came from, for the report; ``patience`` is the spec's
    early-stopping patience (``None`` without early stopping), for the advice; ``returns``
    the policy's accepted return, which with ``min_delta`` sets the plateau.
    """

    metric: str
    mode: Mode = "min"
    min_delta: float = 0.0
    patience: int | None = None
    source: str = "default"
    returns: Returns = field(default_factory=Returns)

    @property
    def threshold(self) -> Threshold:
        """What a window of epochs must gain to pay (:mod:`gate.estimate.returns`)."""
        return threshold_for(self.returns, self.patience, self.min_delta)


def monitor_for(
    spec: Experiment,
    metric: str | None = None,
    mode: Mode | None = None,
    min_delta: float | None = None,
    returns: Returns | None = None,
) -> Monitor:
    """The spec's early-stopping monitor, else ``val_loss`` (min); explicit values win.

    ``returns`` is the policy's accepted return (its defaults when not given).
    """
    accepted = returns if returns is not None else Returns()
    stopping = spec.stopping.early_stopping
    if stopping is not None:
        base = Monitor(
            stopping.monitor,
            stopping.mode,
            stopping.min_delta,
            stopping.patience,
            "stopping.early_stopping",
            accepted,
        )
    else:
        base = Monitor(
            DEFAULT_MONITOR, source="default: the spec has no early stopping", returns=accepted
        )
    if metric is None and mode is None and min_delta is None:
        return base
    return Monitor(
        metric or base.metric,
        mode or base.mode,
        base.min_delta if min_delta is None else min_delta,
        base.patience,
        "command line",
        accepted,
    )


def plateau_epoch(
    history: Sequence[float],
    monitor: Monitor,
    gpu_hours_per_epoch: float = 0.0,
    cost_per_epoch: float = 0.0,
) -> int | None:
    """The epoch (1-based) after which the run stopped paying the accepted return.

    ``history`` holds one value per epoch in order; NaN values never improve. ``None`` when
    the history has no number at all; the last epoch when every window paid.
    """
    return plateau(history, monitor.mode, monitor.threshold, gpu_hours_per_epoch, cost_per_epoch)


@dataclass(frozen=True, slots=True)
class ChartMetric:
    """The quality measure plotted against cost: a gate metric, or else the monitored one."""

    metric: str
    mode: Mode
    threshold: float | None = None


def chart_metric(spec: Experiment, monitor: Monitor) -> ChartMetric:
    """The first gate condition on one named metric with a direction, else the monitor."""
    for condition in spec.quality_gate:
        if "*" in condition.metric or condition.op == "==":
            continue
        mode: Mode = "max" if condition.op in (">=", ">") else "min"
        return ChartMetric(condition.metric, mode, condition.value)
    return ChartMetric(monitor.metric, monitor.mode)


def better(value: float, best: float | None, mode: Mode) -> bool:
    """Whether ``value`` beats ``best`` (anything beats no value; NaN beats nothing)."""
    if math.isnan(value):
        return False
    if best is None:
        return True
    return value > best if mode == "max" else value < best
