"""Which steps bound a training, and which are a schedule's, a cadence's or an evaluation's.

A real-config sweep found the step-budget rule refusing what trains nothing past the epochs:
Lightning's checkpoint cadence (``every_n_train_steps``), a diffusion model's noise steps
(``ddpm_num_steps``, ``noise_scheduler.num_train_timesteps``), an evaluation rollout's length
(``env_runner.max_steps``), an optimizer's or a scikit-learn model's own ``max_iter``, and a
vLLM benchmark's ``--num-iters``. Each now passes; the budgets beside them stay refused, and
two it missed (``--max_number_of_steps``, yacs' ``SOLVER.MAX_ITER 90000``) are refused.
"""

from __future__ import annotations

import json

import pytest

from gate.formats.command_steps import names_steps, step_budgets
from gate.formats.command_words import commands_of
from tests.test_formats_epochs import INVALID, SKYPILOT, check, only_error


@pytest.mark.parametrize(
    "name",
    ["max_steps", "MAX_STEPS", "trainer.max_steps", "max_train_steps", "num_train_steps",
     "total_steps", "max_iters", "SOLVER.MAX_ITER", "max_number_of_steps", "maxSteps"],
)  # fmt: skip
def test_a_training_length_in_steps_is_named_a_budget(name) -> None:
    assert names_steps(name)


@pytest.mark.parametrize(
    "name",
    ["every_n_train_steps", "callbacks.model_checkpoint.every_n_train_steps", "save_steps",
     "logging_steps", "warmup_steps", "eval_steps", "ddpm_num_steps",
     "noise_scheduler.num_train_timesteps", "diffusion.num_train_timesteps",
     "task.env_runner.max_steps", "eval.max_steps", "lr_scheduler.total_steps",
     "optimizer.max_iter", "lr_finder.num_training_steps", "gradient_accumulation_steps"],
)  # fmt: skip
def test_a_schedule_a_cadence_or_an_evaluation_is_no_budget(name) -> None:
    assert not names_steps(name)


def test_a_serving_benchmark_sets_no_budget() -> None:
    [command] = commands_of([("vllm bench latency --model m --num-iters 100", ("run",))])
    assert step_budgets(command) == []
    [command] = commands_of([("python train_net.py SOLVER.MAX_ITER 90000", ("run",))])
    assert [shown for shown, _ in step_budgets(command)] == ["SOLVER.MAX_ITER 90000"]


def _sky(tmp_path, capsys, run: str):
    text = SKYPILOT.format(declared="  X_BUDGET_GATE_MAX_EPOCHS: 10\n", run=json.dumps(run))
    return check(tmp_path, capsys, text, "task.yaml")


@pytest.mark.parametrize(
    "run",
    [
        "python train_net.py --config-file c.yaml SOLVER.MAX_ITER 90000",
        "python train_image_classifier.py --max_number_of_steps 1000",
    ],
)
def test_step_budgets_the_rule_missed_are_refused(tmp_path, capsys, run) -> None:
    code, result = _sky(tmp_path, capsys, run)
    assert code == INVALID
    assert "bounds the training by steps" in only_error(result)["message"]


@pytest.mark.parametrize(
    "run",
    [
        "python train.py --save_steps 500 --logging_steps 10 trainer.every_n_train_steps=100",
        "accelerate launch train_unconditional.py --ddpm_num_steps 1000",
        "vllm bench latency --model m --num-iters 100",
    ],
)
def test_steps_that_train_nothing_more_pass(tmp_path, capsys, run) -> None:
    code, result = _sky(tmp_path, capsys, run)
    assert code != INVALID, result["errors"]


HYDRA = """\
hydra:
  sweeper:
    params:
      lr: 0.1,0.01
trainer:
  max_epochs: 10
{extra}x-budget-gate:
  accelerator: L4
  gpus_per_trial: 1
  epoch_minutes: 3
"""


@pytest.mark.parametrize(
    "extra",
    [
        "  callbacks: {model_checkpoint: {every_n_train_steps: 1000}}\n",
        "task:\n  env_runner: {max_steps: 300}\n",
        "eval:\n  max_steps: 300\n",
        "cluster:\n  _target_: sklearn.cluster.KMeans\n  max_iter: 300\n",
        "optimizer: {_target_: torch.optim.LBFGS, max_iter: 20}\n",
        "noise_scheduler: {num_train_timesteps: 1000}\n",
    ],
)
def test_a_hydra_config_whose_steps_train_nothing_more_passes(tmp_path, capsys, extra) -> None:
    code, result = check(tmp_path, capsys, HYDRA.format(extra=extra), "config.yaml")
    assert code != INVALID, result["errors"]
    refused = HYDRA.format(extra=extra + "trainer_args: {max_steps: 100000}\n")
    assert check(tmp_path, capsys, refused, "config.yaml")[0] == INVALID


WANDB = """\
method: grid
parameters:
  lr: {{values: [0.1, 0.01]}}
  epochs: {{value: 1}}
{extra}# x-budget-gate: {{accelerator: A100-80GB, gpus_per_trial: 1, epoch_minutes: 2}}
"""


@pytest.mark.parametrize(
    "extra",
    [
        "  max_steps: {value: 10000000}\n",
        "  max_steps: {values: [-1, 5000]}\n",
        "  trainer: {value: {max_epochs: 1, max_steps: 10000000}}\n",
    ],
)
def test_a_wandb_parameter_that_sets_a_step_budget_is_refused(tmp_path, capsys, extra) -> None:
    """W&B hands it to the program as --max_steps=...: priced 1 epoch, ran 10 M steps."""
    code, result = check(tmp_path, capsys, WANDB.format(extra=extra), "sweep.yaml")
    assert code == INVALID
    assert "bounds the training by steps" in only_error(result)["message"]


def test_a_wandb_step_parameter_that_is_off_passes(tmp_path, capsys) -> None:
    extra = "  max_steps: {value: -1}\n  save_steps: {value: 500}\n"
    code, result = check(tmp_path, capsys, WANDB.format(extra=extra), "sweep.yaml")
    assert code != INVALID, result["errors"]


@pytest.mark.parametrize(
    ("run", "refused"),
    [
        ("python train.py --epochs 10 --run-name sweep.epochs --lr 0.1", False),
        ("python train.py --epochs 10 --resume model.epoch --lr 0.1", False),
        ("""python train.py --epochs 10 --log-config '{"epochs": "all"}'""", False),
        ("python train.py --epochs 10 --notes {epoch:3}", False),
        ("python train.py --epochs 10 --opts SOLVER.MAX_EPOCHS 1000", True),
        ("""python main.py fit --trainer '{"max_steps": 10000000}'""", True),
        ("python train.py --multi seed='range(1,1000)'", True),
        ("python train.py --mult seed='range(1,1000)'", True),
    ],
)
def test_second_read_cases(tmp_path, capsys, run, refused) -> None:
    """A dotted value of the option before it is no yacs pair, a bare ``epoch`` in an object
    is a point; an object's step budget and Hydra's abbreviated --multirun are refused."""
    code, result = _sky(tmp_path, capsys, run)
    assert (code == INVALID) is refused, result["errors"]


def test_a_wrapper_missing_its_value_is_read_not_crashed_on() -> None:
    """``exec -a`` raised IndexError in the reader (the policy surfaced it raw)."""
    from gate.formats.command_repeaters import refuse_program_repeats
    from gate.formats.shell_programs import program

    assert program(["exec", "-a"], 1) is None
    refuse_program_repeats([("exec -a", ("run",))], "run", lambda path: None)
