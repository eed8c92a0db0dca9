"""The FOCUS file stays valid, whatever a training job writes on its runs.

A job chooses its run's name and its trial tag, and how long the run lasts; the spec chooses
its labels. A no-break space in a tag made the ``Tags`` cell invalid JSON (``\\xa0``, an
escape JSON has not), a run of 0.4 s an empty charge period with a cost, and a run without a
name got its id as ``ResourceName``, which FOCUS forbids. The month is read from a sqlite
store, as a scheduled job beside the tracking server reads it.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from decimal import Decimal

from gate import tracking
from gate.cli import main
from tests import report_kit
from tests.focus_spec import validate_focus

LABELS = "model: bert, cost-center: ml-42, environment: prod, team: not-the-team, note: ''"


def test_job_written_text_short_runs_and_nameless_runs_keep_the_file_valid(tmp_path, capsys):
    kit = report_kit.one_spec(tmp_path, labels=LABELS)
    spec, client, experiment, team = kit.spec, kit.client, kit.experiment, kit.team
    store = tmp_path / "mlflow.db"
    odd = {**tracking.run_tags(str(spec), trial_id=0), tracking.TRIAL_ID: "3\u00a0"}
    short = report_kit.log_run(  # 0.4 s held
        client, experiment, odd, name="=cmd|calc", start=1, hours=0.4 / 3600,
        metrics={"val_f1": 0.9},
    )  # fmt: skip
    instant = report_kit.log_run(  # 0 s held: priced at 0, still a period of its own
        client, experiment, tracking.run_tags(str(spec), trial_id=2), name="i", start=3, hours=0
    )
    nameless = report_kit.log_run(
        client, experiment, tracking.run_tags(str(spec), trial_id=1), name="x", start=2, hours=2
    )
    with sqlite3.connect(store) as con:  # a run some other client logged without a name
        con.execute("UPDATE runs SET name = '' WHERE run_uuid = ?", (nameless,))
        con.execute("DELETE FROM tags WHERE run_uuid = ? AND key = 'mlflow.runName'", (nameless,))
    target = tmp_path / "focus.csv"
    capsys.readouterr()
    code = main(
        ["report", "--policy-dir", kit.policy_dir, "--tracking-uri", kit.uri,
         "--month", report_kit.MONTH, "--format", f"focus={target}", "--format", "json"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    text = target.read_text(encoding="utf-8")
    assert validate_focus(text) == []
    rows = {r["ResourceId"]: r for r in csv.DictReader(io.StringIO(text))}
    assert sum(Decimal(r["EffectiveCost"]) for r in rows.values()) == Decimal(
        json.loads(out)["totals"]["actual"]
    )
    first = rows[short]
    tags = json.loads(first["Tags"])
    assert tags["trial"] == "3\u00a0" and first["Tags"].isascii()
    assert first["ChargePeriodStart"] < first["ChargePeriodEnd"]  # whole seconds that hold it
    assert first["ResourceName"] == "'=cmd|calc"  # a spreadsheet shows it, runs nothing
    assert (first["SkuId"], first["SkuPriceId"], first["SkuMeter"]) == (
        "L4",
        "L4/on-demand",
        "GPU Usage",
    )
    assert tags["environment"] == "prod" and tags["cost-center"] == "ml-42"
    assert tags["note"] == ""  # a label as written, empty too
    assert tags["team"] == team and tags["model"] == "bert"  # budget-gate's keys win a clash
    assert rows[nameless]["ResourceName"] == ""  # null, never the id
    assert all(r["ChargePeriodStart"] < r["ChargePeriodEnd"] for r in rows.values())
    assert Decimal(rows[instant]["BilledCost"]) == 0


def test_a_spec_without_labels_leaves_empty_tags_out(tmp_path, capsys):
    """``"model": ""`` was written for a spec with no model label: a placeholder."""
    kit = report_kit.one_spec(tmp_path, labels="", capacity="spot")
    run = report_kit.log_run(
        kit.client, kit.experiment, tracking.run_tags(str(kit.spec), trial_id=0),
        name="r", start=1, hours=1,
    )  # fmt: skip
    capsys.readouterr()
    code = main(
        ["report", "--policy-dir", kit.policy_dir, "--tracking-uri", kit.uri,
         "--month", report_kit.MONTH, "--format", "focus=-"]
    )  # fmt: skip
    text, err = capsys.readouterr()
    assert code == 0, err  # focus=- is stdout, as focus is
    assert validate_focus(text) == []
    (row,) = csv.DictReader(io.StringIO(text))
    assert row["ResourceId"] == run
    assert "model" not in json.loads(row["Tags"])
    assert (row["SkuId"], row["SkuPriceId"], row["PricingCategory"]) == (
        "L4",
        "L4/spot",
        "Dynamic",
    )
