"""Words of a training command that the shell makes from what the file does not show.

SkyPilot runs a task's ``run`` with ``bash -i``: ``python train.py --epochs 2 $A`` after
``A='--epochs 1000'`` trains 1,000 epochs, priced as 2 before these were refused. Each
case goes through ``budget-gate check`` of a SkyPilot task declaring 2 epochs; the Kueue
admission reads a container's argv with the same reader (quoted: no shell expands it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.admission.commands import command_refusal, container_runs
from gate.spec.experiment import Experiment
from tests.test_formats_epochs import INVALID, check, only_error

TASK = """\
name: train
resources: {{accelerators: "A100-80GB:1"}}
envs:
  X_BUDGET_GATE_EPOCH_MINUTES: 1
  X_BUDGET_GATE_MAX_EPOCHS: 2
  EXTRA_ARGS: "--lr 0.1"
  LATER: null
run: {run}
"""


def _sky(tmp_path: Path, capsys: Any, script: str) -> tuple[int, Any]:
    return check(tmp_path, capsys, TASK.format(run=json.dumps(script)), "task.yaml")


# (run, the word refused, what the message says of it)
HIDDEN = [
    ("A='--epochs 1000'\npython train.py --epochs 2 $A", "$A", "the script sets A to"),
    ("A=--lr\nexport A='--max_steps 1000'\npython train.py --epochs 2 $A", "$A", "step budget"),
    ("A=$(cat args.txt)\npython train.py --epochs 2 $A", "$A", "other than to a plain text"),
    ("python train.py --epochs 2 $A\nA=--bf16", "$A", "other than to a plain text"),
    ("A=--bf16 python prep.py\npython train.py --epochs 2 $A", "$A", "other than to a plain"),
    ("A=--bf16\nread A\npython train.py --epochs 2 $A", "$A", "other than to a plain text"),
    ("python train.py --epochs 2 x$(echo ' --epochs 1000')", "x$(echo", "command's output"),
    ("python train.py --epochs 2 $EXTRA", "$EXTRA", "whose value is not in the file"),
    ('python train.py --epochs 2 "${EXTRA}"', "${EXTRA}", "whose value is not in the file"),
    ("python train.py --epochs 2 $LATER", "$LATER", "whose value is not in the file"),
    ("python train.py --epochs 2 ${EXTRA:-}", "${EXTRA:-}", "whose value is not in the file"),
    ('python train.py --epochs 2 "${EXTRA}0"', "${EXTRA}0", "whose value is not in the file"),
    ("python train.py --epochs 2 x${EXTRA}", "x${EXTRA}", "whose value is not in the file"),
    ("python train.py --epochs 2 ${!EXTRA_ARGS}", "${!EXTRA_ARGS}", "another variable's value"),
    ("python train.py --epochs 2 $(cat args.txt)", "$(cat args.txt)", "command's output"),
    ("python train.py --epochs 2 `cat args.txt`", "`cat args.txt`", "command's output"),
    ('set -- --epochs 1000\npython train.py --epochs 2 "$@"', "$@", "the script's arguments"),
    ("python train.py --epochs 2 $*", "$*", "the script's arguments"),
    ("python train.py --epochs 2 {--epochs,1000}", "{--epochs,1000}", "brace expansion"),
    ("python train.py --epochs 2 --epochs{,=1000}", "--epochs{,=1000}", "brace expansion"),
    ("python train.py --epochs 2 --lr {0.1,--epochs=1000}", "{0.1,--epochs=1000}", "brace"),
    ("python train.py --epochs 2 *", "*", "names of files"),
    ("python train.py --epochs 2 --ep*", "--ep*", "names of files"),
    ("python train.py --epochs 2 --${FLAG}=1000", "--${FLAG}=1000", "a variable names"),
    ("torchrun --nproc_per_node 8 train.py --epochs 2 $EXTRA", "$EXTRA", "not in the file"),
]


@pytest.mark.parametrize(("script", "word", "said"), HIDDEN)
def test_a_word_the_shell_makes_from_outside_the_file_is_refused(
    tmp_path, capsys, script, word, said
) -> None:
    code, result = _sky(tmp_path, capsys, script)
    assert code == INVALID, result
    message = only_error(result)["message"]
    assert message.startswith(f"{word}"), message
    assert said in message


def test_an_alias_that_trains_is_refused(tmp_path, capsys) -> None:
    """SkyPilot's ``bash -i`` expands aliases: ``t`` trains 1,000 epochs, the file shows 2."""
    script = "alias t='python train.py --epochs 1000'\nt\npython train.py --epochs 2"
    code, result = _sky(tmp_path, capsys, script)
    assert code == INVALID, result
    assert "`alias`" in only_error(result)["message"]


# What the shell takes whole, from the file, or from SkyPilot itself: read as before.
SHOWN = [
    "python train.py --epochs 2 '$EXTRA'",
    'python $HOME/train.py --epochs 2 "x${EXTRA}" ${EXTRA_ARGS:-}',
    "python train.py --epochs 2 '{--epochs,1000}' '*'",
    "python train.py --epochs 2 $EXTRA_ARGS",
    "python train.py --epochs 2 --data $DATA --out $(pwd)/o --name run-$(date +%s)",
    "python train.py --epochs 2 --files data/*.csv",
    "torchrun --nnodes $SKYPILOT_NUM_NODES --node_rank=$SKYPILOT_NODE_RANK "
    '--master_addr=$(echo "$SKYPILOT_NODE_IPS" | head -n1) train.py --epochs 2',
    'MASTER=`echo "$SKYPILOT_NODE_IPS" | head -n1`\ntorchrun --master_addr $MASTER train.py',
    "alias python=python3\nalias ll='ls -l'\npython train.py --epochs 2",
    'eval "$(conda shell.bash hook)"\nconda activate env\npython train.py --epochs 2',
    "pip install -r requirements.txt $PIP_FLAGS\npython train.py --epochs 2",
    "python train.py --epochs 2 --step $((1 + 1))",
    'python train.py --epochs 2 --name "run-$(date +%s)"',
    "python3 $(pwd)/examples/prep.py\npython train.py --epochs 2",
    # the script's own plain texts, read for flags as envs are (FastChat's, a flag or none)
    "if [ -n x ]; then\n  S=train_mem.py\nelse\n  S=train.py\nfi\ntorchrun $S --epochs 2",
    'B=""\nif [ -n x ]; then\n  B="--bf16 --lr 0.1"\nfi\npython train.py --epochs 2 $B',
    # what SkyPilot gives (verl's and Nebius's tasks), and a Hydra override's value
    'HEAD=$(echo "$SKYPILOT_NODE_IPS" | head -n1)\nN=$SKYPILOT_NUM_GPUS_PER_NODE\n'
    "ib_send_bw $HEAD -n 1000\npython train.py --epochs 2 trainer.n_gpus_per_node=$N",
]


@pytest.mark.parametrize("script", SHOWN)
def test_words_the_file_shows_pass(tmp_path, capsys, script) -> None:
    code, result = _sky(tmp_path, capsys, script)
    assert code != INVALID, result["errors"]


def _refusal(container: dict[str, Any]) -> str | None:
    spec = Experiment.model_validate(
        {
            "apiVersion": "budget-gate/v1",
            "kind": "Experiment",
            "metadata": {"name": "x", "team": "t", "owner": "o"},
            "resources": {"accelerator": "A100", "gpus_per_trial": 1},
            "workload": {"max_epochs": 10, "epoch_minutes": 1},
        }
    )
    runs = ((f"main-{i}", run) for i, run in enumerate(container_runs({"containers": [container]})))
    return command_refusal("w", runs, spec, "x.yaml", 0)


def test_a_containers_argv_is_its_text_and_its_shell_script_is_read() -> None:
    """An argv ``$EXTRA`` reaches the program as it is (no shell); inside ``sh -c`` it is
    the shell's to split, from the image's environment the Workload does not show."""
    argv = {"name": "c", "command": ["python", "train.py", "--epochs", "2", "$EXTRA", "*"]}
    assert _refusal(argv) is None
    shell = {"name": "c", "command": ["sh", "-c", "python train.py --epochs 2 $EXTRA"]}
    refusal = _refusal(shell)
    assert refusal is not None and "$EXTRA in run: " in refusal
    held = {**shell, "env": [{"name": "EXTRA", "value": "--lr 0.1"}]}
    assert _refusal(held) is None
