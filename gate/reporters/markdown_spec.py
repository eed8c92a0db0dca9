"""One spec's section of the Markdown comment: what it costs and why it passes or not.

Its heading and verdict, the file it was read from (a W&B, Katib, SkyPilot or Hydra file),
its estimate table and price, its cost change against the base, its findings grouped by
severity with links to the rule docs and their proven fixes, its approval, its notes and
assumptions, and the other plans priced; and the compact section that stands in when the
whole one does not fit. Every string that comes from a spec is escaped.
"""

from __future__ import annotations

from decimal import Decimal

from gate.estimate.model import Estimate, Scenario
from gate.evaluation.diff import Change, SpecDiff
from gate.evaluation.report import Report, SpecResult
from gate.ledger.approvals import ApprovalCheck
from gate.ledger.records import short, when
from gate.money import format_amount, format_nonzero
from gate.policy.findings import Finding, Outcome
from gate.policy.model import Severity
from gate.reporters import assert_never
from gate.reporters.change import cost_change, explain, gpu_hours_change, signed, status
from gate.reporters.imported import provenance, read_as
from gate.reporters.markup import escape, link
from gate.reporters.text import judged_on

_SEVERITIES = (Severity.ERROR, Severity.APPROVAL, Severity.WARN)


def verdict(outcome: Outcome) -> tuple[str, str]:
    """The outcome's icon and phrase, as headings and tables show it."""
    match outcome:
        case Outcome.PASS:
            return "✅", "passes"
        case Outcome.VIOLATION:
            return "❌", "breaks policy"
        case Outcome.APPROVAL_REQUIRED:
            return "✋", "needs approval"
        case Outcome.INVALID:
            return "⛔", "invalid input"
        case Outcome.BACKEND_ERROR:
            return "⚠️", "backend failure"
        case _:
            assert_never(outcome)


def spec_section(result: SpecResult, report: Report) -> str:
    """The spec's whole section: everything the comment says of it."""
    parts = [_spec_heading(result)]
    if result.imported is not None:  # a W&B, Katib, SkyPilot or Hydra file
        parts.append(
            read_as(result.imported)
            if not result.imported.fields
            else provenance(result.imported, result.file)
        )
    if result.outcome is Outcome.INVALID:
        parts.append("\n".join(f"- {escape(str(p))}" for p in result.errors))
        return "\n\n".join(parts)
    if result.estimate is not None:
        parts.extend(_estimate_block(result.estimate, result.currency))
    diff = report.diff_for(result.file)
    if diff is not None and report.context.base_ref is not None:
        parts.append(_diff_block(diff, report.context.base_ref))
    parts.extend(_findings_blocks(result.findings, report))
    if result.approval is not None:
        parts.append(_approval_block(result.approval))
    parts.extend(f"> ℹ️ {escape(note)}" for note in result.notes)
    if result.estimate is not None:
        parts.append(_assumptions(result.estimate))
    if result.alternatives and result.outcome in (Outcome.VIOLATION, Outcome.APPROVAL_REQUIRED):
        parts.append(_alternatives(result))
    return "\n\n".join(p for p in parts if p)


def compact_section(result: SpecResult) -> str:
    """The section cut down to fit: heading, estimate table and a count of findings."""
    parts = [_spec_heading(result)]
    if result.imported is not None:
        parts.append(read_as(result.imported))
    if result.estimate is not None:
        parts.append(_estimate_block(result.estimate, result.currency)[0])
    counts = [
        f"{sum(1 for f in result.findings if f.active and f.severity is s)} {_group(s)[1]}"
        for s in _SEVERITIES
    ]
    parts.append(f"Findings: {', '.join(counts)} (details cut)")
    return "\n\n".join(parts)


def _spec_heading(result: SpecResult) -> str:
    icon, phrase = verdict(result.outcome)
    title = f"### {icon} {escape(result.file)}"
    if result.name is not None:
        title += f" — {escape(result.name)}"
    policy = f" · policy: {escape(result.policy)}" if result.policy else ""
    return f"{title}\n\nVerdict: **{phrase}**{policy}"


def _estimate_block(est: Estimate, currency: str) -> list[str]:
    table = "\n".join(
        [
            "| scenario | trials | GPU-hours | cost | wall-clock | first result | per trial |",
            "|---|---:|---:|---:|---:|---:|---:|",
            *(_estimate_row(s, currency) for s in (est.worst, est.expected)),
        ]
    )
    q = est.quote
    price = (
        f"Price: {format_amount(q.per_gpu_hour, 5)} {escape(q.currency)}/GPU-hour for "
        f"{escape(q.accelerator)} {q.capacity.value} ({escape(q.basis)})"
    )
    judged = judged_on(est)
    return [table, price, *([escape(judged[0].upper() + judged[1:])] if judged else [])]


def _estimate_row(s: Scenario, currency: str) -> str:
    cells = [
        s.name,
        f"{s.trials:,}",
        format_nonzero(s.gpu_hours, 1),
        money(s.cost, currency),
        f"{format_nonzero(s.wall_clock_hours, 1)} h",
        f"{format_nonzero(s.first_result_hours, 1)} h",
        money(s.cost_per_trial, currency),
    ]
    return "| " + " | ".join(cells) + " |"


def _diff_block(diff: SpecDiff, base_ref: str) -> str:
    heading = f"**Cost change:** {escape(status(diff, base_ref))}"
    if diff.change is Change.UNPRICED:
        return heading + "".join(f"\n- {escape(str(p))}" for p in diff.problems)
    if diff.change is Change.UNCHANGED:
        return heading
    rows = [
        f"| {s.name} | {escape(cost_change(s, diff.currency))} | {gpu_hours_change(s)} |"
        for s in diff.scenarios
    ]
    table = "\n".join(["| scenario | cost | GPU-hours |", "|---|---:|---:|", *rows])
    why = "\n".join(f"- {escape(line)}" for line in explain(diff))
    return "\n\n".join(p for p in (heading, table, why) if p)


def _findings_blocks(findings: tuple[Finding, ...], report: Report) -> list[str]:
    blocks = []
    for severity in _SEVERITIES:
        group = [f for f in findings if f.active and f.severity is severity]
        if group:
            title = _group(severity)[0]
            lines = [_finding_line(f, report) + _fix_lines(f) for f in group]
            blocks.append(f"**{title} ({len(group)})**\n\n" + "\n".join(lines))
    approved = [f for f in findings if f.approved_by is not None and f.waived_by is None]
    if approved:
        lines = [
            f"{_finding_line(f, report)} — approved by {escape(f.approved_by or '')}"
            for f in approved
        ]
        blocks.append(f"**Approved ({len(approved)})**\n\n" + "\n".join(lines))
    waived = [f for f in findings if f.waived_by is not None]
    if waived:
        lines = [
            f"{_finding_line(f, report)} — waived: {escape(f.waived_by or '')}" for f in waived
        ]
        blocks.append(f"**Waived ({len(waived)})**\n\n" + "\n".join(lines))
    return blocks


def _approval_block(check: ApprovalCheck) -> str:
    found = check.approval
    if found is None:
        reasons = "\n".join(f"- {escape(reason)}" for reason in check.stale)
        return "**Not approved**" + (f"\n\n{reasons}" if reasons else "")
    amount = money(found.worst_cost, found.currency) if found.worst_cost is not None else "—"
    why = f": {escape(found.reason)}" if found.reason else ""
    return (
        f"**Approval:** {escape(found.by or 'unknown')} ({found.source.value}, "
        f"{when(found.recorded_at)}){why} — covers this version "
        f"(`{escape(short(found.fingerprint))}`) up to {amount} worst case"
    )


def _group(severity: Severity) -> tuple[str, str]:
    match severity:
        case Severity.ERROR:
            return "Errors", "errors"
        case Severity.APPROVAL:
            return "Needs approval", "needing approval"
        case Severity.WARN:
            return "Warnings", "warnings"
        case _:
            assert_never(severity)


def _finding_line(finding: Finding, report: Report) -> str:
    info = report.rules.get(finding.rule_id)
    rule = link(finding.rule_id, report.context.rule_url(info)) if info else finding.rule_id
    where = f" — {escape(str(finding.location))}" if finding.location else ""
    return f"- {rule} {escape(finding.message)}{where}"


def _fix_lines(finding: Finding) -> str:
    """The proven fixes of a finding, as nested items under it."""
    return "".join(f"\n  - fix: {escape(str(fix))}" for fix in finding.fixes)


def _assumptions(est: Estimate) -> str:
    lines = [
        f"- **{s.name}:** {escape('; '.join(s.assumptions))}" for s in (est.worst, est.expected)
    ]
    return "<details><summary>Assumptions</summary>\n\n" + "\n".join(lines) + "\n\n</details>"


def _alternatives(result: SpecResult) -> str:
    """Other plans, collapsed: priced, with what each gives up, the largest saving first.

    Headed "Cheaper plans" only when every one of them saves money.
    """
    rows = [
        "| plan | set | expected | worst | change (expected) | first result | gives up |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for alt in result.alternatives:
        e, w = alt.estimate.expected, alt.estimate.worst
        rows.append(
            f"| {escape(alt.name)} | {escape(', '.join(str(x) for x in alt.edits))} "
            f"| {money(e.cost, result.currency)} | {money(w.cost, result.currency)} "
            f"| {signed(-alt.saving)} {escape(result.currency)} "
            f"| {format_amount(e.first_result_hours, 1)} h | {escape(alt.gives_up)} |"
        )
    heading = "Cheaper plans" if all(a.saving > 0 for a in result.alternatives) else "Other plans"
    return f"<details><summary>{heading}</summary>\n\n" + "\n".join(rows) + "\n\n</details>"


def money(amount: Decimal, currency: str) -> str:
    """An amount with its (escaped) currency, never shown as a bare zero."""
    return f"{format_nonzero(amount)} {escape(currency)}"
