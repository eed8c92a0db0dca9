"""A Mermaid ``xychart-beta`` of the best qualified model so far against cumulative cost.

GitHub renders Mermaid code blocks in comments. An xychart spaces the points of a line
evenly, so the curve is resampled at equal steps of cumulative cost (0 to the total): each
point is the best value a qualified model had reached by that spend (every run's cost
spent), and the axis' worst end until the first model exists. A flat line at the right is
money that bought no better qualified model.

Mermaid text is not Markdown: backslash escapes would show, and a quote or a backtick
could end a label or the block. Labels from a spec (the metric name) keep only a safe
set of characters.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import Decimal

from gate.reconcile.quality import ChartMetric
from gate.reconcile.reconciler import CurvePoint

STEPS = 24
_UNSAFE = re.compile(r"[^A-Za-z0-9 _./%()*+-]")


def label(text: str, limit: int = 60) -> str:
    """Text safe inside a Mermaid quoted label: other characters become ``_``."""
    return _UNSAFE.sub("_", text)[:limit]


def resample(curve: Sequence[CurvePoint], steps: int = STEPS) -> list[tuple[Decimal, float | None]]:
    """The best value by each of ``steps`` equal steps of spend, ending at the total."""
    if not curve or curve[-1].cost <= 0:
        return []
    total = curve[-1].cost
    sampled: list[tuple[Decimal, float | None]] = []
    index = 0
    best: float | None = None
    for step in range(1, steps + 1):
        spend = total * step / steps
        while index < len(curve) and curve[index].cost <= spend:
            best = curve[index].best
            index += 1
        sampled.append((spend, best))
    return sampled


def xychart(curve: Sequence[CurvePoint], chart: ChartMetric, currency: str) -> str:
    """The fenced Mermaid block, or ``""`` when no qualified model has a value to plot."""
    sampled = resample(curve)
    values = [v for _, v in sampled if v is not None]
    if not values:
        return ""
    marks = [*values, *([chart.threshold] if chart.threshold is not None else [])]
    low, high = _axis(min(marks), max(marks))
    floor = low if chart.mode == "max" else high  # "no model yet" sits at the worst end
    line = [floor if v is None else v for _, v in sampled]
    name = label(chart.metric)
    rows = [
        "```mermaid",
        "xychart-beta",
        f'    title "Best {name} against cumulative cost"',
        f'    x-axis "cumulative cost ({label(currency)})" 0 --> {_num(float(sampled[-1][0]))}',
        f'    y-axis "{name}" {_num(low)} --> {_num(high)}',
        f"    line [{', '.join(_num(v) for v in line)}]",
    ]
    if chart.threshold is not None:
        rows.append(f"    line [{', '.join(_num(chart.threshold) for _ in line)}]")
    rows.append("```")
    return "\n".join(rows)


def _axis(low: float, high: float) -> tuple[float, float]:
    pad = (high - low) * 0.05 or abs(high) * 0.05 or 1.0
    return low - pad, high + pad


def _num(value: float) -> str:
    """Four significant digits, never in exponent notation (Mermaid reads plain decimals)."""
    if value == 0 or not math.isfinite(value):
        return "0"
    places = max(0, 3 - math.floor(math.log10(abs(value))))
    text = f"{value:.{places}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
