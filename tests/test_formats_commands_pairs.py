"""Epochs handed without a flag: a yacs pair, a JSON or Jsonnet override (red team F10).

Detectron2's ``default_argument_parser`` (and the trainers that copy it) hands the words
after its flags to yacs' ``cfg.merge_from_list``, so ``SOLVER.MAX_EPOCHS 1000`` sets 1,000
epochs; AllenNLP's ``-o`` merges a Jsonnet object over the config. Both passed beside a
declared 10 epochs, priced at 10. Each is read as the epochs it hands.
"""

from __future__ import annotations

import json

import pytest

from gate.formats.command_lines import commands_of, epoch_flags
from tests.test_formats_epochs import INVALID, SKYPILOT, check, only_error

RUNS_1000 = [
    "python train_net.py --config-file c.yaml SOLVER.MAX_EPOCHS 1000",
    "python tools/train.py --cfg c.yaml TRAIN.EPOCHS 1000 TRAIN.LR 0.1",
    "python train.py opts train.num_epochs 1000",
    """allennlp train cfg.jsonnet -s out -o '{"trainer": {"num_epochs": 1000}}'""",
    """allennlp train cfg.jsonnet -s out -o {"trainer":{"num_epochs":1000}}""",
    "allennlp train cfg.jsonnet -s out -o '{trainer: {num_epochs: 10, patience: 3}, "
    "model: {max_epochs: 1000}}'",
]


def _sky(tmp_path, capsys, run: str):
    text = SKYPILOT.format(declared="  X_BUDGET_GATE_MAX_EPOCHS: 10\n", run=json.dumps(run))
    return check(tmp_path, capsys, text, "task.yaml")


@pytest.mark.parametrize("run", RUNS_1000)
def test_epochs_handed_as_a_yacs_pair_or_an_override_object_are_read(tmp_path, capsys, run) -> None:
    code, result = _sky(tmp_path, capsys, run)
    assert code == INVALID
    assert "is 10, but the engine runs 1000" in only_error(result)["message"]


@pytest.mark.parametrize(
    "run",
    [
        "python train_net.py --config-file c.yaml MODEL.WEIGHTS w.pth SOLVER.BASE_LR 0.1",
        "python train_net.py SOLVER.WARMUP_EPOCHS 1000 SOLVER.MAX_EPOCHS 10",
        """allennlp train cfg.jsonnet -o '{"trainer": {"patience": 1000}}'""",
    ],
)
def test_pairs_that_name_no_length_of_training_leave_the_epochs_as_declared(
    tmp_path, capsys, run
) -> None:
    code, result = _sky(tmp_path, capsys, run)
    assert code != INVALID, result["errors"]


def test_the_pair_is_an_epochs_flag_with_the_next_word_as_its_value() -> None:
    [command] = commands_of([("python t.py SOLVER.MAX_EPOCHS 1000 --epochs 5", ("run",))])
    flags = {f.name: f.value for f in epoch_flags(command)}
    assert flags == {"SOLVER.MAX_EPOCHS": "1000", "epochs": "5"}
    [command] = commands_of([("python t.py SOLVER.MAX_EPOCHS", ("run",))])
    assert epoch_flags(command) == []  # no value: nothing handed


def test_a_count_in_each_epoch_or_a_point_of_the_schedule_is_no_epochs_flag() -> None:
    """``--steps_per_epoch 4000`` beside ``--epochs 3`` was priced as 4,000 epochs (and a
    declared 3 was refused); timm's ``--cooldown-epochs``, trained after the epochs, counts."""
    run = "python train.py --epochs 3 --steps_per_epoch 4000 --warmup-epochs 900 --start_epoch 5"
    [command] = commands_of([(run, ("run",))])
    assert {f.name: f.value for f in epoch_flags(command)} == {"epochs": "3"}
    [command] = commands_of([("python train.py --epochs 10 --cooldown-epochs 1000", ("run",))])
    assert {f.name: f.value for f in epoch_flags(command)}["cooldown_epochs"] == "1000"
