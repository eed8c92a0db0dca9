"""Text report of a reconciliation, for a terminal or a CI log: runs, totals, waste, variance."""

from __future__ import annotations

import re
from decimal import Decimal

from gate.errors import one_line
from gate.ledger.records import LEDGER_EXPERIMENT, short
from gate.money import format_amount, format_small
from gate.reconcile.actuals import RunResult, RunStatus
from gate.reconcile.reconciler import ReconcileReport, Reconciliation
from gate.reconcile.waste import Variance, change, fixed_percent, signed_percent
from gate.words import aligned

MAX_LISTED = 10
_COLUMNS = ("run", "trial", "status", "GPUs", "held", "GPU-h", "cost", "gate", "epochs", "util")


REFUSED = "refused (exit 3): "
"""How ``not_recorded`` begins when the ledger refused the record (say, not CI's key)."""


def money(amount: Decimal, currency: str) -> str:
    """An amount with its currency; small ones keep three significant digits."""
    return f"{format_small(amount)} {currency}"


def hours(value: Decimal) -> str:
    """Hours or GPU-hours; small ones keep three significant digits."""
    return format_small(value)


def duration(value: Decimal) -> str:
    """Hours held as ``12.3 s``, ``4.5 min`` or ``2.00 h``: runs can be seconds long."""
    seconds = value * 3600
    if seconds < 60:
        return f"{format_amount(seconds, 1)} s"
    if seconds < 3600:
        return f"{format_amount(seconds / 60, 1)} min"
    return f"{format_amount(value, 2)} h"


def render(report: ReconcileReport) -> str:
    """The whole report as text, ending with the verdict line."""
    result = report.result
    blocks = [
        _joined(header_lines(report)),
        _joined(_run_lines(result)),
        _joined(["totals", *(f"  {line}" for line in total_lines(result))]),
        _joined(_waste_lines(result)),
        *([_joined(guard_lines(result))] if result.guard_stops else []),
        _joined(["variance", *(f"  {line}" for line in variance_lines(result.variance))]),
    ]
    quality = quality_line(result)
    if quality:
        blocks.append(one_line(quality))
    verdict = verdict_line(result)
    if report.not_recorded is not None and report.not_recorded.startswith(REFUSED):
        verdict = re.sub(r" \(exit [01]\)$", " (exit 3: not recorded)", verdict)
    blocks.append(_joined([*record_lines(report), verdict]))
    return "\n\n".join(blocks) + "\n"


def _joined(lines: list[str]) -> str:
    r"""Lines of the report, each on its own line.

    Run names and tags are a training job's text: a line break or an escape in one shows
    escaped (``\n``), so it never starts a line of its own.
    """
    return "\n".join(one_line(line) for line in lines)


def header_lines(report: ReconcileReport) -> list[str]:
    """Which spec, which MLflow runs, at what price."""
    result = report.result
    plan = result.plan
    which = "every version of the spec" if report.all_versions else "this version"
    q = plan.quote
    lines = [
        f"{report.file} — {report.name} (policy: {report.policy})",
        f"MLflow experiment {report.experiment} at {report.where}: runs of "
        f"{short(plan.fingerprint)} ({which})",
        f"price: {format_amount(q.per_gpu_hour, 5)} {q.currency} per GPU-hour, "
        f"{q.accelerator} {q.capacity.value} ({q.basis})",
        f"plateau: {plan.monitor.metric} ({plan.monitor.mode}, min_delta "
        f"{plan.monitor.min_delta:g}; {plan.monitor.source}); more epochs pay while they gain "
        f"{plan.monitor.threshold.describe(q.currency)}",
    ]
    lines.extend(f"note: {note}" for note in report.notes)
    return lines


def status_counts(result: Reconciliation) -> str:
    """``10 finished, 1 failed`` — only the statuses that occur."""
    parts = [f"{n} {status.value.lower()}" for status in RunStatus if (n := result.count(status))]
    return ", ".join(parts) or "none"


def run_label(run: RunResult) -> str:
    """The run's name and short id, or the id alone."""
    return f"{run.name} ({run.run_id[:8]})" if run.name else run.run_id[:8]


def gate_cell(run: RunResult) -> str:
    """``pass``, ``fail``, or ``—`` for a run that did not finish."""
    if run.qualified:
        return "pass"
    return "fail" if run.status is RunStatus.FINISHED else "—"


def utilization_cell(run: RunResult) -> str:
    """Mean GPU utilization in percent (one decimal, as every percentage here), or ``—``."""
    return "—" if run.utilization is None else fixed_percent(run.utilization)


def epochs_cell(run: RunResult) -> str:
    """Epochs run, with the plateau epoch when training went past it."""
    if run.epochs is None:
        return "—"
    after = run.epochs_after_plateau
    return f"{run.epochs} (flat after {run.plateau})" if after else str(run.epochs)


def _run_lines(result: Reconciliation) -> list[str]:
    currency = result.currency
    rows = [
        (
            run_label(run),
            run.trial if run.trial != run.run_id else "—",
            run.status.value,
            f"{run.gpus:g}",
            duration(run.held_hours),
            hours(run.gpu_hours),
            money(run.cost, currency),
            gate_cell(run),
            epochs_cell(run),
            utilization_cell(run),
        )
        for run in result.runs
    ]
    lines = [f"runs ({len(result.runs)}: {status_counts(result)})"]
    if not rows:
        return lines
    lines.extend(f"  {line}" for line in aligned([_COLUMNS, *rows], left=(0, 1, 2, 7)))
    for run in result.runs:
        failures = run.gate_failures if run.status is RunStatus.FINISHED else ()
        details = [*failures, *run.notes]
        if details:
            lines.append(f"  {run_label(run)}: " + "; ".join(details))
    return lines


def total_lines(result: Reconciliation) -> list[str]:
    """Actual GPU-hours and cost, qualified models, cost per qualified model, and so on."""
    currency = result.currency
    lines = [f"GPU-hours: {hours(result.gpu_hours)} allocated"]
    if result.effective_ratio is not None:
        lines.append(
            f"effective-training ratio: {fixed_percent(result.effective_ratio)} "
            f"(runs that logged phases: {result.phased_runs} of {len(result.runs)})"
        )
    if result.utilization_gpu_hours is not None and result.utilization is not None:
        lines.append(
            f"utilization-weighted GPU-hours: {hours(result.utilization_gpu_hours)} "
            f"(mean utilization {fixed_percent(result.utilization)} over "
            f"{result.utilization_runs} of {len(result.runs)} runs)"
        )
    lines.append(f"cost: {money(result.cost, currency)}")
    lines.append(f"qualified models: {result.qualified} of {len(result.runs)} runs")
    per = result.cost_per_qualified
    lines.append(
        f"cost per qualified model: {money(per, currency)} "
        "(failed, killed and unqualified runs included)"
        if per is not None
        else f"cost per qualified model: none qualified — {money(result.cost, currency)} "
        "spent in all"
    )
    first = result.first_qualified
    if first is not None and result.hours_to_first_qualified is not None:
        lines.append(
            f"time to first qualified model: {duration(result.hours_to_first_qualified)} "
            f"({run_label(first)})"
        )
    lines.append(retry_line(result))
    return lines


def retry_line(result: Reconciliation, listed: int = MAX_LISTED) -> str:
    """Trials and the retries among them, naming the first ``listed`` retried trials."""
    if not result.retries:
        return f"trials: {result.trials}, none run more than once"
    cost = sum((t.retry_cost for t in result.retries), Decimal(0))
    line = (
        f"trials: {result.trials}; {len(result.retries)} run more than once, "
        f"{money(cost, result.currency)} on retries"
    )
    if not listed:
        return line
    named = [
        f"trial {t.trial} ({' → '.join(a.status.value for a in t.attempts)})"
        for t in result.retries[:listed]
    ]
    more = len(result.retries) - len(named)
    if more:
        named.append(f"{more:,} more (--format json lists them)")
    return f"{line}: {', '.join(named)}"


def _waste_lines(result: Reconciliation) -> list[str]:
    lines = ["waste"]
    for item in result.waste:
        cost = (
            f"{money(item.cost, result.currency)}, {hours(item.gpu_hours)} GPU-h"
            if item.measured
            else "not measured"
        )
        lines.append(f"  {item.title}: {cost} — {item.detail}")
        lines.append(f"    → {item.advice}")
    return lines


def guard_lines(result: Reconciliation, listed: int = MAX_LISTED) -> list[str]:
    """The runtime guard's stops, what they saved against running on, and why each."""
    stops = result.guard_stops
    lines = [
        f"guard stops ({len(stops)} run(s)): saved {money(result.guard_saved, result.currency)} "
        "against running them on to max_epochs"
    ]
    for run in stops[:listed]:
        stop = run.guard_stop
        assert stop is not None
        at = f" at epoch {stop.epoch}" if stop.epoch is not None else ""
        lines.append(
            f"  {run_label(run)} (trial {run.trial}): {stop.kind} stop{at}, spend then "
            f"{stop.spend} — "
            f"{stop.reason}; saved {money(stop.saved, result.currency)} "
            f"({stop.epochs_saved} epochs)"
        )
    if len(stops) > listed:
        lines.append(f"  {len(stops) - listed:,} more (--format json lists them)")
    return lines


def variance_lines(v: Variance) -> list[str]:
    """Actual against the expected and worst estimates and the approved amount."""
    rows = [
        ("actual", v.actual, v.actual_gpu_hours),
        ("expected estimate", v.expected, v.expected_gpu_hours),
        ("worst-case estimate", v.worst, v.worst_gpu_hours),
    ]
    lines = [
        f"{name}: {money(cost, v.currency)}, {hours(gpu_hours)} GPU-h"
        + ("" if name == "actual" else _against(v.actual, cost))
        for name, cost, gpu_hours in rows
    ]
    if v.approved is not None:
        lines.append(f"approved: {money(v.approved, v.currency)}{_against(v.actual, v.approved)}")
    else:
        lines.append("approved: nothing recorded for this version")
    state = "over" if v.over else "within"
    lines.append(
        f"limit: {money(v.limit, v.currency)} = {v.reference_name} + "
        f"{fixed_percent(v.tolerance)} tolerance — actual is {state}"
    )
    return lines


def _against(actual: Decimal, planned: Decimal) -> str:
    delta = change(actual, planned)
    return "" if delta is None else f" (actual {signed_percent(delta)})"


def quality_line(result: Reconciliation) -> str:
    """Where the money stopped buying quality, or ``""`` without a qualified model.

    Only qualified models count as quality (a run that fails the gate is no model, whatever
    its metric); every run's cost counts as spend.
    """
    best = next((p.best for p in reversed(result.curve) if p.best is not None), None)
    if best is None or result.best_at is None:
        return ""
    after = result.cost - result.best_at
    tail = (
        f"; the last {money(after, result.currency)} "
        f"({fixed_percent(after / result.cost)}) bought no better qualified model"
        if after > 0
        else ""
    )
    return (
        f"quality against cost: best qualified model {result.chart.metric} {best:.4g} "
        f"reached after {money(result.best_at, result.currency)} of "
        f"{money(result.cost, result.currency)} (every run's cost counted){tail}"
    )


def record_lines(report: ReconcileReport) -> list[str]:
    """What was written back to the ledger, or why nothing was."""
    if report.record_id is not None:
        return [
            f"ledger: recorded reconciliation {report.record_id} in MLflow experiment "
            f"{LEDGER_EXPERIMENT}"
        ]
    if report.not_recorded is not None:
        return [f"ledger: not recorded — {report.not_recorded}"]
    return []


def verdict_line(result: Reconciliation) -> str:
    """``verdict: pass (exit 0)`` or the reasons it fails."""
    verdict = result.verdict
    provisional = (
        f" (provisional: {result.running} run(s) still running)" if verdict.provisional else ""
    )
    if verdict.passed:
        return f"verdict: pass{provisional} (exit 0)"
    return f"verdict: fail{provisional} — {'; '.join(verdict.reasons)} (exit 1)"
