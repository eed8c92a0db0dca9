"""An imported file is read under the policy of the team it names, not the default's.

That policy lends the ``defaults:``, says whether the calibration counts and from how many
runs (``calibration.use``, ``min_runs``), and prices a SkyPilot task's candidates, so what
fills the file is what judges it afterwards.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from gate.calibrate.model import parse as parse_calibration
from gate.estimate.prices import load_catalog
from gate.evaluation.evaluate import Evaluator
from gate.formats.model import Origin
from gate.policy.findings import Outcome
from gate.policy.loader import PolicySet
from gate.spec.loader import load_file

ROOT = Path(__file__).parent.parent
CALIBRATION = ROOT / "policies" / "tests" / "calibration.json"  # 23 runs, p10 3.8, p90 4.6
RULES = Path(__file__).parent / "fixtures" / "configs" / "rules"
# the calibration's key (fixture-resnet18 on one A100-80GB in bf16), no epoch time
SWEEP = """\
method: grid
parameters:
  lr: {values: [0.1, 0.01]}
  epochs: {value: 10}
# x-budget-gate: {team: vision, accelerator: A100-80GB, gpus_per_trial: 1, precision: bf16,
#   labels: {model: fixture-resnet18}}
"""


def policies(tmp_path: Path, default: str, vision: str) -> PolicySet:
    folder = tmp_path / "policies"
    folder.mkdir()
    head = "apiVersion: budget-gate/v1\nkind: Policy\n"
    (folder / "default.yaml").write_text(head + default)
    (folder / "vision.yaml").write_text(head + vision)
    return PolicySet(folder)


def evaluate(tmp_path: Path, where: PolicySet, text: str = SWEEP):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(text)
    calibration = parse_calibration(load_file(CALIBRATION))
    evaluator = Evaluator(where, load_catalog(), dt.date(2026, 1, 1), calibration=calibration)
    return evaluator.evaluate_spec(str(sweep))


def epoch_source(result):
    return next(r.source for r in result.imported.fields if r.field == "workload.epoch_minutes")


def test_the_teams_policy_turns_the_calibration_on_though_the_default_turns_it_off(
    tmp_path,
) -> None:
    where = policies(tmp_path, "calibration: {use: false}\n", "calibration: {use: true}\n")
    evaluation = evaluate(tmp_path, where)
    assert evaluation.result.policy.startswith("vision")
    source = epoch_source(evaluation.result)
    assert source.origin is Origin.CALIBRATION and "of 23 runs" in source.detail
    measured = evaluation.spec.workload.epoch_minutes
    assert (measured.low, measured.high) == (3.8, 4.6)  # the calibration's p10 and p90


def test_the_teams_policy_turns_the_calibration_off_though_the_default_uses_it(
    tmp_path,
) -> None:
    where = policies(tmp_path, "calibration: {use: true}\n", "calibration: {use: false}\n")
    result = evaluate(tmp_path, where).result
    assert result.outcome is Outcome.INVALID
    assert [e.message for e in result.errors] == ["the file does not say how long one epoch takes"]
    assert "vision.yaml" in result.errors[0].hint  # the team's policy is the one to give it


@pytest.mark.parametrize(("min_runs", "filled"), [(23, True), (24, False)])
def test_the_teams_min_runs_decide_whether_23_runs_count(tmp_path, min_runs, filled) -> None:
    where = policies(
        tmp_path, "calibration: {min_runs: 1}\n", f"calibration: {{min_runs: {min_runs}}}\n"
    )
    result = evaluate(tmp_path, where).result
    assert (result.outcome is not Outcome.INVALID) is filled


@pytest.mark.parametrize(
    ("facts", "filled"),
    [("gpus_per_trial: 1, precision: bf16", True),  # the calibration's own key
     ("gpus_per_trial: 8, precision: bf16", False),  # its runs were on 1 GPU, not 8
     ("gpus_per_trial: 1, precision: fp32", False)],  # and in bf16, not fp32
)  # fmt: skip
def test_only_the_files_own_key_fills_a_missing_epoch_time(tmp_path, facts, filled) -> None:
    """Runs on another GPU count or precision may raise a declared epoch time, never stand in
    for a missing one: a sweep on 8 GPUs took the 1-GPU runs' 3.8–4.6 min."""
    where = policies(tmp_path, "calibration: {use: true}\n", "calibration: {use: true}\n")
    data = json.loads(CALIBRATION.read_text())
    (entry,) = data["entries"]
    coarse = {**entry["key"], "gpus": None, "precision": None}  # what calibrate also writes
    data["entries"].append({**entry, "key": coarse})
    own = tmp_path / "calibration.json"
    own.write_text(json.dumps(data))
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(SWEEP.replace("gpus_per_trial: 1, precision: bf16", facts))
    calibration = parse_calibration(load_file(own))
    evaluator = Evaluator(where, load_catalog(), dt.date(2026, 1, 1), calibration=calibration)
    result = evaluator.evaluate_spec(str(sweep)).result
    assert (result.outcome is not Outcome.INVALID) is filled, result.errors


def test_the_teams_defaults_fill_what_the_file_lacks(tmp_path) -> None:
    where = policies(tmp_path, "defaults: {epoch_minutes: 1}\n", "defaults: {epoch_minutes: 7}\n")
    evaluation = evaluate(tmp_path, where, SWEEP.replace("fixture-resnet18", "unmeasured"))
    assert evaluation.spec.workload.epoch_minutes == 7
    assert "vision.yaml" in epoch_source(evaluation.result).detail


def test_a_skypilot_tasks_dearest_candidate_is_priced_by_the_teams_policy(tmp_path) -> None:
    # the catalog's H100 is dearer than its A100-80GB; the vision policy pays more for A100s
    text = (RULES / "skypilot-any-of.yaml").read_text()
    text = text.replace("envs: {", "envs: {X_BUDGET_GATE_TEAM: vision, ")
    where = policies(tmp_path, "", "prices: {overrides: {A100-80GB: {on-demand: 50}}}\n")
    evaluation = evaluate(tmp_path, where, text)
    assert evaluation.spec.resources.accelerator == "A100-80GB"
    untouched = evaluate(tmp_path, where, (RULES / "skypilot-any-of.yaml").read_text())
    assert untouched.spec.resources.accelerator == "H100"
