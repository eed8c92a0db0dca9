"""Fixes and missing fields of W&B, Katib, SkyPilot and Hydra files in the file's own words.

A fix such as ``search.max_trials: 3`` names a path that a W&B sweep does not have; for an
imported file it reads ``run_cap: 3``. The strongest check is the user's: apply the text
the report gives to the engine's file, check it again, and the finding is gone.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest

from gate.cli import main
from gate.estimate.prices import load_catalog
from gate.evaluation.evaluate import Evaluator
from gate.policy.findings import Outcome
from gate.policy.loader import PolicySet

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
RULES = CONFIGS / "rules"
SPEC_PATH = re.compile(r"\b(search|resources|workload|stopping|metadata)\.[a-z_]+")
LIMITS = (
    "limits: {max_experiment_cost: 20, max_gpus_per_trial: 8, max_concurrent_gpus: 64, "
    "max_trial_hours: 2}\n"
)


def policies(tmp_path: Path, body: str = LIMITS) -> PolicySet:
    folder = tmp_path / "policies"
    folder.mkdir(exist_ok=True)
    (folder / "default.yaml").write_text(f"apiVersion: budget-gate/v1\nkind: Policy\n{body}")
    return PolicySet(folder)


def evaluate(path: Path, where: PolicySet):
    return Evaluator(where, load_catalog(), dt.date(2026, 1, 1)).evaluate_spec(str(path))


def finding(result, rule_id: str):
    (found,) = [f for f in result.findings if f.rule_id == rule_id]
    return found


def fix_texts(result, rule_id: str) -> list[str]:
    return [str(edit) for fix in finding(result, rule_id).fixes for edit in fix.edits]


def rule_ids(result) -> set[str]:
    return {f.rule_id for f in result.findings if f.active}


def test_wandb_fix_is_run_cap_and_applying_it_passes(tmp_path) -> None:
    where = policies(tmp_path)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text((RULES / "wandb-random-capped.yaml").read_text())
    result = evaluate(sweep, where).result
    (text,) = fix_texts(result, "BG104")  # 40 runs of 27 epochs: only the run count can go
    assert re.fullmatch(r"run_cap: \d+", text) and not SPEC_PATH.search(text)
    sweep.write_text(sweep.read_text().replace("run_cap: 40", text))
    assert "BG104" not in rule_ids(evaluate(sweep, where).result)


def test_wandb_grid_fixes_name_the_sweeps_own_parameters(tmp_path) -> None:
    result = evaluate(RULES / "wandb-grid-3x4.yaml", policies(tmp_path)).result
    texts = fix_texts(result, "BG104")
    assert texts and all(t.startswith(("parameters.", "run_cap:")) for t in texts), texts
    names = {"lr", "batch_size", "epochs"}  # the sweep's parameters
    assert all(t.split(":")[0].split(".")[1] in names for t in texts if t[0] == "p")


def test_katib_fix_is_parallel_trial_count_and_applying_it_passes(tmp_path) -> None:
    where = policies(tmp_path, "limits: {max_concurrent_gpus: 64}\n")
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text((CONFIGS / "katib/pytorchjob-mnist.gpu.yaml").read_text())
    result = evaluate(experiment, where).result
    (text,) = fix_texts(result, "BG105")  # 3 at once × 32 GPUs = 96 > 64
    assert text == "spec.parallelTrialCount: 2"
    edited = experiment.read_text()
    assert "parallelTrialCount: 3" in edited
    experiment.write_text(edited.replace("parallelTrialCount: 3", "parallelTrialCount: 2"))
    assert "BG105" not in rule_ids(evaluate(experiment, where).result)


def test_katib_gpu_fix_points_at_the_pods_limits_the_engine_sets(tmp_path) -> None:
    result = evaluate(CONFIGS / "katib/pytorchjob-mnist.gpu.yaml", policies(tmp_path)).result
    (text,) = fix_texts(result, "BG101")
    line = finding(result, "BG101").location.line
    assert text == (
        f"nvidia.com/gpu limits of the PyTorchJob's pods × replicas (line {line}) gives 32: "
        "make it 8"
    )
    source = (CONFIGS / "katib/pytorchjob-mnist.gpu.yaml").read_text().splitlines()
    assert "nvidia.com/gpu" in source[line - 1]


def test_skypilot_gpu_fix_is_its_accelerators_and_applying_it_passes(tmp_path) -> None:
    where = policies(tmp_path)
    task = tmp_path / "task.yaml"
    task.write_text((RULES / "skypilot-h100x8-4nodes.yaml").read_text())
    (text,) = fix_texts(evaluate(task, where).result, "BG101")
    assert text == "resources.accelerators: H100:2"  # × num_nodes 4 = 8 per trial
    task.write_text(task.read_text().replace("accelerators: H100:8", "accelerators: H100:2"))
    assert "BG101" not in rule_ids(evaluate(task, where).result)


def test_hydra_fixes_are_the_sweepers_own_keys(tmp_path) -> None:
    where = policies(tmp_path, "limits: {max_experiment_cost: 1}\n")
    config = tmp_path / "config.yaml"
    config.write_text((CONFIGS / "hydra/optuna-sphere.annotated.yaml").read_text())
    texts = fix_texts(evaluate(config, where).result, "BG104")
    trials = [t for t in texts if t.startswith("hydra.sweeper.n_trials: ")]
    assert trials and not any(SPEC_PATH.search(t) for t in texts), texts
    config.write_text(config.read_text().replace("n_trials: 20", trials[0].split(".")[-1]))
    assert "BG104" not in rule_ids(evaluate(config, where).result)


def test_a_fact_the_engine_cannot_hold_is_written_in_its_extension_point(tmp_path) -> None:
    # 2 epochs of 90 min under max_trial_hours 2: SkyPilot has no key for epochs, its envs do
    where = policies(tmp_path, "limits: {max_trial_hours: 2}\n")
    task = tmp_path / "task.yaml"
    task.write_text((RULES / "skypilot-h100x8-4nodes.yaml").read_text())
    (text,) = fix_texts(evaluate(task, where).result, "BG102")
    assert text == "envs.X_BUDGET_GATE_MAX_EPOCHS (line 8) gives 2: make it 1"  # the env it has
    task.write_text(
        task.read_text().replace("X_BUDGET_GATE_MAX_EPOCHS: 2", "X_BUDGET_GATE_MAX_EPOCHS: 1")
    )
    assert "BG102" not in rule_ids(evaluate(task, where).result)


def test_a_missing_label_says_where_in_the_file_and_adding_it_there_passes(tmp_path) -> None:
    where = policies(
        tmp_path,
        "labels: {required: [cost-center]}\n"
        "defaults: {accelerator: A100-80GB, gpus_per_trial: 1, epoch_minutes: 2}\n",
    )
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text((CONFIGS / "wandb/sweep-grid.yaml").read_text())
    message = finding(evaluate(sweep, where).result, "BG201").message
    comment = '# x-budget-gate: {labels: {"cost-center": "..."}}'
    assert message == (
        f"required label 'cost-center' is missing — add the comment line {comment} (one "
        "# x-budget-gate: block holds every fact; every missing one goes in this one labels value)"
    )
    sweep.write_text(sweep.read_text() + comment.replace("...", "cc-7") + "\n")
    assert "BG201" not in rule_ids(evaluate(sweep, where).result)


def test_a_missing_label_in_katib_is_an_annotation(tmp_path) -> None:
    where = policies(tmp_path, "labels: {required: [cost-center]}\n")
    result = evaluate(CONFIGS / "katib/median-stop.annotated.yaml", where).result
    message = finding(result, "BG201").message
    expected = (
        """budget-gate/labels: '{"cost-center": "..."}' under metadata.annotations: (line 9)"""
    )
    assert message.endswith(f"— add {expected} (every missing one goes in this one labels value)")


def test_missing_facts_name_the_extension_point_and_the_engines_own_key() -> None:
    shipped = Path("policies")
    result = evaluate(CONFIGS / "katib/grid.yaml", PolicySet(shipped)).result
    hints = {e.message: e.hint for e in result.errors}
    gpus = hints["the file does not say how many GPUs a trial holds"]
    every = "accelerator: '...', budget-gate/gpus_per_trial: '...', budget-gate/epoch_minutes"
    assert gpus.startswith(
        f"add annotations: {{budget-gate/{every}: '...'}} under metadata: (line 4)"
    )
    assert "nvidia.com/gpu limits on the containers of spec.trialTemplate.trialSpec" in gpus
    every = "accelerator: ..., gpus_per_trial: ..., epoch_minutes: ..."
    assert f"defaults: {{{every}}} in {shipped / 'default.yaml'}" in gpus
    assert not any(SPEC_PATH.search(m) for m in hints)


def test_json_keeps_the_spec_path_beside_the_files_own_words(tmp_path, capsys) -> None:
    folder = policies(tmp_path).policy_dir
    sweep = str(RULES / "wandb-random-capped.yaml")
    main(["check", sweep, "--policy-dir", str(folder), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    fix = next(f for f in doc["results"][0]["findings"] if f["rule_id"] == "BG104")["fixes"][0]
    (edit,) = fix["edits"]
    assert edit["path"] == "search.max_trials"
    assert edit["in_file"] == f"run_cap: {edit['value']}"


def test_a_top_level_key_in_a_wandb_sweep_is_refused_with_the_comment_form(tmp_path) -> None:
    sweep = tmp_path / "sweep.yaml"
    text = (RULES / "wandb-grid-3x4.yaml").read_text().replace("# x-budget-gate:", "x-budget-gate:")
    sweep.write_text(text)
    result = evaluate(sweep, PolicySet(Path("policies"))).result
    assert result.outcome is Outcome.INVALID
    (error,) = result.errors
    assert "local controller refuses it" in error.message and error.location.line == 7
    assert "# x-budget-gate:" in error.hint


@pytest.mark.parametrize("kind", ["key", "comment"])
def test_hydra_takes_the_key_or_the_comment_block_but_not_both(tmp_path, kind: str) -> None:
    text = (CONFIGS / "hydra/optuna-sphere.annotated.yaml").read_text()
    block = text[text.index("x-budget-gate:") :]
    commented = "\n".join("# " + line if line else line for line in block.splitlines())
    config = tmp_path / "config.yaml"
    config.write_text(text.replace(block, commented + "\n") if kind == "comment" else text)
    evaluation = evaluate(config, PolicySet(Path("policies")))
    assert evaluation.spec.resources.accelerator == "L4"
    config.write_text(text + "\n" + commented + "\n")
    (error,) = evaluate(config, PolicySet(Path("policies"))).result.errors
    assert "both an x-budget-gate key and a # x-budget-gate: comment block" in error.message
