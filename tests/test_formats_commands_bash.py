"""A command line read as bash and argparse read it, not apart (red-team launch report, §4).

A word with a space is one argument unless a shell runs it (``--epochs ' 1000'`` hands
argparse ``' 1000'``, which ``int`` reads as 1000); a ``#`` that starts a word ends the
line; ``$'...'`` and ``$"..."`` are bash's quotes; a value a command substitution makes is
not in the file however it is spaced. Each spelling trains 1,000 epochs beside a declared
10, and is refused (exit 3) in a SkyPilot ``run``, a W&B ``command`` and a Katib command.
"""

from __future__ import annotations

import json

import pytest

from gate.formats.command_lines import commands_of, epoch_flags
from gate.formats.skypilot import task_epochs
from tests.test_formats_epochs import INVALID, SKYPILOT, check, katib, only_error, wandb

RUNS_1000 = [
    "python train.py --epochs ' 1000'",
    "python train.py --epochs '1000 '",
    "python train.py --epochs '\t1000'",
    "python train.py --epochs=' 1000'",
    "python train.py --epochs=1000 # --epochs=2",
    "python train.py $'--epochs=1000'",
    'python train.py $"--epochs=1000"',
    "python train.py --epochs=$'\\x31000'",
    "sh -c \"python train.py --epochs ' 1000'\"",
    "bash -c 'python train.py --epochs=1000 # --epochs=2'",
]
UNREAD = [
    'python train.py --epochs "$(echo 1000)"',
    "python train.py --epochs $(echo 1000)",
    "python train.py --epochs `echo 1000`",
    "python train.py --epochs '10 20'",
    'python train.py --epochs="$(echo 1000)"',
]


def _sky(tmp_path, capsys, run: str):
    text = SKYPILOT.format(declared="  X_BUDGET_GATE_MAX_EPOCHS: 10\n", run=json.dumps(run))
    return check(tmp_path, capsys, text, "task.yaml")


@pytest.mark.parametrize("run", RUNS_1000)
def test_a_skypilot_run_bash_hands_1000_epochs_is_refused(tmp_path, capsys, run) -> None:
    code, result = _sky(tmp_path, capsys, run)
    assert code == INVALID
    assert "is 10, but the engine runs 1000" in only_error(result)["message"]


@pytest.mark.parametrize("run", UNREAD)
def test_an_epochs_value_that_is_no_plain_number_is_refused_not_dropped(
    tmp_path, capsys, run
) -> None:
    code, result = _sky(tmp_path, capsys, run)
    assert code == INVALID
    assert "the epochs it trains are not in the file" in only_error(result)["message"]


def test_a_substitutions_hint_says_its_output_is_not_in_the_file() -> None:
    with pytest.raises(Exception) as raised:
        task_epochs({"run": 'python t.py --epochs "$(echo 1000)"'}, lambda *path: None)
    assert "a command's output is not in the file" in raised.value.problem.hint  # type: ignore[attr-defined]


@pytest.mark.parametrize("run", [*RUNS_1000[:4], RUNS_1000[5], RUNS_1000[6]])
def test_the_skypilot_policy_reads_the_same_epochs(run) -> None:
    """``task_epochs`` is what the SkyPilot admin policy reads a launched task with."""
    found = task_epochs({"run": run}, lambda *path: None)
    assert found is not None and found[0] == 1000


@pytest.mark.parametrize("value", [" 1000", "1000 ", "\t1000", "1000\n"])
def test_a_wandb_command_value_with_whitespace_is_the_number_python_reads(
    tmp_path, capsys, value
) -> None:
    command = json.dumps(["${env}", "python", "${program}", "--epochs", value])
    text = wandb("{values: [1]}") + f"command: {command}\n"
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    assert "but the engine runs 1000" in only_error(result)["message"]


@pytest.mark.parametrize("value", [" 1000", "1000 ", "\t1000"])
def test_a_katib_argument_with_whitespace_is_the_number_python_reads(
    tmp_path, capsys, value
) -> None:
    command = json.dumps(["python3", "train.py", "--epochs", value])
    code, result = check(tmp_path, capsys, katib('{list: ["1"]}', command=command), "exp.yaml")
    assert code == INVALID
    assert "but the engine runs 1000" in only_error(result)["message"]


@pytest.mark.parametrize("script", RUNS_1000[4:8])
def test_a_katib_and_a_wandb_shell_script_are_read_as_bash_reads_them(
    tmp_path, capsys, script
) -> None:
    command = json.dumps(["sh", "-c", script])
    code, result = check(tmp_path, capsys, katib('{list: ["1"]}', command=command), "exp.yaml")
    assert code == INVALID, result
    assert "but the engine runs 1000" in only_error(result)["message"]
    text = wandb("{values: [1]}") + f"command: {command}\n"
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID, result
    assert "but the engine runs 1000" in only_error(result)["message"]


def test_a_spaced_argument_of_a_program_stays_one_argument() -> None:
    """Not split off as a command of its own: its flag keeps its value."""
    commands = commands_of([("python train.py --epochs ' 1000' --notes 'a b'", ("run",))])
    assert [w for w, _ in commands[0]] == [
        "python",
        "train.py",
        "--epochs",
        " 1000",
        "--notes",
        "a b",
    ]
    (flag,) = epoch_flags(commands[0])
    assert flag.value == " 1000"


def test_only_a_shells_script_argument_is_split_off() -> None:
    argv = [("bash", ()), ("-c", ()), ("python t.py --epochs 5", ()), ("x", ())]
    assert [[w for w, _ in c] for c in commands_of(argv)] == [
        ["bash", "-c", "x"],
        ["python", "t.py", "--epochs", "5"],
    ]
    ssh = [("ssh -p 22 host python t.py --epochs 5", ())]
    assert [[w for w, _ in c] for c in commands_of(ssh)][1] == ["python", "t.py", "--epochs", "5"]


@pytest.mark.parametrize(
    "run",
    [
        "python train.py --epochs 10 # --epochs 1000",
        "python train.py --epochs 10 #--epochs 1000",
        "# python train.py --epochs 1000\npython train.py --epochs 10",
        "python train.py --run-name=exp#2 --epochs 10",  # a # inside a word is no comment
    ],
)
def test_a_comment_is_no_word(tmp_path, capsys, run) -> None:
    code, result = _sky(tmp_path, capsys, run)
    assert code != INVALID, result["errors"]
    found = task_epochs({"run": run}, lambda *path: None)
    assert found is not None and found[0] == 10


@pytest.mark.parametrize(
    "argv",
    [
        ["python3", "train.py", "--epochs 1000"],  # one word a shell it reaches may split
        ["tmux", "new", "-d", "python3 train.py --epochs 1000"],
        ["sbatch", "--wrap", "python3 train.py --epochs 1000"],
    ],
)
def test_a_spaced_argument_a_program_may_hand_a_shell_is_read_as_a_script_too(
    tmp_path, capsys, argv
) -> None:
    code, result = check(
        tmp_path, capsys, katib('{list: ["1"]}', command=json.dumps(argv)), "e.yaml"
    )
    assert code == INVALID
    assert "but the engine runs 1000" in only_error(result)["message"]
