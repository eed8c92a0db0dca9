"""JSON report of a reconciliation: a ``schema_version``, stable order, exact decimal strings."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gate.reconcile.actuals import RunResult
from gate.reconcile.reconciler import ReconcileReport, Reconciliation, TrialRetries
from gate.reconcile.waste import Variance, Waste
from gate.reporters import indented_json

SCHEMA_VERSION = "1"


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
            "per_gpu_hour": str(plan.quote.per_gpu_hour),
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
            "saved": str(result.guard_saved),
            "stops": [_stop(r) for r in result.guard_stops],
        },
        "variance": _variance(result.variance),
        "quality_curve": {
            "metric": result.chart.metric,
            "mode": result.chart.mode,
            "best_reached_at_cost": _dec(result.best_at),
            "points": [{"cost": str(p.cost), "best": p.best} for p in result.curve],
        },
        "retries": [_retry(t) for t in result.retries],
        "runs": [_run(r) for r in result.runs],
        "notes": list(result.notes),
        "ledger": {"record_id": report.record_id, "not_recorded": report.not_recorded},
        "verdict": {
            "passed": result.verdict.passed,
            "provisional": result.verdict.provisional,
            "reasons": list(result.verdict.reasons),
            "exit_code": result.verdict.exit_code,
        },
    }
    return indented_json.dumps(document) + "\n"


def _dec(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def _totals(result: Reconciliation) -> dict[str, Any]:
    first = result.first_qualified
    return {
        "runs": len(result.runs),
        "statuses": {s.value: result.count(s) for s in sorted({r.status for r in result.runs})},
        "running": result.running,
        "gpu_hours": str(result.gpu_hours),
        "cost": str(result.cost),
        "qualified": result.qualified,
        "cost_per_qualified_model": _dec(result.cost_per_qualified),
        "first_qualified_run": first.run_id if first else None,
        "hours_to_first_qualified_model": _dec(result.hours_to_first_qualified),
        "effective_training_ratio": _dec(result.effective_ratio),
        "runs_with_phases": result.phased_runs,
        "utilization": _dec(result.utilization),
        "utilization_weighted_gpu_hours": _dec(result.utilization_gpu_hours),
        "runs_with_utilization": result.utilization_runs,
        "trials": result.trials,
    }


def _waste(w: Waste) -> dict[str, Any]:
    return {
        "kind": w.kind.value,
        "title": w.title,
        "measured": w.measured,
        "upper_bound": w.upper_bound,
        "cost": str(w.cost),
        "gpu_hours": str(w.gpu_hours),
        "runs": w.runs,
        "detail": w.detail,
        "advice": w.advice,
    }


def _variance(v: Variance) -> dict[str, Any]:
    return {
        "currency": v.currency,
        "actual": str(v.actual),
        "actual_gpu_hours": str(v.actual_gpu_hours),
        "expected": str(v.expected),
        "expected_gpu_hours": str(v.expected_gpu_hours),
        "worst": str(v.worst),
        "worst_gpu_hours": str(v.worst_gpu_hours),
        "approved": _dec(v.approved),
        "approval_id": v.approval_id,
        "reference": v.reference_name,
        "tolerance": str(v.tolerance),
        "limit": str(v.limit),
        "over": v.over,
    }


def _retry(t: TrialRetries) -> dict[str, Any]:
    return {
        "trial": t.trial,
        "retry_cost": str(t.retry_cost),
        "attempts": [
            {
                "run_id": a.run_id,
                "attempt": a.attempt,
                "status": a.status.value,
                "cost": str(a.cost),
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
        "saved": str(stop.saved),
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
        "held_hours": str(r.held_hours),
        "gpu_hours": str(r.gpu_hours),
        "cost": str(r.cost),
        "phases_hours": None
        if r.phases is None
        else {
            "setup": str(r.phases.setup),
            "training": str(r.phases.training),
            "evaluation": str(r.phases.evaluation),
            "idle": str(r.phases.idle_tail),
        },
        "qualified": r.qualified,
        "gate_failures": list(r.gate_failures),
        "epochs": r.epochs,
        "plateau_epoch": r.plateau,
        "epochs_after_plateau": r.epochs_after_plateau,
        "plateau_cost": str(r.plateau_cost),
        "utilization": _dec(r.utilization),
        "quality": r.quality,
        "notes": list(r.notes),
    }
