"""Which runs price a spec: the MIG slice, coarser keys, lookalike labels, inverted figures.

A red team's calibrations (each passed a spec, or priced it lower, without a refusal):
epoch times of whole H100s priced a ``1g.10gb`` slice (then charged 1/7 of them); runs on
8 GPUs (or in bf16) lowered the declared epoch time of a spec on 1 GPU (or in fp32); a
label ``"resnet18 "`` or ``resnet18`` with a zero-width space set its runs and BG308 aside;
a file with p10 above the median above p90 priced the worst case below the expected.
A spec on 2 GPUs (or in fp32) that gave a made-up model size instead of an epoch time was
priced by its FLOPs prior alone: the runs on 1 GPU (in bf16) that raise a declared figure
were set aside, and BG308 said nothing. A ``1g.10gb`` spec declaring 0.5 min found too few
slice runs, and the whole A100's 4 min an epoch (a floor: a slice is never faster) went
unused.
Every figure is worked out here by ``check`` itself, on specs and files the test writes.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gate.calibrate.learn import coarser, learn
from gate.calibrate.lookup import fold
from gate.calibrate.model import Key
from gate.calibrate.observe import Observation
from gate.cli import main

SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {name: keyed, labels: {model: LABEL}}
resources: {accelerator: ACCEL, gpus_per_trial: GPUS, precision: PRECISION MIG}
workload: {max_epochs: 10, epoch_minutes: MINUTES}
search: {strategy: random, max_trials: 4}
stopping: {early_stopping: {monitor: val_loss, patience: 2}}
"""


def _spec(tmp_path: Path, name: str = "spec.yaml", **parts: object) -> Path:
    values = {"LABEL": "resnet18", "ACCEL": "A100-80GB", "GPUS": 1, "PRECISION": "bf16",
              "MIG": "", "MINUTES": 4, **parts}  # fmt: skip
    text = SPEC
    for part, value in values.items():
        text = text.replace(part, str(value))
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _entry(key: dict[str, Any], low: float, median: float, high: float, **more: Any) -> Any:
    epoch = {"runs": 20, "p10": low, "median": median, "p90": high}
    return {"key": key, "runs": 20, "finished": 20, "failed": 0, "first": "2026-11-01",
            "last": "2026-11-30", "epoch_minutes": epoch, **more}  # fmt: skip


def _calibration(tmp_path: Path, *entries: Any) -> Path:
    path = tmp_path / "calibration.json"
    document = {"apiVersion": "budget-gate/v1", "kind": "Calibration",
                "created": "2026-12-01", "entries": list(entries)}  # fmt: skip
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def _check(capsys, spec: Path, calibration: Path | None) -> tuple[int, dict[str, Any]]:
    """``check --format json`` of ``spec``: its exit code and its one result."""
    given = ["--calibration", str(calibration)] if calibration is not None else []
    capsys.readouterr()
    code = main(["check", *given, str(spec), "--format", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out)["results"][0]


def _costs(result: dict[str, Any]) -> tuple[Decimal, Decimal]:
    estimate = result["estimate"]
    return Decimal(estimate["worst"]["cost"]), Decimal(estimate["expected"]["cost"])


def _said(result: dict[str, Any]) -> str:
    estimate = result["estimate"]
    said = [estimate["worst"]["assumptions"], estimate["expected"]["assumptions"]]
    return json.dumps(said, ensure_ascii=False)


# --- 1. a MIG slice is never priced from whole GPUs, nor a whole GPU from slices ----------

H100 = {"model": "resnet18", "accelerator": "H100", "gpus": 1, "precision": "bf16"}
SLICE = {**H100, "mig_profile": "1g.10gb"}


def test_a_mig_slice_is_not_priced_from_whole_gpu_runs(tmp_path, capsys):
    # red team: 500.86 USD → 77.06 USD (whole-H100 epochs of 1 min, then 1/7 of the price)
    spec = _spec(tmp_path, ACCEL="H100", MIG=", mig_profile: 1g.10gb", MINUTES=7)
    whole = [_entry({k: v for k, v in H100.items() if k not in drop}, 1.0, 1.0, 1.0)
             for drop in ((), ("precision",), ("precision", "gpus"))]  # fmt: skip
    _, alone = _check(capsys, spec, None)
    _, calibrated = _check(capsys, spec, _calibration(tmp_path, *whole))
    assert _costs(calibrated) == _costs(alone)
    assert "runs of resnet18 on H100 1g.10gb MIG slice × 1 bf16" in _said(calibrated)


def test_a_mig_slice_is_priced_from_its_own_slice_runs(tmp_path, capsys):
    spec = _spec(tmp_path, ACCEL="H100", MIG=", mig_profile: 1g.10gb", MINUTES=7)
    _, calibrated = _check(capsys, spec, _calibration(tmp_path, _entry(SLICE, 8.0, 9.0, 10.0)))
    _, worst = _check(capsys, _spec(tmp_path, "w.yaml", ACCEL="H100",
                                    MIG=", mig_profile: 1g.10gb", MINUTES=10), None)  # fmt: skip
    assert _costs(calibrated)[0] == _costs(worst)[0]


def test_a_whole_gpu_is_not_priced_from_mig_slice_runs(tmp_path, capsys):
    spec = _spec(tmp_path, ACCEL="H100", MINUTES=7)
    _, alone = _check(capsys, spec, None)
    _, calibrated = _check(capsys, spec, _calibration(tmp_path, _entry(SLICE, 0.1, 0.2, 0.3)))
    assert _costs(calibrated) == _costs(alone)


def test_coarser_keys_keep_the_mig_profile_while_they_name_the_accelerator():
    levels = coarser(Key(**SLICE))
    assert [level.mig_profile for level in levels] == ["1g.10gb", "1g.10gb", "1g.10gb", None]
    assert levels[-1] == Key(model="resnet18")


def test_calibrate_learns_slice_runs_apart_from_whole_gpu_runs():
    def run(minutes: float, mig: str | None) -> Observation:
        return Observation(
            run_id=f"{minutes}", key=Key(**{**H100, "mig_profile": mig}), experiment="e",
            spec="", team="", start=dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc),
            status="FINISHED", epoch_minutes=minutes, setup_minutes=None,
            plateau_fraction=None, failure_point=None, retry=False, preempted=False,
        )  # fmt: skip

    calibration = learn([run(1.0, None), run(7.0, "1g.10gb")], dt.date(2026, 12, 1), fold=fold)
    medians = {entry.key: entry.epoch_minutes for entry in calibration.entries}
    for level in coarser(Key(**SLICE))[:3]:
        assert medians[level] is not None and medians[level].median == 7.0
        whole = level.model_copy(update={"mig_profile": None})
        assert medians[whole] is not None and medians[whole].median == 1.0


def test_a_mig_spec_s_runs_are_tagged_with_their_slice(tmp_path):
    """What ``calibrate`` reads a run's slice from: the tags ``gate.tracking.run_tags`` gives."""
    from gate import tracking
    from gate.calibrate.observe import MIG_PROFILE

    sliced = _spec(tmp_path, ACCEL="H100", MIG=", mig_profile: 1g.10gb", MINUTES=7)
    assert tracking.run_tags(sliced)[MIG_PROFILE] == "1g.10gb"
    assert MIG_PROFILE not in tracking.run_tags(_spec(tmp_path, "whole.yaml", ACCEL="H100"))


# --- 2. a coarser key may raise a declared epoch time, never lower it --------------------

A100 = {"model": "resnet18", "accelerator": "A100-80GB"}


@pytest.mark.parametrize(
    ("key", "spec_parts"),
    [
        ({**A100, "gpus": 8, "precision": "bf16"}, {}),  # runs on 8 GPUs, the spec on 1
        ({**A100, "gpus": 1, "precision": "bf16"}, {"PRECISION": "fp32"}),  # bf16 runs, fp32 spec
    ],
)
def test_runs_on_another_gpu_count_or_precision_never_lower_the_declared_time(
    tmp_path, capsys, key, spec_parts
):
    # red team: cal1.yaml (A100 × 1, 4 min) with runs on × 8 (0.55 min): 1,954.23 → 302.62 USD
    levels = coarser(Key(**key))
    entries = [_entry(level.model_dump(exclude_none=True), 0.5, 0.55, 0.6) for level in levels]
    spec = _spec(tmp_path, **spec_parts)
    code_alone, alone = _check(capsys, spec, None)
    code, calibrated = _check(capsys, spec, _calibration(tmp_path, *entries))
    assert _costs(calibrated) == _costs(alone)
    assert code == code_alone
    assert "may raise the spec's epoch time, never lower it" in _said(calibrated)


def test_runs_on_another_gpu_count_may_raise_the_declared_time(tmp_path, capsys):
    """Slower runs on 8 GPUs raise the worst case to their 90th percentile; the expected case
    keeps the spec's 4 min, higher than their median 3."""
    # the coarsest key that names the accelerator: what calibrate writes of runs on 8 GPUs
    entry = _entry(A100, 2.0, 3.0, 9.0)
    _, calibrated = _check(capsys, _spec(tmp_path), _calibration(tmp_path, entry))
    _, declared = _check(capsys, _spec(tmp_path, "d.yaml"), None)
    _, slow = _check(capsys, _spec(tmp_path, "s.yaml", MINUTES=9), None)
    assert _costs(calibrated) == (_costs(slow)[0], _costs(declared)[1])
    assert "epoch time 4.00 min: the spec's; the median of 20 runs" in _said(calibrated)


def test_the_spec_s_own_key_still_lowers_its_declared_time(tmp_path, capsys):
    entry = _entry({**A100, "gpus": 1, "precision": "bf16"}, 1.0, 2.0, 3.0)
    _, calibrated = _check(capsys, _spec(tmp_path), _calibration(tmp_path, entry))
    _, fast = _check(capsys, _spec(tmp_path, "f.yaml", MINUTES=3), None)
    assert _costs(calibrated)[0] == _costs(fast)[0]


# --- 3. a lookalike label is the same model ------------------------------------------------

LOOKALIKES = ["resnet18 ", "resnet18\u200b", "resnet18\u00a0", "resnet18\u2060",
              "resnet18\ufeff", "re\u00adsnet18", "\uff52esnet18", "ResNet18"]  # fmt: skip


@pytest.mark.parametrize("label", LOOKALIKES)
def test_a_lookalike_label_is_priced_and_flagged_from_the_label_s_runs(tmp_path, capsys, label):
    # red team: "resnet18 " (and U+200B, NBSP, ...) set its runs and BG308 aside: exit 0
    entry = _entry({**A100, "gpus": 1, "precision": "bf16"}, 4.11, 4.55, 4.99)
    calibration = _calibration(tmp_path, entry)
    code_plain, plain = _check(capsys, _spec(tmp_path, MINUTES=0.5), calibration)
    shown = json.dumps(label)  # YAML's double quotes read JSON's escapes
    code, lookalike = _check(capsys, _spec(tmp_path, "l.yaml", LABEL=shown, MINUTES=0.5),
                             calibration)  # fmt: skip
    assert (code, _costs(lookalike)) == (code_plain, _costs(plain))
    assert "BG308" in [finding["rule_id"] for finding in lookalike["findings"]]


@pytest.mark.parametrize("label", LOOKALIKES)
def test_a_calibration_key_with_a_lookalike_label_prices_the_plain_label(tmp_path, capsys, label):
    entry = _entry({**A100, "model": label, "gpus": 1, "precision": "bf16"}, 4.11, 4.55, 4.99)
    _, result = _check(capsys, _spec(tmp_path, MINUTES=0.5), _calibration(tmp_path, entry))
    assert "BG308" in [finding["rule_id"] for finding in result["findings"]]


def test_fold_keeps_what_tells_two_models_apart():
    assert fold("resnet18") != fold("resnet50")
    assert {fold(label) for label in LOOKALIKES} == {"resnet18"}


# --- 4. quantiles out of order are refused at the file's line ------------------------------


@pytest.mark.parametrize(
    ("figures", "said"),
    [
        ({"epoch_minutes": {"runs": 23, "p10": 4.6, "median": 4.1, "p90": 0.01}},
         "entries[0].epoch_minutes: quantiles out of order: p10 4.6, median 4.1, p90 0.01"),
        ({"first": "2026-12-01", "last": "2026-11-01"},
         "entries[0]: first 2026-12-01 is after last 2026-11-01"),
    ],
)  # fmt: skip
def test_figures_out_of_order_are_refused(tmp_path, capsys, figures, said):
    # red team: p10 4.6 > median 4.1 > p90 0.01 priced the worst case below the expected
    entry = {**_entry({**A100, "gpus": 1, "precision": "bf16"}, 4.0, 4.1, 4.2), **figures}
    calibration = _calibration(tmp_path, entry)
    capsys.readouterr()
    code = main(["check", "--calibration", str(calibration), str(_spec(tmp_path))])
    out, err = capsys.readouterr()
    assert code == 3, out + err
    [line] = [line for line in (out + err).splitlines() if said in line]
    assert line.startswith(f"{calibration}:")
    where = line.removeprefix(f"{calibration}:").split(":")[:2]
    assert all(part.isdigit() for part in where)
    assert "budget-gate calibrate --write" in line


# --- 5. a coarser key floors the FLOPs prior as it floors a declared epoch time -----------

TINY = "model: {parameters: 1.0e6, tokens_per_epoch: 1.0e6}"  # a FLOPs prior of a blink


def _sized(tmp_path: Path, name: str, model: str = TINY, **parts: object) -> Path:
    """A spec that gives its model size (``workload.model``) instead of its epoch time."""
    path = _spec(tmp_path, name, **parts)
    text = path.read_text(encoding="utf-8").replace("epoch_minutes: 4", model)
    path.write_text(text, encoding="utf-8")
    return path


def _rules(result: dict[str, Any]) -> list[str]:
    return [finding["rule_id"] for finding in result["findings"]]


@pytest.mark.parametrize("parts", [{"GPUS": 2}, {"PRECISION": "fp32"}])
def test_runs_on_another_gpu_count_or_precision_raise_a_flops_prior(tmp_path, capsys, parts):
    # red team: 20 runs on L4 × 1 bf16 at ~4 min; the spec on × 2 (or fp32) gave a made-up
    # model size instead of epoch_minutes: 2.75 USD and no BG308 (0.5 min declared: 1,845 USD)
    calibration = _calibration(tmp_path, _entry(A100, 2.0, 3.0, 9.0))
    code, sized = _check(capsys, _sized(tmp_path, "m.yaml", **parts), calibration)
    _, slow = _check(capsys, _spec(tmp_path, "s.yaml", MINUTES=9, **parts), calibration)
    _, typical = _check(capsys, _spec(tmp_path, "t.yaml", MINUTES=3, **parts), calibration)
    assert _costs(sized) == (_costs(slow)[0], _costs(typical)[1])
    assert "the FLOPs prior of workload.model gives" in _said(sized)
    assert code != 0 and "BG308" in _rules(sized)
    [finding] = [f for f in sized["findings"] if f["rule_id"] == "BG308"]
    assert finding["message"].startswith("the FLOPs prior of workload.model gives an epoch time")
    assert (
        "below the measured floor 2.00 (10th percentile of 20 runs of resnet18"
        in (finding["message"])
    )


def test_a_flops_prior_above_the_coarser_runs_stands(tmp_path, capsys):
    big = "model: {parameters: 1.0e9, tokens_per_epoch: 1.0e12}"  # hours an epoch
    calibration = _calibration(tmp_path, _entry(A100, 2.0, 3.0, 9.0))
    _, alone = _check(capsys, _sized(tmp_path, "m.yaml", big, GPUS=2), None)
    _, sized = _check(capsys, _sized(tmp_path, "m.yaml", big, GPUS=2), calibration)
    assert _costs(sized) == _costs(alone)
    assert "not used: runs on another GPU count or precision may raise" in _said(sized)
    assert "BG308" not in _rules(sized)


# --- 6. a MIG slice is never faster than its whole GPU: whole-GPU runs floor its time -----

WHOLE = {**A100, "gpus": 1, "precision": "bf16"}
ON_SLICE = {"MIG": ", mig_profile: 1g.10gb"}


@pytest.mark.parametrize(
    ("key", "parts"),
    [(WHOLE, {}), (A100, {"GPUS": 2}), ({**A100, "gpus": 1}, {"PRECISION": "fp32"})],
)
def test_whole_gpu_runs_raise_a_mig_slice_s_declared_time(tmp_path, capsys, key, parts):
    # red team: 20 runs on whole A100-80GB at ~4 min; a 1g.10gb spec declaring 0.5 min found
    # "fewer than 5 runs of … 1g.10gb MIG slice": 39.60 USD and no BG308 (whole GPU: 2,276)
    calibration = _calibration(tmp_path, _entry(key, 3.8, 4.1, 4.6))
    parts = {**ON_SLICE, **parts}
    code, fast = _check(capsys, _spec(tmp_path, MINUTES=0.5, **parts), calibration)
    _, slow = _check(capsys, _spec(tmp_path, "s.yaml", MINUTES=4.6, **parts), calibration)
    _, typical = _check(capsys, _spec(tmp_path, "t.yaml", MINUTES=4.1, **parts), calibration)
    assert _costs(fast) == (_costs(slow)[0], _costs(typical)[1])
    assert "the spec says 0.5 (a MIG slice is never faster than its whole GPU" in _said(fast)
    assert code != 0
    [finding] = [f for f in fast["findings"] if f["rule_id"] == "BG308"]
    assert (
        "epoch time 0.5 min is below the measured 3.80 (10th percentile of 20 runs of"
        in (finding["message"])
    )
    assert "a MIG slice is never faster than its whole GPU" in finding["message"]


def test_whole_gpu_runs_raise_a_mig_slice_s_flops_prior(tmp_path, capsys):
    calibration = _calibration(tmp_path, _entry(WHOLE, 3.8, 4.1, 4.6))
    _, sized = _check(capsys, _sized(tmp_path, "m.yaml", **ON_SLICE), calibration)
    _, typical = _check(capsys, _spec(tmp_path, "t.yaml", MINUTES=4.1, **ON_SLICE), calibration)
    assert _costs(sized) == _costs(typical)
    [finding] = [f for f in sized["findings"] if f["rule_id"] == "BG308"]
    assert finding["message"].startswith("the FLOPs prior of workload.model gives")
    assert "a MIG slice is never faster than its whole GPU" in finding["message"]


def test_a_mig_slice_s_own_runs_come_before_its_whole_gpu_s(tmp_path, capsys):
    slice_runs = _entry({**WHOLE, "mig_profile": "1g.10gb"}, 0.9, 1.0, 1.1)
    calibration = _calibration(tmp_path, slice_runs, _entry(WHOLE, 3.8, 4.1, 4.6))
    _, result = _check(capsys, _spec(tmp_path, MINUTES=1, **ON_SLICE), calibration)
    assert "BG308" not in _rules(result)
    assert "runs of resnet18 on A100-80GB 1g.10gb MIG slice × 1 bf16" in _said(result)
