"""JSON report: a ``schema_version``, stable key order, and exact decimals as strings."""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ClassVar

from gate.errors import Location, Problem
from gate.estimate.model import Estimate, Scenario
from gate.evaluation.report import Report, SpecResult
from gate.money import fixed
from gate.policy.findings import Edit, Finding
from gate.reporters import indented_json

if TYPE_CHECKING:  # loaded by the evaluator only when asked for, or for a diff (--base-ref)
    from gate.evaluation.alternatives import Alternative
    from gate.evaluation.diff import ScenarioDiff, SpecDiff
    from gate.formats.model import ImportSummary
    from gate.ledger.approvals import ApprovalCheck
    from gate.ledger.budget import BudgetStatus

SCHEMA_VERSION = "2"
"""2: ``errors`` are objects (message, file, line, col, hint), like findings."""


class JsonReporter:
    """Machine-readable report for scripts and CI; money and hours are decimal strings."""

    name: ClassVar[str] = "json"

    def render(self, report: Report) -> str:
        """Render the report as indented JSON with a trailing newline."""
        return indented_json.dumps(self.document(report)) + "\n"

    def document(self, report: Report) -> dict[str, Any]:
        """The report's JSON document, for a caller that adds its own keys (``budget-gate ci``)."""
        fired = set(report.fired)
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "budget-gate", "version": report.version},
            "outcome": report.outcome.value,
            "exit_code": report.outcome.exit_code,
            "price_catalog": {"source": report.catalog_source, "date": report.catalog_date},
            "results": _results(report),
            "diff": _diffs(report),
            "ledger": _ledger(report),
            "rules": {
                rule_id: {
                    "slug": info.slug,
                    "title": info.title,
                    "default_severity": info.default_severity.value,
                }
                for rule_id, info in sorted(report.rules.items())
                if rule_id in fired
            },
        }


def render_result(result: SpecResult) -> str:
    """One result as the report's ``results`` list holds it, for :attr:`Report.rendered`."""
    return indented_json.dumps(_result(result), depth=2)


def _results(report: Report) -> list[Any]:
    rendered = report.rendered.get(JsonReporter.name)
    if rendered is not None and len(rendered) == len(report.results):
        return [indented_json.Raw(text) for text in rendered]
    return [_result(r) for r in report.results]


def _ledger(report: Report) -> dict[str, Any] | None:
    note = report.ledger
    if note is None:
        return None
    return {
        "where": note.where,
        "signed": note.signed,
        "warning": note.warning,
        "ignored": dict(note.ignored),
        "absent": note.absent,
    }


def _result(result: SpecResult) -> dict[str, Any]:
    document = {
        "file": result.file,
        "name": result.name,
        "policy": result.policy,
        "fingerprint": result.fingerprint,
        "outcome": result.outcome.value,
        "exit_code": result.outcome.exit_code,
        "currency": result.currency,
        "estimate": _estimate(result.estimate) if result.estimate else None,
        "findings": [_finding(f) for f in result.findings],
        "errors": [_error(e, result.file) for e in result.errors],
        "budget": _budget(result.budget) if result.budget else None,
        "approval": _approval(result.approval) if result.approval else None,
        "alternatives": [_alternative(a) for a in result.alternatives],
        "notes": list(result.notes),
    }
    if result.imported is not None:  # only for W&B, Katib, SkyPilot and Hydra files
        document["imported"] = _imported(result.imported)
    return document


def _imported(summary: ImportSummary) -> dict[str, Any]:
    return {
        "format": summary.format.value,
        "fields": [
            {
                "field": row.field,
                "value": row.value,
                "origin": row.source.origin.value,
                "detail": row.source.detail,
                "location": _location(row.source.location),
            }
            for row in summary.fields
        ],
        "notes": list(summary.notes),
    }


def _location(location: Location | None) -> dict[str, Any] | None:
    if location is None:
        return None
    return {"file": location.file, "line": location.line, "col": location.col}


def _budget(b: BudgetStatus) -> dict[str, Any]:
    return {
        "scope": b.scope.kind,
        "key": b.scope.key,
        "month": b.month,
        "currency": b.currency,
        "budget": _fixed(b.budget, 2),
        "spent": _fixed(b.spent, 2),
        "committed": _fixed(b.committed, 2),
        "actual": _fixed(b.actual, 2),
        "remaining": _fixed(b.remaining, 2),
        "warn_at": str(b.warn_at),
        "other_currency_records": b.other_currency,
    }


def _approval(check: ApprovalCheck) -> dict[str, Any]:
    found = check.approval
    return {
        "approved": found is not None,
        "record_id": found.record_id if found else None,
        "by": found.by if found else None,
        "source": found.source.value if found else None,
        "recorded_at": found.recorded_at.isoformat() if found else None,
        "expires_at": found.expires_at.isoformat() if found and found.expires_at else None,
        "worst_cost": _fixed(found.worst_cost, 2) if found and found.worst_cost else None,
        "stale": list(check.stale),
        "notes": list(check.notes),
    }


def _estimate(est: Estimate) -> dict[str, Any]:
    return {
        "price": {
            "accelerator": est.quote.accelerator,
            "capacity": est.quote.capacity.value,
            "per_gpu_hour": _fixed(est.quote.per_gpu_hour, 5),
            "currency": est.quote.currency,
            "basis": est.quote.basis,
        },
        "judged_on": est.judged_on,
        "worst": _scenario(est.worst),
        "expected": _scenario(est.expected),
    }


def _scenario(s: Scenario) -> dict[str, Any]:
    return {
        "trials": s.trials,
        "epochs_per_trial": s.epochs_per_trial,
        "hours_per_trial": _fixed(s.hours_per_trial, 4),
        "gpu_hours": _fixed(s.gpu_hours, 4),
        "cost": _fixed(s.cost, 2),
        "cost_per_trial": _fixed(s.cost_per_trial, 2),
        "concurrency": s.concurrency,
        "waves": s.waves,
        "wall_clock_hours": _fixed(s.wall_clock_hours, 4),
        "first_result_hours": _fixed(s.first_result_hours, 4),
        "drivers": {
            "trials": s.drivers.trials,
            "gpus_per_trial": s.drivers.gpus_per_trial,
            "hours_per_trial": _fixed(s.drivers.hours_per_trial, 4),
            "price_per_gpu_hour": _fixed(s.drivers.price_per_gpu_hour, 5),
        },
        "assumptions": list(s.assumptions),
    }


def _diffs(report: Report) -> dict[str, Any] | None:
    if report.context.base_ref is None:
        return None
    return {"base_ref": report.context.base_ref, "specs": [diff_document(d) for d in report.diffs]}


def diff_document(diff: SpecDiff) -> dict[str, Any]:
    """One spec's cost change: both sides per scenario, the changed drivers, in words too."""
    from gate.reporters.change import explain  # NOTE: a check without --base-ref has no diff

    return {
        "file": diff.file,
        "change": diff.change.value,
        "currency": diff.currency,
        "reason": diff.reason or None,
        "problems": [_error(p, diff.file) for p in diff.problems],
        "scenarios": {s.name: _scenario_diff(s) for s in diff.scenarios},
        "explanation": explain(diff),
    }


def _scenario_diff(s: ScenarioDiff) -> dict[str, Any]:
    places = _driver_places()
    return {
        "base_cost": _fixed(s.base_cost, 2),
        "head_cost": _fixed(s.head_cost, 2),
        "base_gpu_hours": _fixed(s.base_gpu_hours, 4),
        "head_gpu_hours": _fixed(s.head_gpu_hours, 4),
        "drivers": [
            {
                "driver": c.driver.value,
                "base": _fixed(c.base, places[c.driver]),
                "head": _fixed(c.head, places[c.driver]),
                "ratio": _fixed(c.ratio, 6) if c.ratio is not None else None,
            }
            for c in s.drivers
        ],
    }


@functools.cache
def _driver_places() -> dict[Any, int]:
    """The decimals each cost driver is written with."""
    from gate.evaluation.diff import Driver

    return {
        Driver.TRIALS: 0,
        Driver.GPUS_PER_TRIAL: 0,
        Driver.HOURS_PER_TRIAL: 4,
        Driver.PRICE_PER_GPU_HOUR: 5,
    }


def _error(p: Problem, file: str) -> dict[str, Any]:
    loc = p.location
    return {
        "message": p.message,
        "file": loc.file if loc else file,
        "line": loc.line if loc else None,
        "col": loc.col if loc else None,
        "hint": p.hint or None,
        "text": str(p),
    }


def _alternative(a: Alternative) -> dict[str, Any]:
    return {
        "name": a.name,
        "edits": [_edit(e) for e in a.edits],
        "gives_up": a.gives_up,
        "saving": _fixed(a.saving, 2),
        "worst": _scenario(a.estimate.worst),
        "expected": _scenario(a.estimate.expected),
    }


def _finding(f: Finding) -> dict[str, Any]:
    loc = f.location
    return {
        "rule_id": f.rule_id,
        "severity": f.severity.value,
        "message": f.message,
        "file": loc.file if loc else None,
        "line": loc.line if loc else None,
        "col": loc.col if loc else None,
        "waived": f.waived_by is not None,
        "waiver_reason": f.waived_by,
        "approved_by": f.approved_by,
        "fixes": [
            {
                "edits": [_edit(e) for e in fix.edits],
                "summary": fix.summary,
            }
            for fix in f.fixes
        ],
    }


def _edit(edit: Edit) -> dict[str, Any]:
    """The spec path and value; for an imported file, the same edit in its own words too."""
    shown: dict[str, Any] = {"path": edit.dotted, "value": edit.value}
    if edit.in_file is not None:
        shown["in_file"] = edit.in_file
    return shown


def _fixed(value: Decimal, places: int) -> str:
    return str(fixed(value, places))
