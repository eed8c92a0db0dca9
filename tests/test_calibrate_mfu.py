"""Measured MFU through a real MLflow server: FLOPs logged → calibration → the FLOPs prior.

Twelve runs of llama-8b (described by its size, 6·N·D = 9.6e18 FLOPs an epoch) on
H100 × 8 bf16 run at known model FLOPs utilizations 0.30 … 0.41; six runs of bert on
L4 × 1 bf16 declare an epoch time and log the FLOPs they trained
(``budget_gate.train_flops``), one of them impossibly many. The MFU ``calibrate`` learns
prices the same model on hardware it never ran on (A100), and BG304 prices bf16 by it.
"""

from __future__ import annotations

import json
import re
import statistics
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gate import tracking
from gate.calibrate.observe import observe
from gate.estimate.settings import Returns
from gate.ledger.tracking import MAX_EPOCHS, MIN_DELTA, MONITOR_MODE, PATIENCE
from tests.ledger_kit import unique
from tests.reconcile_kit import Lab, facts, log_run

LLAMA = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata:
  {{name: {name}, team: {team}, owner: carol, labels: {{cost-center: cc-1, model: llama-8b}}}}
resources: {{accelerator: {accelerator}, gpus_per_trial: 8, precision: {precision}}}
workload: {{max_epochs: 4, model: {{parameters: 8.0e9, tokens_per_epoch: 2.0e8}}}}
search: {{strategy: random, max_trials: 2}}
stopping: {{early_stopping: {{monitor: val_loss, patience: 2}}}}
quality_gate: [{{metric: val_loss, op: "<=", value: 1.5}}]
tracking: {{mlflow_experiment: {experiment}}}
"""
BERT = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata:
  {{name: {name}, team: {team}, owner: carol, labels: {{cost-center: cc-1, model: bert}}}}
resources: {{accelerator: L4, gpus_per_trial: 1, precision: bf16}}
workload: {{max_epochs: 3, epoch_minutes: 30}}
search: {{strategy: random, max_trials: 6}}
quality_gate: [{{metric: val_loss, op: "<=", value: 1.5}}]
tracking: {{mlflow_experiment: {experiment}}}
"""
EPOCH_FLOPS = 6 * 8.0e9 * 2.0e8
PEAK = {"H100": 989.4e12, "A100": 312e12, "L4": 121e12}
LLAMA_MFU = [0.30 + 0.01 * i for i in range(12)]
BERT_MFU = [0.20, 0.22, 0.24, 0.26, 0.28]
BERT_FLOPS = 4.0e17  # per epoch


def write(lab: Lab, template: str, **values: str) -> str:
    path = lab.team.root / f"{unique('spec')}.yaml"
    text = template.format(
        name=lab.experiment, team=lab.team.name, experiment=lab.experiment, **values
    )
    path.write_text(text, encoding="utf-8")
    return str(path)


def log_history(lab: Lab) -> None:
    llama = write(lab, LLAMA, accelerator="H100", precision="bf16")
    for run, mfu in enumerate(LLAMA_MFU):
        train = 4 * EPOCH_FLOPS / (PEAK["H100"] * 8 * mfu)
        log_run(
            lab.client,
            lab.experiment_id,
            tags=tracking.run_tags(llama, trial_id=run, attempt=1),
            start=run * 30.0,
            hours=train / 3600,
            metrics={tracking.TRAIN_SECONDS: train},
            history={"val_loss": [1.0, 0.8, 0.7, 0.65]},
        )
    bert = write(lab, BERT)
    for run, mfu in enumerate([*BERT_MFU, 1.7]):  # the last one's FLOPs cannot be true
        train = 3 * 30 * 60.0
        log_run(
            lab.client,
            lab.experiment_id,
            tags=tracking.run_tags(bert, trial_id=run, attempt=1),
            start=400 + run * 2.0,
            hours=train / 3600,
            metrics={tracking.TRAIN_SECONDS: train, tracking.TRAIN_FLOPS: mfu * train * PEAK["L4"]},
            history={"val_loss": [1.0, 0.8, 0.7]},
        )


@pytest.fixture
def calibrated(lab: Lab) -> tuple[Lab, dict[str, Any], str]:
    log_history(lab)
    target = Path(lab.team.policy_dir) / "calibration.json"
    code, out, err = lab.team.cli(
        "calibrate", "--experiment", lab.experiment, "--write", str(target)
    )
    assert code == 0, err
    return lab, json.loads(target.read_text(encoding="utf-8")), out


def entry(calibration: dict[str, Any], **key: Any) -> dict[str, Any]:
    return next(e for e in calibration["entries"] if e["key"] == key)


def deciles(values: list[float]) -> tuple[float, float, float]:
    cut = statistics.quantiles(values, n=10, method="inclusive")
    return cut[0], statistics.median(values), cut[-1]


def test_calibrate_measures_each_models_mfu(calibrated):
    _, calibration, out = calibrated
    llama = entry(calibration, model="llama-8b", accelerator="H100", gpus=8, precision="bf16")
    low, median, high = deciles(LLAMA_MFU)
    assert llama["mfu"]["runs"] == 12
    assert llama["mfu"]["median"] == pytest.approx(median, abs=1e-5)
    assert llama["mfu"]["p10"] == pytest.approx(low, abs=1e-5)
    assert llama["mfu"]["p90"] == pytest.approx(high, abs=1e-5)
    bert = entry(calibration, model="bert", accelerator="L4", gpus=1, precision="bf16")
    assert bert["mfu"]["runs"] == len(BERT_MFU)  # the impossible run is left out …
    assert bert["mfu"]["median"] == pytest.approx(statistics.median(BERT_MFU), abs=1e-5)
    assert bert["mfu_over_peak"] == 1  # … and counted
    row = next(line for line in out.splitlines() if line.startswith("llama-8b on H100 × 8 bf16"))
    assert f"{median:.2f}" in row.split()
    assert "1 run logged more FLOPs than the GPUs' dense peak allows" in out


def test_the_flops_prior_takes_the_measured_mfu_and_says_so(calibrated):
    lab, _, _ = calibrated
    spec = write(lab, LLAMA, accelerator="A100", precision="bf16")  # never ran on A100
    code, out, err = lab.team.cli("estimate", spec, "--format", "json", uri="")
    assert code == 0, err
    result = json.loads(out)["estimates"][0]["estimate"]
    low, median, _ = deciles(LLAMA_MFU)
    expected = " ".join(result["expected"]["assumptions"])
    worst = " ".join(result["worst"]["assumptions"])
    minutes = EPOCH_FLOPS / (PEAK["A100"] * 8 * median) / 60
    slowest = EPOCH_FLOPS / (PEAK["A100"] * 8 * low) / 60
    assert f"epoch time {minutes:,.2f} min: FLOPs prior 9.6e+18 FLOPs" in expected, expected
    assert f"MFU {median:.3g}: median of 12 runs of llama-8b on any accelerator" in expected
    assert "the policy says 0.35" in expected
    assert "with an epoch time: the FLOPs prior is used" in expected
    assert f"epoch time {slowest:,.2f} min" in worst  # the worst case at the low MFU
    # 2 trials × 4 epochs on 8 GPUs, nothing stops early in the worst case
    gpu_hours = Decimal(result["worst"]["gpu_hours"])
    assert float(gpu_hours) == pytest.approx(2 * 4 * slowest / 60 * 8, rel=1e-4)


def test_bg304_prices_bf16_by_the_flops_prior(calibrated):
    lab, _, _ = calibrated
    fp32 = write(lab, LLAMA, accelerator="A100", precision="fp32")
    bf16 = write(lab, LLAMA, accelerator="A100", precision="bf16")
    code, out, _ = lab.team.cli("check", fp32, "--format", "text", uri="")
    assert code == 0, out  # BG304 is a warning
    found = re.search(
        r"BG304 fp32 on A100: bf16 mixed precision runs at 312 against 19.5 TFLOP/s dense: by "
        r"the FLOPs prior at the same MFU, bf16 saves ([\d,.]+) USD of ([\d,.]+) USD",
        out,
    )
    assert found, out
    saved, cost = (Decimal(v.replace(",", "")) for v in found.groups())
    _, out, _ = lab.team.cli("estimate", bf16, "--format", "json", uri="")
    priced = Decimal(json.loads(out)["estimates"][0]["estimate"]["expected"]["cost"])
    assert saved == cost - priced.quantize(Decimal("0.01"))
    assert saved / cost > Decimal("0.9")  # 16× the dense peak, the same MFU


def test_the_learned_plateau_counts_the_runs_min_delta():
    """A run's own min_delta (tagged from its spec) sets where it stopped paying."""
    history = (1.0, 0.8, 0.7, 0.66, 0.64, 0.63, 0.625, 0.62, 0.618, 0.617)
    tags = {MAX_EPOCHS: "10", PATIENCE: "2", MONITOR_MODE: "min"}
    plain = observe(facts("a", tags=tags, history=history), "exp", Returns())
    coarse = observe(
        facts("b", tags={**tags, MIN_DELTA: "0.05"}, history=history), "exp", Returns()
    )
    assert plain is not None and coarse is not None
    # 0.05 a window: epochs 4–6 gain 0.66 → 0.63 and the rest 0.043 in 6 epochs, short of it
    assert coarse.plateau_fraction == pytest.approx(0.4)
    assert plain.plateau_fraction is not None and plain.plateau_fraction > 0.4


def test_calibrate_without_a_policy_dir_uses_the_builtin_default(lab, tmp_path, monkeypatch):
    """No --policy-dir and no policies/ here: the built-in default, said on stderr (no crash)."""
    from gate.cli import main

    log_history(lab)
    elsewhere = tmp_path / "elsewhere"  # the team's own root holds a policies/ directory
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    lab.team.capsys.readouterr()
    code = main(["calibrate", "--tracking-uri", lab.team.uri, "--experiment", lab.experiment])
    out, err = lab.team.capsys.readouterr()
    assert code == 0, err
    assert "using the built-in default policy" in err
    assert "calibration of 18 runs from 1 MLflow experiment" in out


def test_calibrate_write_to_a_missing_directory_is_bad_input(lab, tmp_path):
    log_history(lab)
    target = tmp_path / "no-such-dir" / "calibration.json"
    code, _, err = lab.team.cli("calibrate", "--experiment", lab.experiment, "--write", str(target))
    assert code == 3, err
    assert f"{target}: cannot write" in err and "Traceback" not in err
    assert not target.parent.exists()


def test_a_per_cost_threshold_left_out_for_unpriced_runs_is_said(lab):
    """Runs on an accelerator the policy cannot price get their plateau without it, said."""
    lab.team.policy(extra="returns: {min_gain_per_cost: 0.001}\n")
    bert = write(lab, BERT)
    for run, accelerator in enumerate(["L4", "X9"]):
        tags = {**tracking.run_tags(bert, trial_id=run), tracking.ACCELERATOR: accelerator}
        log_run(
            lab.client,
            lab.experiment_id,
            tags=tags,
            start=run * 2.0,
            hours=1.5,
            metrics={tracking.TRAIN_SECONDS: 5400.0},
            history={"val_loss": [1.0, 0.8, 0.7]},
        )
    target = Path(lab.team.policy_dir) / "calibration.json"
    code, out, err = lab.team.cli(
        "calibrate", "--experiment", lab.experiment, "--write", str(target)
    )
    assert code == 0, err
    said = "min_gain_per_cost left out for runs on X9 on-demand: the policy has no price"
    assert said in out
    assert said in json.loads(target.read_text(encoding="utf-8"))["plateau_by"]
    assert "L4" not in out.split("min_gain_per_cost left out", 1)[1].splitlines()[0]


def test_measurements_outside_a_calibrations_bounds_are_counted_not_dropped_silently(lab: Lab):
    bert = write(lab, BERT)
    for run, train in enumerate([0.0, 0.0, 5400.0]):  # two runs whose epochs took 0 s
        log_run(
            lab.client,
            lab.experiment_id,
            tags=tracking.run_tags(bert, trial_id=run, attempt=1),
            start=run * 2.0,
            hours=1.5,
            metrics={tracking.TRAIN_SECONDS: train},
            history={"val_loss": [1.0, 0.8, 0.7]},
        )
    target = Path(lab.team.policy_dir) / "calibration.json"
    code, out, err = lab.team.cli(
        "calibrate", "--experiment", lab.experiment, "--write", str(target)
    )
    assert code == 0, err
    learned = entry(json.loads(target.read_text(encoding="utf-8")), model="bert")
    assert learned["runs"] == 3 and learned["epoch_minutes"]["runs"] == 1
    assert learned["epoch_minutes"]["median"] == 30.0  # 5,400 s over 3 epochs
    assert learned["left_out"] == 2
    assert "2 measurements outside what a calibration holds (an epoch of 0 s" in out
