"""A hint to add a fact to a W&B, SkyPilot, Katib or Hydra file can be followed as written.

Each test follows the hint the way its author would (a line into the block, an env under
``envs:``) and checks the file again: it passes. A hint that wrote the extension point anew
in a file that has one led to a second comment block (refused) or a duplicate key; a hint
per missing label that wrote the whole labels value kept only the last label.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gate.cli import main

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
POLICY = "apiVersion: budget-gate/v1\nkind: Policy\n"
LABELS = POLICY + "labels: {required: [cost-center, environment, workload-type]}\n"

SWEEP = "method: grid\nparameters:\n  lr: {values: [0.1, 0.01, 0.001]}\n"
BLOCK = SWEEP + (
    "# x-budget-gate:\n"
    "#   accelerator: A100-80GB\n"
    "#   epoch_minutes: 2.5\n"
    "#   labels: {model: resnet50}\n"
)
"""The newcomer's sweep: a block without gpus_per_trial and max_epochs (its header: line 4)."""


def check(tmp_path: Path, capsys: Any, text: str, policy: str = POLICY) -> tuple[int, Any]:
    """``budget-gate check FILE --format json`` under ``policy``; the file's one result."""
    policies = tmp_path / "policies"
    policies.mkdir(exist_ok=True)
    (policies / "default.yaml").write_text(policy)
    path = tmp_path / "config.yaml"
    path.write_text(text)
    capsys.readouterr()
    code = main(["check", str(path), "--policy-dir", str(policies), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)["results"][0]


def hints(result: Any) -> list[str]:
    return [e["hint"] for e in result["errors"]]


def messages(result: Any, rule_id: str) -> list[str]:
    return [f["message"] for f in result["findings"] if f["rule_id"] == rule_id]


def after_line(text: str, number: int, added: str) -> str:
    """``text`` with ``added`` (lines) inserted after line ``number``."""
    lines = text.splitlines(keepends=True)
    return "".join([*lines[:number], added, *lines[number:]])


def test_a_wandb_block_without_a_fact_is_told_to_add_it_to_that_block(tmp_path, capsys):
    code, result = check(tmp_path, capsys, BLOCK)
    assert code == 3
    gpus, epochs = hints(result)
    assert gpus.startswith("add gpus_per_trial: ... to the # x-budget-gate: block at line 4")
    assert epochs.startswith("add max_epochs: ... to the # x-budget-gate: block at line 4")
    assert not any("the comment line" in h for h in (gpus, epochs))
    code, result = check(tmp_path, capsys, BLOCK + "#   gpus_per_trial: 1\n#   max_epochs: 10\n")
    assert (code, result["errors"]) == (0, [])


def test_a_one_line_wandb_block_is_told_to_add_inside_its_braces(tmp_path, capsys):
    text = SWEEP + "# x-budget-gate: {accelerator: A100-80GB, epoch_minutes: 2}\n"
    _, result = check(tmp_path, capsys, text)
    assert hints(result)[0].startswith(
        "add gpus_per_trial: ... inside the {...} of the # x-budget-gate: line (line 4)"
    )
    followed = text.replace(
        "epoch_minutes: 2}", "epoch_minutes: 2, gpus_per_trial: 1, max_epochs: 3}"
    )
    assert check(tmp_path, capsys, followed)[0] == 0


def test_a_sweep_without_a_block_is_given_one_line_with_every_missing_fact(tmp_path, capsys):
    code, result = check(tmp_path, capsys, SWEEP)
    every = "accelerator: ..., gpus_per_trial: ..., max_epochs: ..., epoch_minutes: ..."
    line = f"# x-budget-gate: {{{every}}}"
    assert code == 3 and len(hints(result)) == 4
    assert all(h.startswith(f"add the comment line {line} (one ") for h in hints(result))
    filled = line.replace("accelerator: ...", "accelerator: A100-80GB").replace("...", "2")
    assert check(tmp_path, capsys, SWEEP + filled + "\n")[0] == 0


SKY = (
    "name: train\nresources:\n  accelerators: A100-80GB:1\n"
    "envs:\n  WANDB_MODE: offline\nrun: python train.py --epochs 10\n"
)


def test_a_skypilot_task_with_envs_is_told_to_add_the_env_under_them(tmp_path, capsys):
    code, result = check(tmp_path, capsys, SKY)
    (hint,) = hints(result)
    assert code == 3 and hint.startswith(
        "add X_BUDGET_GATE_EPOCH_MINUTES: ... under envs: (line 4)"
    )
    followed = after_line(SKY, 4, "  X_BUDGET_GATE_EPOCH_MINUTES: 2\n")
    assert check(tmp_path, capsys, followed)[0] == 0
    flow = SKY.replace("envs:\n  WANDB_MODE: offline\n", "envs: {WANDB_MODE: offline}\n")
    (hint,) = hints(check(tmp_path, capsys, flow)[1])
    assert hint.startswith(
        "add X_BUDGET_GATE_EPOCH_MINUTES: ... inside the {...} of envs: (line 4)"
    )


def test_a_skypilot_task_without_envs_is_given_one_envs_key(tmp_path, capsys):
    text = SKY.replace("envs:\n  WANDB_MODE: offline\n", "")
    (hint,) = hints(check(tmp_path, capsys, text)[1])
    assert hint.startswith("add envs: {X_BUDGET_GATE_EPOCH_MINUTES: ...} (one envs: holds every")


def test_katib_annotations_are_added_where_the_experiment_has_them(tmp_path, capsys):
    grid = (CONFIGS / "katib/grid.yaml").read_text()  # metadata (line 4), no annotations
    code, result = check(tmp_path, capsys, grid)
    notes = "budget-gate/accelerator: '...', budget-gate/gpus_per_trial: '...'"
    assert code == 3
    assert all(h.startswith(f"add annotations: {{{notes}, ") for h in hints(result))
    assert all(
        "under metadata: (line 4) (one annotations: holds every fact)" in h for h in hints(result)
    )
    given = "  annotations: {budget-gate/accelerator: A100-80GB, budget-gate/gpus_per_trial: '1'}\n"
    code, result = check(tmp_path, capsys, after_line(grid, 4, given))
    (hint,) = hints(result)
    assert hint.startswith(
        "add budget-gate/epoch_minutes: '...' inside the {...} of metadata.annotations: (line 5)"
    )
    code, result = check(
        tmp_path,
        capsys,
        after_line(grid, 4, given.replace("'1'}", "'1', budget-gate/epoch_minutes: '2'}")),
    )
    assert (code, result["errors"]) == (0, [])


def test_a_hydra_key_is_added_to(tmp_path, capsys):
    config = (CONFIGS / "hydra/optuna-sphere.annotated.yaml").read_text()
    lacking = config.replace("  epoch_minutes: 0.5\n", "")
    code, result = check(tmp_path, capsys, lacking)
    (hint,) = hints(result)
    line = lacking.splitlines().index("x-budget-gate:") + 1
    assert code == 3 and hint.startswith(
        f"add epoch_minutes: ... under x-budget-gate: (line {line})"
    )
    assert check(tmp_path, capsys, lacking + "  epoch_minutes: 0.5\n")[0] == 0


def test_each_missing_label_is_added_to_the_labels_the_task_gives(tmp_path, capsys):
    text = after_line(
        SKY, 4, '  X_BUDGET_GATE_EPOCH_MINUTES: 2\n  X_BUDGET_GATE_LABELS: \'{"model": "r50"}\'\n'
    )
    _, result = check(tmp_path, capsys, text, LABELS)
    said = messages(result, "BG201")
    assert len(said) == 3
    for name, message in zip(["cost-center", "environment", "workload-type"], said, strict=True):
        assert message.endswith(f'— add "{name}": "..." to envs.X_BUDGET_GATE_LABELS (line 6)')
    every = (
        '"model": "r50", "cost-center": "cc-1", "environment": "research", "workload-type": "hpo"'
    )
    followed = text.replace('{"model": "r50"}', "{" + every + "}")
    _, result = check(tmp_path, capsys, followed, LABELS)
    assert messages(result, "BG201") == []


def test_each_missing_label_is_added_to_the_block_labels(tmp_path, capsys):
    text = BLOCK + "#   gpus_per_trial: 1\n#   max_epochs: 10\n"
    _, result = check(tmp_path, capsys, text, LABELS)
    said = messages(result, "BG201")
    assert len(said) == 3
    assert all(m.endswith("to # x-budget-gate.labels (line 7)") for m in said), said
    assert said[0].endswith('— add "cost-center": "..." to # x-budget-gate.labels (line 7)')


def test_a_missing_label_where_none_is_given_says_one_value_holds_them_all(tmp_path, capsys):
    _, result = check(
        tmp_path, capsys, after_line(SKY, 4, "  X_BUDGET_GATE_EPOCH_MINUTES: 2\n"), LABELS
    )
    said = messages(result, "BG201")
    assert len(said) == 3
    assert all("every missing one goes in this one labels value" in m for m in said)
    assert said[0].endswith(
        """add X_BUDGET_GATE_LABELS: '{"cost-center": "..."}' under envs: (line 4) """
        "(every missing one goes in this one labels value)"
    )


def test_labels_of_the_policys_defaults_are_kept_in_the_hint(tmp_path, capsys):
    policy = POLICY + "labels: {required: [cost-center]}\ndefaults: {labels: {model: r50}}\n"
    text = BLOCK.replace(
        "#   labels: {model: resnet50}\n", "#   gpus_per_trial: 1\n#   max_epochs: 9\n"
    )
    _, result = check(tmp_path, capsys, text, policy)
    (message,) = messages(result, "BG201")
    # the file's labels replace the policy's whole: the hint keeps the policy's ones
    assert 'labels: {"model": "r50", "cost-center": "..."} to the # x-budget-gate: block' in message


def test_a_fix_to_a_fact_in_the_block_changes_it_where_it_stands(tmp_path, capsys):
    text = BLOCK + "#   gpus_per_trial: 16\n#   max_epochs: 10\n"
    policy = POLICY + "limits: {max_gpus_per_trial: 8}\n"
    _, result = check(tmp_path, capsys, text, policy)
    (finding,) = [f for f in result["findings"] if f["rule_id"] == "BG101"]
    edits = [e["in_file"] for fix in finding["fixes"] for e in fix["edits"]]
    assert edits == ["# x-budget-gate.gpus_per_trial (line 8) gives 16: make it 8"]


def test_a_policy_with_defaults_is_told_to_add_under_them(tmp_path, capsys):
    policy = POLICY + "defaults: {max_epochs: 10}\n"
    _, result = check(tmp_path, capsys, BLOCK, policy)
    (hint,) = hints(result)
    assert hint.endswith(
        "or gpus_per_trial: ... under defaults: in " + str(tmp_path / "policies" / "default.yaml")
    )
