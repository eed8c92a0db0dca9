"""The monthly report's charts as inline SVG, drawn with matplotlib (imported when called).

Three charts: spend against budget per team, cost per qualified model over the months
per team and model label, and waste by kind. Each is an ``<svg>`` element with its text
as text (``svg.fonttype: none``), no external reference, and stable ids (a fixed hash
salt, no date), so the same report draws the same bytes. matplotlib escapes the labels
(team names, model labels come from specs) as XML text.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gate.errors import MissingExtra
from gate.report.model import MonthReport
from gate.reporters.markup import without_bidi

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_PROLOGUE = re.compile(r"^.*?(?=<svg)", re.DOTALL)
_STYLE: dict[Any, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "budget-gate",
    "text.parse_math": False,  # a label is text: "$" in a name must not start mathtext
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
_LABEL = 28
"""Characters of a team or model name kept on an axis."""


def charts(report: MonthReport) -> dict[str, str]:
    """The charts that have data, by id: ``budget``, ``cost-per-qualified``, ``waste``."""
    drawn: dict[str, str] = {}
    with _style():
        if report.teams:
            drawn["budget"] = _svg(_budget(report))
        if any(f.qualified for m in report.models for f in m.trend):
            drawn["cost-per-qualified"] = _svg(_per_qualified(report))
        if report.actual:
            drawn["waste"] = _svg(_waste(report))
    return drawn


@contextmanager
def _style() -> Iterator[None]:
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise MissingExtra(
            "the HTML report's charts need matplotlib, which is not installed",
            hint="pip install 'budget-gate[report]'",
        ) from None
    with matplotlib.rc_context(_STYLE):
        yield


def _figure(width: float, height: float) -> tuple[Figure, Any]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.add_subplot()


def _svg(figure: Figure) -> str:
    out = io.StringIO()
    figure.savefig(out, format="svg", metadata={"Date": None, "Creator": "budget-gate"})
    return _PROLOGUE.sub("", out.getvalue(), count=1).strip()


def _short(text: str) -> str:
    """A label cut to fit, its bidirectional overrides shown as U+FFFD (not reversing it)."""
    text = without_bidi(text)
    return text if len(text) <= _LABEL else text[: _LABEL - 1] + "…"


def _budget(report: MonthReport) -> Figure:
    teams = report.teams
    figure, axes = _figure(7.5, 0.45 * len(teams) + 1.6)
    names = [_short(t.team) for t in teams]
    rows = range(len(teams))
    axes.barh([r + 0.2 for r in rows], [float(t.actual) for t in teams], 0.4, label="actual")
    axes.barh([r - 0.2 for r in rows], [float(t.approved) for t in teams], 0.4, label="approved")
    budgets = [(r, float(t.budget)) for r, t in zip(rows, teams, strict=True) if t.budget]
    if budgets:
        axes.scatter(
            [b for _, b in budgets], [r for r, _ in budgets], marker="|", s=400, color="black",
            label="budget", zorder=3,
        )  # fmt: skip
    axes.set_yticks(list(rows), names)
    axes.invert_yaxis()
    axes.set_xlabel(report.currency)
    axes.set_title(f"Spend against budget, {report.period}")
    axes.legend(loc="lower right")
    return figure


def _per_qualified(report: MonthReport) -> Figure:
    months = [str(m) for m in report.period.window]
    figure, axes = _figure(7.5, 3.6)
    for model in report.models:
        points = [
            (i, float(f.cost_per_qualified))
            for i, f in enumerate(model.trend)
            if f.cost_per_qualified is not None
        ]
        if points:
            axes.plot(
                [i for i, _ in points],
                [v for _, v in points],
                marker="o",
                label=_short(f"{model.team} / {model.model}"),
            )
    axes.set_xticks(range(len(months)), months)
    axes.set_ylabel(f"{report.currency} per qualified model")
    axes.set_title("Cost per qualified model over the months")
    axes.legend(fontsize=7, loc="best")
    return figure


def _waste(report: MonthReport) -> Figure:
    labels = [w.title.replace(" (upper bound)", " (≤)") for w in report.waste]
    labels.append("Stopped by the guard")
    values = [float(w.cost) for w in report.waste] + [float(report.guard.cost)]
    figure, axes = _figure(7.5, 2.8)
    axes.barh(range(len(values)), values, color=["#c0392b", "#e67e22", "#95a5a6", "#2980b9"])
    axes.set_yticks(range(len(values)), labels)
    axes.invert_yaxis()
    axes.set_xlabel(report.currency)
    axes.set_title(f"Waste by kind, {report.period}")
    return figure
