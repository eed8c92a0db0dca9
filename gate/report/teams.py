"""Each team's figures over the period: spend, forecast, return, waste, accuracy (pure).

- *forecast*: a month already over counts its actual; the month the clock is in counts
  its actual ÷ the share of the month gone (the current pace);
- *variance*: each spec version's actual over its runs that started in the period (all
  ended) against the estimate its newest approval recorded by the period's end, the
  spec's own estimate where none was approved, scored as the backtest scores
  (:func:`gate.calibrate.backtest.accuracy`). An approval written after the period is not
  what its runs were approved at (:func:`gate.report.commitments.commitments` cuts it).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal

from gate.calibrate.backtest import accuracy
from gate.reconcile.reconciler import Reconciliation
from gate.reconcile.waste import WasteKind
from gate.report.commitments import Commitments
from gate.report.model import TeamRow, WasteSplit
from gate.report.period import Period
from gate.report.runs import ExperimentMonth


def waste_split(result: Reconciliation) -> WasteSplit:
    """Reconcile's waste of one group, by kind."""
    cost = {w.kind: w.cost if w.measured else None for w in result.waste}
    return WasteSplit(
        cost.get(WasteKind.FAILED) or Decimal(0),
        cost.get(WasteKind.PLATEAU),
        cost.get(WasteKind.IDLE),
    )


def team_rows(
    current: Sequence[ExperimentMonth],
    found: Commitments,
    budgets: Mapping[str, Decimal | None],
    period: Period,
    now: dt.datetime,
    wanted: Callable[[str], bool],
) -> tuple[TeamRow, ...]:
    """One row per team with runs, approvals or a monthly budget (and ``wanted``), by name.

    A team with a budget has its row at 0 spent in a month it spent nothing: the table is
    what each budget came to.
    """
    by_team: dict[str, list[ExperimentMonth]] = defaultdict(list)
    for group in current:
        by_team[group.priced.team].append(group)
    budgeted = (team for team, budget in budgets.items() if budget is not None)
    names = {*by_team, *found.approved, *found.launched, *budgeted}
    rows = []
    for team in sorted(t for t in names if wanted(t)):
        groups = by_team.get(team, [])
        cases = _cases(groups, found)
        budget = budgets.get(team)
        rows.append(
            TeamRow(
                team=team,
                budget=None if budget is None else budget * len(period.months),
                approved=found.approved.get(team, Decimal(0)),
                launched=found.launched.get(team, Decimal(0)) if found.launches_recorded else None,
                actual=sum((g.result.cost for g in groups), Decimal(0)),
                forecast=_forecast(groups, period, now),
                gpu_hours=sum((g.result.gpu_hours for g in groups), Decimal(0)),
                runs=sum(len(g.result.runs) for g in groups),
                experiments=len({(g.priced.spec, g.fingerprint) for g in groups}),
                qualified=sum(g.result.qualified for g in groups),
                waste=sum((waste_split(g.result) for g in groups), WasteSplit()),
                guard_saved=sum((g.result.guard_saved for g in groups), Decimal(0)),
                accuracy=accuracy(cases),
                cases=len(cases),
                all_failed=_all_failed(groups),
            )
        )
    return tuple(rows)


def _all_failed(groups: list[ExperimentMonth]) -> bool:
    """It ran, and every run failed or was killed."""
    statuses = [r.status for g in groups for r in g.result.runs]
    return bool(statuses) and all(status.failed for status in statuses)


def _forecast(groups: list[ExperimentMonth], period: Period, now: dt.datetime) -> Decimal:
    """Months over count their actual; the month ``now`` is in, its actual at the pace so far."""
    total = Decimal(0)
    for group in groups:
        month = group.month
        if now >= month.end:
            total += group.result.cost
        elif now > month.start:
            gone = Decimal((now - month.start) // dt.timedelta(seconds=1))
            length = Decimal((month.end - month.start) // dt.timedelta(seconds=1))
            total += group.result.cost * length / gone
    return total


Case = tuple[Decimal, tuple[Decimal, Decimal]]


def _cases(groups: list[ExperimentMonth], found: Commitments) -> list[Case]:
    """Per spec version with every run ended: (actual, (expected, worst)) as approved."""
    actual: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    estimate: dict[tuple[str, str], tuple[Decimal, Decimal]] = {}
    running: set[tuple[str, str]] = set()
    for group in groups:
        key = (group.priced.spec, group.fingerprint)
        result = group.result
        actual[key] += result.cost
        if result.running:
            running.add(key)
        approval = found.newest_approval.get(group.fingerprint)
        if approval is not None and approval.worst_cost is not None:
            expected = approval.expected_cost
            estimate[key] = (
                approval.worst_cost if expected is None else expected,
                approval.worst_cost,
            )
        else:
            est = group.priced.plan.estimate
            estimate.setdefault(key, (est.expected.cost, est.worst.cost))
    return [(cost, estimate[key]) for key, cost in sorted(actual.items()) if key not in running]
