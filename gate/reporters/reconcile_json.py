"""JSON report of a reconciliation: a ``schema_version``, stable order, decimal strings.

Figures are decimal strings at ``check``'s places (:mod:`gate.reporters.json`): money to
the cent, hours and GPU-hours to 4 decimals, the price per GPU-hour to 5, ratios (GPU
utilization, the effective-training ratio) to 6; a figure below 1 keeps three significant
digits at least, as the text report does (a seconds-long run is not 0.00). Within a
schema version keys are only added, never renamed, removed or given another meaning.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gate.money import fixed
from gate.reconcile.actuals import RunResult
from gate.reconcile.reconciler import OtherVersions, ReconcileReport, Reconciliation, TrialRetries
from gate.reconcile.waste import Variance, Waste
from gate.reporters import indented_json

SCHEMA_VERSION = "2"
"""2: figures at fixed places (money 2, hours 4, price 5, ratios 6; 1 wrote every digit
it had); ``quality_curve`` counts qualified models only (1 counted every finished run's
metric); ``other_versions`` added, and its note is in ``notes``."""
MONEY, HOURS, PRICE, RATIO = 2, 4, 5, 6


def render(report: ReconcileReport) -> str:
    """The reconciliation as indented JSON with a trailing newline."""
    result = report.result
    plan = result.plan
    document = {
        "schema_version": SCHEMA_VERSION,
        "kind": "reconciliation",
        "tool": {"name": "budget-gate", "version": report.version},
        "spec": {
            "file": report.file,
            "name": report.name,
            "policy": report.policy,
            "fingerprint": plan.fingerprint,
        },
        "mlflow": {
            "experiment": report.experiment,
            "tracking_uri": report.where,
            "all_versions": report.all_versions,
        },
        "price": {
            "per_gpu_hour": _fixed(plan.quote.per_gpu_hour, PRICE),
            "currency": plan.quote.currency,
            "accelerator": plan.quote.accelerator,
            "capacity": plan.quote.capacity.value,
            "basis": plan.quote.basis,
        },
        "monitor": {
            "metric": plan.monitor.metric,
            "mode": plan.monitor.mode,
            "min_delta": plan.monitor.min_delta,
            "source": plan.monitor.source,
            "accepted_return": plan.monitor.threshold.describe(plan.quote.currency),
        },
        "totals": _totals(result),
        "waste": [_waste(w) for w in result.waste],
        "guard": {
            "saved": _fixed(result.guard_saved, MONEY),
            "stops": [_stop(r) for r in result.guard_stops],
        },
        "variance": _variance(result.variance),
        "quality_curve": {
            "metric": result.chart.metric,
            "mode": result.chart.mode,
            "qualified_only": True,
            "best_reached_at_cost": _fixed(result.best_at, MONEY),
            "points": [{"cost": _fixed(p.cost, MONEY), "best": p.best} for p in result.curve],
        },
        "retries": [_retry(t) for t in result.retries],
        "runs": [_run(r) for r in result.runs],
        "other_versions": _others(report.other_versions),
        "notes": list(report.notes),
        "ledger": {"record_id": report.record_id, "not_recorded": report.not_recorded},
        "verdict": {
            "passed": result.verdict.passed,
            "provisional": result.verdict.provisional,
            "reasons": list(result.verdict.reasons),
            "exit_code": result.verdict.exit_code,
        },
    }
    return indented_json.dumps(document) + "\n"


def _fixed(value: Decimal | None, places: int) -> str | None:
    """``value`` as a decimal string at ``places``; below 1, three significant digits at least.

    Runs can be seconds long: a run's 0.000855 USD and 0.000700 GPU-hours would read 0.00
    and 0.0007 (as the text report, :func:`gate.money.format_small`). ``None`` stays ``None``.
    """
    if value is None:
        return None
    if value and value.is_finite() and abs(value) < 1:
        places = max(places, 2 - value.adjusted())
    return str(fixed(value, places))


def _others(others: OtherVersions | None) -> dict[str, Any] | None:
    if others is None:
        return None
    return {
        "runs": others.runs,
        "versions": others.versions,
        "untagged": others.untagged,
        "gpu_hours": _fixed(others.gpu_hours, HOURS),
        "note": others.note,
    }


def _totals(result: Reconciliation) -> dict[str, Any]:
    first = result.first_qualified
    return {
        "runs": len(result.runs),
        "statuses": {s.value: result.count(s) for s in sorted({r.status for r in result.runs})},
        "running": result.running,
        "gpu_hours": _fixed(result.gpu_hours, HOURS),
        "cost": _fixed(result.cost, MONEY),
        "qualified": result.qualified,
        "cost_per_qualified_model": _fixed(result.cost_per_qualified, MONEY),
        "first_qualified_run": first.run_id if first else None,
        "hours_to_first_qualified_model": _fixed(result.hours_to_first_qualified, HOURS),
        "effective_training_ratio": _fixed(result.effective_ratio, RATIO),
        "runs_with_phases": result.phased_runs,
        "utilization": _fixed(result.utilization, RATIO),
        "utilization_weighted_gpu_hours": _fixed(result.utilization_gpu_hours, HOURS),
        "runs_with_utilization": result.utilization_runs,
        "trials": result.trials,
    }


def _waste(w: Waste) -> dict[str, Any]:
    return {
        "kind": w.kind.value,
        "title": w.title,
        "measured": w.measured,
        "upper_bound": w.upper_bound,
        "cost": _fixed(w.cost, MONEY),
        "gpu_hours": _fixed(w.gpu_hours, HOURS),
        "runs": w.runs,
        "detail": w.detail,
        "advice": w.advice,
    }


def _variance(v: Variance) -> dict[str, Any]:
    return {
        "currency": v.currency,
        "actual": _fixed(v.actual, MONEY),
        "actual_gpu_hours": _fixed(v.actual_gpu_hours, HOURS),
        "expected": _fixed(v.expected, MONEY),
        "expected_gpu_hours": _fixed(v.expected_gpu_hours, HOURS),
        "worst": _fixed(v.worst, MONEY),
        "worst_gpu_hours": _fixed(v.worst_gpu_hours, HOURS),
        "approved": _fixed(v.approved, MONEY),
        "approval_id": v.approval_id,
        "reference": v.reference_name,
        "tolerance": str(v.tolerance),
        "limit": _fixed(v.limit, MONEY),
        "over": v.over,
    }


def _retry(t: TrialRetries) -> dict[str, Any]:
    return {
        "trial": t.trial,
        "retry_cost": _fixed(t.retry_cost, MONEY),
        "attempts": [
            {
                "run_id": a.run_id,
                "attempt": a.attempt,
                "status": a.status.value,
                "cost": _fixed(a.cost, MONEY),
            }
            for a in t.attempts
        ],
    }


def _stop(r: RunResult) -> dict[str, Any]:
    stop = r.guard_stop
    assert stop is not None
    return {
        "run_id": r.run_id,
        "trial": r.trial,
        "stopped_by": stop.by,
        "kind": stop.kind,
        "reason": stop.reason,
        "spend_at_stop": stop.spend,
        "epoch": stop.epoch,
        "epochs_saved": stop.epochs_saved,
        "saved": _fixed(stop.saved, MONEY),
    }


def _run(r: RunResult) -> dict[str, Any]:
    return {
        "run_id": r.run_id,
        "name": r.name,
        "fingerprint": r.fingerprint,
        "trial": r.trial,
        "attempt": r.attempt,
        "status": r.status.value,
        "start": r.start.isoformat() if r.start else None,
        "end": r.end.isoformat() if r.end else None,
        "gpus": str(r.gpus),
        "held_hours": _fixed(r.held_hours, HOURS),
        "gpu_hours": _fixed(r.gpu_hours, HOURS),
        "cost": _fixed(r.cost, MONEY),
        "phases_hours": None
        if r.phases is None
        else {
            "setup": _fixed(r.phases.setup, HOURS),
            "training": _fixed(r.phases.training, HOURS),
            "evaluation": _fixed(r.phases.evaluation, HOURS),
            "idle": _fixed(r.phases.idle_tail, HOURS),
        },
        "qualified": r.qualified,
        "gate_failures": list(r.gate_failures),
        "epochs": r.epochs,
        "plateau_epoch": r.plateau,
        "epochs_after_plateau": r.epochs_after_plateau,
        "plateau_cost": _fixed(r.plateau_cost, MONEY),
        "utilization": _fixed(r.utilization, RATIO),
        "quality": r.quality,
        "notes": list(r.notes),
    }
