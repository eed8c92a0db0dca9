"""The monthly report as titled tables of plain strings, shared by the text, Markdown and HTML.

Cells are unescaped text: each reporter escapes them for its own format. Money is rounded
to cents here (and only here, with the JSON), in the report's currency.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from gate.calibrate.backtest import Accuracy
from gate.ledger.records import short, when
from gate.money import format_amount
from gate.reconcile.waste import percent
from gate.report.model import MonthReport, TeamRow
from gate.words import counted

NONE = "—"


@dataclass(frozen=True, slots=True)
class Table:
    """A titled table; ``left`` are the columns of text (the others are numbers)."""

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    left: tuple[int, ...] = (0,)
    empty: str = "none"
    """What to say instead of the table when it has no rows."""


def money(amount: Decimal | None) -> str:
    """An amount rounded to cents, or a dash."""
    return NONE if amount is None else format_amount(amount)


def measured(amount: Decimal | None) -> str:
    """A waste amount, or what no run logged the figures for (never shown as 0.00)."""
    return "not measured" if amount is None else format_amount(amount)


def hours(amount: Decimal) -> str:
    """GPU-hours to one decimal."""
    return format_amount(amount, 1)


def share(fraction: Decimal | None) -> str:
    """A fraction as a percentage, or a dash."""
    return NONE if fraction is None else percent(fraction)


def against_budget(amount: Decimal, budget: Decimal | None) -> str:
    """``amount ÷ budget`` as a percentage that never rounds across 100 %.

    1,000.25 of 1,000 is over budget: shown ``> 100 %``, never ``100 %``; just under it,
    ``< 100 %``. Only an amount equal to the budget reads ``100 %``.
    """
    if not budget:
        return NONE
    fraction = amount / budget
    shown = percent(fraction)
    if shown == percent(Decimal(1)) and fraction != 1:
        return "> 100 %" if fraction > 1 else "< 100 %"
    return shown


def headline(report: MonthReport) -> str:
    """One line: the period, who, how much, from where."""
    team = f" for team {report.team_filter}" if report.team_filter else ""
    return (
        f"budget-gate report {report.period}{team}: {counted(len(report.teams), 'team')}, "
        f"{counted(len(report.lines), 'run')}, {format_amount(report.actual)} "
        f"{report.currency} actual, {counted(report.qualified, 'qualified model')} "
        f"(MLflow at {report.where}, {when(report.generated_at)})"
    )


def tables(report: MonthReport) -> list[Table]:
    """Every table of the report, in reading order (revoked approvals only when there are)."""
    found = [
        _budget(report),
        _returns(report),
        _models(report),
        _waste(report),
        _costliest(report),
        _spot(report),
        _approvals(report),
        _revoked(report),
        _ranking(report),
    ]
    return [table for table in found if table is not None]


def _budget(report: MonthReport) -> Table:
    rows = tuple(
        (
            t.team,
            money(t.budget),
            money(t.approved),
            money(t.launched),
            money(t.actual),
            money(t.forecast),
            against_budget(t.forecast, t.budget),
        )
        for t in report.teams
    )
    header = ("team", "budget", "approved", "launched", "actual", "forecast", "forecast ÷ budget")
    return Table(f"Spend against budget ({report.currency})", header, rows)


def _returns(report: MonthReport) -> Table:
    rows = tuple(_return_row(t) for t in report.teams)
    header = (
        "team",
        "GPU-h",
        "runs",
        "experiments",
        "qualified",
        "cost / qualified",
        "waste",
        "waste share",
        "guard saved",
        "estimates: cases",
        "MAPE",
        "bias",
        "worst held",
    )
    return Table(f"Return, waste and the estimates' accuracy ({report.currency})", header, rows)


def _return_row(team: TeamRow) -> tuple[str, ...]:
    return (
        team.team,
        hours(team.gpu_hours),
        f"{team.runs:,}",
        f"{team.experiments:,}",
        f"{team.qualified:,}",
        money(team.cost_per_qualified),
        _at_least(team, money(team.waste.total)),
        _at_least(team, share(team.waste_share)),
        money(team.guard_saved),
        f"{team.cases:,}",
        *_accuracy(team.accuracy),
    )


def _at_least(team: TeamRow, figure: str) -> str:
    """``≥ figure`` where the team's post-plateau waste is not measured (a lower bound)."""
    return f"≥ {figure}" if team.waste_at_least else figure


def _accuracy(found: Accuracy | None) -> tuple[str, str, str]:
    if found is None:
        return NONE, NONE, NONE
    return f"{found.mape:.1%}", f"{found.bias:+.1%}", f"{found.bounded:.0%}"


def _models(report: MonthReport) -> Table:
    window = report.period.window
    rows = tuple(
        (
            m.team,
            m.model,
            hours(m.gpu_hours),
            money(m.actual),
            f"{m.qualified:,}",
            money(m.cost_per_qualified),
            *(money(f.cost_per_qualified) for f in m.trend),
        )
        for m in report.models
    )
    header = (
        "team",
        "model",
        "GPU-h",
        "actual",
        "qualified",
        "cost / qualified",
        *(f"{month}" for month in window),
    )
    return Table(
        f"Cost per qualified model by model label ({report.currency}; the months: cost / "
        "qualified that month)",
        header,
        rows,
        left=(0, 1),
    )


def _waste(report: MonthReport) -> Table:
    actual = report.actual
    rows = [
        (
            w.title,
            money(w.cost),
            hours(w.gpu_hours),
            f"{w.runs:,}",
            share(w.cost / actual if actual else None),
        )
        if w.measured
        else (f"{w.title}: not measured (no run logged it)", NONE, NONE, "0", NONE)
        for w in report.waste
    ]
    guard = report.guard
    rows.append(
        (
            f"Stopped by the guard (cost of the stopped runs; they saved {money(guard.saved)})",
            money(guard.cost),
            NONE,
            f"{guard.runs:,}",
            share(guard.cost / actual if actual else None),
        )
    )
    header = ("kind", "cost", "GPU-h", "runs", "share of actual")
    return Table(f"Waste by kind ({report.currency})", header, tuple(rows))


def _costliest(report: MonthReport) -> Table:
    rows = tuple(
        (
            e.experiment,
            e.team,
            e.model,
            short(e.fingerprint),
            f"{e.runs:,}",
            money(e.cost),
            f"{e.qualified:,}",
            money(e.cost_per_qualified),
            money(e.waste.failed),
            measured(e.waste.plateau),
            measured(e.waste.idle),
            money(e.guard_saved),
        )
        for e in report.costliest
    )
    header = (
        "experiment",
        "team",
        "model",
        "version",
        "runs",
        "cost",
        "qualified",
        "cost / qualified",
        "failed",
        "after plateau",
        "idle (≤)",
        "guard saved",
    )
    most = (
        f"The {counted(len(rows), 'costliest experiment')}" if rows else "The costliest experiments"
    )
    their = "its" if len(rows) == 1 else "their"
    return Table(
        f"{most} and {their} waste ({report.currency})",
        header,
        rows,
        left=(0, 1, 2, 3),
        empty="no experiment ran in the period",
    )


def _spot(report: MonthReport) -> Table:
    spot = report.spot
    c = spot.comparison
    rows: tuple[tuple[str, ...], ...] = ()
    if spot.runs:
        rows = (
            (
                f"{spot.runs:,}",
                f"{spot.preempted:,}",
                hours(spot.gpu_hours),
                money(c.on_demand_cost),
                money(c.spot_cost),
                money(c.recompute_cost),
                money(c.net_saving),
            ),
        )
    header = (
        "spot runs",
        "preempted",
        "GPU-h",
        "on demand would cost",
        "spot cost",
        "recompute",
        "net saving",
    )
    return Table(
        f"Spot against on-demand ({report.currency}; net saving = on-demand − spot − recompute)",
        header,
        rows,
        left=(),
        empty="no spot runs",
    )


def _approvals(report: MonthReport) -> Table:
    rows = tuple(
        (
            when(a.recorded_at),
            a.team,
            a.experiment,
            f"{a.by} ({a.source})",
            {True: "yes", False: "no", None: "unknown"}[a.over_triggers],
            money(a.approved),
            money(a.expected),
            money(a.actual),
            f"{a.runs:,}",
        )
        for a in report.approvals
    )
    header = (
        "recorded",
        "team",
        "experiment",
        "approved by",
        "over the triggers",
        "approved (worst)",
        "expected",
        "actual",
        "runs",
    )
    return Table(
        f"Approvals recorded in the period, and what their runs cost ({report.currency})",
        header,
        rows,
        left=(0, 1, 2, 3, 4),
        empty=_no_approvals(report),
    )


def _no_approvals(report: MonthReport) -> str:
    """Why the approvals table is empty: none recorded, or every one revoked (said, not hidden)."""
    revoked = len(report.revoked)
    if not revoked:
        return "no approvals recorded in the period"
    return (
        f"no approval counts in the period: {counted(revoked, 'approval')} recorded, "
        f"{revoked:,} revoked (listed below)"
    )


def _revoked(report: MonthReport) -> Table | None:
    """The period's revoked approvals: someone's decision, undone, holding no money."""
    if not report.revoked:
        return None
    rows = tuple(
        (
            when(r.recorded_at),
            r.team,
            r.experiment,
            f"{r.by} ({r.source})",
            money(r.approved),
            f"revoked by {r.revoked_by or 'unknown'} on {when(r.revoked_at)}",
        )
        for r in report.revoked
    )
    return Table(
        f"Approvals recorded in the period and revoked, holding nothing ({report.currency})",
        ("recorded", "team", "experiment", "approved by", "approved (worst)", "revoked"),
        rows,
        left=(0, 1, 2, 3, 5),
    )


def _ranking(report: MonthReport) -> Table:
    by_cost, by_waste = report.rankings
    lower = frozenset(t.team for t in report.teams if t.waste_at_least)
    rows = tuple(
        (
            str(rank),
            _ranked(by_cost.teams[rank - 1], money),
            _ranked(by_waste.teams[rank - 1], share, lower),
        )
        for rank in range(1, len(by_cost.teams) + 1)
    )
    return Table(
        "Ranking of the teams (best first; no qualified model ranks last)",
        ("rank", "by cost per qualified model", "by waste share"),
        rows,
        left=(1, 2),
        empty="no team spent anything",
    )


def _ranked(
    entry: tuple[str, Decimal | None],
    show: Callable[[Decimal | None], str],
    lower: frozenset[str] = frozenset(),
) -> str:
    team, figure = entry
    return f"{team} ({'≥ ' if team in lower else ''}{show(figure)})"


def note_lines(report: MonthReport) -> Sequence[str]:
    """The report's notes (fallbacks, runs left out, provisional figures)."""
    return report.notes
