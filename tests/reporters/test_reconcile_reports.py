"""Reconciliation reports: goldens, escaping proven with GitHub's parser, size, chart, JSON."""

from __future__ import annotations

import html
import io
import json
import re
from decimal import Decimal
from pathlib import Path

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from gate import tracking
from gate.commands.progress import ProgressBar, progress_for
from gate.reconcile.quality import ChartMetric
from gate.reconcile.reconciler import CurvePoint, ReconcileReport, reconcile
from gate.reporters import reconcile_json, reconcile_markdown, reconcile_text
from gate.reporters.chart import label, resample, xychart
from gate.reporters.markdown import COMMENT_LIMIT
from gate.reporters.markup import utf16_length
from tests.reconcile_kit import approval, facts, make_plan

GOLDENS = Path(__file__).parent / "goldens"
OUR_TAGS = {
    "blockquote", "br", "code", "details", "h2", "h3", "hr", "li", "p", "pre", "strong",
    "sub", "summary", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
HOSTILE_RUN = "<img src=x onerror=alert(1)> | @org/team `x`"
HOSTILE_METRIC = 'val_f1"] ``` <b>'
HOSTILE_SPEC = "exp/<script>alert(1)</script>|.yaml"

D = Decimal


def sample(hostile: bool = False, runs: int = 0) -> ReconcileReport:
    """Six runs of 2 GPUs: qualified, unqualified, failed and retried, one still running."""
    metric = HOSTILE_METRIC if hostile else "val_f1"
    gate = [
        {"metric": metric, "op": ">=", "value": 0.8},
        {"metric": "val_recall_class_*", "op": ">=", "value": 0.6},
    ]
    plan = make_plan(
        {"quality_gate": gate, "resources": {"gpus_per_trial": 2}},
        price="4",
        now=30,
        approval=approval("200"),
    )
    recall = {"val_recall_class_0": 0.9, "val_recall_class_1": 0.7}
    samples = {
        "system/gpu_0_utilization_percentage": (80.0,),
        "system/gpu_1_utilization_percentage": (60.0,),
    }
    phases = {tracking.SETUP_SECONDS: 600.0, tracking.TRAIN_SECONDS: 6000.0}

    def run(run_id, *, f1, start, hours, trial, attempt=1, status="FINISHED", **kw):
        return facts(
            run_id,
            start=start,
            hours=hours,
            status=status,
            gpus=2,
            f1=None,
            metrics={metric: f1, **recall, **phases},
            tags={tracking.TRIAL_ID: str(trial), tracking.ATTEMPT: str(attempt)},
            name=HOSTILE_RUN if hostile and run_id == "r2" else f"trial-{trial}",
            history=(3.0, 2.0, 1.5, 1.5, 1.5, 1.5),
            utilization=samples,
            **kw,
        )

    found = [
        run("r1", f1=0.82, start=0, hours=2, trial=1),
        run("r2", f1=0.7, start=0, hours=3, trial=2),
        run("r3", f1=0.9, start=1, hours=1, trial=3, status="FAILED"),
        run("r4", f1=0.91, start=3, hours=2, trial=3, attempt=2),
        run("r5", f1=0.88, start=5, hours=4, trial=4),
        run("r6", f1=0.5, start=28, hours=1, trial=5, status="RUNNING"),
    ]
    found += [run(f"x{i:05}", f1=0.1, start=6, hours=0.01, trial=100 + i) for i in range(runs)]
    result = reconcile(plan, found)
    return ReconcileReport(
        file=HOSTILE_SPEC if hostile else "experiments/sweep.yaml",
        name="@here <b>sweep</b>" if hostile else "sweep",
        policy="default",
        experiment="sweep-exp",
        where="http://127.0.0.1:5000",
        result=result,
        version="0.1.0",
        not_recorded="1 run(s) still running; reconcile again once they end",
        repository="octo/demo",
    )


def to_html(markdown: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def test_text_golden(golden):
    golden(GOLDENS / "reconcile.txt", reconcile_text.render(sample()))


def test_markdown_golden(golden):
    golden(GOLDENS / "reconcile.md", reconcile_markdown.render(sample()))


def test_the_sample_numbers():
    result = sample().result
    # 2 GPUs × (2 + 3 + 1 + 2 + 4 + 2 running) h × 4 = 112
    assert result.cost == D(112) and result.qualified == 3
    assert result.cost_per_qualified == D(112) / 3
    assert result.variance.approved == D(200) and not result.variance.over
    assert result.verdict.passed and result.verdict.provisional


@pytest.mark.parametrize("hostile", [False, True])
def test_only_our_own_tags_survive_githubs_parser(hostile):
    page = to_html(reconcile_markdown.render(sample(hostile)))
    assert set(re.findall(r"<([a-z0-9]+)", page)) <= OUR_TAGS
    assert "href=" not in page and "<img" not in page and "<script" not in page


def test_hostile_strings_are_literal_and_ping_nobody():
    markdown = reconcile_markdown.render(sample(hostile=True))
    text = html.unescape(re.sub(r"<[^>]+>", "", to_html(markdown)))
    assert HOSTILE_SPEC in text
    assert "@\u200bhere" in text and "@\u200borg/team" in text and "@org" not in text
    mermaid = markdown[markdown.index("```mermaid") : markdown.index("```\n", 12) + 3]
    assert mermaid.count("```") == 2  # the metric name cannot end the block
    assert 'title "Best val_f1__ ___ _b_ against cumulative cost"' in mermaid
    assert '"' not in mermaid.split("y-axis ")[1].split('"')[1]


def test_tables_keep_their_shape():
    page = to_html(reconcile_markdown.render(sample(hostile=True)))
    tables = re.findall(r"<table>.*?</table>", page, re.DOTALL)
    assert len(tables) == 4  # variance, waste, retries, runs
    for table in tables:
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.DOTALL)
        assert len({len(re.findall(r"<t[hd][ >]", row)) for row in rows}) == 1


def test_thousands_of_runs_stay_under_githubs_comment_limit():
    markdown = reconcile_markdown.render(sample(runs=3_000))
    assert utf16_length(markdown) <= COMMENT_LIMIT
    assert "Runs, costliest first (100 of 3,006)" in markdown
    assert "2,906 cheaper runs not shown; `budget-gate reconcile` lists all." in markdown
    assert "2,906" not in reconcile_text.render(sample(runs=3_000)).splitlines()[4]


def test_the_comment_marker_is_per_repository_and_spec():
    marker = reconcile_markdown.reconcile_marker
    assert marker("o/r", "a.yaml") == marker("o/r", "a.yaml")
    assert marker("o/r", "a.yaml") != marker("o/r", "b.yaml") != marker("o/s", "b.yaml")
    assert re.fullmatch(r"<!-- budget-gate:reconcile:[0-9a-f]{16} -->", marker("", ""))


def test_json_is_complete_at_checks_places():
    """Money to the cent, hours to 4 decimals, the price to 5, as check's JSON writes them
    (schema 2; 1 wrote "32", "184.0" and "112.000000000" side by side)."""
    doc = json.loads(reconcile_json.render(sample()))
    assert doc["schema_version"] == "2" and doc["kind"] == "reconciliation"
    assert doc["totals"]["cost"] == "112.00" and doc["totals"]["gpu_hours"] == "28.0000"
    assert doc["totals"]["cost_per_qualified_model"] == "37.33"
    assert doc["price"]["per_gpu_hour"] == "4.00000"
    variance = doc["variance"]
    assert (variance["expected"], variance["approved"], variance["limit"]) == (
        "32.00",
        "200.00",
        "220.00",
    )
    assert doc["quality_curve"]["qualified_only"] is True
    assert doc["quality_curve"]["best_reached_at_cost"] == "64.00"
    assert doc["other_versions"] is None
    assert doc["totals"]["statuses"] == {"FAILED": 1, "FINISHED": 4, "RUNNING": 1}
    assert doc["variance"]["approval_id"] == "approval-run-1"
    assert [w["kind"] for w in doc["waste"]] == [
        "failed-runs",
        "epochs-after-plateau",
        "idle-gpu-time",
    ]
    [retry] = doc["retries"]
    assert retry["trial"] == "3" and retry["retry_cost"] == "8.00"
    running = next(r for r in doc["runs"] if r["status"] == "RUNNING")
    assert running["end"] is None and running["held_hours"] == "2.0000"
    assert running["cost"] == "16.00" and running["utilization"] == "0.700000"
    phases = doc["runs"][0]["phases_hours"]
    assert phases["setup"] == "0.1667" and phases["evaluation"] == "0.0000"
    total = sum(D(v) for v in phases.values())  # each rounded: within half a unit apiece
    assert abs(total - D(doc["runs"][0]["held_hours"])) <= D("0.0002")
    assert doc["verdict"] == {
        "passed": True,
        "provisional": True,
        "reasons": [],
        "exit_code": 0,
    }


def test_resampling_takes_equal_steps_of_spend():
    curve = [CurvePoint(D(10), None), CurvePoint(D(30), 0.7), CurvePoint(D(40), 0.9)]
    assert resample(curve, steps=4) == [
        (D(10), None),
        (D(20), None),
        (D(30), 0.7),
        (D(40), 0.9),
    ]
    assert resample([], 4) == [] and resample([CurvePoint(D(0), 1.0)]) == []


def test_the_chart_floor_is_the_worst_end_of_the_axis():
    curve = [CurvePoint(D(50), None), CurvePoint(D(100), 0.9)]
    up = xychart(curve, ChartMetric("val_f1", "max", 0.8), "USD")
    assert "    line [0.795, 0.795, " in up and up.count("line [") == 2
    down = xychart(curve, ChartMetric("val_loss", "min"), "USD")
    assert "    line [0.945, " in down and down.count("line [") == 1
    assert 'x-axis "cumulative cost (USD)" 0 --> 100' in down
    assert xychart([CurvePoint(D(5), None)], ChartMetric("m", "max"), "USD") == ""


def test_chart_numbers_are_plain_decimals():
    curve = [CurvePoint(D("123456.7"), 0.000012345)]
    chart = xychart(curve, ChartMetric("loss", "min"), "USD")
    assert "e-" not in chart and "e+" not in chart
    assert 'x-axis "cumulative cost (USD)" 0 --> 123457' in chart
    assert label("a`b\"c'd\ne") == "a_b_c_d_e"


def test_the_progress_bar_draws_on_a_terminal_at_most_ten_times_a_second():
    stream = io.StringIO()
    times = iter([0.0, 0.05, 0.1, 0.16, 1.0, 1.0])
    bar = ProgressBar(stream, clock=lambda: next(times))
    bar(1, 4, True)  # t=0.05: drawn
    bar(2, 4, True)  # t=0.1: 0.05 s later, skipped
    bar(3, 4, True)  # t=0.16: drawn
    bar(4, 4, False)  # t=1.0: the last one always draws
    bar.close()
    lines = stream.getvalue().split("\r")
    assert lines[1] == "reconcile [#######---------------------] 1/4+ runs, 20 runs/s\x1b[K"
    assert lines[2].startswith("reconcile [#####################-------] 3/4+ runs")
    assert lines[3].startswith("reconcile [############################] 4/4 runs, 4 runs/s")
    assert lines[4] == "\x1b[K" and len(lines) == 5
    assert progress_for(io.StringIO()) is None

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert isinstance(progress_for(Tty()), ProgressBar)
    quiet = io.StringIO()
    ProgressBar(quiet).close()
    assert quiet.getvalue() == ""


def test_durations_read_in_seconds_minutes_or_hours():
    from gate.reporters.reconcile_text import duration

    assert duration(D("0.001")) == "3.6 s"
    assert duration(D("0.5")) == "30.0 min"
    assert duration(D(2)) == "2.00 h"


def test_a_reconciliation_without_runs_renders_without_tables_or_chart():
    plan = make_plan({"quality_gate": []}, price="0")  # an estimate of 0: no change to show
    report = ReconcileReport(
        "s.yaml", "s", "default", "exp", "sqlite:///x", reconcile(plan, []), "0.1.0"
    )
    markdown = reconcile_markdown.render(report)
    assert "```mermaid" not in markdown and "<details>" not in markdown
    assert "| expected estimate | 0.00 USD | 4.00 | — |" in markdown
    assert "ledger" not in markdown.split("---")[-1]
    text = reconcile_text.render(report)
    assert "runs (0: none)" in text and "quality against cost" not in text
    assert "expected estimate: 0.00 USD, 4.00 GPU-h\n" in text
    assert "verdict: fail — no runs found, so no qualified model (exit 1)" in text


def test_more_than_a_hundred_retried_trials_are_summarized():
    plan = make_plan(price="1")
    runs = [
        facts(f"r{trial}-{attempt}", start=attempt, tags={tracking.TRIAL_ID: str(trial)})
        for trial in range(101)
        for attempt in (0, 1)
    ]
    markdown = reconcile_markdown.render(
        ReconcileReport("s.yaml", "s", "p", "e", "w", reconcile(plan, runs), "0.1.0")
    )
    assert "\n1 more trials retried (see `budget-gate reconcile`)" in markdown
    assert "- **Trials:** 101; 101 run more than once, 101.00 USD on retries\n" in markdown
    text = reconcile_text.render(
        ReconcileReport("s.yaml", "s", "p", "e", "w", reconcile(plan, runs), "0.1.0")
    )
    assert "trial 16 (FINISHED → FINISHED), 91 more (--format json lists them)\n" in text
