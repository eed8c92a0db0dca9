"""``budget-gate report`` on a synthetic month whose figures are known (tests/report_kit.py).

Every figure of the JSON is checked to the cent against the hand-worked figures; the text
and Markdown show them; the FOCUS rows pass the specification's own column requirements
(tests/focus_spec.py) and their EffectiveCost adds up to the report's actual total.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gate.cli import main
from tests import report_kit
from tests.focus_spec import validate_focus
from tests.headless import chromium, requested
from tests.mlflow_server import MlflowServer, running_server

CENT = Decimal("0.01")


@pytest.fixture(scope="module")
def report_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    """A server of this module's own: the report reads the whole ledger, and the other test
    files on the same worker write launches and approvals of their own into theirs."""
    # through `mlflow server` itself, as users start it (the other tests skip the CLI)
    with running_server(tmp_path_factory.mktemp("report-mlflow"), via_cli=True) as server:
        yield server


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory, report_server: MlflowServer):
    return report_kit.seed(tmp_path_factory.mktemp("report"), report_server.uri)


def cli(month: report_kit.Month, capsys: pytest.CaptureFixture[str], *args: str):
    capsys.readouterr()
    code = main(["report", "--policy-dir", month.policy_dir, "--tracking-uri", month.uri, *args])
    out, err = capsys.readouterr()
    return code, out, err


def report_json(month, capsys, *args: str) -> dict[str, Any]:
    code, out, err = cli(month, capsys, "--month", report_kit.MONTH, "--format", "json", *args)
    assert code == 0, err
    return json.loads(out)


def cents(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text).quantize(CENT)


def test_every_team_figure_is_the_hand_worked_one(month, capsys):
    document = report_json(month, capsys)
    assert document["schema_version"] == "1"
    # NOTE: to the second, as the forecast's pace is counted: one can recompute it
    assert dt.datetime.fromisoformat(document["generated_at"]).microsecond == 0
    teams = {month.teams[key]: key for key in report_kit.EXPECTED}
    rows = {teams[t["team"]]: t for t in document["teams"] if t["team"] in teams}
    assert set(rows) == set(report_kit.EXPECTED)
    for key, want in report_kit.EXPECTED.items():
        row = rows[key]
        assert cents(row["actual"]) == want["actual"], key
        assert cents(row["forecast"]) == want["actual"], key  # a month already over
        assert Decimal(row["gpu_hours"]).quantize(CENT) == want["gpu_hours"], key
        assert row["runs"] == want["runs"], key
        assert row["qualified"] == want["qualified"], key
        assert cents(row["cost_per_qualified"]) == (want["actual"] / want["qualified"]).quantize(
            CENT
        )
        assert cents(row["approved"]) == want["approved"], key
        assert cents(row["budget"]) == want["budget"], key
        assert row["launched"] is None  # no launch records in this ledger
        assert cents(row["waste"]["failed"]) == want["failed"], key
        assert cents(row["waste"]["plateau"]) == want["plateau"], key
        assert cents(row["waste"]["idle_upper_bound"]) == want["idle"], key
        assert cents(row["guard_saved"]) == want["guard_saved"], key
        share = (want["failed"] + (want["plateau"] or 0)) / want["actual"]
        assert Decimal(row["waste_share"]).quantize(Decimal("0.0001")) == share.quantize(
            Decimal("0.0001")
        )
    totals = document["totals"]
    actual = sum(w["actual"] for w in report_kit.EXPECTED.values())
    assert cents(totals["actual"]) == actual
    assert totals["runs"] == 8
    assert totals["qualified"] == 4


def test_the_estimates_are_scored_as_the_backtest_scores(month, capsys):
    document = report_json(month, capsys)
    rows = {t["team"]: t for t in document["teams"]}
    for key in ("vision", "nlp"):
        want = report_kit.EXPECTED[key]
        expected, worst = want["estimate"]
        error = float((expected - want["actual"]) / want["actual"])
        accuracy = rows[month.teams[key]]["estimates"]["accuracy"]
        assert rows[month.teams[key]]["estimates"]["cases"] == 1
        assert accuracy["mape"] == pytest.approx(abs(error))
        assert accuracy["bias"] == pytest.approx(error)
        assert accuracy["bounded"] == (1.0 if want["actual"] <= worst else 0.0)
    # tabular's approval was revoked: its spec's own estimate stands in
    _code, out, _err = main_estimate(month, capsys)
    est = json.loads(out)["results"][0]["estimate"]
    expected = Decimal(est["expected"]["cost"])
    actual = report_kit.EXPECTED["tabular"]["actual"]
    accuracy = rows[month.teams["tabular"]]["estimates"]["accuracy"]
    assert accuracy["mape"] == pytest.approx(abs(float((expected - actual) / actual)))


def main_estimate(month, capsys):
    capsys.readouterr()
    code = main(
        [
            "check",
            "--policy-dir",
            month.policy_dir,
            "--tracking-uri",
            month.uri,
            month.specs["C"],
            "--format",
            "json",
        ]
    )
    out, err = capsys.readouterr()
    assert code in (0, 1, 2), err
    return code, out, err


def test_models_trend_waste_spot_guard_and_rankings(month, capsys):
    document = report_json(month, capsys)
    assert document["period"]["trend_months"] == ["2025-01", "2025-02", "2025-03"]
    models = {m["team"]: m for m in document["models"]}
    for key, trend in report_kit.TREND.items():
        found = [cents(f["cost_per_qualified"]) for f in models[month.teams[key]]["trend"]]
        assert found == trend, key
    assert models[month.teams["vision"]]["model"] == "resnet"
    assert models[month.teams["tabular"]]["model"] == "(no model label)"
    waste = {w["kind"]: w for w in document["waste"]}
    assert cents(waste["failed-runs"]["cost"]) == Decimal(38)
    assert waste["failed-runs"]["runs"] == 2
    assert cents(waste["epochs-after-plateau"]["cost"]) == Decimal(40)
    assert cents(waste["idle-gpu-time"]["cost"]) == Decimal(5)
    assert waste["idle-gpu-time"]["upper_bound"] is True
    guard = document["guard"]
    assert (guard["runs"], cents(guard["cost"]), cents(guard["saved"])) == (1, 40, 60)
    spot, want = document["spot"], report_kit.SPOT
    assert (spot["runs"], spot["preempted"]) == (want["runs"], want["preempted"])
    assert cents(spot["on_demand_cost"]) == want["on_demand"]
    assert cents(spot["spot_cost"]) == want["spot"]
    assert cents(spot["recompute_cost"]) == want["recompute"]
    assert cents(spot["net_saving"]) == want["net"]
    by_cost, by_waste = document["rankings"]
    ours = set(month.teams.values())
    order = [r["team"] for r in by_cost["teams"] if r["team"] in ours]
    assert order == [month.teams[k] for k in ("tabular", "nlp", "vision")]  # 15 < 80 < 180
    order = [r["team"] for r in by_waste["teams"] if r["team"] in ours]
    assert order == [month.teams[k] for k in ("tabular", "nlp", "vision")]  # 0 < 10 % < 38.9 %
    costliest = [e["experiment"] for e in document["costliest_experiments"]][:3]
    assert costliest == [Path(month.specs[k]).stem for k in "ABC"]
    # NOTE: a kind no run of the experiment logged was shown as 0, where reconcile says
    # "not measured": A logged no GPU utilization, C no val_loss history
    a, _, c = document["costliest_experiments"][:3]
    assert (a["waste"]["idle_upper_bound"], cents(a["waste"]["plateau"])) == (None, 40)
    assert (c["waste"]["plateau"], cents(c["waste"]["idle_upper_bound"])) == (None, 5)


def test_approvals_say_who_whether_over_the_triggers_and_what_they_cost(month, capsys):
    document = report_json(month, capsys)
    approvals = {a["by"]: a for a in document["approvals"] if a["team"] in month.teams.values()}
    assert set(approvals) == {"alice", "bob"}  # the revoked one and the EUR one do not count
    alice, bob = approvals["alice"], approvals["bob"]
    assert alice["over_triggers"] is True  # 6 trials, the policy asks over 4
    assert bob["over_triggers"] is False
    assert (cents(alice["approved"]), cents(alice["actual"]), alice["runs"]) == (600, 180, 3)
    assert (cents(bob["approved"]), cents(bob["actual"]), bob["runs"]) == (300, 80, 3)
    notes = "\n".join(document["notes"])
    assert "1 run not priced: no spec at their fingerprint" in notes
    assert "in another currency than USD" in notes
    assert "no launch records" in notes


def test_the_policy_fallbacks_are_said_in_the_report_not_only_on_stderr(
    month, capsys, tmp_path, monkeypatch
):
    """A scheduled issue shows the report, not stderr: the built-in policy repriced every
    run, and teams no policy knows took the default's budget, without a word in it."""
    notes = "\n".join(report_json(month, capsys)["notes"])
    assert "records are not signed" in notes and "teams no policy knows" not in notes
    policies = Path(month.policy_dir).parent / f"unlisted-{tmp_path.name}"  # beside the specs
    policies.mkdir()
    text = (Path(month.policy_dir) / "default.yaml").read_text(encoding="utf-8")
    (policies / "default.yaml").write_text(re.sub(r"(?m)^teams: .*\n", "", text), "utf-8")
    code, out, err = cli(month, capsys, "--policy-dir", str(policies), "--month",
                         report_kit.MONTH, "--format", "json")  # fmt: skip
    assert code == 0, err
    notes = "\n".join(json.loads(out)["notes"])
    [line] = [n for n in notes.splitlines() if "priced and budgeted by the default" in n]
    assert all(team in line for team in month.teams.values()), line
    monkeypatch.chdir(tmp_path)  # no policies/ here, nor above
    capsys.readouterr()
    argv = ["report", "--tracking-uri", month.uri, "--month", report_kit.MONTH, "--format", "json"]
    assert main(argv) == 0
    notes = "\n".join(json.loads(capsys.readouterr().out)["notes"])
    assert "built-in default policy" in notes


def test_one_team(month, capsys):
    document = report_json(month, capsys, "--team", month.teams["nlp"])
    assert [t["team"] for t in document["teams"]] == [month.teams["nlp"]]
    assert cents(document["totals"]["actual"]) == report_kit.EXPECTED["nlp"]["actual"]
    assert [a["by"] for a in document["approvals"]] == ["bob"]


def test_focus_rows_pass_the_specification_and_add_up(month, capsys, tmp_path):
    target = tmp_path / "focus.csv"
    code, out, err = cli(
        month,
        capsys,
        "--month",
        report_kit.MONTH,
        "--format",
        f"focus={target}",
        "--format",
        "json",
    )
    assert code == 0, err
    document = json.loads(out)
    text = target.read_text(encoding="utf-8")
    assert validate_focus(text) == []
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == document["totals"]["runs"] == 8
    total = sum(Decimal(r["EffectiveCost"]) for r in rows)
    assert total == Decimal(document["totals"]["actual"])  # exactly, not only to the cent
    by_run = {r["ResourceId"]: r for r in rows}
    b1 = by_run[month.run_ids["b1"]]
    assert (b1["PricingCategory"], Decimal(b1["ListUnitPrice"])) == ("Dynamic", 4)
    assert Decimal(b1["ConsumedQuantity"]) == 8 and b1["ConsumedUnit"] == "GPU-Hours"
    tags = json.loads(b1["Tags"])
    assert tags["team"] == month.teams["nlp"] and tags["model"] == "bert"
    assert tags["spec"] == month.specs["B"] and tags["fingerprint"].startswith("sha256:")
    assert tags["cost-center"] == "ml-42"  # the spec's label; a spec without one has none
    assert all(
        "cost-center" not in json.loads(r["Tags"])
        for r in rows
        if r is not b1 and json.loads(r["Tags"])["spec"] != month.specs["B"]
    )
    assert b1["x_CostSource"].startswith("derived: GPU-hours")
    assert month.run_ids["lost"] not in by_run and month.run_ids["april"] not in by_run
    assert month.run_ids["misfiled"] not in by_run and month.run_ids["backwards"] not in by_run


def test_runs_outside_their_specs_experiment_or_ending_before_they_start_are_not_priced(
    month, capsys
):
    document = report_json(month, capsys, "--month", report_kit.MONTH)
    unpriced = {u["reason"]: u for u in document["unpriced"]}
    elsewhere = unpriced[
        "logged outside their spec's MLflow experiment (tracking.mlflow_experiment)"
    ]
    assert (elsewhere["runs"], Decimal(elsewhere["gpu_hours"])) == (1, 50)
    backwards = unpriced["their end is before their start, so what they held is not known"]
    assert (backwards["runs"], Decimal(backwards["gpu_hours"])) == (1, 0)
    assert elsewhere["teams"] == backwards["teams"] == [month.teams["vision"]]
    vision = next(t for t in document["teams"] if t["team"] == month.teams["vision"])
    assert vision["runs"] == report_kit.EXPECTED["vision"]["runs"]  # neither counts for A
    assert vision["qualified"] == report_kit.EXPECTED["vision"]["qualified"]


def test_text_and_markdown_show_the_figures(month, capsys, tmp_path):
    code, out, err = cli(
        month, capsys, "--month", report_kit.MONTH, "--format", f"markdown={tmp_path / 'r.md'}",
        "--format", "text",
    )  # fmt: skip
    assert code == 0, err
    for key, want in report_kit.EXPECTED.items():
        line = next(x for x in out.splitlines() if x.strip().startswith(month.teams[key]))
        assert f"{want['actual']:,.2f}" in line
    assert "Spot against on-demand" in out and "40.00" in out
    row = next(x for x in out.splitlines() if x.strip().startswith(Path(month.specs["A"]).stem))
    assert "40.00" in row and "not measured" in row  # A's idle: no GPU utilization logged
    # NOTE: tabular's runs log no val_loss history: logging none ranked it first by waste
    tabular = [x for x in out.splitlines() if x.strip().startswith(month.teams["tabular"])]
    assert "≥ 0 %" in tabular[1] and f"{month.teams['tabular']} (≥ 0 %)" in out  # the ranking
    markdown = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert markdown.startswith("<!-- budget-gate monthly report -->")
    assert "| --: |" in markdown or "| :-- |" in markdown


def test_bad_month_is_exit_3(month, capsys):
    for bad in ("2025-13", "March", "2025-03..2025-01"):
        code, _, err = cli(month, capsys, "--month", bad)
        assert code == 3, bad
        assert "--month" in err and "Traceback" not in err


def test_an_output_folder_that_does_not_exist_is_refused_before_reading(month, capsys, tmp_path):
    code, _, err = cli(month, capsys, "--format", f"html={tmp_path / 'no' / 'r.html'}")
    assert code == 3
    assert "the folder does not exist" in err


def test_a_spec_the_report_priced_runs_with_is_never_a_format_file(month, capsys):
    spec = Path(month.specs["A"])
    before = spec.read_bytes()
    code, _, err = cli(month, capsys, "--month", report_kit.MONTH, "--format", f"json={spec}")
    assert code == 3, err
    assert f"would write over {spec}, which this run reads" in err
    assert spec.read_bytes() == before


def test_the_focus_validator_catches_what_breaks_the_specification():
    good = "BilledCost,ChargeCategory,ChargePeriodStart,Tags\n1.5,Usage,2025-03-01T00:00:00Z,{}\n"
    errors = validate_focus(good)
    assert any("missing Mandatory column EffectiveCost" in e for e in errors)
    bad = (
        "BilledCost,ChargeCategory,ChargePeriodStart,Tags,Surprise\n"
        "1.5 USD,Shopping,2025-03-01 00:00,[1],x\n"
    )
    usage = (
        "BilledCost,ChargeCategory,ChargePeriodStart,ChargePeriodEnd,BillingCurrency,"
        "ListUnitPrice,ContractedUnitPrice,ResourceId,ResourceName,SkuId,Tags\n"
        "1,Usage,2025-02-30T25:61:00Z,2025-02-30T25:61:00Z,usd,-4,,r1,r1,L4,"
        '"{""team"": [""a""]}"\n'
        "1,Usage,2025-03-01T00:00:00Z,2025-03-01T00:00:00Z,USD,1,1,,x,L4,{}\n"
    )
    errors = "\n".join(validate_focus(bad) + validate_focus(usage))
    for want in (
        "BilledCost: '1.5 USD' is not in the numeric format",
        "ChargeCategory: 'Shopping' is not an allowed value",
        "ChargePeriodStart: '2025-03-01 00:00' is not YYYY-MM-DDTHH:mm:ssZ",
        "Tags: is not a key-value object",
        "column Surprise is neither FOCUS nor x_-prefixed",
        "row 2: ChargePeriodStart: '2025-02-30T25:61:00Z' is not YYYY-MM-DDTHH:mm:ssZ",
        "row 2: BillingCurrency: 'usd' is no ISO 4217 code",
        "row 2: ListUnitPrice: negative",
        "row 2: ContractedUnitPrice: must not be null on a Usage row",
        "row 2: ResourceName: duplicates ResourceId",
        "row 2: Tags: a value is an object or an array",
        "SkuId, SkuPriceId, SkuMeter, SkuPriceDetails: present together",
        "row 3: ResourceName: not null, while ResourceId is",
        "row 3: ChargePeriodEnd: the period is empty",
    ):
        assert want in errors


CHARTS_DRAWN = """
return [...document.querySelectorAll('figure.chart')].map(figure => {
  const svg = figure.querySelector('svg');
  const box = svg.getBoundingClientRect();
  const drawn = [...svg.querySelectorAll('path')].filter(p => {
    const b = p.getBBox(); return b.width > 0 || b.height > 0; }).length;
  return [figure.id, Math.round(box.width), Math.round(box.height), drawn];
});
"""


def test_the_html_page_renders_and_draws_offline(month, capsys, tmp_path):
    page = tmp_path / "report.html"
    code, _, err = cli(month, capsys, "--month", report_kit.MONTH, "--format", f"html={page}")
    assert code == 0, err
    control = tmp_path / "control.html"
    control.write_text('<img src="http://127.0.0.1:9/probe.png">', encoding="utf-8")
    with chromium() as browser:
        browser.get(control.as_uri())  # the log does catch a fetch: the control page's
        assert "http://127.0.0.1:9/probe.png" in requested(browser)
        browser.get(page.as_uri())
        urls = requested(browser)
        assert urls == [page.as_uri()], urls  # the page itself, nothing else
        assert browser.title == f"budget-gate report {report_kit.MONTH}"
        heading = browser.find_element("css selector", "h1").text
        assert "290.00 USD actual" in heading
        charts = browser.execute_script(CHARTS_DRAWN)
        assert [c[0] for c in charts] == ["chart-budget", "chart-cost-per-qualified", "chart-waste"]
        for name, width, height, drawn in charts:
            assert width > 300 and height > 150, name
            assert drawn >= 8, name  # axes, ticks, bars or lines with a size on screen
        cells = browser.execute_script(
            "return [...document.querySelectorAll('td')].map(td => td.textContent)"
        )
        assert month.teams["vision"] in cells and "180.00" in cells
        shot = browser.get_screenshot_as_png()
    assert shot.startswith(b"\x89PNG") and len(shot) > 20_000


def test_an_empty_month_reports_nothing_spent(month, capsys):
    code, out, err = cli(month, capsys, "--month", "2019-02", "--trend", "0")
    assert code == 0, err
    assert "0 runs, 0.00 USD actual" in out
    assert "no team spent anything" in out
    code, out, err = cli(month, capsys, "--month", "2019-02", "--format", "json")
    rows = {t["team"]: t for t in json.loads(out)["teams"]}
    for team in month.teams.values():  # each budget is shown, at 0 spent
        assert (rows[team]["budget"], rows[team]["actual"], rows[team]["runs"]) == ("1000", "0", 0)


REPORT_SCHEMA = json.loads((Path(__file__).parent.parent / "schemas" / "report.schema.json")
                           .read_text(encoding="utf-8"))  # fmt: skip


def _no_constant(name: str) -> Any:
    raise AssertionError(f"{name} is not JSON (RFC 8259)")


def _closed(node: Any) -> Any:
    """The schema with no key allowed that it does not list (readers may see more, later)."""
    if isinstance(node, list):
        return [_closed(item) for item in node]
    if not isinstance(node, dict):
        return node
    closed = {key: _closed(value) for key, value in node.items()}
    if "properties" in node:
        closed["additionalProperties"] = False
    return closed


@pytest.mark.parametrize(
    "args",
    [
        ("--month", report_kit.MONTH),
        ("--month", "2025-01..2025-03", "--trend", "0"),
        ("--month", "2019-02"),
        ("--month", report_kit.MONTH, "--team", "vision"),
    ],
    ids=["month", "range", "empty", "one team"],
)
def test_the_json_is_what_its_published_schema_says(month, capsys, args):
    """schemas/report.schema.json is the JSON's contract: every key, its type, nothing more."""
    if "--team" in args:
        args = (*args[:-1], month.teams[args[-1]])
    code, out, err = cli(month, capsys, *args, "--format", "json")
    assert code == 0, err
    document = json.loads(out, parse_constant=_no_constant)  # Infinity or NaN: no JSON
    validator = jsonschema.Draft202012Validator(_closed(REPORT_SCHEMA))  # and it lists them all
    assert [e.message for e in validator.iter_errors(document)] == []
    assert REPORT_SCHEMA["properties"]["schema_version"]["const"] == document["schema_version"]
    document["teams"][0]["actuals"] = document["teams"][0].pop("actual")  # a renamed key
    assert not jsonschema.Draft202012Validator(REPORT_SCHEMA).is_valid(document)


def test_an_unreachable_tracking_server_is_exit_4(month, capsys):
    capsys.readouterr()
    code = main(
        ["report", "--policy-dir", month.policy_dir, "--tracking-uri", "http://127.0.0.1:9"]
    )
    _, err = capsys.readouterr()
    assert code == 4, err
    assert err.startswith("budget-gate: ") and "Traceback" not in err


def test_without_the_mlflow_extra_it_is_exit_3_naming_it(month, tmp_path):
    from tests.test_without_mlflow import _CLI, FIX, _run

    # a file store (mlruns/) is MLflow's to read; a sqlite store needs no MLflow (SQL)
    proc = _run(
        _CLI, "report", "--policy-dir", month.policy_dir,
        "--tracking-uri", (tmp_path / "mlruns").as_uri(), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert FIX in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_sqlite_store_that_is_not_there_is_exit_3_not_an_empty_month(month, capsys, tmp_path):
    """MLflow's client would make an empty store at a mistyped path: a month of no runs."""
    typo = tmp_path / "typo" / "mlfow.db"
    capsys.readouterr()
    code = main(["report", "--policy-dir", month.policy_dir, "--tracking-uri", f"sqlite:///{typo}"])
    _, err = capsys.readouterr()
    assert code == 3, err
    assert err == (
        f"budget-gate: sqlite:///{typo}: no MLflow store at {typo} — check the path: the "
        "sqlite file the runs were logged to\n"
    )
    assert not typo.parent.exists()


def test_a_sqlite_store_reports_the_same_month(month, capsys, report_server):
    over_http = report_json(month, capsys)
    capsys.readouterr()
    code = main(
        [
            "report",
            "--policy-dir",
            month.policy_dir,
            "--tracking-uri",
            report_server.sqlite_uri,
            "--month",
            report_kit.MONTH,
            "--format",
            "json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    direct = json.loads(out)
    assert direct["totals"] == over_http["totals"]
    assert direct["teams"] == over_http["teams"]


def test_over_http_the_report_needs_no_mlflow_install(month, capsys):
    """A tracking server is read with the standard library: the month reads the same bytes."""
    from tests.test_without_mlflow import _CLI, _run

    over_http = report_json(month, capsys)
    proc = _run(
        _CLI, "report", "--policy-dir", month.policy_dir, "--tracking-uri", month.uri,
        "--month", report_kit.MONTH, "--format", "json", cwd=month.root,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    without = json.loads(proc.stdout)
    assert without["totals"] == over_http["totals"]
    assert without["teams"] == over_http["teams"]
    assert without["approvals"] == over_http["approvals"]
