"""The report's pure parts: months and ranges, the ledger's commitments, the forecast."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import subprocess
import sys
import types
from decimal import Decimal
from typing import Any

import pytest

from gate import tracking
from gate.errors import InputError
from gate.ledger.records import LedgerRecord, RecordKind
from gate.reconcile.actuals import RunFacts
from gate.report.commitments import commitments
from gate.report.compute import ReportInputs, build_report
from gate.report.period import Month, Period, last_full_month, parse_period
from gate.report.runs import MonthRuns, Priced
from tests.reconcile_kit import facts, make_plan

UTC = dt.timezone.utc


def test_months_ranges_and_the_default():
    assert str(parse_period("2026-11")) == "2026-11"
    period = parse_period("2026-11..2027-02", trend=1)
    assert [str(m) for m in period.months] == ["2026-11", "2026-12", "2027-01", "2027-02"]
    assert str(period.window[0]) == "2026-10"
    assert period.end == dt.datetime(2027, 3, 1, tzinfo=UTC)
    assert str(last_full_month(dt.datetime(2027, 1, 5, tzinfo=UTC))) == "2026-12"
    assert Month(2026, 12).shift(1) == Month(2027, 1)


@pytest.mark.parametrize("text", ["2026-13", "2026-00", "26-11", "2026-11..2026-10", "nov"])
def test_bad_months_are_input_errors(text):
    with pytest.raises(InputError, match="--month"):
        parse_period(text)


def test_a_month_that_has_not_begun_is_refused_and_the_month_in_progress_is_not():
    now = dt.datetime(2026, 12, 31, 23, 30, tzinfo=UTC)
    assert str(parse_period("2026-11..2026-12", now=now)) == "2026-11..2026-12"
    for text in ("2027-01", "2026-12..2027-01", "2999-01"):
        with pytest.raises(InputError, match="has not begun") as raised:
            parse_period(text, now=now)
        assert "up to 2026-12" in (raised.value.hint or "")


def _record(kind: RecordKind, day: int, amount: str | None, **kw) -> LedgerRecord:
    return LedgerRecord(
        kind=kind,
        spec="s.yaml",
        fingerprint=kw.pop("fingerprint", "sha256:a"),
        experiment="e",
        recorded_at=dt.datetime(2026, 11, day, tzinfo=UTC),
        currency=kw.pop("currency", "USD"),
        worst_cost=None if amount is None else Decimal(amount),
        team="t",
        **kw,
    )


def test_approvals_count_in_the_month_recorded_and_launches_when_there_are_any():
    period = parse_period("2026-11")
    before = dataclasses.replace(
        _record(RecordKind.APPROVAL, 1, "5"), recorded_at=dt.datetime(2026, 10, 31, tzinfo=UTC)
    )
    records = [
        before,
        _record(RecordKind.APPROVAL, 2, "100", record_id="a1"),
        _record(RecordKind.APPROVAL, 3, "40", record_id="a2"),
        _record(RecordKind.REVOCATION, 4, None, revokes=("a2",)),
        _record(RecordKind.APPROVAL, 5, "7", currency="EUR"),
    ]
    found = commitments(records, period, "USD")
    assert found.approved["t"] == Decimal(100)
    assert found.other_currency == 1
    assert not found.launches_recorded
    # a kind this ledger version does not define yet is read by its value, in one place
    launch = dataclasses.replace(
        _record(RecordKind.APPROVAL, 6, "30"), kind=types.SimpleNamespace(value="launch")
    )
    odd = dataclasses.replace(
        _record(RecordKind.APPROVAL, 6, "1"), kind=types.SimpleNamespace(value="snapshot-x")
    )
    found = commitments([*records, launch, odd], period, "USD")
    assert found.launches_recorded and found.launched["t"] == Decimal(30)
    assert found.approved["t"] == Decimal(100)
    assert found.unknown_kinds == {"snapshot-x": 1}


NOVEMBER = Period(Month(2026, 11), Month(2026, 11), trend=0)
DECEMBER_1 = dt.datetime(2026, 12, 1, tzinfo=UTC)


def _month_report(
    priced: Priced,
    records: list[LedgerRecord] | None = None,
    *,
    hours: float = 1.0,
    now: dt.datetime = DECEMBER_1,
    budgets: dict[str, Decimal] | None = None,
):
    """November's report of one run ``r1`` of ``hours`` under ``priced``, and ``records``."""
    runs = MonthRuns(lambda f: priced, NOVEMBER)
    runs.add(facts("r1", hours=hours))
    return _report_of(runs, records, now=now, budgets=budgets)


def _report_of(
    runs: MonthRuns,
    records: list[LedgerRecord] | None = None,
    *,
    now: dt.datetime = DECEMBER_1,
    budgets: dict[str, Decimal] | None = None,
):
    """November's report of ``runs`` and ``records``."""
    return build_report(
        ReportInputs(
            period=NOVEMBER,
            now=now,
            currency="USD",
            where="test",
            experiments=runs.experiments,
            commitments=commitments(records or [], NOVEMBER, "USD"),
            budgets=budgets or {},
        )
    )


def test_the_forecast_of_the_month_in_progress_is_its_pace():
    plan = make_plan(price="10")  # facts() start at T0 = 2026-11-02 08:00 UTC
    priced = Priced(plan, "t", "m", "s.yaml", "e")
    now = dt.datetime(2026, 11, 11, tzinfo=UTC)  # 10 of 30 days gone
    report = _month_report(priced, hours=3.0, now=now, budgets={"t": Decimal(1000)})
    (team,) = report.teams
    assert team.actual == Decimal(30)
    assert team.forecast == Decimal(30) * 30 / 10
    assert any("not over" in note for note in report.notes)


def test_a_team_with_a_budget_and_nothing_spent_has_its_row_at_zero():
    priced = Priced(make_plan(price="10"), "t", "m", "s.yaml", "e")
    budgets = {"t": Decimal(1000), "idle": Decimal(500), "free": None}
    report = _month_report(priced, hours=3.0, budgets=budgets)  # type: ignore[arg-type]
    assert [t.team for t in report.teams] == ["idle", "t"]  # "free": no budget, no activity
    idle = report.teams[0]
    assert (idle.budget, idle.actual, idle.forecast, idle.runs) == (Decimal(500), 0, 0, 0)
    assert all("idle" not in dict(r.teams) for r in report.rankings)  # nothing to rank


def test_a_team_whose_runs_all_failed_and_one_whose_runs_cost_nothing_rank_plainly():
    """Every run of "failing" failed: its waste share read "≥ 100 %" (no plateau measured,
    though a failed run has none). "free"'s run, priced at 0, was left out of the ranking,
    where a team without a qualified model ranks last; its share read "≥ —"."""
    from gate.reporters.report_text import render

    priced = {
        team: Priced(make_plan(price=price), team, "m", f"{team}.yaml", team)
        for team, price in (("ok", "10"), ("failing", "10"), ("free", "0"))
    }
    runs = MonthRuns(lambda f: priced[f.run_id.split("-")[0]], NOVEMBER)

    def run(run_id: str, **kw: Any) -> RunFacts:
        team = run_id.split("-")[0]
        tags = {tracking.SPEC: f"{team}.yaml", tracking.FINGERPRINT: f"sha256:{team}"}
        return facts(run_id, tags=tags, **kw)

    runs.add(run("ok-1", hours=2.0))
    runs.add(run("failing-1", hours=3.0, status="FAILED", f1=None))
    runs.add(run("failing-2", hours=1.0, status="KILLED", f1=None))
    runs.add(run("free-1", hours=1.0, f1=0.1))
    report = _report_of(runs)
    failing = next(t for t in report.teams if t.team == "failing")
    assert failing.waste.plateau is None and not failing.waste_at_least  # none to measure
    assert failing.waste_share == 1
    free = next(t for t in report.teams if t.team == "free")
    assert (free.actual, free.runs, free.waste_at_least) == (0, 1, False)
    by_cost, by_waste = report.rankings
    assert [team for team, _ in by_cost.teams] == ["ok", "failing", "free"]  # name breaks ties
    assert [team for team, _ in by_waste.teams] == ["ok", "failing", "free"]
    text = render(report)
    assert "≥ 100" not in text and "≥ —" not in text
    # A spec version whose one run crashed, beside "ok"'s run that logged no history: the
    # team's waste is still a lower bound (the crash measured no plateau for the other).
    priced["ok2"] = Priced(make_plan(price="10"), "ok", "m", "ok2.yaml", "ok2")
    runs.add(run("ok2-1", hours=0.01, status="FAILED", f1=None))
    mixed = next(t for t in _report_of(runs).teams if t.team == "ok")
    assert mixed.waste.plateau is None and mixed.waste_at_least


def test_a_run_without_a_plan_is_counted_not_priced():
    period = Period(Month(2026, 11), Month(2026, 11), trend=0)
    runs = MonthRuns(lambda f: "no spec", period)
    runs.add(facts("r1", hours=2.0, tags={"budget_gate.team": "t"}))
    (unpriced,) = runs.unpriced
    assert (unpriced.reason, unpriced.runs, unpriced.gpu_hours, unpriced.teams) == (
        "no spec",
        1,
        Decimal(2),
        ("t",),
    )
    assert runs.experiments == []


def test_a_run_found_again_by_a_later_search_counts_once():
    """A job that deletes its fingerprint tag between the tagged and the untagged search
    (or tags its run like a record) was found by both and charged twice."""
    priced = Priced(make_plan(price="10"), "t", "m", "s.yaml", "e")
    runs = MonthRuns(lambda f: priced, NOVEMBER)
    runs.add(facts("r1", hours=2.0))
    runs.add_untagged(facts("r1", hours=2.0, tags={}), priced)
    runs.add_unread_record(facts("r1", hours=2.0))
    runs.add(facts("r1", hours=2.0))
    assert runs.unpriced == []
    (team,) = _report_of(runs).teams
    assert (team.actual, team.runs) == (Decimal(20), 1)
    held = MonthRuns(lambda f: "no spec", NOVEMBER)
    held.add(facts("r2", hours=1.0))
    held.add_untagged(facts("r2", hours=1.0, tags={}), priced)
    assert [u.runs for u in held.unpriced] == [1]


HOSTILE = "$\\frac{$ <img src=x onerror=alert(1)> @org/team [x](http://evil) | * \u202egnp.exe"


def test_markdown_and_html_escape_what_specs_and_records_say():
    from gate.reporters.report_html import render as html
    from gate.reporters.report_markdown import render as markdown

    plan = make_plan(price="10")
    priced = Priced(plan, "t", HOSTILE, "s.yaml", HOSTILE)  # the model label leads a legend
    approval = dataclasses.replace(
        _record(RecordKind.APPROVAL, 2, "10", record_id="a1"), by=HOSTILE, experiment=HOSTILE
    )
    report = _month_report(priced, [approval])
    md = markdown(report)
    assert "<img" not in md and "&lt;img src=x onerror=alert(1)&gt;" in md
    assert "@org" not in md and "\\[x\\]" in md and "\\|" in md
    page = html(report)
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<script" not in page
    for text in (md, page):  # a right-to-left override would show the label reversed
        assert "\u202e" not in text and "\ufffdgnp.exe" in text


def test_report_formats_import_no_mlflow_and_matplotlib_only_to_draw():
    probe = (
        "import sys\n"
        "from gate.reporters import REPORT_FORMATS, load_report_renderer\n"
        "for name in REPORT_FORMATS: load_report_renderer(name)\n"
        "import gate.commands.report\n"
        "print(sorted(m for m in ('mlflow', 'matplotlib', 'requests') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_html_without_matplotlib_names_the_extra(monkeypatch):
    from gate.errors import MissingExtra
    from gate.reporters.report_html import render as html

    report = _month_report(Priced(make_plan(price="10"), "t", "m", "s.yaml", "e"))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as in an install without it
    with pytest.raises(MissingExtra, match="matplotlib") as caught:
        html(report)
    assert caught.value.exit_code == 3


def test_markdown_stays_within_an_issue_body():
    from gate.reporters.markup import utf16_length
    from gate.reporters.report_markdown import LIMIT
    from gate.reporters.report_markdown import render as markdown

    approvals = [
        dataclasses.replace(
            _record(RecordKind.APPROVAL, 2, "10", record_id=f"a{i}", fingerprint=f"sha256:{i}"),
            by=f"approver-{i}",
            experiment="x" * 80,
        )
        for i in range(2000)
    ]
    report = _month_report(Priced(make_plan(price="10"), "t", "m", "s.yaml", "e"), approvals)
    text = markdown(report)
    assert utf16_length(text) <= LIMIT
    assert "more in the JSON and HTML" in text and "approver-0" in text
    assert len(report.approvals) == 2000


def test_names_a_job_tags_at_any_length_keep_the_markdown_within_an_issue_body():
    """Twelve unpriced runs, each tagged with its own 8,000-character team: the notes,
    never cut, made a 98,392-character body that GitHub refuses, and no issue was posted."""
    from gate.reporters.markup import utf16_length
    from gate.reporters.report_markdown import LIMIT
    from gate.reporters.report_markdown import render as markdown

    runs = MonthRuns(lambda f: "no spec", NOVEMBER)
    for i in range(12):
        runs.add(facts(f"r{i}", hours=1.0, tags={"budget_gate.team": f"{i:02}" + "x" * 7_998}))
    unpriced_teams = {team for u in runs.unpriced for team in u.teams}
    assert len(unpriced_teams) == 12
    report = build_report(
        ReportInputs(NOVEMBER, DECEMBER_1, "USD", "test", runs.experiments,
                      commitments([], NOVEMBER, "USD"), {}, unpriced=runs.unpriced)
    )  # fmt: skip
    text = markdown(report)
    assert utf16_length(text) <= LIMIT
    assert "x" * 200 not in text and "…" in text
    assert "teams 00xxx" in text and "and 2 more)" in text  # the JSON lists them all


def test_no_figure_is_written_with_an_exponent():
    """A share of 1e-14 was ``"2.7E-14"`` in the JSON (whose amounts are decimal strings),
    and a forecast ten million times the budget ``1e+09 %`` in the tables."""
    import json

    from gate.reporters.report_json import render as as_json
    from gate.reporters.report_text import render as as_text

    priced = Priced(make_plan(price="10"), "t", "m", "s.yaml", "e")
    runs = MonthRuns(lambda f: priced, NOVEMBER)
    runs.add(facts("big", hours=100))
    runs.add(facts("blip", hours=1e-6, start=1, status="FAILED"))
    report = _report_of(runs, budgets={"t": Decimal("0.000001")})

    def strings(node):
        if isinstance(node, dict):
            for value in node.values():
                yield from strings(value)
        elif isinstance(node, list):
            for value in node:
                yield from strings(value)
        elif isinstance(node, str):
            yield node

    document = json.loads(as_json(report))
    numbers = [text for text in strings(document) if re.fullmatch(r"-?[0-9.E+-]+", text)]
    assert numbers and not [n for n in numbers if "E" in n]
    (team,) = document["teams"]
    assert team["waste_share"].startswith("0.0000000")  # str() wrote 8.3E-9
    text = as_text(report)
    assert "e+" not in text  # 1,000 of a budget of 0.000001:
    assert re.search(r" 100,000,000,[0-9]{3}(\.[0-9])? %", text)


def test_runs_with_an_invalid_gpu_tag_are_said_not_charged_in_silence():
    """``2.5``, ``" 3"`` or ``３`` GPUs were charged at the spec's count without a word
    (reconcile notes each one), though two of them claim more than the spec."""
    priced = Priced(make_plan(price="10"), "t", "m", "s.yaml", "e")
    runs = MonthRuns(lambda f: priced, NOVEMBER)
    for n, tag in enumerate(["2.5", " 3", "\uff13", "1"]):
        runs.add(facts(f"r{n}", hours=1.0, start=n, gpus=None, tags={"budget_gate.gpus": tag}))
    notes = _report_of(runs).notes
    assert (
        "3 runs with an invalid budget_gate.gpus tag (not a whole number): charged at their "
        "spec's gpus_per_trial (reconcile lists them)"
    ) in notes


def test_the_spot_saving_compares_on_demand_on_the_spot_prices_own_cloud(tmp_path):
    """With no cloud named, the report's saving took on-demand at the dearest cloud (gcp,
    12.54) against spot priced at azure's 6.98: a saving no cloud offers. The report's plan
    takes the on-demand price ``check`` compared spot with (the estimate's)."""
    from gate.estimate.prices import load_catalog
    from gate.evaluation.evaluate import Evaluator
    from gate.policy.loader import PolicySet

    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "default.yaml").write_text(
        "apiVersion: budget-gate/v1\nkind: Policy\n"
    )
    evaluator = Evaluator(
        PolicySet(str(tmp_path / "policies")), load_catalog(), dt.date(2026, 12, 1)
    )
    spec = "apiVersion: budget-gate/v1\nkind: Experiment\nmetadata: {name: p, team: t}\n"
    spec += "resources: {accelerator: H100, gpus_per_trial: 1, capacity: CAPACITY}\n"
    spec += "workload: {max_epochs: 2, epoch_minutes: 6}\n"

    def on_demand(capacity: str):
        path = tmp_path / f"{capacity}.yaml"
        path.write_text(spec.replace("CAPACITY", capacity))
        estimate = evaluator.evaluate_spec(str(path)).result.estimate
        assert estimate is not None
        return estimate.on_demand

    beside = on_demand("spot")
    assert beside is not None and (beside.cloud, beside.per_gpu_hour) == ("azure", Decimal("6.98"))
    assert on_demand("on-demand") is None


def test_out_of_range_times_and_tag_claims_do_not_move_the_figures():
    """``start_time=10**17`` crashed the month; a run logged elsewhere is counted for its
    spec's team and GPUs, whatever its tags claim."""
    from gate.reconcile.actuals import RunFacts
    from gate.report.runs import ELSEWHERE

    plan = make_plan(price="10", overrides={"resources": {"gpus_per_trial": 8}})
    priced = Priced(plan, "vision", "m", "s.yaml", "e", tracked_in="vision-exp")
    runs = MonthRuns(lambda f: priced, NOVEMBER, {"1": "vision-exp", "2": "nlp-exp"})
    runs.add(RunFacts("far", "FINISHED", 10**17, 10**17 + 1, experiment_id="1"))
    assert runs.outside == 1 and runs.experiments == []
    claims = {"budget_gate.team": "nlp", "budget_gate.gpus": "1"}
    runs.add(facts("misfiled", hours=2.0, tags=claims, experiment_id="2"))
    (unpriced,) = runs.unpriced
    assert (unpriced.reason, unpriced.gpu_hours, unpriced.teams) == (
        ELSEWHERE,
        Decimal(16),
        ("vision",),
    )


@pytest.mark.parametrize("text", ["9999-12", "0001-01", "0001-01..0001-05", "1970-01", "1970-02"])
def test_months_a_datetime_cannot_hold_or_before_mlflows_times_are_input_errors(text):
    """``9999-12`` ends in the year 10000, and ``0001-01``'s trend months fall before year 1:
    both crashed the report (exit 70). 1970-01 and 02 reach back before 1970 for the trend."""
    with pytest.raises(InputError, match=r"reaches outside 1970-01\.\.9999-11"):
        parse_period(text)
    assert parse_period("1970-03").window[0] == Month(1970, 1)
    assert parse_period("9999-11").months == (Month(9999, 11),)


def test_focus_effective_cost_sums_to_the_reports_actual_to_the_last_digit():
    """2,000 runs of 7 min 0.013 s at 4.11706 a GPU-hour over three teams: repeating decimals.

    Summed exactly, as a database's NUMERIC does: each run's cost at 28 significant digits
    summed at 28 digits missed the rows' exact sum at the 25th decimal.
    """
    import csv
    import decimal
    import io
    import json

    from gate.reporters import focus, report_json

    plans = [Priced(make_plan(price="4.11706"), t, "m", f"{t}.yaml", "e") for t in "abc"]
    runs = MonthRuns(lambda f: plans[int(f.run_id[1:]) % 3], NOVEMBER)
    for i in range(2000):
        run = facts(f"r{i}", start=i / 100, gpus=3)
        runs.add(dataclasses.replace(run, end_ms=run.start_ms + 420_013 + i % 7))
    report = _report_of(runs)
    rows = list(csv.DictReader(io.StringIO(focus.render(report))))
    totals = json.loads(report_json.render(report))["totals"]
    assert len(rows) == 2000
    with decimal.localcontext(decimal.Context(prec=100)):
        assert sum(Decimal(r["EffectiveCost"]) for r in rows) == Decimal(totals["actual"])
        assert sum(Decimal(r["ConsumedQuantity"]) for r in rows) == Decimal(totals["gpu_hours"])
        for row in rows:  # FOCUS: ListUnitPrice × PricingQuantity is ListCost
            product = Decimal(row["ListUnitPrice"]) * Decimal(row["PricingQuantity"])
            assert product == Decimal(row["ListCost"])
    # within a hundred-millionth of the unrounded figure: 2,000 runs × 3 GPUs × 4.11706
    held = sum(Decimal(420_013 + i % 7) for i in range(2000)) / 3_600_000
    assert abs(Decimal(totals["actual"]) - held * 3 * Decimal("4.11706")) < Decimal("1e-7")


@pytest.mark.parametrize(
    ("tags", "sku", "category", "cost"),
    [
        ({"budget_gate.capacity": "spot"}, "A100-80GB/on-demand", "Standard", 10),  # cheaper
        ({"budget_gate.accelerator": "H100"}, "H100/on-demand", "Standard", 30),  # dearer
        ({"budget_gate.capacity": "borrowed"}, "A100-80GB/on-demand", "Standard", 10),  # no price
        ({}, "A100-80GB/on-demand", "Standard", 10),
    ],
)
def test_focus_names_the_sku_a_run_was_charged_at_not_the_one_its_job_tagged(
    tags, sku, category, cost
):
    """A tag may only raise a run's charge; the row then names what it was charged as."""
    import csv
    import io

    from gate.reporters import focus
    from gate.spec.trial import Capacity
    from tests.conftest import make_quote

    def requote(accelerator, capacity):
        if capacity is Capacity.SPOT:
            return make_quote("4", accelerator, capacity)
        return make_quote("30", "H100") if accelerator == "H100" else None

    priced = Priced(make_plan(price="10", requote=requote), "t", "m", "s.yaml", "e")
    runs = MonthRuns(lambda f: priced, NOVEMBER)
    runs.add(facts("r1", hours=1.0, tags=tags))
    report = _report_of(runs)
    [row] = list(csv.DictReader(io.StringIO(focus.render(report))))
    assert (row["SkuPriceId"], row["PricingCategory"]) == (sku, category)
    assert row["SkuId"] == sku.split("/")[0]  # one SKU whatever its pricing category
    assert Decimal(row["EffectiveCost"]) == cost
