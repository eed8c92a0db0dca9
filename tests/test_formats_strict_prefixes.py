"""A near miss of an extension point's prefix is an error, not a fact left unread.

``budget_gate/team`` instead of ``budget-gate/team`` left the team unset, and the default
policy judged a file its team's policy refuses. Checked by the real CLI on files on disk.
"""

from __future__ import annotations

import pytest

from tests.test_formats_strict_keys import KATIB, check


def test_the_katib_team_annotation_spelt_right_is_judged_by_the_teams_policy(tmp_path, capsys):
    assert check(tmp_path, KATIB, capsys)[0] == 1  # vision's cost limit


@pytest.mark.parametrize(
    "written", ["budget_gate/team", "budget-gate.io/team", "Budget-Gate/team", "budgetgate/team"]
)
def test_a_near_miss_of_the_annotation_prefix_is_refused(tmp_path, capsys, written):
    code, out, file = check(tmp_path, KATIB.replace("budget-gate/team", written), capsys)
    assert code == 3
    assert f"{file}:6:5: {written} is not read" in out
    assert "did you mean 'budget-gate/team'?" in out


TASK = """\
resources:
  accelerators: A100-80GB:1
envs:
  X_BUDGET_GATE_TEAM: vision
  BUDGET_GATE_SPEC: sweep.yaml
  WANDB_PROJECT: p
run: python train.py --epochs 10
"""


def test_the_task_team_env_spelt_right_is_judged_by_the_teams_policy(tmp_path, capsys):
    code, out, _ = check(tmp_path, TASK, capsys)
    assert code == 1, out  # budget-gate's own BUDGET_GATE_SPEC and other envs pass


@pytest.mark.parametrize("name", ["BUDGET_CATEGORY", "BUDGET_RATE", "X_BUDGET_DATE"])
def test_names_of_their_own_that_start_like_the_prefix_are_not_near_misses(tmp_path, capsys, name):
    """Within two edits of the prefix, ``BUDGET_CATEGORY: research`` was refused."""
    code, out, _ = check(tmp_path, TASK.replace("WANDB_PROJECT", name), capsys)
    assert code == 1, out
    katib = KATIB.replace(
        "budget-gate/team: vision", "budget-gate/team: vision\n    budget-rate/x: y"
    )
    code, out, _ = check(tmp_path, katib, capsys)
    assert code != 3, out


@pytest.mark.parametrize(
    "written",
    [
        "x_budget_gate_team",
        "X_BUDGETGATE_TEAM",
        "X-BUDGET-GATE-TEAM",
        "XBUDGET_GATE_TEAM",
        "BUDGET_GATE_TEAM",  # a fact without its X_, not one of budget-gate's own settings
    ],
)
def test_a_near_miss_of_the_env_prefix_is_refused(tmp_path, capsys, written):
    code, out, file = check(tmp_path, TASK.replace("X_BUDGET_GATE_TEAM", written), capsys)
    assert code == 3
    assert f"{file}:4:3: {written} is not read" in out
    assert "did you mean 'X_BUDGET_GATE_TEAM'?" in out


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ("X_BUDGET_GATE_MAX_TRIALS: 0", "5:29: envs.X_BUDGET_GATE_MAX_TRIALS: input should be"),
        (
            "X_BUDGET_GATE_LABELS: '{\"cost-center\": 5}'",
            "5:25: envs.X_BUDGET_GATE_LABELS.cost-center: input should be",
        ),
    ],
)
def test_a_bad_env_fact_is_named_as_the_file_writes_it(tmp_path, capsys, env, said):
    """The prefix was glued to the fact's path: ``envs.X_BUDGET_GATE_: max_trials: …``."""
    code, out, file = check(tmp_path, TASK.replace("BUDGET_GATE_SPEC: sweep.yaml", env), capsys)
    assert code == 3
    assert f"{file}:{said}" in out


def test_a_bad_annotation_fact_is_named_as_the_file_writes_it(tmp_path, capsys):
    katib = KATIB.replace(
        "budget-gate/team: vision", 'budget-gate/team: vision\n    budget-gate/epoch_minutes: "NaN"'
    )
    code, out, file = check(tmp_path, katib, capsys)
    assert code == 3
    assert f"{file}:7:32: metadata.annotations.budget-gate/epoch_minutes: input should be" in out


HYDRA = """\
defaults:
  - override hydra/sweeper: optuna
x-budget-gate: {team: vision}
trainer: {max_epochs: 10}
hydra:
  sweeper:
    n_trials: 4
"""
WANDB = """\
method: grid
parameters:
  lr: {values: [0.1, 0.01]}
  epochs: {value: 10}
# budget-gate: the block below says the team (prose, not a block)
# x-budget-gate:
#   team: vision
"""


def test_the_blocks_spelt_right_are_judged_by_the_teams_policy(tmp_path, capsys):
    assert check(tmp_path, HYDRA, capsys)[0] == 1
    assert check(tmp_path, WANDB, capsys)[0] == 1


@pytest.mark.parametrize("written", ["x_budget_gate", "X-Budget-Gate", "budget-gate"])
def test_a_near_miss_of_the_hydra_block_key_is_refused(tmp_path, capsys, written):
    code, out, file = check(tmp_path, HYDRA.replace("x-budget-gate", written), capsys)
    assert code == 3
    assert f"{file}:3:1: {written} is not read" in out
    assert "did you mean 'x-budget-gate'?" in out


@pytest.mark.parametrize("written", ["x_budget_gate", "x-budgetgate", "budget_gate"])
def test_a_near_miss_of_the_comment_block_header_is_refused(tmp_path, capsys, written):
    code, out, file = check(tmp_path, WANDB.replace("# x-budget-gate:", f"# {written}:"), capsys)
    assert code == 3
    assert f"{file}:6:3: a comment block # {written}: is not read" in out
    assert "did you mean '# x-budget-gate:'?" in out
