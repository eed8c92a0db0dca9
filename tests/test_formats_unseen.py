"""What a job's script makes at run time, which budget-gate cannot read: refused at its line.

A script it writes and then runs, the epochs' variable set by a builtin (not a
``NAME=value`` word), commands run from Python code in the script, zsh's ``repeat`` and
``foreach``. Each passed before, priced at the declared epochs; each is checked to do
what it is said to do by running it in bash (or noting why not), and the ordinary scripts
beside them still pass.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.test_formats_epochs import (
    SKYPILOT,
    check,
    katib,
    only_error,
    wandb,
)

INVALID = 3


def _sky(tmp_path: Path, capsys: Any, script: str) -> tuple[int, Any]:
    declared = "  X_BUDGET_GATE_MAX_EPOCHS: 10\n"
    return check(
        tmp_path, capsys, SKYPILOT.format(declared=declared, run=json.dumps(script)), "task.yaml"
    )


# Each sets EPOCHS to 1000 in bash, with no `EPOCHS=1000` word for the reader.
SETS_EPOCHS = [
    "printf -v EPOCHS %d 1000",
    "read EPOCHS <<< 1000",
    "IFS=, read -r A EPOCHS <<< 1,1000",
    "mapfile -t EPOCHS <<< 1000",
    "EPOCHS=1; EPOCHS+=000",
    "EPOCHS[0]=1000",
    "(( EPOCHS = 1000 ))",
    "((EPOCHS=10**3))",
    "let EPOCHS*=1000 EPOCHS+=1000",
    ": ${EPOCHS:=1000}",
    "for EPOCHS in 1000; do :; done",
    "declare -n R=EPOCHS; R=1000",
]


@pytest.mark.parametrize("line", SETS_EPOCHS)
def test_epochs_a_builtin_sets_are_refused(tmp_path, capsys, line) -> None:
    script = f"{line}\nexport EPOCHS\npython train.py"
    if shutil.which("bash"):  # NOTE: what the line does, run by bash itself
        shown = f"unset EPOCHS\n{line}\necho $EPOCHS"
        out = subprocess.run(["bash", "-c", shown], capture_output=True, text=True, check=True)
        assert out.stdout.split()[-1] in ("1000", "2000"), out
    code, result = _sky(tmp_path, capsys, script)
    assert code == INVALID, result
    error = only_error(result)
    assert "sets EPOCHS, a variable named like the epochs" in error["message"]
    assert error["line"] == 7  # run:


# A script written by the run and run by it: the reader never sees its loop.
WRITTEN = [
    "echo 'for i in 1 2 3; do python train.py; done' > x.txt\nmv x.txt l.sh\nbash l.sh",
    "echo 'for i in 1 2 3; do python train.py; done' > x.txt\ncp x.txt bin/\nbash bin/x.txt",
    "echo 'for i in 1 2 3; do python train.py; done' > l.sh\nchmod +x l.sh\n./l.sh",
    "printf '%s\\n' 'for i in 1 2 3; do python train.py; done' >> l.sh\nsource l.sh",
    "echo 'for i in 1 2 3; do python train.py; done' | tee l.sh >/dev/null\n. ./l.sh",
]


@pytest.mark.parametrize("script", WRITTEN)
def test_a_script_the_run_writes_and_runs_is_refused(tmp_path, capsys, script) -> None:
    code, result = _sky(tmp_path, capsys, script)
    assert code == INVALID, result
    assert "a script it writes itself" in only_error(result)["message"]


PYTHON_RUNS = [
    "python -c \"from os import system; [system('python train.py') for _ in range(9)]\"",
    "python - <<EOF\nfrom os import system\nsystem('python train.py')\nEOF",
    "python -c \"import importlib; importlib.import_module('sub' + 'process')\"",
    "python - <<EOF\nimport subprocess\nfor i in range(100):\n"
    "    subprocess.run(['python', 'train.py'])\nEOF",
    "python3 -u - <<'PY'\nimport os\n[os.system('python train.py') for _ in range(9)]\nPY",
    "python -c \"import subprocess; subprocess.run(['python', 'train.py', '--epochs', '1000'])\"",
    'bash -c "python3 -c \'import runpy; [runpy.run_path(\\"train.py\\") for _ in range(9)]\'"',
]


@pytest.mark.parametrize("script", PYTHON_RUNS)
def test_python_code_in_the_script_that_runs_commands_is_refused(tmp_path, capsys, script) -> None:
    code, result = _sky(tmp_path, capsys, script)
    assert code == INVALID, result
    assert "Python code in run runs commands" in only_error(result)["message"]


@pytest.mark.parametrize(
    "script",
    [
        "perl -e 'system(\"python train.py\") for 1..9'",
        "ruby -e '9.times { system(\"python train.py\") }'",
        'node -e \'require("child_process").execSync("python train.py")\'',
        "source <(echo 'for i in 1 2 3; do python train.py; done')",
    ],
)
def test_other_code_that_runs_commands_is_refused(tmp_path, capsys, script) -> None:
    code, result = _sky(tmp_path, capsys, script)
    assert code == INVALID, result


ZSH = [
    "zsh -c 'repeat 100 python train.py'",
    "zsh -c 'repeat 3 do python train.py; done'",
    "zsh -c 'foreach i (1 2 3)\npython train.py\nend'",
]


@pytest.mark.parametrize("script", ZSH)
def test_zsh_repeats_are_refused(tmp_path, capsys, script) -> None:
    code, result = _sky(tmp_path, capsys, script)
    assert code == INVALID, result
    assert (
        "which may run it a number of times the file does not show" in only_error(result)["message"]
    )


ORDINARY = [
    "EPOCHS=10\nexport EPOCHS\npython train.py\necho trained $EPOCHS epochs",
    "read -r HOST < /etc/hostname\npython train.py --epochs 10",
    "printf -v STAMP '%(%s)T' -1\npython train.py --epochs 10 --tag $STAMP",
    "for SEED in 1; do echo $SEED; done\npython train.py",
    "cat > config.yaml <<EOF\nlr: 0.1\nEOF\npython train.py --config config.yaml",
    "python train.py > log.txt 2>&1\ncat log.txt",
    "python -c 'import torch; print([torch.cuda.get_device_name(i) for i in range(8)])'\n"
    "python train.py",
    "curl -fsSL -o data.tgz https://example.com/data.tgz\ntar xzf data.tgz\npython train.py",
    "ln -sf $(which python3) /usr/local/bin/python\npython train.py",
    "echo epochs\npython train.py",
    # a downloaded or copied script holds what a repository's file may: neither is read
    "wget -q https://repo.anaconda.com/miniconda/Miniconda3-latest-Linux-x86_64.sh\n"
    "bash Miniconda3-latest-Linux-x86_64.sh -b -p $HOME/miniconda\npython train.py",
    "curl -fsSL -o run_glue.py https://example.com/run_glue.py\n"
    "python run_glue.py --num_train_epochs 10",
    "cp scripts/train.sh run.sh\nbash run.sh",
    # a word that only holds an assignment's text, a loop's values, another path of one name
    'wget "https://example.com/ckpt?epochs=10" -O ckpt.pt\npython train.py',
    "python train.py --epochs 10 --run-name lr=0.1,epochs=10",
    "for stage in warmup epochs; do echo $stage; done\npython train.py",
    "echo x > /tmp/run.sh\nbash scripts/run.sh",
    # a script written from a here-document is read as the run is
    "cat > env.sh <<EOF\nexport NCCL_DEBUG=INFO\nEOF\nsource env.sh\npython train.py",
    "cat <<'EOF' > launch.sh\ntorchrun --nproc_per_node 8 train.py --epochs 10\nEOF\n"
    "bash launch.sh",
]


@pytest.mark.parametrize("script", ORDINARY)
def test_ordinary_scripts_beside_them_pass(tmp_path, capsys, script) -> None:
    """Each passes (before 8ee8c12 too); the reading of a written script finds its loops."""
    code, result = _sky(tmp_path, capsys, script)
    assert code != INVALID, result["errors"]


def test_the_same_checks_hold_for_katib_and_wandb_commands(tmp_path, capsys) -> None:
    argv = json.dumps(["sh", "-c", "printf -v EPOCHS %d 1000; export EPOCHS; python3 train.py"])
    code, result = check(tmp_path, capsys, katib('{list: ["1"]}', command=argv), "exp.yaml")
    assert code == INVALID
    assert "sets EPOCHS" in only_error(result)["message"]
    sweep = wandb("{values: [5, 10]}") + (
        "command: [bash, -c, 'echo \"for i in 1 2; do python t.py; done\" > l.sh; bash l.sh']\n"
    )
    code, result = check(tmp_path, capsys, sweep)
    assert code == INVALID
    assert "a script it writes itself" in only_error(result)["message"]


def test_a_script_written_from_a_here_document_is_read_as_the_run_is(tmp_path, capsys) -> None:
    script = "cat > loop.sh <<EOF\nfor i in 1 2 3; do python train.py; done\nEOF\nbash loop.sh"
    code, result = _sky(tmp_path, capsys, script)
    assert code == INVALID
    assert (
        "loop.sh (written by run), a script that also runs `for`" in only_error(result)["message"]
    )
    flagged = "cat > go.sh <<EOF\npython train.py --epochs 1000\nEOF\nbash go.sh"
    code, result = _sky(tmp_path, capsys, flagged)
    assert code == INVALID  # its flag counts as the run's own: 1000 over the declared 10
    assert "the engine runs 1000" in only_error(result)["message"]
