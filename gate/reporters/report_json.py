"""The monthly report as JSON: a ``schema_version``, stable order, exact decimal strings.

Amounts are the exact decimals the report computed (round them where you show them);
lists keep the report's order (teams and models by name, experiments by cost, rankings by
rank). Runs are not listed: ``--format focus=FILE`` writes one row per run.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

from gate.calibrate.backtest import Accuracy
from gate.report.model import Approved, MonthReport, TeamRow, WasteSplit
from gate.reporters import indented_json

SCHEMA_VERSION = "1"


def render(report: MonthReport) -> str:
    """The report as indented JSON with a trailing newline."""
    document = {
        "schema_version": SCHEMA_VERSION,
        "kind": "monthly-report",
        "tool": {"name": "budget-gate", "version": report.version},
        "period": {
            "months": [str(m) for m in report.period.months],
            "trend_months": [str(m) for m in report.period.window],
            "start": report.period.start.isoformat(),
            "end": report.period.end.isoformat(),
        },
        "generated_at": report.generated_at.isoformat(),
        "team": report.team_filter,
        "currency": report.currency,
        "tracking_uri": report.where,
        "totals": {
            "actual": _num(report.actual),
            "gpu_hours": _num(report.gpu_hours),
            "runs": len(report.lines),
            "qualified": report.qualified,
        },
        "teams": [_team(t) for t in report.teams],
        "models": _models(report),
        "waste": _waste_rows(report),
        "guard": {
            "runs": report.guard.runs,
            "cost": _num(report.guard.cost),
            "saved": _num(report.guard.saved),
        },
        "costliest_experiments": _costliest(report),
        "spot": _spot(report),
        "approvals": _approvals(report),
        "revoked_approvals": _revoked(report),
        "rankings": _rankings(report),
        "unpriced": _unpriced(report),
        "notes": list(report.notes),
    }
    return indented_json.dumps(document) + "\n"


def _models(report: MonthReport) -> list[dict[str, Any]]:
    return [
        {
            "team": m.team,
            "model": m.model,
            "gpu_hours": _num(m.gpu_hours),
            "actual": _num(m.actual),
            "qualified": m.qualified,
            "cost_per_qualified": _dec(m.cost_per_qualified),
            "trend": [
                {
                    "month": str(f.month),
                    "cost": _num(f.cost),
                    "gpu_hours": _num(f.gpu_hours),
                    "qualified": f.qualified,
                    "cost_per_qualified": _dec(f.cost_per_qualified),
                }
                for f in m.trend
            ],
        }
        for m in report.models
    ]


def _waste_rows(report: MonthReport) -> list[dict[str, Any]]:
    return [
        {
            "kind": w.kind.value,
            "title": w.title,
            "cost": _num(w.cost),
            "gpu_hours": _num(w.gpu_hours),
            "runs": w.runs,
            "upper_bound": w.upper_bound,
            "measured": w.measured,
        }
        for w in report.waste
    ]


def _costliest(report: MonthReport) -> list[dict[str, Any]]:
    return [
        {
            "experiment": e.experiment,
            "team": e.team,
            "model": e.model,
            "spec": e.spec,
            "fingerprint": e.fingerprint,
            "runs": e.runs,
            "cost": _num(e.cost),
            "qualified": e.qualified,
            "cost_per_qualified": _dec(e.cost_per_qualified),
            "waste": _waste(e.waste),
            "guard_saved": _num(e.guard_saved),
        }
        for e in report.costliest
    ]


def _spot(report: MonthReport) -> dict[str, Any]:
    spot = report.spot
    return {
        "runs": spot.runs,
        "preempted": spot.preempted,
        "gpu_hours": _num(spot.gpu_hours),
        "on_demand_cost": _num(spot.comparison.on_demand_cost),
        "spot_cost": _num(spot.comparison.spot_cost),
        "recompute_cost": _num(spot.comparison.recompute_cost),
        "extra_ops_cost": _num(spot.comparison.extra_ops_cost),
        "net_saving": _num(spot.comparison.net_saving),
        "without_on_demand_price": spot.unpriced,
    }


def _approved(a: Approved) -> dict[str, Any]:
    """What every approval row says of its record, in the order the JSON keeps."""
    return {
        "recorded_at": a.recorded_at.isoformat(),
        "team": a.team,
        "experiment": a.experiment,
        "spec": a.spec,
        "fingerprint": a.fingerprint,
        "by": a.by,
        "source": a.source,
    }


def _approvals(report: MonthReport) -> list[dict[str, Any]]:
    return [
        {
            **_approved(a),
            "over_triggers": a.over_triggers,
            "approved": _num(a.approved),
            "expected": _dec(a.expected),
            "actual": _num(a.actual),
            "runs": a.runs,
        }
        for a in report.approvals
    ]


def _revoked(report: MonthReport) -> list[dict[str, Any]]:
    """Added within schema 1: a new key, every earlier one as it was."""
    return [
        {
            **_approved(r),
            "approved": _num(r.approved),
            "revoked_by": r.revoked_by,
            "revoked_at": r.revoked_at.isoformat(),
        }
        for r in report.revoked
    ]


def _rankings(report: MonthReport) -> list[dict[str, Any]]:
    return [
        {
            "by": ranking.by,
            "teams": [{"team": team, "value": _dec(value)} for team, value in ranking.teams],
        }
        for ranking in report.rankings
    ]


def _unpriced(report: MonthReport) -> list[dict[str, Any]]:
    return [
        {
            "reason": u.reason,
            "runs": u.runs,
            "gpu_hours": _num(u.gpu_hours),
            "teams": list(u.teams),
        }
        for u in report.unpriced
    ]


def _team(team: TeamRow) -> dict[str, Any]:
    return {
        "team": team.team,
        "budget": _dec(team.budget),
        "approved": _num(team.approved),
        "launched": _dec(team.launched),
        "actual": _num(team.actual),
        "forecast": _num(team.forecast),
        "gpu_hours": _num(team.gpu_hours),
        "runs": team.runs,
        "experiments": team.experiments,
        "qualified": team.qualified,
        "cost_per_qualified": _dec(team.cost_per_qualified),
        "waste": _waste(team.waste),
        "waste_share": _dec(team.waste_share),
        "guard_saved": _num(team.guard_saved),
        "estimates": {"cases": team.cases, "accuracy": _accuracy(team.accuracy)},
    }


def _waste(waste: WasteSplit) -> dict[str, str | None]:
    """Each kind's amount; ``null`` where no run logged what it needs (not measured)."""
    return {
        "failed": _num(waste.failed),
        "plateau": _dec(waste.plateau),
        "idle_upper_bound": _dec(waste.idle),
        "total": _num(waste.total),
    }


def _accuracy(found: Accuracy | None) -> dict[str, Any] | None:
    return None if found is None else dataclasses.asdict(found)


def _dec(value: Decimal | None) -> str | None:
    return None if value is None else _num(value)


def _num(value: Decimal) -> str:
    """A decimal string with no exponent (``str`` writes ``1.28E-9`` or ``5E+3``)."""
    return format(value, "f")
