"""examples/digits-grid end to end: a real scikit-learn grid logs to MLflow, then is reconciled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal

from gate.cli import main
from gate.ledger.records import RecordKind
from tests.conftest import ROOT
from tests.ledger_kit import UNSIGNED, fingerprint_of
from tests.mlflow_server import CLIENT_ENV

SPEC = "examples/digits-grid/digits-grid.yaml"


def test_the_digits_grid_trains_logs_and_reconciles(mlflow_server, capsys, monkeypatch, tmp_path):
    env = {**os.environ, **CLIENT_ENV, "PYTHONPATH": str(ROOT)}
    trained = subprocess.run(
        [sys.executable, "examples/digits-grid/train.py", "--tracking-uri", mlflow_server.uri,
         "--crash-trial", "3"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert "trial 3 attempt 1 crashed; retrying" in trained.stdout

    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    args = ["reconcile", SPEC, "--tracking-uri", mlflow_server.uri, "--format", "json"]
    code = main([*args, "--policy-dir", "policies"])
    doc = json.loads(capsys.readouterr().out)
    totals, runs = doc["totals"], doc["runs"]
    assert code == 0, doc["verdict"]
    assert totals["runs"] == 13 and totals["statuses"] == {"FAILED": 1, "FINISHED": 12}
    assert totals["trials"] == 12
    [retry] = doc["retries"]
    assert retry["trial"] == "3"
    assert [a["status"] for a in retry["attempts"]] == ["FAILED", "FINISHED"]
    assert [a["attempt"] for a in retry["attempts"]] == [1, 2]

    # The quality gate judged real metrics: per-class recalls and macro F1 were logged.
    assert 1 <= totals["qualified"] <= 12
    for run in runs:
        finished = run["status"] == "FINISHED"
        assert run["qualified"] == (finished and not run["gate_failures"])
        assert 1 <= run["epochs"] <= 30
        assert run["phases_hours"] is not None  # setup, train, eval seconds were logged
    [crashed] = [r for r in runs if r["status"] == "FAILED"]
    assert crashed["epochs"] == 14  # it crashed in epoch 15, before validating it

    cost = Decimal(totals["cost"])
    assert cost > 0  # seconds-long runs: three significant digits, not 0.00
    per = Decimal(totals["cost_per_qualified_model"])
    assert abs(per - cost / totals["qualified"]) <= per / 100  # each to 3 significant digits
    price = Decimal(doc["price"]["per_gpu_hour"])
    # 1 "GPU" per trial: the cost is the hours held × the price (each figure rounded)
    held = sum(Decimal(r["held_hours"]) for r in runs)
    assert abs(cost - held * price) <= cost / 100
    assert Decimal(totals["effective_training_ratio"]) < 1
    plateau = next(w for w in doc["waste"] if w["kind"] == "epochs-after-plateau")
    assert plateau["measured"] and plateau["advice"]
    assert doc["quality_curve"]["metric"] == "val_macro_f1"

    [record] = [
        r
        for r in _ledger(mlflow_server.uri, fingerprint_of(str(ROOT / SPEC)))
        if r.kind is RecordKind.RECONCILIATION
    ]
    assert record.run_id == doc["ledger"]["record_id"]
    assert abs(record.actual_cost - cost) <= cost / 100  # the ledger exact, the JSON rounded

    _calibrate_and_price_a_new_spec(mlflow_server.uri, capsys, tmp_path)


def _calibrate_and_price_a_new_spec(uri, capsys, tmp_path):
    """The grid's 13 real runs calibrate mlp on T4 × 1 fp32; a new spec is priced from them."""
    calibration = tmp_path / "calibration.json"
    capsys.readouterr()
    code = main(["calibrate", "--policy-dir", "policies", "--tracking-uri", uri,
                 "--experiment", "digits-mlp-grid", "--write", str(calibration)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    entry = next(
        e
        for e in json.loads(calibration.read_text(encoding="utf-8"))["entries"]
        if e["key"] == {"model": "mlp", "accelerator": "T4", "gpus": 1, "precision": "fp32"}
    )
    assert entry["runs"] == 13 and entry["failed"] == 1
    measured = entry["epoch_minutes"]
    assert 0 < measured["p10"] <= measured["median"] <= measured["p90"] < 0.01
    # A new spec that declares a far faster epoch than the grid measured.
    new = tmp_path / "digits-wide.yaml"
    text = (ROOT / SPEC).read_text(encoding="utf-8")
    new.write_text(text.replace("epoch_minutes: 0.01", "epoch_minutes: 0.000001"), "utf-8")
    capsys.readouterr()
    args = ["--policy-dir", "policies", "--calibration", str(calibration)]
    assert main(["estimate", str(new), "--format", "json", *args]) == 0
    [priced] = json.loads(capsys.readouterr().out)["estimates"]
    notes = " ".join(priced["estimate"]["expected"]["assumptions"])
    runs = measured["runs"]
    assert f"median of {runs} runs of mlp on T4 × 1 fp32" in notes
    assert "the spec says 0.000001" in notes
    assert main(["check", str(new), "--format", "text", *args]) == 2
    assert "BG308" in capsys.readouterr().out


def _ledger(uri, fingerprint):
    from gate.integrations import open_ledger
    from gate.ledger.records import LedgerQuery

    return open_ledger(uri, UNSIGNED).query(LedgerQuery(fingerprint=fingerprint))
