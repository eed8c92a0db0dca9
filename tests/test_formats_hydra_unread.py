"""Red-team findings on Hydra configs: what Hydra runs that the gate read as less.

A step budget that trains past the epochs priced (``max_steps`` in any spelling), a swept
value Hydra resolves from an interpolation (``lr: ${lrs}`` with ``lrs: range(1,1000)``), a
sweeper or launcher class named by ``_target_``, a Ray job pinned to another accelerator
or rerun past Ray's default, and a Slurm node feature or partition naming another GPU
model: each is refused at its line, and ordinary configs beside them still pass.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_formats_epochs import check as epochs_check
from tests.test_formats_epochs import field, only_error

INVALID = 3

BASIC = """\
hydra:
  sweeper:
    params:
      lr: 0.1,0.01
trainer:
  max_epochs: 10
lr: 0.01
x-budget-gate:
  accelerator: L4
  gpus_per_trial: 1
  epoch_minutes: 3
"""

RAY = """\
defaults:
  - override hydra/launcher: ray
hydra:
  launcher:
    ray:
      remote:
        num_gpus: 1
{remote}  sweeper:
    params:
      lr: 0.1,0.01
trainer:
  max_epochs: 10
x-budget-gate:
  accelerator: L4
  epoch_minutes: 3
"""

SUBMITIT = """\
defaults:
  - override hydra/launcher: submitit_slurm
hydra:
  launcher:
    gpus_per_node: 1
{launcher}  sweeper:
    params:
      lr: 0.1,0.01
trainer:
  max_epochs: 10
x-budget-gate:
  accelerator: L4
  epoch_minutes: 3
"""


def check(tmp_path: Any, capsys: Any, text: str) -> tuple[int, Any]:
    return epochs_check(tmp_path, capsys, text, "config.yaml")


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def refused(tmp_path: Any, capsys: Any, text: str, said: str, needle: str) -> Any:
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID, result
    error = only_error(result)
    assert said in error["message"], error
    assert error["line"] == line_of(text, needle), error
    return error


# --- F1: a step budget trains past the epochs priced ------------------------------------------


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("trainer:\n  max_epochs: 10\n  max_steps: 10000000\n", "max_steps"),
        ("trainer:\n  max_epochs: 10\n  max_steps: 1e7\n", "max_steps"),
        ("trainer:\n  max_epochs: 10\n  max_steps: '10000000'\n", "max_steps"),
        ("trainer:\n  max_epochs: 10\n  max_steps: ${steps}\nsteps: 100\n", "max_steps:"),
        ("training_args: {num_train_epochs: 1, max_steps: 10000000}\n", "training_args"),
        ("training_args: {num_train_epochs: 1, maxSteps: 10}\n", "training_args"),
        ("max_train_steps: 5000\n", "max_train_steps"),
    ],
)
def test_a_step_budget_in_any_spelling_is_refused(tmp_path, capsys, extra, needle) -> None:
    """``max_steps: 1e7`` and ``'10000000'`` passed silently; only the int got a note."""
    text = BASIC.replace("trainer:\n  max_epochs: 10\n", extra)
    refused(tmp_path, capsys, text, "bounds the training by steps", needle)


@pytest.mark.parametrize(
    ("param", "needle"),
    [
        ("trainer.max_steps: choice(10000000)", "trainer.max_steps"),
        ("+trainer.max_steps: 10,1000000", "+trainer.max_steps"),
        ("trainer: '{max_epochs: 10, max_steps: 1000000}'", "trainer: '"),
        ("hydra.job.env_set.MAX_STEPS: 100,1000", "hydra.job.env_set"),
    ],
)
def test_a_swept_step_budget_is_refused_at_the_param(tmp_path, capsys, param, needle) -> None:
    text = BASIC.replace("      lr: 0.1,0.01\n", f"      lr: 0.1,0.01\n      {param}\n")
    refused(tmp_path, capsys, text, "bounds the training by steps", needle)


@pytest.mark.parametrize(
    ("job", "needle"),
    [
        ("  job:\n    env_set: {MAX_STEPS: '1000000'}\n", "env_set"),
        ("  job:\n    env_copy: [MAX_STEPS]\n", "env_copy"),
    ],
)
def test_a_step_budget_the_jobs_environment_gets_is_refused(tmp_path, capsys, job, needle) -> None:
    text = BASIC.replace("hydra:\n", "hydra:\n" + job)
    refused(tmp_path, capsys, text, "MAX_STEPS", needle)


@pytest.mark.parametrize(
    "extra",
    [
        "  max_steps: -1\n",
        "  max_steps: '-1'\n",
        "  max_steps: 0\n",
        "  max_steps: null\n",
        "  warmup_steps: 500\n  log_every_n_steps: 50\n  val_check_interval: 1000\n",
        "  lr_scheduler: {_target_: torch.optim.lr_scheduler.OneCycleLR, total_steps: 10000}\n",
        "  scheduler:\n    num_training_steps: 10000\n",
    ],
)
def test_a_step_budget_that_is_off_and_points_of_the_schedule_pass(tmp_path, capsys, extra) -> None:
    """A learning-rate schedule's total_steps (OneCycleLR's) shapes it; it bounds nothing."""
    text = BASIC.replace("  max_epochs: 10\n", "  max_epochs: 10\n" + extra)
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    budget = text.replace("  max_epochs: 10\n", "  max_epochs: 10\n  total_steps: 10000\n")
    assert check(tmp_path, capsys, budget)[0] == INVALID  # the trainer's own: a budget


# --- F2: a swept value Hydra resolves from an interpolation -----------------------------------


def test_hydra_resolves_a_swept_interpolation_to_the_whole_sweep() -> None:
    """``instantiate(cfg.hydra.sweeper)`` resolves the node against the root config."""
    from omegaconf import OmegaConf

    config = OmegaConf.create(
        {"hydra": {"sweeper": {"params": {"lr": "${lrs}"}}}, "lrs": "range(1,1000)"}
    )
    resolved = OmegaConf.to_container(config, resolve=True)
    assert resolved["hydra"]["sweeper"]["params"]["lr"] == "range(1,1000)"  # type: ignore[index]


@pytest.mark.parametrize(
    ("param", "extra"),
    [
        ("lr: ${lrs}", "lrs: range(1,1000)\n"),
        ("seed: ${seeds}", "seeds: range(1,1000)\n"),
        ("+seed: ${seeds}", "seeds: 1,2,3\n"),
        ("lr: ${sweep.lrs}", "sweep: {lrs: '0.1,0.01,0.001'}\n"),
        ("lr: \"${oc.env:LRS,'1,2,3'}\"", ""),
        ("lr: 0.1,${more}", "more: 0.2\n"),
    ],
)
def test_an_interpolated_sweep_value_is_refused(tmp_path, capsys, param, extra) -> None:
    """``lr: ${lrs}`` was priced as one job; Hydra ran 999."""
    text = BASIC.replace("      lr: 0.1,0.01\n", f"      {param}\n") + extra
    refused(tmp_path, capsys, text, "an interpolation budget-gate does not resolve", param)


@pytest.mark.parametrize(
    ("node", "needle"),
    [
        ("hydra:\n  sweeper:\n    params: ${sweep}\n", "params:"),
        ("hydra:\n  sweeper: ${my_sweeper}\n", "sweeper:"),
        (
            "hydra:\n  launcher: ${my_launcher}\n  sweeper:\n    params: {lr: '0.1,0.01'}\n",
            "launcher:",
        ),
    ],
)
def test_an_interpolated_sweeper_or_launcher_node_is_refused(
    tmp_path, capsys, node, needle
) -> None:
    text = node + "sweep: {lr: '1,2,3'}\ntrainer: {max_epochs: 10}\n" + BASIC.split("lr: 0.01\n")[1]
    refused(tmp_path, capsys, text, "budget-gate does not resolve", needle)


def test_an_interpolated_launcher_setting_is_refused(tmp_path, capsys) -> None:
    text = RAY.format(remote="").replace("num_gpus: 1", "num_gpus: ${gpus}") + "gpus: 8\n"
    refused(tmp_path, capsys, text, "an interpolation budget-gate does not resolve", "num_gpus")


def test_interpolations_in_text_settings_and_escaped_ones_pass(tmp_path, capsys) -> None:
    """Submitit's own default ``submitit_folder: ${hydra.sweep.dir}/.submitit/%j`` sets no count."""
    launcher = (
        "    submitit_folder: ${hydra.sweep.dir}/.submitit/%j\n"
        "    name: ${hydra.job.name}\n"
        "    setup: ['export PATH=\\${HOME}/bin:$PATH']\n"
    )
    code, result = check(tmp_path, capsys, SUBMITIT.format(launcher=launcher))
    assert code != INVALID, result["errors"]


def test_an_interpolated_ray_env_var_is_left_to_the_environments_reader(tmp_path, capsys) -> None:
    """``runtime_env.env_vars`` are read as the job's environment: its epochs count there."""
    remote = "        runtime_env: {env_vars: {WANDB_PROJECT: '${project}'}}\n"
    code, result = check(tmp_path, capsys, RAY.format(remote=remote) + "project: p\n")
    assert code != INVALID, result["errors"]


# --- F3: a sweeper or launcher named by its class ----------------------------------------------


def test_the_classes_read_are_hydras_own() -> None:
    from hydra._internal.core_plugins.basic_launcher import BasicLauncherConf
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeperConf
    from hydra_plugins.hydra_submitit_launcher.config import LocalQueueConf, SlurmQueueConf

    from gate.formats.hydra_unread import LAUNCHER_CLASSES, SWEEPER_CLASSES

    assert SWEEPER_CLASSES["basic"] == BasicSweeperConf._target_
    assert LAUNCHER_CLASSES["basic"] == BasicLauncherConf._target_
    assert LAUNCHER_CLASSES["submitit_slurm"] == SlurmQueueConf._target_
    assert LAUNCHER_CLASSES["submitit_local"] == LocalQueueConf._target_


@pytest.mark.parametrize(
    ("part", "target"),
    [
        ("sweeper", "hydra_plugins.loop.loopsweep.LoopSweeper"),
        ("sweeper", "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper"),
        ("launcher", "mypkg.launch.GpuLauncher"),
        ("launcher", "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"),
    ],
)
def test_a_class_other_than_the_chosen_plugins_is_refused(tmp_path, capsys, part, target) -> None:
    """``hydra.sweeper._target_`` ran a 5-job sweeper priced as the basic grid of 2."""
    text = BASIC.replace("hydra:\n", f"hydra:\n  {part}:\n    _target_: {target}\n", 1)
    if part == "sweeper":
        text = text.replace("  sweeper:\n    params:", "    params:", 1)
    refused(tmp_path, capsys, text, f"hydra.{part}._target_ is {target}", "_target_")


def test_the_chosen_plugins_own_class_passes(tmp_path, capsys) -> None:
    target = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
    text = SUBMITIT.format(launcher=f"    _target_: {target}\n")
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]


# --- F8: Ray's accelerator pin and its reruns -------------------------------------------------


@pytest.mark.parametrize(
    ("remote", "needle"),
    [
        ("        accelerator_type: H100\n", "accelerator_type"),
        ("        resources: {'accelerator_type:H100': 0.001}\n", "resources"),
    ],
)
def test_a_ray_job_pinned_to_another_accelerator_is_refused(
    tmp_path, capsys, remote, needle
) -> None:
    """``accelerator_type: H100`` ran on H100 nodes priced as the declared L4."""
    text = RAY.format(remote=remote)
    refused(tmp_path, capsys, text, ": H100, but the accelerator priced is L4", needle)


def test_a_ray_pin_to_the_accelerator_priced_passes(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, RAY.format(remote="        accelerator_type: L4\n"))
    assert code != INVALID, result["errors"]
    assert field(result, "resources.accelerator")["value"] == "L4"


@pytest.mark.parametrize(
    ("remote", "said"),
    [
        ("        max_retries: 1000\n", "max_retries is 1000"),
        ("        max_retries: -1\n", "for ever"),
        ("        retry_exceptions: true\n", "retry_exceptions reruns a job that raises"),
        ("        max_retries: 2\n        retry_exceptions: [ValueError]\n", "up to 2 times"),
    ],
)
def test_ray_reruns_past_its_default_are_refused(tmp_path, capsys, remote, said) -> None:
    text = RAY.format(remote=remote)
    needle = remote.strip().splitlines()[-1].split(":")[0]
    refused(tmp_path, capsys, text, said, needle)


@pytest.mark.parametrize(
    "remote",
    ["        max_retries: 3\n", "        max_retries: 0\n        retry_exceptions: true\n"],
)
def test_ray_reruns_within_its_default_pass(tmp_path, capsys, remote) -> None:
    code, result = check(tmp_path, capsys, RAY.format(remote=remote))
    assert code != INVALID, result["errors"]


# --- F9: a Slurm node feature or partition naming a GPU model --------------------------------


@pytest.mark.parametrize(
    ("launcher", "needle"),
    [
        ("    constraint: h100\n", "constraint"),
        ("    partition: gpu-h100\n", "partition"),
        ("    additional_parameters: {constraint: 'a100|h100'}\n", "additional_parameters"),
    ],
)
def test_a_slurm_feature_naming_another_model_is_refused(
    tmp_path, capsys, launcher, needle
) -> None:
    text = SUBMITIT.format(launcher=launcher)
    refused(tmp_path, capsys, text, "but the accelerator priced is L4", needle)


@pytest.mark.parametrize("launcher", ["    partition: gpu\n", "    constraint: l4&ib\n"])
def test_a_slurm_feature_naming_no_other_model_passes(tmp_path, capsys, launcher) -> None:
    code, result = check(tmp_path, capsys, SUBMITIT.format(launcher=launcher))
    assert code != INVALID, result["errors"]
    assert any("picks the nodes" in note for note in result["imported"]["notes"])


@pytest.mark.parametrize("steps", ["max_steps: 1000000", "max_steps: 1e6"])
def test_a_step_budget_a_config_group_sets_is_refused(tmp_path, capsys, steps) -> None:
    """``- trainer: long`` where ``trainer/long.yaml`` sets ``max_steps``: Hydra composes it."""
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "long.yaml").write_text(f"max_epochs: 10\n{steps}\n")
    text = "defaults:\n  - trainer: long\n  - _self_\n" + BASIC
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID, result
    error = only_error(result)
    assert "trainer: long in the defaults list sets trainer.max_steps" in error["message"], error
    assert error["file"].endswith("long.yaml") and error["line"] == 2


def test_a_config_group_whose_step_budget_is_off_passes(tmp_path, capsys) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "long.yaml").write_text("max_epochs: 10\nmax_steps: -1\n")
    code, result = check(tmp_path, capsys, "defaults:\n  - trainer: long\n  - _self_\n" + BASIC)
    assert code != INVALID, result["errors"]


@pytest.mark.parametrize("key", ["task", "hydra"])
def test_overrides_written_where_hydra_keeps_the_command_lines_are_refused(
    tmp_path, capsys, key
) -> None:
    """Hydra appends the command line's overrides to ``hydra.overrides.task``, and the
    sweeper sweeps that list: written in the file, ``seed=range(0,5)`` and
    ``trainer.max_epochs=1000`` ran 10 jobs of 1,000 epochs where 2 of 10 were priced."""
    overrides = f"  overrides:\n    {key}: ['seed=range(0,5)', 'trainer.max_epochs=1000']\n"
    text = BASIC.replace("hydra:\n", "hydra:\n" + overrides, 1)
    refused(
        tmp_path,
        capsys,
        text,
        f"hydra.overrides.{key} holds overrides Hydra applies",
        f"    {key}:",
    )


def test_empty_overrides_lists_pass(tmp_path, capsys) -> None:
    text = BASIC.replace("hydra:\n", "hydra:\n  overrides: {task: [], hydra: []}\n", 1)
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]


LIGHTNING = """\
hydra:
  sweeper:
    params:
      lr: 0.1,0.01
trainer:
  _target_: {target}
  accelerator: gpu
{bound}lr: 0.01
x-budget-gate:
  accelerator: L4
  gpus_per_trial: 1
  epoch_minutes: 3
  max_epochs: 2
"""


@pytest.mark.parametrize(
    "target", ["lightning.pytorch.Trainer", "pytorch_lightning.Trainer", "lightning.Trainer"]
)
def test_a_lightning_trainer_with_no_bound_is_refused(tmp_path, capsys, target) -> None:
    """``instantiate(cfg.trainer)`` with no ``max_epochs`` is ``Trainer(max_epochs=None)``:
    1,000 epochs, where the declared 2 were priced (``max_epochs: null`` was refused)."""
    text = LIGHTNING.format(target=target, bound="")
    refused(tmp_path, capsys, text, "is a Lightning Trainer with no max_epochs", "_target_")


@pytest.mark.parametrize(
    "bound", ["  max_epochs: 2\n", "  max_steps: -1\n  max_time: 00:01:00:00\n"]
)
def test_a_lightning_trainer_with_a_bound_passes(tmp_path, capsys, bound) -> None:
    text = LIGHTNING.format(target="lightning.pytorch.Trainer", bound=bound)
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
