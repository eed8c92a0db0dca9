"""Markdown report of a reconciliation: the pull-request comment and the job summary.

Layout: a hidden marker (one comment per repository and spec, updated in place), the
headline with cost per qualified model, the variance table, totals, waste with advice,
the chart of the best qualified model against cumulative cost (Mermaid), retries, then
the runs in a collapsed table. Every string from a spec or from MLflow (run names, metric
names, notes) is escaped with :func:`gate.reporters.markup.escape`. The runs table is cut
first when the body would pass GitHub's comment limit.
"""

from __future__ import annotations

from decimal import Decimal

from gate.ledger.records import LEDGER_EXPERIMENT, short
from gate.money import format_amount, format_small
from gate.reconcile.actuals import RunResult, RunStatus
from gate.reconcile.reconciler import ReconcileReport, Reconciliation
from gate.reconcile.waste import Variance, change, fixed_percent, signed_percent
from gate.reporters.chart import xychart
from gate.reporters.markdown import COMMENT_LIMIT
from gate.reporters.markup import escape, hidden_marker, utf16_length
from gate.reporters.reconcile_text import (
    duration,
    epochs_cell,
    gate_cell,
    quality_line,
    retry_line,
    status_counts,
    utilization_cell,
)

MAX_RUN_ROWS = 100
_RESERVE = 2_000


def reconcile_marker(repository: str, spec: str) -> str:
    """The hidden first line that identifies this spec's reconcile comment in a repository."""
    return hidden_marker("reconcile", repository, spec)


def render(report: ReconcileReport) -> str:
    """The whole comment, below GitHub's size limit."""
    result = report.result
    parts = [
        reconcile_marker(report.repository, report.file),
        _headline(report),
        _variance_table(result.variance),
        _totals(result),
        _waste_table(result),
        _guard(result),
        _chart(result),
        _retries(result),
    ]
    footer = _footer(report)
    body = "\n\n".join(p for p in parts if p)
    room = COMMENT_LIMIT - utf16_length(body + footer) - _RESERVE
    runs = _runs_table(result, room)
    return "\n\n".join(p for p in (body, runs, footer) if p) + "\n"


def _money(amount: Decimal, currency: str) -> str:
    return f"{format_small(amount)} {escape(currency)}"


def _headline(report: ReconcileReport) -> str:
    result = report.result
    verdict = result.verdict
    icon = "✅" if verdict.passed else "❌"
    per = result.cost_per_qualified
    phrase = (
        f"{_money(per, result.currency)} per qualified model"
        if per is not None
        else f"no qualified model for {_money(result.cost, result.currency)}"
    )
    which = "all versions" if report.all_versions else short(result.plan.fingerprint)
    lines = [
        f"## {icon} budget-gate reconcile: {phrase}",
        f"**{escape(report.file)}** — {escape(report.name)} · MLflow experiment "
        f"{escape(report.experiment)} ({escape(which)}) · {len(result.runs):,} runs "
        f"({escape(status_counts(result))}) · {result.qualified:,} qualified · "
        f"exit {verdict.exit_code}",
    ]
    if verdict.provisional:
        lines.append(f"> ⏳ Provisional: {result.running} run(s) still running, charged up to now.")
    lines.extend(f"> ❌ {escape(reason)}" for reason in verdict.reasons)
    lines.extend(f"> ℹ️ {escape(note)}" for note in report.notes)
    return "\n\n".join(lines)


def _variance_table(v: Variance) -> str:
    rows = [
        ("**actual**", v.actual, v.actual_gpu_hours, ""),
        ("expected estimate", v.expected, v.expected_gpu_hours, _delta(v.actual, v.expected)),
        ("worst-case estimate", v.worst, v.worst_gpu_hours, _delta(v.actual, v.worst)),
    ]
    lines = ["| | cost | GPU-hours | actual vs |", "|---|---:|---:|---:|"]
    lines.extend(
        f"| {name} | {_money(cost, v.currency)} | {format_small(hours)} | {delta} |"
        for name, cost, hours, delta in rows
    )
    if v.approved is not None:
        lines.append(
            f"| approved | {_money(v.approved, v.currency)} | | {_delta(v.actual, v.approved)} |"
        )
    state = "❌ over" if v.over else "within"
    lines.append(
        f"| limit ({v.reference_name} + {fixed_percent(v.tolerance)}) | "
        f"{_money(v.limit, v.currency)} | | {state} |"
    )
    return "\n".join(lines)


def _delta(actual: Decimal, planned: Decimal) -> str:
    delta = change(actual, planned)
    return "—" if delta is None else signed_percent(delta)


def _totals(result: Reconciliation) -> str:
    lines = [
        f"- **GPU-hours:** {format_small(result.gpu_hours)} allocated; "
        f"cost {_money(result.cost, result.currency)}",
    ]
    if result.effective_ratio is not None:
        lines.append(
            f"- **Effective-training ratio:** {fixed_percent(result.effective_ratio)} "
            f"({result.phased_runs} runs logged phases)"
        )
    if result.utilization_gpu_hours is not None and result.utilization is not None:
        lines.append(
            "- **Utilization-weighted GPU-hours:** "
            f"{format_small(result.utilization_gpu_hours)} (mean utilization "
            f"{fixed_percent(result.utilization)}, {result.utilization_runs} runs)"
        )
    first = result.first_qualified
    if first is not None and result.hours_to_first_qualified is not None:
        lines.append(
            "- **Time to first qualified model:** "
            f"{duration(result.hours_to_first_qualified)} ({escape(_label(first))})"
        )
    # NOTE: the retries table below names the trials; the bullet only counts them.
    lines.append(f"- **Trials:** {escape(retry_line(result, 0).removeprefix('trials: '))}")
    return "\n".join(lines)


def _waste_table(result: Reconciliation) -> str:
    lines = [
        "### Where the money was wasted",
        "",
        "| waste | cost | GPU-hours | runs | what to do |",
        "|---|---:|---:|---:|---|",
    ]
    for item in result.waste:
        cost = _money(item.cost, result.currency) if item.measured else "not measured"
        hours = format_small(item.gpu_hours) if item.measured else "—"
        lines.append(
            f"| **{escape(item.title)}**<br>{escape(item.detail)} | {cost} | {hours} | "
            f"{item.runs:,} | {escape(item.advice)} |"
        )
    return "\n".join(lines)


def _guard(result: Reconciliation, listed: int = 20) -> str:
    """The runtime guard's stops and what they saved (nothing when it stopped no run)."""
    stops = result.guard_stops
    if not stops:
        return ""
    saved = _money(result.guard_saved, result.currency)
    lines = [
        "### Stopped by the guard",
        "",
        f"{len(stops)} run(s) stopped, saving {saved} against running them on to max_epochs.",
        "",
        "| run | trial | stop | epoch | spend then | saved | why |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for run in stops[:listed]:
        stop = run.guard_stop
        assert stop is not None
        lines.append(
            f"| {escape(run.name or run.run_id)} | {escape(run.trial)} | {escape(stop.kind)} | "
            f"{stop.epoch if stop.epoch is not None else '—'} | {escape(stop.spend)} | "
            f"{_money(stop.saved, result.currency)} | {escape(stop.reason)} |"
        )
    if len(stops) > listed:
        lines.append(f"\n{len(stops) - listed:,} more: `--format json` lists them.")
    return "\n".join(lines)


def _chart(result: Reconciliation) -> str:
    block = xychart(result.curve, result.chart, result.currency)
    if not block:
        return ""
    line = quality_line(result).removeprefix("quality against cost: ")
    return "\n\n".join(
        ["### Quality against cost (qualified models)", block, escape(line[:1].upper() + line[1:])]
    )


def _retries(result: Reconciliation) -> str:
    if not result.retries:
        return ""
    rows = [
        f"| {escape(t.trial)} | {' → '.join(a.status.value for a in t.attempts)} | "
        f"{_money(t.retry_cost, result.currency)} |"
        for t in result.retries[:MAX_RUN_ROWS]
    ]
    more = len(result.retries) - len(rows)
    tail = [f"\n{more:,} more trials retried (see `budget-gate reconcile`)"] if more > 0 else []
    header = ["### Retries", "", "| trial | attempts | cost of retries |", "|---|---|---:|"]
    return "\n".join([*header, *rows, *tail])


def _label(run: RunResult) -> str:
    return f"{run.name} ({run.run_id[:8]})" if run.name else run.run_id[:8]


def _runs_table(result: Reconciliation, room: int) -> str:
    if not result.runs:
        return ""
    header = [
        "| run | status | GPU-h | cost | gate | epochs | util | notes |",
        "|---|---|---:|---:|---|---:|---:|---|",
    ]
    # NOTE: the costliest runs first: they are what a reviewer should see if rows are cut.
    ordered = sorted(result.runs, key=lambda r: (-r.cost, r.run_id))
    rows: list[str] = []
    used = utf16_length("\n".join(header)) + 200
    for run in ordered[:MAX_RUN_ROWS]:
        row = _run_row(run, result.currency)
        used += utf16_length(row) + 1
        if used > room:
            break
        rows.append(row)
    cut = len(result.runs) - len(rows)
    note = f"\n\n{cut:,} cheaper runs not shown; `budget-gate reconcile` lists all." if cut else ""
    summary = f"Runs, costliest first ({len(rows):,} of {len(result.runs):,})"
    table = "\n".join([*header, *rows])
    return f"<details><summary>{summary}</summary>\n\n{table}{note}\n\n</details>"


def _run_row(run: RunResult, currency: str) -> str:
    failures = run.gate_failures if run.status is RunStatus.FINISHED else ()
    notes = [*failures, *run.notes]
    cells = [
        escape(_label(run)),
        run.status.value,
        format_small(run.gpu_hours),
        _money(run.cost, currency),
        gate_cell(run),
        escape(epochs_cell(run)),
        utilization_cell(run),
        escape("; ".join(notes)) or "",
    ]
    return "| " + " | ".join(cells) + " |"


def _footer(report: ReconcileReport) -> str:
    if report.record_id is not None:
        recorded = (
            f"Recorded in the ledger as run {escape(report.record_id)} of MLflow experiment "
            f"{escape(LEDGER_EXPERIMENT)}."
        )
    elif report.not_recorded is not None:
        recorded = f"Not recorded in the ledger: {escape(report.not_recorded)}."
    else:
        recorded = ""
    q = report.result.plan.quote
    price = (
        f"Price: {format_amount(q.per_gpu_hour, 5)} {escape(q.currency)}/GPU-hour for "
        f"{escape(q.accelerator)} {q.capacity.value} ({escape(q.basis)})."
    )
    return f"---\n\n<sub>{price} {recorded} budget-gate {escape(report.version)}</sub>"
