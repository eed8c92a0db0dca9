"""The plateau, defined by the return a team accepts for more training (pure).

DOMAIN.md §2 (cost ROI) and §6 (marginal return): more epochs pay while the monitored
metric gains enough for what they cost; stop when d(metric)/d(GPU-h) falls below ε. One
definition serves the estimate's expected case, reconcile's post-plateau waste and the
runtime guard, so the three never disagree about where a run stopped paying.

A span of epochs *pays* when the best value of the metric improves over it by **more
than** the gain it must buy, the largest of:

- ``min_delta`` (early stopping's smallest improvement), per window;
- ``relative`` × |best value so far|, per window (the default floor: 0.1 % of the metric's
  value over the patience window);
- ``per_gpu_hour`` × the GPU-hours the span held (ε per GPU-hour);
- ``per_cost`` × what the span cost (ε per unit of money).

Per-window amounts scale with the span's length (``epochs ÷ window``), so a span as long
as the window is judged exactly as written and a longer one by the same rate. The plateau
is the first epoch after which the next ``window`` epochs do not pay: a guard watching the
run stops there plus the window (the patience). Judging a whole run afterwards, a later
gain that paid for every epoch since (a learning-rate drop, say) moves the plateau on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from gate.estimate.settings import Returns

Mode = Literal["min", "max"]


@dataclass(frozen=True, slots=True)
class Threshold:
    """The return a team accepts: what a window of ``window`` epochs must gain at least."""

    window: int = 10
    min_delta: float = 0.0
    relative: float = 0.0
    per_gpu_hour: float | None = None
    per_cost: float | None = None

    def required(self, best: float, epochs: int, gpu_hours: float, cost: float) -> float:
        """The gain a span of ``epochs`` (holding ``gpu_hours``, costing ``cost``) must beat."""
        scale = epochs / self.window
        need = max(self.min_delta, self.relative * abs(best)) * scale
        if self.per_gpu_hour is not None:
            need = max(need, self.per_gpu_hour * gpu_hours)
        if self.per_cost is not None:
            need = max(need, self.per_cost * cost)
        return need

    def describe(self, currency: str = "") -> str:
        """The threshold in words, for assumptions and reports."""
        parts = []
        if self.relative:
            parts.append(f"{self.relative * 100:g} % of its value")
        if self.min_delta:
            parts.append(f"min_delta {self.min_delta:g}")
        per_window = " and ".join(parts) or "any improvement"
        if len(parts) > 1:
            per_window = f"the larger of {per_window}"
        text = f"{per_window} per {self.window} epochs"
        if self.per_gpu_hour is not None:
            text += f", {self.per_gpu_hour:g} per GPU-hour"
        if self.per_cost is not None:
            text += f", {self.per_cost:g} per {currency or 'unit of cost'}"
        return text


def threshold_for(returns: Returns, patience: int | None, min_delta: float = 0.0) -> Threshold:
    """The policy's accepted return over the spec's patience (else the policy's window)."""
    return Threshold(
        window=patience or returns.patience_epochs,
        min_delta=min_delta,
        relative=returns.min_relative_gain,
        per_gpu_hour=returns.min_gain_per_gpu_hour,
        per_cost=returns.min_gain_per_cost,
    )


def gain(before: float, after: float, mode: Mode) -> float:
    """How much ``after`` improves on ``before`` (negative when it is worse)."""
    return before - after if mode == "min" else after - before


def marginal_return(gained: float, spent: float) -> float:
    """Gain per unit spent (GPU-hour or money): the slope of the learning curve in money."""
    return gained / spent if spent > 0 else math.inf


def pays(
    threshold: Threshold,
    best_before: float,
    best_after: float,
    mode: Mode,
    epochs: int,
    gpu_hours: float = 0.0,
    cost: float = 0.0,
) -> bool:
    """Whether a span of ``epochs`` that took the best value from before to after paid."""
    needed = threshold.required(best_before, epochs, gpu_hours, cost)
    return gain(best_before, best_after, mode) > needed


def running_best(history: Sequence[float], mode: Mode) -> list[float]:
    """The best value up to each epoch; NaN until the first number, and NaN never improves."""
    best = math.nan
    out = []
    for value in history:
        if not math.isnan(value) and (
            math.isnan(best) or (value < best if mode == "min" else value > best)
        ):
            best = value
        out.append(best)
    return out


def plateau(
    history: Sequence[float],
    mode: Mode,
    threshold: Threshold,
    gpu_hours_per_epoch: float = 0.0,
    cost_per_epoch: float = 0.0,
) -> int | None:
    """The epoch (1-based) after which the run stopped paying; the last one if it never did.

    Judged afterwards, over a whole run with epochs of equal cost: the first epoch ``p``
    whose next ``window`` epochs (fewer at the end) and the rest of the run both fail to
    pay. ``None`` when the history holds no number.
    """
    best = running_best(history, mode)
    epochs = len(best)
    first = next((i for i, value in enumerate(best) if not math.isnan(value)), None)
    if first is None:
        return None
    per_epoch = (gpu_hours_per_epoch, cost_per_epoch)
    for p in range(first, epochs - 1):
        end = min(p + threshold.window, epochs - 1)
        if _span_pays(threshold, best, p, end, mode, per_epoch):
            continue
        if not _span_pays(threshold, best, p, epochs - 1, mode, per_epoch):
            return p + 1
    return epochs


def _span_pays(
    threshold: Threshold,
    best: Sequence[float],
    start: int,
    end: int,
    mode: Mode,
    per_epoch: tuple[float, float],
) -> bool:
    span = end - start
    gpu_hours, cost = per_epoch
    return pays(threshold, best[start], best[end], mode, span, gpu_hours * span, cost * span)


def curve_plateau(
    total_gain: float,
    half_life: float,
    threshold: Threshold,
    max_epochs: int,
    gpu_hours_per_epoch: float = 0.0,
) -> int:
    """First epoch after which a learning curve's next window no longer pays.

    The curve gains ``total_gain`` in all and its gain per epoch halves every
    ``half_life`` epochs, so the gain over the window after epoch e is
    G · 2^(−e/h) · (1 − 2^(−w/h)). The metric's value is not known, so the relative floor
    does not apply; money is not known here either, so only min_delta and ε per GPU-hour
    do. ``max_epochs`` when the window always pays (with nothing required, it does).
    """
    window = threshold.window
    need = threshold.required(0.0, window, gpu_hours_per_epoch * window, 0.0)
    if need <= 0:
        return max_epochs
    window_gain = total_gain * (1 - 2 ** (-window / half_life))
    if window_gain <= need:
        return 0
    epoch = half_life * math.log2(window_gain / need)
    return math.ceil(epoch) if math.isfinite(epoch) and epoch < max_epochs else max_epochs
