"""Markdown report: the pull-request comment body and the GitHub job summary.

Layout: a hidden marker (so the comment is updated in place) and, on a pull request, the
head commit it was written for; a headline verdict, a summary table when there are several
specs, then per spec (worst outcome first) its estimate table, its cost change against the
base, its findings grouped by severity with links to the rule docs, its approval (who
approved, or why no approval counts), and its assumptions. The body is cut to GitHub's
65,536-character limit at section boundaries, with a note saying what was left out.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import ClassVar

from typing_extensions import assert_never

from gate.estimate.model import Estimate, Scenario
from gate.evaluation.diff import Change, SpecDiff
from gate.evaluation.report import RenderContext, Report, SpecResult
from gate.ledger.approvals import ApprovalCheck
from gate.ledger.records import short, when
from gate.money import format_amount, format_nonzero
from gate.policy.findings import Finding, Outcome
from gate.policy.model import Severity
from gate.reporters.change import cost_change, explain, gpu_hours_change, signed, status
from gate.reporters.imported import provenance, read_as
from gate.reporters.markup import escape, link, utf16_length

COMMENT_LIMIT = 65_536
"""GitHub's maximum comment body, in characters."""

_NOTE_RESERVE = 1_000
_SUMMARY_SHARE = 4  # the summary table may use at most a quarter of the body
_SEVERITIES = (Severity.ERROR, Severity.APPROVAL, Severity.WARN)


_HEAD = re.compile(r"^<!-- budget-gate:head:([0-9a-f]{40}|[0-9a-f]{64}) -->$", re.MULTILINE)


def comment_marker(context: RenderContext) -> str:
    """The hidden first line that identifies this comment: repository × workflow × policies."""
    identity = json.dumps([context.repository, context.workflow, context.policy_dir])
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:16]
    return f"<!-- budget-gate:comment:{digest} -->"


def head_marker(sha: str) -> str:
    """The hidden line naming the head commit a pull-request comment was written for."""
    if not _HEAD.match(f"<!-- budget-gate:head:{sha} -->"):
        raise ValueError(f"{sha!r} is not a commit id")
    return f"<!-- budget-gate:head:{sha} -->"


def written_for(body: str) -> str | None:
    """The head commit a comment says it was written for (:func:`head_marker`), if any."""
    found = _HEAD.search(body)
    return found.group(1) if found else None


class MarkdownReporter:
    """The pull-request comment; every string that comes from a spec is escaped."""

    name: ClassVar[str] = "markdown"

    def render(self, report: Report) -> str:
        """Render the whole comment, cut to fit :data:`COMMENT_LIMIT`."""
        results = sorted(report.results, key=lambda r: -r.outcome.rank)
        markers = comment_marker(report.context)
        if report.context.head_sha is not None:
            markers += "\n" + head_marker(report.context.head_sha)
        head = "\n\n".join([markers, _headline(report)])
        footer = _footer(report)
        budget = _Budget(COMMENT_LIMIT - utf16_length(head + footer) - _NOTE_RESERVE)
        parts = [_summary_table(report, results, budget)]
        parts.extend(budget.fit(_spec_section(r, report), _compact_section(r)) for r in results)
        if report.removed:
            parts.append(budget.fit(_removed_section(report), None))
        body = [head, budget.note(), *parts, footer]
        return "\n\n".join(p for p in body if p) + "\n"


@dataclass
class _Budget:
    """What is left of the comment size, and what had to be cut to stay inside it."""

    left: int
    shortened: int = 0
    dropped: int = 0
    rows_dropped: int = 0
    cuts: list[str] = field(default_factory=list)

    def take(self, text: str) -> bool:
        size = utf16_length(text) + 2
        if size > self.left:
            return False
        self.left -= size
        return True

    def fit(self, full: str, compact: str | None) -> str:
        if self.take(full):
            return full
        if compact is not None and self.take(compact):
            self.shortened += 1
            return compact
        self.dropped += 1
        return ""

    def note(self) -> str:
        cuts = [
            f"{_specs(self.rows_dropped)} not in the summary table" if self.rows_dropped else "",
            f"{_specs(self.dropped)} without a section" if self.dropped else "",
            f"{_specs(self.shortened)} without findings and assumptions" if self.shortened else "",
        ]
        cut = "; ".join(c for c in cuts if c)
        if not cut:
            return ""
        return (
            f"> ✂️ **Cut to fit GitHub's {COMMENT_LIMIT:,}-character comment limit:** {cut}. "
            "Specs are listed worst first; `budget-gate check` on them shows everything."
        )


def _specs(count: int) -> str:
    return f"{count:,} spec" + ("" if count == 1 else "s")


def _headline(report: Report) -> str:
    icon, phrase = _verdict(report.outcome)
    tally: dict[Outcome, int] = {}
    for result in report.results:
        tally[result.outcome] = tally.get(result.outcome, 0) + 1
    counts = " · ".join(
        f"{n:,} {_verdict(outcome)[1]}" for outcome, n in sorted(tally.items(), key=_worst_first)
    )
    return (
        f"## {icon} budget-gate: {phrase}\n\n"
        f"{_specs(len(report.results))}{': ' + counts if counts else ''}"
        f" — exit {report.outcome.exit_code}"
    )


def _worst_first(item: tuple[Outcome, int]) -> int:
    return -item[0].rank


def _verdict(outcome: Outcome) -> tuple[str, str]:
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


def _summary_table(report: Report, results: list[SpecResult], budget: _Budget) -> str:
    if len(results) < 2:
        return ""
    changed = report.context.base_ref is not None
    header = "| spec | verdict | worst cost | expected cost |" + (" change |" if changed else "")
    rule = "|---|---|---:|---:|" + ("---:|" if changed else "")
    rows: list[str] = []
    room = min(budget.left, COMMENT_LIMIT // _SUMMARY_SHARE) - utf16_length(header + rule)
    for result in results:
        row = _summary_row(result, report, changed)
        room -= utf16_length(row) + 1
        if room < 0:
            budget.rows_dropped += 1
            continue
        rows.append(row)
    table = "\n".join([header, rule, *rows])
    budget.take(table)
    return table


def _summary_row(result: SpecResult, report: Report, changed: bool) -> str:
    icon, phrase = _verdict(result.outcome)
    est = result.estimate
    costs = [_money(s.cost, result.currency) for s in (est.worst, est.expected)] if est else []
    cells = [escape(result.file), f"{icon} {phrase}", *(costs or ["—", "—"])]
    if changed:
        cells.append(_change_cell(report.diff_for(result.file)))
    return "| " + " | ".join(cells) + " |"


def _change_cell(diff: SpecDiff | None) -> str:
    if diff is None or diff.change is Change.UNPRICED:
        return "—"
    if diff.change is Change.ADDED:
        return "new"
    if diff.change is Change.UNCHANGED:
        return "unchanged"
    worst = diff.scenarios[0]
    return f"{signed(worst.head_cost - worst.base_cost)} {escape(diff.currency)}"


def _spec_section(result: SpecResult, report: Report) -> str:
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


def _compact_section(result: SpecResult) -> str:
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
    icon, phrase = _verdict(result.outcome)
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
    return [table, price]


def _estimate_row(s: Scenario, currency: str) -> str:
    cells = [
        s.name,
        f"{s.trials:,}",
        format_nonzero(s.gpu_hours, 1),
        _money(s.cost, currency),
        f"{format_nonzero(s.wall_clock_hours, 1)} h",
        f"{format_nonzero(s.first_result_hours, 1)} h",
        _money(s.cost_per_trial, currency),
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
    amount = _money(found.worst_cost, found.currency) if found.worst_cost is not None else "—"
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
            f"| {_money(e.cost, result.currency)} | {_money(w.cost, result.currency)} "
            f"| {signed(-alt.saving)} {escape(result.currency)} "
            f"| {format_amount(e.first_result_hours, 1)} h | {escape(alt.gives_up)} |"
        )
    heading = "Cheaper plans" if all(a.saving > 0 for a in result.alternatives) else "Other plans"
    return f"<details><summary>{heading}</summary>\n\n" + "\n".join(rows) + "\n\n</details>"


def _removed_section(report: Report) -> str:
    ref = escape(report.context.base_ref or "the base")
    rows = []
    for diff in report.removed:
        if diff.change is Change.UNPRICED:
            rows.append(f"| {escape(diff.file)} | — | — | {escape(diff.reason)} |")
            continue
        worst = diff.scenarios[0]
        rows.append(
            f"| {escape(diff.file)} | {_money(worst.base_cost, diff.currency)} | "
            f"{format_amount(worst.base_gpu_hours, 1)} | deleted |"
        )
    header = "| spec | worst cost before | GPU-hours before | |\n|---|---:|---:|---|"
    return f"### 🗑️ Specs deleted since {ref}\n\n{header}\n" + "\n".join(rows)


def _footer(report: Report) -> str:
    prices = f"Prices: {escape(report.catalog_source)}; {escape(report.catalog_date)}."
    rules = link("Rules", report.context.docs_url)
    ledger = report.ledger.lines() if report.ledger else []
    notes = "".join(f"> [!WARNING]\n> Ledger: {escape(line)}\n\n" for line in ledger)
    return f"{notes}---\n\n<sub>{prices} {rules} · budget-gate {escape(report.version)}</sub>"


def _money(amount: Decimal, currency: str) -> str:
    return f"{format_nonzero(amount)} {escape(currency)}"
