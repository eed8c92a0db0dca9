"""The month's team report from priced runs and the ledger's commitments (pure).

Every figure is a sum of reconcile's own (:class:`gate.reconcile.reconciler.Reconciliation`
per spec version and month): cost, GPU-hours, qualified models, waste by kind, guard
stops. On top of them:

- *cost per qualified model* of a team or a model label is all its spend (failed and
  unqualified runs included) ÷ its qualified models, as for one experiment;
- each team's forecast and the variance of its estimates (:mod:`gate.report.teams`);
- *spot net saving* (DOMAIN.md §2): the finished spot runs' GPU-hours at the on-demand
  price of the accelerator their spec priced (not the one a run tagged), less what they
  cost on spot, less the cost of spot runs that were preempted
  (killed, not by the guard) — the recompute; extra operations are not measured;
- rankings: teams by cost per qualified model and by waste share (failed and post-plateau
  waste ÷ actual; idle time is an upper bound that overlaps the plateau, so it is shown,
  not ranked).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gate.estimate.model import SpotComparison
from gate.ledger.records import LedgerRecord
from gate.reconcile.actuals import RunStatus
from gate.reconcile.quality import Monitor
from gate.reconcile.waste import WasteKind, failed_waste, idle_waste, plateau_waste
from gate.report.commitments import Commitments, ledger_notes, team_of
from gate.report.model import (
    ApprovalRow,
    ExperimentRow,
    GuardSummary,
    ModelRow,
    MonthFigure,
    MonthReport,
    Ranking,
    RevokedRow,
    SpotRow,
    TeamRow,
    WasteRow,
    WasteSplit,
)
from gate.report.period import Month, Period
from gate.report.runs import ExperimentMonth, RunLine, Unpriced, run_notes
from gate.report.teams import team_rows, waste_split
from gate.spec.trial import Capacity
from gate.words import counted, listed

COSTLIEST = 10
NO_MODEL = "(no model label)"
TITLES = {
    w.kind: w.title
    for w in (failed_waste([], 0, 0), plateau_waste([], Monitor("")), idle_waste([]))
}
"""Reconcile's own title of each kind of waste, for a period in which none was found."""


@dataclass(frozen=True, slots=True)
class ReportInputs:
    """What the report is computed from; the command reads them, once."""

    period: Period
    now: dt.datetime
    currency: str
    where: str
    experiments: Sequence[ExperimentMonth]
    commitments: Commitments
    budgets: Mapping[str, Decimal | None]
    """Each team's monthly budget (``None``: the policy sets none, or not per team)."""
    unpriced: Sequence[Unpriced] = ()
    team_filter: str | None = None
    needs_approval: Mapping[str, bool | None] | None = None
    """Per approved fingerprint, whether the policy's triggers ask for an approval."""
    notes: Sequence[str] = ()
    version: str = ""


def build_report(given: ReportInputs) -> MonthReport:
    """The report of ``given.period``."""
    period = given.period
    window = [e for e in given.experiments if _wanted(given, e.priced.team)]
    kept = [e for e in window if e.priced.currency == given.currency]
    current = [e for e in kept if e.month in period.months]
    teams = team_rows(
        current,
        given.commitments,
        given.budgets,
        period,
        given.now,
        lambda team: _wanted(given, team),
    )
    lines = sorted(
        (line for e in current for line in e.lines),
        key=lambda line: (line.result.start or given.now, line.result.run_id),
    )
    return MonthReport(
        period=period,
        generated_at=given.now,
        currency=given.currency,
        where=given.where,
        teams=teams,
        models=_model_rows(kept, period),
        waste=_waste_rows(current),
        guard=_guard(current),
        costliest=tuple(_experiments(current)[:COSTLIEST]),
        spot=_spot(lines),
        approvals=_approvals(given, kept),
        revoked=_revoked(given),
        rankings=_rankings(teams),
        lines=tuple(lines),
        unpriced=tuple(u for u in given.unpriced if _unpriced_wanted(given, u)),
        notes=tuple(_notes(given, window, current)),
        version=given.version,
        team_filter=given.team_filter,
    )


def _wanted(given: ReportInputs, team: str) -> bool:
    return given.team_filter is None or team == given.team_filter


def _unpriced_wanted(given: ReportInputs, unpriced: Unpriced) -> bool:
    return given.team_filter is None or given.team_filter in unpriced.teams


def _model_rows(kept: list[ExperimentMonth], period: Period) -> tuple[ModelRow, ...]:
    groups: dict[tuple[str, str], list[ExperimentMonth]] = defaultdict(list)
    for group in kept:
        groups[(group.priced.team, group.priced.model or NO_MODEL)].append(group)
    rows = []
    for (team, model), members in sorted(groups.items()):
        now = [g for g in members if g.month in period.months]
        rows.append(
            ModelRow(
                team=team,
                model=model,
                gpu_hours=sum((g.result.gpu_hours for g in now), Decimal(0)),
                actual=sum((g.result.cost for g in now), Decimal(0)),
                qualified=sum(g.result.qualified for g in now),
                trend=tuple(_month_figure(month, members) for month in period.window),
            )
        )
    return tuple(row for row in rows if row.actual or any(f.cost for f in row.trend))


def _month_figure(month: Month, members: list[ExperimentMonth]) -> MonthFigure:
    those = [g.result for g in members if g.month == month]
    return MonthFigure(
        month,
        sum((r.cost for r in those), Decimal(0)),
        sum((r.gpu_hours for r in those), Decimal(0)),
        sum(r.qualified for r in those),
    )


def _waste_rows(current: list[ExperimentMonth]) -> tuple[WasteRow, ...]:
    rows = []
    for kind in WasteKind:
        found = [w for g in current for w in g.result.waste if w.kind is kind]
        title = found[0].title if found else TITLES[kind]
        rows.append(
            WasteRow(
                kind,
                title,
                sum((w.cost for w in found), Decimal(0)),
                sum((w.gpu_hours for w in found), Decimal(0)),
                sum(w.runs for w in found),
                upper_bound=kind is WasteKind.IDLE,
                measured=not found or any(w.measured for w in found),
            )
        )
    return tuple(rows)


def _guard(current: list[ExperimentMonth]) -> GuardSummary:
    stopped = [r for g in current for r in g.result.guard_stops]
    return GuardSummary(
        len(stopped),
        sum((r.cost for r in stopped), Decimal(0)),
        sum((g.result.guard_saved for g in current), Decimal(0)),
    )


def _experiments(current: list[ExperimentMonth]) -> list[ExperimentRow]:
    merged: dict[tuple[str, str], list[ExperimentMonth]] = defaultdict(list)
    for group in current:
        merged[(group.priced.spec, group.fingerprint)].append(group)
    rows = []
    for (spec, fingerprint), groups in merged.items():
        priced = groups[0].priced
        rows.append(
            ExperimentRow(
                experiment=priced.experiment,
                team=priced.team,
                model=priced.model or NO_MODEL,
                spec=spec,
                fingerprint=fingerprint,
                runs=sum(len(g.result.runs) for g in groups),
                cost=sum((g.result.cost for g in groups), Decimal(0)),
                qualified=sum(g.result.qualified for g in groups),
                waste=sum((waste_split(g.result) for g in groups), WasteSplit()),
                guard_saved=sum((g.result.guard_saved for g in groups), Decimal(0)),
            )
        )
    return sorted(rows, key=lambda r: (-r.cost, r.experiment, r.spec, r.fingerprint))


def _spot(lines: list[RunLine]) -> SpotRow:
    on_demand = spot = recompute = hours = Decimal(0)
    runs = preempted = unpriced = 0
    for line in lines:
        if line.capacity != Capacity.SPOT.value:
            continue
        result = line.result
        plan = line.priced.plan
        # NOTE: against what the spec priced, not the run's own tag: an H100 spot run on an
        # L4 on-demand spec cost more than its spec, so it saved nothing.
        priced_as = plan.spec.resources.accelerator
        price = plan.on_demand or (plan.requote and plan.requote(priced_as, Capacity.ON_DEMAND))
        if price is None:
            unpriced += 1
            continue
        runs += 1
        hours += result.gpu_hours
        if result.status is RunStatus.KILLED and result.guard_stop is None:
            preempted += 1
            recompute += result.cost
        else:
            spot += result.cost
            on_demand += result.gpu_hours * price.per_gpu_hour
    return SpotRow(
        runs, preempted, hours, SpotComparison(on_demand, spot, recompute, Decimal(0)), unpriced
    )


def _approvals(given: ReportInputs, kept: list[ExperimentMonth]) -> tuple[ApprovalRow, ...]:
    """Each approval of the period, and the runs it paid for.

    Those of its version that started from its time until the next approval of the same
    version (which pays for what follows), so two rows never count one run.
    """
    by_fingerprint: dict[str, list[RunLine]] = defaultdict(list)
    for group in kept:
        by_fingerprint[group.fingerprint].extend(group.lines)
    needs = given.needs_approval or {}
    rows = []
    for record, until in _paid_until(given.commitments.approvals):
        if not _wanted(given, team_of(record)):
            continue
        paid = [
            line.result
            for line in by_fingerprint.get(record.fingerprint, [])
            if line.result.start is not None
            and record.recorded_at <= line.result.start
            and (until is None or line.result.start < until)
        ]
        rows.append(
            ApprovalRow(
                **_approved(record),
                expected=record.expected_cost,
                actual=sum((r.cost for r in paid), Decimal(0)),
                runs=len(paid),
                over_triggers=needs.get(record.fingerprint),
            )
        )
    return tuple(sorted(rows, key=lambda r: (r.team, r.recorded_at, r.spec)))


def _approved(record: LedgerRecord) -> dict[str, Any]:
    """What every approval row says of its record (:class:`gate.report.model.Approved`)."""
    return {
        "team": team_of(record),
        "experiment": record.experiment,
        "spec": record.spec,
        "fingerprint": record.fingerprint,
        "by": record.by or "",
        "source": record.source.value,
        "recorded_at": record.recorded_at,
        "approved": record.worst_cost or Decimal(0),
    }


def _revoked(given: ReportInputs) -> tuple[RevokedRow, ...]:
    """The period's revoked approvals, each with who revoked it when."""
    found = given.commitments
    rows = [
        RevokedRow(
            **_approved(record),
            revoked_by=found.revocations[record.record_id or ""].by or "",
            revoked_at=found.revocations[record.record_id or ""].recorded_at,
        )
        for record in found.revoked_approvals
        if _wanted(given, team_of(record))
    ]
    return tuple(sorted(rows, key=lambda r: (r.team, r.recorded_at, r.spec)))


def _paid_until(
    approvals: Sequence[LedgerRecord],
) -> list[tuple[LedgerRecord, dt.datetime | None]]:
    """Each approval (in record order) with the time the next one of its version came.

    NOTE: by version, not path: an older version's runs after a newer version's approval
    are still the older approval's (the gate clears them with it), not in no row at all.
    """
    until: list[tuple[LedgerRecord, dt.datetime | None]] = []
    following: dict[tuple[str, str], dt.datetime] = {}
    for record in reversed(approvals):
        version = (record.spec, record.fingerprint)
        until.append((record, following.get(version)))
        following[version] = record.recorded_at
    return until[::-1]


def _rankings(teams: tuple[TeamRow, ...]) -> tuple[Ranking, ...]:
    def ranked(by: str, figure: dict[str, Decimal | None]) -> Ranking:
        order = sorted(figure, key=lambda t: (figure[t] is None, figure[t] or 0, t))
        return Ranking(by, tuple((team, figure[team]) for team in order))

    spenders = [t for t in teams if t.runs]  # NOTE: runs priced at 0 rank too
    return (
        ranked("cost per qualified model", {t.team: t.cost_per_qualified for t in spenders}),
        ranked("waste share", {t.team: t.waste_share for t in spenders}),
    )


def _notes(
    given: ReportInputs,
    window: list[ExperimentMonth],
    current: list[ExperimentMonth],
) -> list[str]:
    notes = list(given.notes)
    notes.extend(
        f"{counted(unpriced.runs, 'run')} not priced: {unpriced.reason} "
        f"({unpriced.gpu_hours:.2f} GPU-h; teams {listed(unpriced.teams)})"
        for unpriced in given.unpriced
        if _unpriced_wanted(given, unpriced)
    )
    notes.extend(_currency_notes(given, window))
    notes.extend(ledger_notes(given.commitments, given.currency, given.team_filter))
    notes.extend(run_notes(current, given.now))
    if any(given.now < month.end for month in given.period.months):
        notes.append("the period is not over: forecast is each month's actual at the pace so far")
    return notes


def _currency_notes(given: ReportInputs, window: list[ExperimentMonth]) -> list[str]:
    """Runs priced in another currency, the period's apart from the trend months' before it."""
    months = given.period.months
    notes = []
    for where, left_out, groups in (
        ("of the period", "every figure", [g for g in window if g.month in months]),
        ("of the trend months", "the trend", [g for g in window if g.month not in months]),
    ):
        other = [g for g in groups if g.priced.currency != given.currency]
        if other:
            currencies = ", ".join(sorted({g.priced.currency for g in other}))
            runs = sum(len(g.result.runs) for g in other)
            notes.append(
                f"{counted(runs, 'run')} {where} priced in {currencies}, not "
                f"{given.currency}: left out of {left_out}"
            )
    return notes
