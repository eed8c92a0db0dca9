"""Markdown report: the pull-request comment body and the GitHub job summary.

Layout: a hidden marker (so the comment is updated in place) and, on a pull request, the
head commit it was written for; a headline verdict, a summary table when there are several
specs, then per spec (worst outcome first) its estimate table, its cost change against the
base, its findings grouped by severity with links to the rule docs, its approval (who
approved, or why no approval counts), and its assumptions. The body is cut to GitHub's
65,536-character limit at section boundaries, with a note saying what was left out. Each
spec's section is :mod:`gate.reporters.markdown_spec`'s; this module lays out the comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from gate.evaluation.diff import Change, SpecDiff
from gate.evaluation.report import RenderContext, Report, SpecResult
from gate.money import format_amount
from gate.policy.findings import Outcome
from gate.reporters.change import signed
from gate.reporters.markdown_spec import compact_section, money, spec_section, verdict
from gate.reporters.markup import escape, hidden_marker, link, utf16_length

COMMENT_LIMIT = 65_536
"""GitHub's maximum comment body, in characters."""

_NOTE_RESERVE = 1_000
_SUMMARY_SHARE = 4  # the summary table may use at most a quarter of the body


_HEAD = re.compile(r"^<!-- budget-gate:head:([0-9a-f]{40}|[0-9a-f]{64}) -->$", re.MULTILINE)


def comment_marker(context: RenderContext) -> str:
    """The hidden first line that identifies this comment: repository × workflow × policies."""
    return hidden_marker("comment", context.repository, context.workflow, context.policy_dir)


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

    def render(self, report: Report, limit: int = COMMENT_LIMIT) -> str:
        """Render the whole comment, cut to fit ``limit`` (room left for what CI adds)."""
        results = sorted(report.results, key=lambda r: -r.outcome.rank)
        markers = comment_marker(report.context)
        if report.context.head_sha is not None:
            markers += "\n" + head_marker(report.context.head_sha)
        head = "\n\n".join([markers, _headline(report)])
        footer = _footer(report)
        budget = _Budget(limit - utf16_length(head + footer) - _NOTE_RESERVE)
        parts = [_summary_table(report, results, budget)]
        parts.extend(budget.fit(spec_section(r, report), compact_section(r)) for r in results)
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
    icon, phrase = verdict(report.outcome)
    tally: dict[Outcome, int] = {}
    for result in report.results:
        tally[result.outcome] = tally.get(result.outcome, 0) + 1
    counts = " · ".join(
        f"{n:,} {verdict(outcome)[1]}" for outcome, n in sorted(tally.items(), key=_worst_first)
    )
    return (
        f"## {icon} budget-gate: {phrase}\n\n"
        f"{_specs(len(report.results))}{': ' + counts if counts else ''}"
        f" — exit {report.outcome.exit_code}"
    )


def _worst_first(item: tuple[Outcome, int]) -> int:
    return -item[0].rank


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
    icon, phrase = verdict(result.outcome)
    est = result.estimate
    costs = [money(s.cost, result.currency) for s in (est.worst, est.expected)] if est else []
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


def _removed_section(report: Report) -> str:
    ref = escape(report.context.base_ref or "the base")
    rows = []
    for diff in report.removed:
        if diff.change is Change.UNPRICED:
            rows.append(f"| {escape(diff.file)} | — | — | {escape(diff.reason)} |")
            continue
        worst = diff.scenarios[0]
        rows.append(
            f"| {escape(diff.file)} | {money(worst.base_cost, diff.currency)} | "
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
