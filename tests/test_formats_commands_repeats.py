"""What a command runs past the one run priced: a step budget, a repeater, torchrun's restarts.

Red-team foreign-formats report F1 (command side), F4 and F5: ``--max_steps 10000000``
beside ``--epochs 1`` (Hugging Face's ``max_steps`` overrides the epochs; Lightning's
``max_steps`` with no ``max_epochs`` is unbounded), Hydra's multirun and ``wandb agent`` in
the command (999 jobs priced as one), and ``torchrun --max-restarts 1000`` (the training
rerun after a failure, under one trial) each passed ``check``; each is refused (exit 3) in a
SkyPilot task, a W&B ``command`` and a Katib trial's command.
"""

from __future__ import annotations

import json

import pytest

from gate.errors import InputError
from gate.formats.skypilot import task_epochs
from tests.test_formats_epochs import INVALID, SKYPILOT, check, katib, only_error, wandb


def _sky(tmp_path, capsys, run: str, envs: str = "", setup: str | None = None):
    text = SKYPILOT.format(declared="  X_BUDGET_GATE_MAX_EPOCHS: 10\n" + envs, run=json.dumps(run))
    if setup is not None:
        text += f"setup: {json.dumps(setup)}\n"
    return check(tmp_path, capsys, text, "task.yaml")


def _katib(tmp_path, capsys, argv: list[str], env: str = ""):
    text = katib('{list: ["10"]}', command=json.dumps(argv))
    if env:
        text = text.replace(
            "                command:", f"                env: {env}\n                command:"
        )
    return check(tmp_path, capsys, text, "exp.yaml")


def _wandb(tmp_path, capsys, argv: list[str]):
    return check(tmp_path, capsys, wandb("{values: [10]}") + f"command: {json.dumps(argv)}\n")


STEPS = [
    "python train.py --epochs 10 --max_steps 10000000",
    "python train.py --epochs 10 --max-steps=10000000",
    "accelerate launch train.py --num_train_epochs 10 --max_train_steps 9999",
    "python train.py --epochs 10 --num_train_steps 500",
    "python train.py --epochs 10 --total_steps 500",
    "python train.py --epochs 10 --max_st 500",  # argparse's unique prefix
    "python train.py trainer.max_epochs=10 trainer.max_steps=1e7",
    "MAX_STEPS=10000000 python train.py --epochs 10",
    "python train.py --epochs 10 --max_steps $STEPS",  # not a number in the file
    "python train.py --epochs 10 --max_iters 600000",
    "bash -c 'python train.py --epochs 10 --max_steps 9'",
    "fairseq-train data-bin --max-epoch 10 --max-update 300000",  # fairseq stops at either
    "python lerobot/scripts/train.py --epochs 10 --steps=100000",  # LeRobot's own name
    "lerobot-train --epochs 10 --offline.steps 100000",
]
STEPS_OFF = "python train.py --epochs 10 --max_steps -1 --save_steps 500 --warmup_steps 100 --gradient_accumulation_steps 4 --steps_per_epoch 9"  # noqa: E501


@pytest.mark.parametrize("run", STEPS)
def test_a_step_budget_in_a_skypilot_run_is_refused(tmp_path, capsys, run) -> None:
    code, result = _sky(tmp_path, capsys, run)
    assert code == INVALID
    error = only_error(result)
    assert "bounds the training by steps" in error["message"]
    assert "the spec prices epochs, not steps" in error["message"]
    assert "\n" not in error["message"] and "set it to -1" in error["hint"]


def test_a_step_budget_in_setup_or_the_envs_is_refused(tmp_path, capsys) -> None:
    code, result = _sky(tmp_path, capsys, "python train.py --epochs 10", setup=STEPS[0])
    assert code == INVALID and "in setup bounds the training by steps" in str(result["errors"])
    for envs in ("  MAX_STEPS: 10000000\n", "  PL_TRAINER_MAX_STEPS: '1e7'\n"):
        code, result = _sky(tmp_path, capsys, "python train.py --epochs 10", envs=envs)
        assert code == INVALID
        assert "bounds the training by steps" in only_error(result)["message"]


def test_a_step_budget_that_is_off_and_the_schedules_steps_pass(tmp_path, capsys) -> None:
    code, result = _sky(tmp_path, capsys, STEPS_OFF, envs="  MAX_STEPS: -1\n")
    assert code != INVALID, result["errors"]


def test_fairseqs_schedule_and_accumulation_updates_pass(tmp_path, capsys) -> None:
    """RoBERTa's GLUE recipe: ``--total-num-update`` sizes the LR decay, not the training."""
    run = "fairseq-train RTE-bin --max-epoch 10 --total-num-update 2036 --warmup-updates 122 --update-freq 4"  # noqa: E501
    code, result = _sky(tmp_path, capsys, run)
    assert code != INVALID, result["errors"]


def test_another_programs_steps_are_no_budget(tmp_path, capsys) -> None:
    """``--steps`` is LeRobot's budget; elsewhere it is a sampler's or a solver's count."""
    code, result = _sky(tmp_path, capsys, "python train.py --epochs 10 --steps 50")
    assert code != INVALID, result["errors"]


def test_a_step_budget_in_a_wandb_or_katib_command_is_refused(tmp_path, capsys) -> None:
    argv = ["python3", "train.py", "--epochs=10", "--max_steps=10000000"]
    for code, result in (_katib(tmp_path, capsys, argv), _wandb(tmp_path, capsys, argv)):
        assert code == INVALID
        assert "--max_steps=10000000 in" in only_error(result)["message"]
    env = '[{name: MAX_STEPS, value: "10000000"}]'
    code, result = _katib(tmp_path, capsys, ["python3", "train.py", "--epochs=10"], env=env)
    assert code == INVALID and "MAX_STEPS bounds the training by steps" in str(result["errors"])
    off = ["python3", "train.py", "--epochs=10", "--max_steps=-1", "--logging_steps=50"]
    for code, result in (_katib(tmp_path, capsys, off), _wandb(tmp_path, capsys, off)):
        assert code != INVALID, result["errors"]


REPEATERS = [
    "python train.py -m seed='range(1,1000)' --epochs 10",
    "python train.py --multirun seed=1,2 --epochs 10",
    "python train.py --epochs 10 -m",  # the config's own sweeper params
    "python -m train -cn big -m seed=1,2 --epochs 10",
    "python train.py hydra.mode=MULTIRUN seed=1,2 --epochs 10",
    "wandb agent --count 500 ent/proj/abc123",
    "python -m wandb agent --count 500 ent/proj/abc123",
    "wandb agent ent/proj/abc123",
    "optuna study optimize train.py objective --n-trials 500",
    "sh -c 'python train.py -m seed=1,2 --epochs 10'",
]


@pytest.mark.parametrize("run", REPEATERS)
def test_a_command_that_repeats_the_training_itself_is_refused(tmp_path, capsys, run) -> None:
    code, result = _sky(tmp_path, capsys, run)
    assert code == INVALID
    assert "a number of trainings the file does not price" in only_error(result)["message"]
    with pytest.raises(InputError):  # the SkyPilot policy reads a task the same way
        task_epochs({"run": run}, lambda *path: None)


def test_a_repeater_in_a_katib_or_wandb_command_is_refused(tmp_path, capsys) -> None:
    hydra = ["python3", "train.py", "--epochs=10", "-m", "seed=range(1,1000)"]
    code, result = _katib(tmp_path, capsys, hydra)
    assert code == INVALID and "Hydra's -m" in only_error(result)["message"]
    multirun = ["python", "train.py", "--multirun", "seed=range(1,1000)", "${args_no_hyphens}"]
    code, result = _wandb(tmp_path, capsys, multirun)
    assert code == INVALID and "Hydra's --multirun" in only_error(result)["message"]


@pytest.mark.parametrize(
    "run",
    [
        "python -m train --epochs 10",
        "python -u -m torch.distributed.run --nproc_per_node 8 train.py --epochs 10",
        "torchrun --nproc_per_node 8 -m train --epochs 10",
        "python train.py -m resnet50 --epochs 10",  # an option's value: argparse's -m
        "git commit -m 'lr=0.1' && python train.py --epochs 10",
        "wandb login && python train.py --epochs 10",
        "torchrun --max-restarts 0 train.py --epochs 10",
    ],
)
def test_a_dash_m_that_is_no_multirun_passes(tmp_path, capsys, run) -> None:
    code, result = _sky(tmp_path, capsys, run)
    assert code != INVALID, result["errors"]


RESTARTS = [
    "torchrun --nproc_per_node 1 --max-restarts 1000 train.py --epochs 10",
    "torchrun --max_restarts=3 train.py --epochs 10",
    "python -m torch.distributed.run --max-restarts 2 train.py --epochs 10",
    "accelerate launch --max_restarts 5 train.py --epochs 10",
    "PET_MAX_RESTARTS=9 torchrun train.py --epochs 10",
    "torchrun --max-restarts $N train.py --epochs 10",
]


@pytest.mark.parametrize("run", RESTARTS)
def test_torchrun_restarts_are_refused_where_no_retries_are_priced(tmp_path, capsys, run) -> None:
    code, result = _sky(tmp_path, capsys, run)
    assert code == INVALID
    assert "reruns the whole training after a failure" in only_error(result)["message"]


def test_torchrun_restarts_in_envs_and_a_katib_container_are_refused(tmp_path, capsys) -> None:
    code, result = _sky(
        tmp_path, capsys, "torchrun train.py --epochs 10", "  PET_MAX_RESTARTS: 4\n"
    )
    assert code == INVALID and "PET_MAX_RESTARTS" in only_error(result)["message"]
    argv = ["torchrun", "--max-restarts=100", "train.py", "--epochs=10"]
    code, result = _katib(tmp_path, capsys, argv)
    assert code == INVALID and "--max-restarts=100" in only_error(result)["message"]
    env = '[{name: PET_MAX_RESTARTS, value: "7"}]'
    code, result = _katib(tmp_path, capsys, ["torchrun", "train.py", "--epochs=10"], env=env)
    assert code == INVALID and "PET_MAX_RESTARTS" in only_error(result)["message"]


def test_the_policy_may_price_restarts_up_to_its_retries() -> None:
    """``task_epochs(restarts=N)``: what the policy passes for ``reliability.max_retries``."""
    run = "torchrun --max-restarts 3 train.py --epochs 10"
    assert task_epochs({"run": run}, lambda *path: None, restarts=3) == (
        10,
        "--epochs 10 in run",
        ("run",),
    )
    with pytest.raises(InputError, match="more than the 2 retries priced"):
        task_epochs({"run": run}, lambda *path: None, restarts=2)
