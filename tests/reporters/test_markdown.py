"""Markdown comment: golden output, escaping proven with GitHub's parser, size limit."""

from __future__ import annotations

import datetime as dt
import html
import re
from dataclasses import replace
from decimal import Decimal

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from gate.errors import Location
from gate.evaluation.report import RenderContext, Report, SpecResult
from gate.ledger.approvals import ApprovalCheck
from gate.ledger.records import LedgerRecord, RecordKind, Source
from gate.policy.findings import Finding, Outcome
from gate.policy.model import Severity
from gate.reporters.markdown import (
    COMMENT_LIMIT,
    MarkdownReporter,
    comment_marker,
    head_marker,
    written_for,
)
from gate.reporters.markup import code, escape, utf16_length
from tests.reporters.sample import (
    HOSTILE_FILE,
    HOSTILE_LABEL,
    HOSTILE_NAME,
    hostile_report,
    sample_report,
)

GOLDENS = __import__("pathlib").Path(__file__).parent / "goldens"
OUR_TAGS = {
    "a", "blockquote", "details", "h2", "h3", "hr", "li", "p", "strong", "sub", "summary",
    "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip


def render(report: Report) -> str:
    return MarkdownReporter().render(report)


def to_html(markdown: str) -> str:
    # NOTE: UNSAFE keeps raw HTML in the output, so any tag we failed to escape shows up.
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def visible_text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).replace("\u200b", "")


def test_hostile_golden(golden):
    golden(GOLDENS / "hostile.md", render(hostile_report()))


@pytest.mark.parametrize("make", [sample_report, hostile_report])
def test_only_our_own_tags_and_links_survive_githubs_parser(make):
    report = make()
    page = to_html(render(report))
    assert set(re.findall(r"<([a-z0-9]+)", page)) <= OUR_TAGS
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs and all(h.startswith(report.context.docs_url) for h in hrefs)


def test_hostile_strings_are_shown_literally_and_ping_nobody():
    page = to_html(render(hostile_report()))
    heading = re.search(r"<h3>(.*?)</h3>", page, re.DOTALL)
    assert heading is not None
    name = HOSTILE_NAME.replace("\n", " ").replace("\u202e", "\ufffd")
    assert visible_text(heading.group(1)) == f"❌ {HOSTILE_FILE} — {name}"
    assert "@\u200borg/team" in html.unescape(page) and "@org" not in html.unescape(page)
    assert "@\u200bhere" in html.unescape(page)
    assert repr(HOSTILE_LABEL)[1:-1].replace("\\\\", "\\") in visible_text(page)
    assert "\u202e" not in page


@pytest.mark.parametrize(
    "prefix", [" ", "_", "*", "~", "(", "x_", "a-", "1", "'", '"', "[", ":", "|", "\\", "\n"]
)
def test_no_www_or_scheme_in_a_value_becomes_a_live_link(prefix):
    """GitHub links ``www.`` after a space, ``_``, ``*``, ``~`` or ``(``, and ``scheme://``."""
    for tail in ("www.evil.example/login", "WWW.evil.example", "https://evil.example/x"):
        page = to_html(f"name {escape(prefix + tail)} end")
        assert "href" not in page, (prefix, tail, page)


@pytest.mark.parametrize(
    "raw",
    [
        "configs/llm_grid_v2.yaml",
        "a<b>&c.yaml",
        "x`y``z.yaml",
        "`edge`",
        " spaced ",
        "@org/team *not* [a](b) www.x.example",
    ],
)
def test_a_code_span_shows_the_value_as_written_and_stays_inert(raw):
    """No backslashes or entities show in a code span, and nothing in it escapes it."""
    page = to_html(f"a {code(raw)} b")
    (inner,) = re.findall(r"<code>(.*?)</code>", page, re.DOTALL)
    assert html.unescape(inner) == raw
    assert set(re.findall(r"<([a-z0-9]+)", page)) == {"p", "code"}
    row = to_html(f"| file | n |\n|---|---|\n| {code('a|b.yaml', in_table=True)} | 1 |\n")
    assert re.findall(r"<td>(.*?)</td>", row) == ["<code>a|b.yaml</code>", "1"]
    assert code("a\nb\u202ec") == "`a b\ufffdc`"


def test_tables_keep_their_shape_with_pipes_in_values():
    for table in re.findall(r"<table>.*?</table>", to_html(render(hostile_report())), re.DOTALL):
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.DOTALL)
        widths = {len(re.findall(r"<t[hd][ >]", row)) for row in rows}
        assert len(widths) == 1
    cells = re.findall(r"<td>(.*?)</td>", to_html(render(sample_report())))
    assert "experiments/big-grid.yaml" in cells


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("a|b", "a\\|b"),
        ("<b>&", "&lt;b&gt;&amp;"),
        ("[x](y)", "\\[x\\](y)"),
        ("*_`~$#\\", "\\*\\_\\`\\~\\$\\#\\\\"),
        ("@team", "@&#8203;team"),
        ("a\r\nb\tc\x00d", "a  b c d"),
        ("\u202eabc\u2066", "\ufffdabc\ufffd"),
        ("plain-name.yaml", "plain-name.yaml"),
    ],
)
def test_escape(raw, escaped):
    assert escape(raw) == escaped


def test_marker_identifies_repository_workflow_and_policy_dir():
    base = RenderContext(repository="o/r", workflow="ci", policy_dir="policies")
    markers = {
        comment_marker(c)
        for c in (
            base,
            replace(base, repository="o/s"),
            replace(base, workflow="nightly"),
            replace(base, policy_dir="other"),
        )
    }
    assert len(markers) == 4
    assert comment_marker(replace(base, docs_url="x", base_ref="y")) == comment_marker(base)
    assert re.fullmatch(r"<!-- budget-gate:comment:[0-9a-f]{16} -->", comment_marker(base))
    assert render(Report((), context=base)).startswith(comment_marker(base) + "\n")


def _many_specs(count: int, findings: int) -> Report:
    sample = sample_report()
    template = sample.results[0]
    results = tuple(
        replace(
            template,
            file=f"experiments/team-{i:05d}/sweep.yaml",
            findings=tuple(
                Finding("BG104", Severity.ERROR, "x" * 200, Location("f.yaml", j + 1, 1))
                for j in range(findings)
            ),
        )
        for i in range(count)
    )
    return replace(sample, results=results, diffs=())


def test_a_huge_report_is_cut_below_the_limit_with_a_note():
    out = render(_many_specs(2_000, 3))
    assert utf16_length(out) <= COMMENT_LIMIT
    assert "Cut to fit GitHub's 65,536-character comment limit" in out
    # NOTE: each section's assumptions say the trials run one at a time (no
    # max_concurrent_trials): the sections are longer, so fewer of them fit
    assert "1,811 specs not in the summary table; 1,977 specs without a section." in out
    assert out.rstrip().endswith("budget-gate 0.1.0</sub>")
    assert out.count("<details>") == out.count("</details>")


def test_a_spec_too_big_for_the_comment_is_shown_compact():
    out = render(_many_specs(1, 400))
    assert utf16_length(out) <= COMMENT_LIMIT
    assert "limit:** 1 spec without findings and assumptions." in out
    assert "Findings: 400 errors, 0 needing approval, 0 warnings (details cut)" in out


def test_a_small_report_is_not_cut():
    assert "Cut to fit" not in render(sample_report())


def test_emoji_count_twice_towards_the_limit():
    assert utf16_length("✅") == 1 and utf16_length("🗑️") == 3
    assert utf16_length("bad\udcff") == 4  # a byte of a name that is not UTF-8


def test_invalid_spec_lists_its_problems_and_no_table():
    result = SpecResult("s.yaml", Outcome.INVALID, errors=sample_report().results[3].errors)
    out = render(Report((result,)))
    assert "- experiments/broken.yaml:9:3: unknown key 'gpus\\_per\\_trail'" in out
    assert "| scenario |" not in out


@pytest.mark.parametrize("outcome", list(Outcome))
def test_every_outcome_has_a_headline(outcome):
    out = render(Report((SpecResult("s.yaml", outcome),)))
    assert f"— exit {outcome.exit_code}" in out
    assert re.search(r"^## \S+ budget-gate: [a-z ]+$", out, re.MULTILINE)


def test_without_a_base_ref_the_summary_has_no_change_column():
    report = replace(sample_report(), context=RenderContext(), diffs=())
    out = render(report)
    assert "| spec | verdict | worst cost | expected cost |\n|---|---|---:|---:|\n" in out
    assert "Cost change" not in out


def test_head_marker_names_the_commit_and_is_read_back():
    sha = "a" * 40
    body = render(replace(sample_report(), context=replace(sample_report().context, head_sha=sha)))
    first, second = body.splitlines()[:2]
    assert first == comment_marker(sample_report().context)
    assert second == f"<!-- budget-gate:head:{sha} -->"
    assert written_for(body) == sha
    assert written_for(render(sample_report())) is None
    assert written_for("text\n<!-- budget-gate:head:" + "b" * 64 + " -->\nmore") == "b" * 64
    assert written_for("text <!-- budget-gate:head:" + "b" * 64 + " -->") is None


@pytest.mark.parametrize("bad", ["main", "a" * 39, "A" * 40, "a" * 40 + " --> <script>"])
def test_head_marker_refuses_anything_but_a_commit_id(bad):
    with pytest.raises(ValueError, match="not a commit id"):
        head_marker(bad)


def _approved_report(by: str, reason: str | None) -> Report:
    sample = sample_report()
    needing = sample.results[1]
    record = LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec=needing.file,
        fingerprint=needing.fingerprint or "",
        experiment="llm-lora",
        recorded_at=dt.datetime(2026, 11, 28, 9, 30, tzinfo=dt.timezone.utc),
        currency="USD",
        worst_cost=Decimal("96"),
        by=by,
        reason=reason,
        source=Source.GITHUB_REVIEW,
    )
    approved = replace(
        needing,
        outcome=Outcome.PASS,
        findings=tuple(replace(f, approved_by=by) for f in needing.findings),
        approval=ApprovalCheck(record, ("an older <b>review</b> does not count",)),
    )
    refused = replace(
        sample.results[0], approval=ApprovalCheck(None, ("@mallory is *not* an approver",))
    )
    return replace(sample, results=(refused, approved))


def test_an_approval_names_approver_version_and_amount():
    body = render(_approved_report("alice", "worth <it>"))
    assert "**Approved (1)**" in body
    assert (
        "H100 needs approval for this team — experiments/llm.yaml:8:16 — approved by alice" in body
    )
    assert (
        "**Approval:** alice (github-review, 2026-11-28 09:30 UTC): worth &lt;it&gt; — covers "
        f"this version (`sha256:{'2' * 12}`) up to 96.00 USD worst case"
    ) in body
    assert "**Not approved**\n\n- @&#8203;mallory is \\*not\\* an approver" in body
    assert "Needs approval (" not in body.split("### ✅")[1]


def test_approval_blocks_stay_inert_under_githubs_parser():
    page = to_html(render(_approved_report("<img src=x onerror=alert(1)>", "[x](javascript:1)")))
    assert set(re.findall(r"<([a-z0-9]+)", page)) <= OUR_TAGS | {"code"}
    assert "javascript:" not in re.findall(r'href="([^"]*)"', page)[-1]
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
