"""Text report for people at a terminal: the estimate table, assumptions and findings.

Finding and input-error lines start at column 1 in the compiler style
``path:line:col: severity BG101 message`` (``path:line:col: message — hint`` for an input
error), so editors, terminals and CI problem matchers can jump to them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, ClassVar

from gate.errors import one_line
from gate.evaluation.report import Report, SpecResult
from gate.money import format_amount, format_money, format_nonzero
from gate.policy.findings import Finding, Outcome
from gate.words import aligned

if TYPE_CHECKING:  # an import summary: only a W&B, Katib, SkyPilot or Hydra file has one
    from gate.estimate.model import Estimate, Scenario
    from gate.evaluation.diff import SpecDiff
    from gate.formats.model import ImportSummary
    from gate.ledger.approvals import ApprovalCheck
    from gate.ledger.budget import BudgetStatus

_HEADER = ("", "trials", "GPU-h", "cost", "per trial", "wall-clock", "first result")


class TextReporter:
    """Human-readable report; an invalid spec lists its input errors where findings go."""

    name: ClassVar[str] = "text"

    def render(self, report: Report) -> str:
        """Render every spec's block and a summary line (only the findings when quiet)."""
        if report.context.quiet:
            return "".join(f"{line}\n" for r in report.results for line in _quiet_lines(r))
        blocks = [_spec_block(result, report) for result in report.results]
        blocks.extend(_removed_block(diff, report) for diff in report.removed)
        counts = _counts(report)
        ledger = [f"ledger: {line}" for line in report.ledger.lines()] if report.ledger else []
        footer = [
            *ledger,
            f"prices: {report.catalog_source}; {report.catalog_date}",
            f"{counts} — verdict: {report.outcome.value} (exit {report.outcome.exit_code})",
        ]
        return "\n\n".join([*blocks, "\n".join(footer)]) + "\n"


def _spec_block(result: SpecResult, report: Report) -> str:
    if result.outcome is Outcome.INVALID:
        read = [f"  read as a {result.imported.format.value}"] if result.imported else []
        return "\n".join([*_diagnostics(result), *read, f"  → {result.outcome.value}"])
    lines = [f"{one_line(result.file)} — {result.name} (policy: {result.policy})"]
    if result.imported is not None:
        lines.extend(import_lines(result.imported))
    if result.estimate is not None:
        lines.extend(_estimate_lines(result.estimate, result.currency))
    diff = report.diff_for(result.file)
    if diff is not None and report.context.base_ref is not None:
        from gate.reporters.change import diff_lines

        lines.extend(f"  {line}" for line in diff_lines(diff, report.context.base_ref))
    for finding in result.findings:
        lines.append(_finding_line(finding, result.file))
        lines.extend(f"  fix: {fix}" for fix in finding.fixes)
    if result.budget is not None:
        lines.append(_budget_line(result.budget))
    if result.approval is not None:
        lines.extend(_approval_lines(result.approval))
    lines.extend(f"  note: {note}" for note in result.notes)
    lines.append(f"  → {result.outcome.value}")
    return "\n".join(lines)


def _removed_block(diff: SpecDiff, report: Report) -> str:
    from gate.reporters.change import diff_lines

    lines = diff_lines(diff, report.context.base_ref or "the base")
    return "\n".join([f"{one_line(diff.file)}: {lines[0]}", *(f"  {line}" for line in lines[1:])])


def _estimate_lines(est: Estimate, currency: str) -> list[str]:
    rows = [_HEADER, _row(est.worst, currency), _row(est.expected, currency)]
    table = [f"  {line}" for line in aligned(rows)]
    q = est.quote
    price = (
        f"  price: {format_amount(q.per_gpu_hour, 5)} {q.currency}/GPU-h for "
        f"{q.accelerator} {q.capacity.value} ({q.basis})"
    )
    notes = assumption_lines(est)
    judged = [f"  {line}"] if (line := judged_on(est)) else []
    saves = [
        f"  saves: {s.what} {format_amount(s.gpu_hours, 1)} GPU-h "
        f"({format_amount(s.cost)} {currency}, {s.scenario} case)"
        for s in est.savings
    ]
    if est.spot is not None:
        word = "saves" if est.spot.net_saving >= 0 else "costs"
        saves.append(
            f"  spot {word} {format_amount(abs(est.spot.net_saving))} {currency} "
            "against on-demand (expected, recompute included)"
        )
    return [*table, price, *judged, *notes, *saves]


def judged_on(est: Estimate) -> str | None:
    """Which case the limits and approval triggers judged, said where it is not the worst."""
    if est.judged_on == "worst":
        return None
    return (
        f"judged on: the {est.judged_on} case (the policy's limits.scenario): limits and "
        "approval triggers compare its figures, not the worst case's"
    )


def assumption_lines(est: Estimate) -> list[str]:
    """The assumptions as bullets: those both cases share once, then each case's own."""
    worst, expected = est.worst.assumptions, est.expected.assumptions
    both = [note for note in worst if note in expected]
    lines = []
    for title, notes in (
        ("assumes (both cases)", both),
        ("assumes (worst)", [n for n in worst if n not in both]),
        ("assumes (expected)", [n for n in expected if n not in both]),
    ):
        if notes:
            lines.append(f"  {title}:")
            lines.extend(f"    - {note}" for note in notes)
    return lines


def _row(s: Scenario, currency: str) -> tuple[str, ...]:
    return (
        s.name,
        f"{s.trials:,}",
        format_nonzero(s.gpu_hours, 1),
        f"{format_nonzero(s.cost)} {currency}",
        f"{format_nonzero(s.cost_per_trial)} {currency}",
        f"{format_nonzero(s.wall_clock_hours, 1)} h",
        f"{format_nonzero(s.first_result_hours, 1)} h",
    )


def _diagnostics(result: SpecResult) -> list[str]:
    """The spec's input errors and findings, one compiler-style line each."""
    file = one_line(result.file)
    errors = [
        one_line(str(p) if p.location or str(p).startswith(f"{result.file}: ") else f"{file}: {p}")
        for p in result.errors
    ]
    return [*errors, *(_finding_line(f, result.file) for f in result.findings)]


def _quiet_lines(result: SpecResult) -> list[str]:
    """The diagnostics, and what the verdict took as given (never left out: it may pass)."""
    file = one_line(result.file)
    return [*_diagnostics(result), *(f"{file}: note: {one_line(n)}" for n in result.notes)]


def _finding_line(f: Finding, file: str) -> str:
    where = f.location or one_line(file)
    waived = f" (waived: {f.waived_by})" if f.waived_by else ""
    approved = f" (approved by {f.approved_by})" if f.approved_by else ""
    return one_line(f"{where}: {f.severity.value} {f.rule_id} {f.message}{waived}{approved}")


def _budget_line(b: BudgetStatus) -> str:
    others = (
        f"; {b.other_currency} record(s) in other currencies not counted"
        if b.other_currency
        else ""
    )
    return (
        f"  budget: {b.scope}, {b.month}: {format_money(b.spent, b.currency)} of "
        f"{format_money(b.budget, b.currency)} spent (approved, not reconciled "
        f"{format_amount(b.committed)}; reconciled {format_amount(b.actual)}), "
        f"{format_money(b.remaining, b.currency)} left before this spec{others}"
    )


def _approval_lines(check: ApprovalCheck) -> list[str]:
    found = check.approval
    if found is None:
        return [f"  not approved: {reason}" for reason in check.stale]
    from gate.ledger.records import when

    amount = format_money(found.worst_cost or Decimal(0), found.currency)
    until = f" until {when(found.expires_at)}" if found.expires_at else ""
    return [
        f"  approved: {found.summary()} for {amount}{until} "
        f"({found.source.value}, record {found.record_id})",
        *(f"  note: {note}" for note in check.notes),
    ]


def _counts(report: Report) -> str:
    tally: dict[str, int] = {}
    for result in report.results:
        tally[result.outcome.value] = tally.get(result.outcome.value, 0) + 1
    parts = ", ".join(f"{n} {name}" for name, n in sorted(tally.items()))
    return f"{len(report.results)} spec(s): {parts}" if parts else "no specs"


def alternative_lines(result: SpecResult) -> list[str]:
    """Cheaper plans, the largest saving first: name, expected and worst cost, what it costs."""
    if not result.alternatives:
        return []
    heading = "cheaper plans" if all(a.saving > 0 for a in result.alternatives) else "other plans"
    lines = ["", f"{heading} (expected / worst cost; saving against the expected case)"]
    for alt in result.alternatives:
        e, w = alt.estimate.expected, alt.estimate.worst
        word = "saves" if alt.saving >= 0 else "costs"
        lines.append(
            f"  {alt.name}: {format_money(e.cost, result.currency)} / "
            f"{format_money(w.cost, result.currency)}, {word} "
            f"{format_money(abs(alt.saving), result.currency)}; first result "
            f"{format_amount(e.first_result_hours, 1)} h; gives up: {alt.gives_up}"
        )
        lines.append(f"    set {', '.join(str(edit) for edit in alt.edits)}")
    return lines


def import_lines(summary: ImportSummary) -> list[str]:
    """Where each field of an imported file's spec came from, and the engine's notes."""
    from gate.formats.model import Origin

    lines = [f"  read as a {summary.format.value}; each field from:"]
    unset = []
    for row in summary.fields:
        if row.source.origin is Origin.GATE:
            unset.append(f"{row.field} {row.value}")
            continue
        lines.append(f"    {row.field} = {row.value} ← {row.source}")
    if unset:
        lines.append(f"    budget-gate defaults (no source): {'; '.join(unset)}")
    lines.extend(f"    note: {note}" for note in summary.notes)
    return lines
