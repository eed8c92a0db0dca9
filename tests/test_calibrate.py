"""``budget-gate calibrate`` through a real MLflow server: history → file → priced estimate.

Six spec versions of resnet18 on L4 × 1 bf16 run one after another, six runs each (one
fails at epoch 4): 36 runs whose epoch times are known exactly (3.6–4.4 min, logged as
train seconds), whose val_loss plateaus at epoch 6 of 10. Their specs declared 2.5 or
3.5 min an epoch, so the naive baseline is known to be off.
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
from gate.ledger.tracking import MODEL, PRECISION
from tests.ledger_kit import unique
from tests.reconcile_kit import Lab, log_run

SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata:
  {{name: {name}, team: {team}, owner: carol, labels: {{cost-center: cc-1, model: resnet18}}}}
resources: {{accelerator: L4, gpus_per_trial: 1, precision: bf16}}
workload: {{max_epochs: 10, epoch_minutes: {declared}, setup_minutes: 2}}
search: {{strategy: random, max_trials: {trials}}}
stopping: {{early_stopping: {{monitor: val_loss, patience: 3{plateau}}}}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
tracking: {{mlflow_experiment: {experiment}}}
"""
LOSS = [1.0, 0.7, 0.5, 0.4, 0.35, 0.33, 0.33, 0.33, 0.33, 0.33]  # plateaus at epoch 6
VERSIONS, RUNS = 6, 6


def epoch_minutes(version: int, run: int) -> float:
    """The known epoch time of one run: 3.6 to 4.4 min."""
    return 3.6 + 0.8 * ((run * 7 + version * 3) % 10) / 9


def write_spec(lab: Lab, declared: float, trials: int, team: str, plateau: str = "") -> str:
    path = lab.team.root / f"{unique('spec')}.yaml"
    text = SPEC.format(
        name=lab.experiment,
        team=team,
        declared=declared,
        trials=trials,
        plateau=plateau,
        experiment=lab.experiment,
    )
    path.write_text(text, encoding="utf-8")
    return str(path)


def log_history(lab: Lab) -> list[float]:
    """36 runs in time order; the epoch times of the finished and failed ones."""
    times = []
    for version in range(VERSIONS):
        team = lab.team.name if version % 2 == 0 else "vision"
        spec = write_spec(lab, 2.5 if version % 2 == 0 else 3.5, version + 1, team)
        for run in range(RUNS):
            minutes = epoch_minutes(version, run)
            failed = run == RUNS - 1
            epochs = 4 if failed else 10
            train = epochs * minutes * 60
            start = version * 24 + run * 1.0
            tags = tracking.run_tags(spec, trial_id=run, attempt=1)
            log_run(
                lab.client,
                lab.experiment_id,
                tags=tags,
                start=start,
                hours=(120 + train) / 3600,
                status="FAILED" if failed else "FINISHED",
                metrics={tracking.TRAIN_SECONDS: train, tracking.SETUP_SECONDS: 120.0},
                history={"val_loss": LOSS[:epochs]},
            )
            times.append(minutes)
    return times


@pytest.fixture
def history(lab: Lab, tmp_path: Path) -> tuple[Lab, list[float], str, str]:
    times = log_history(lab)
    target = str(Path(lab.team.policy_dir) / "calibration.json")
    code, out, err = lab.team.cli(
        "calibrate", "--experiment", lab.experiment, "--write", target, "--backtest"
    )
    assert code == 0, err
    return lab, times, target, out


def exact_entry(calibration: dict[str, Any]) -> dict[str, Any]:
    wanted = {"model": "resnet18", "accelerator": "L4", "gpus": 1, "precision": "bf16"}
    return next(e for e in calibration["entries"] if e["key"] == wanted)


def test_calibrate_learns_the_known_epoch_times(history):
    lab, times, target, out = history
    calibration = json.loads(Path(target).read_text(encoding="utf-8"))
    assert calibration["kind"] == "Calibration"
    assert calibration["runs"] == VERSIONS * RUNS == 36
    assert calibration["experiments"] == [lab.experiment]
    entry = exact_entry(calibration)
    assert entry["runs"] == 36 and entry["failed"] == VERSIONS
    assert entry["epoch_minutes"]["runs"] == 36
    assert entry["epoch_minutes"]["median"] == pytest.approx(statistics.median(times), abs=1e-4)
    deciles = statistics.quantiles(times, n=10, method="inclusive")
    assert entry["epoch_minutes"]["p10"] == pytest.approx(deciles[0], abs=1e-4)
    assert entry["epoch_minutes"]["p90"] == pytest.approx(deciles[-1], abs=1e-4)
    assert entry["setup_minutes"]["median"] == pytest.approx(2.0)
    assert entry["plateau_fraction"]["median"] == pytest.approx(0.6)
    assert entry["failure_rate"] == pytest.approx(1 / 6, abs=1e-6)
    assert entry["failure_point"] == pytest.approx(0.4)
    assert entry["first"] == "2026-11-02" and entry["last"] == "2026-11-07"
    assert "resnet18 on L4 × 1 bf16" in out and "36" in out


def test_an_estimate_uses_the_measured_epoch_time_and_says_so(history):
    lab, times, _, _ = history
    spec = write_spec(lab, 0.5, 4, lab.team.name)
    code, out, err = lab.team.cli("estimate", spec, "--format", "json", uri="")
    assert code == 0, err
    result = json.loads(out)["estimates"][0]
    median = statistics.median(times)
    notes = " ".join(result["estimate"]["expected"]["assumptions"])
    assert f"epoch time {median:.2f} min: median of 36 runs of resnet18 on L4 × 1 bf16" in notes
    assert "2026-11-02 … 11-07; the spec says 0.5" in notes
    assert "failure rate 17%: 6 of 36 runs" in notes
    assert "val_loss plateaus at epoch 6 (measured: median 60% of max_epochs in 30 runs" in notes
    # expected trial: 2 min setup + (plateau 6 + patience 3) epochs × the measured median
    hours = Decimal(result["estimate"]["expected"]["hours_per_trial"])
    assert float(hours) == pytest.approx((2 + 9 * round(median, 4)) / 60, abs=5e-5)
    worst = " ".join(result["estimate"]["worst"]["assumptions"])
    assert "90th percentile of 36 runs" in worst


def test_an_understated_spec_needs_approval(history):
    lab, _, _, _ = history
    understated = write_spec(lab, 0.5, 4, lab.team.name)
    code, out, _ = lab.team.cli("check", understated, "--format", "text", uri="")
    assert code == 2, out
    assert "BG308" in out, out
    assert "epoch time 0.5 min is below the measured" in out
    honest = write_spec(lab, 4, 4, lab.team.name)
    code, out, _ = lab.team.cli("check", honest, "--format", "text", uri="")
    assert "BG308" not in out, out
    early = write_spec(lab, 4, 4, lab.team.name, ", expected_plateau_epoch: 2")
    code, out, _ = lab.team.cli("check", early, "--format", "text", uri="")
    assert code == 2 and "expected_plateau_epoch 2 is earlier than the measured" in out


def test_backtest_beats_the_declared_epoch_time(history):
    _, _, _, out = history
    section = out.split("backtest:", 1)[1].split("\nepoch time:", 1)[1]  # after the cost table
    rows = [
        m.groupdict()
        for m in re.finditer(
            r"^(?P<label>.{20}) (?P<estimator>calibrated|declared)\s+(?P<cases>\d+)\s+"
            r"(?P<mape>[\d.]+)%\s+(?P<bias>[+-][\d.]+)%\s+(?P<coverage>\d+)%",
            section,
            re.MULTILINE,
        )
    ]
    calibrated, declared = rows[0], rows[1]
    assert calibrated["label"].strip() == "overall" and declared["estimator"] == "declared"
    # versions 2..6 have earlier runs (version 1 has none): 5 calibrated cases
    assert int(calibrated["cases"]) == int(declared["cases"]) == VERSIONS - 1
    assert float(calibrated["mape"]) < 10 < float(declared["mape"])
    assert float(declared["bias"]) < -10  # the specs understated every epoch
    assert "team vision" in section
    print("backtest:" + out.split("backtest:", 1)[1])  # the figures for the closing note (-s)


def test_reconcile_states_the_error_against_the_estimates_basis(history):
    lab, _, _, _ = history
    first = write_spec(lab, 2.5, 1, lab.team.name)  # the first version's spec, again
    _, out, err = lab.reconcile(spec=first)
    actual = statistics.median(epoch_minutes(0, run) for run in range(RUNS))
    assert f"epoch time: the runs took {actual:.2f} min (median of 6 runs)" in out, out + err
    assert "the estimate priced" in out and "(median of 36 runs of resnet18 on L4" in out


def test_calibrate_writes_over_a_calibration_only(history):
    """``--write policies/default.yaml`` replaced the policy with JSON (every command after
    it exited 3); a calibration is written over again, as a refresh does."""
    lab, _, target, _ = history
    policy = Path(lab.team.policy_dir) / "default.yaml"
    before = policy.read_text(encoding="utf-8")
    code, _, err = lab.team.cli("calibrate", "--experiment", lab.experiment, "--write", str(policy))
    assert code == 3 and "the file there is not a calibration" in err
    assert policy.read_text(encoding="utf-8") == before
    code, _, err = lab.team.cli("calibrate", "--experiment", lab.experiment, "--write", target)
    assert code == 0, err


def test_tags_of_a_run_are_shown_escaped_in_the_table(lab: Lab):
    """A run's model, accelerator and precision tags (any text a job logs) reached the
    terminal raw: ``\\x1b[31m`` coloured the rest of the table (found by a fuzzer)."""
    spec = write_spec(lab, 4, 1, lab.team.name)
    escapes = {MODEL: "m\x1b[31m", tracking.ACCELERATOR: "a\x1b]0;t\x07", PRECISION: "p\x1b[2J\n"}
    tags = {**tracking.run_tags(spec, trial_id=0, attempt=1), **escapes}
    log_run(lab.client, lab.experiment_id, tags=tags, hours=0.5,
            metrics={tracking.TRAIN_SECONDS: 600.0}, history={"val_loss": LOSS})  # fmt: skip
    code, out, err = lab.team.cli("calibrate", "--experiment", lab.experiment)
    assert code == 0, err
    assert "\x1b" not in out + err and "\x07" not in out
    assert "m\\x1b[31m on a\\x1b]0;t\\x07 × 1 p\\x1b[2J\\n " in out, out
