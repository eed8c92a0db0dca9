"""The epochs an engine may hand a trial are what is priced: a swept range, a repeated flag.

A sweep of epochs over a range (W&B ``min``/``max``, a Hydra ``interval``, a Katib
``feasibleSpace``) may hand a trial its top; a command line that repeats ``--epochs``
trains the last one. A declared ``max_epochs`` below that is refused at its line (exit 3),
as ``epochs: {values: [10, 1000]}`` is; a range that stays within it passes. Every file
goes through ``budget-gate check``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main

INVALID = 3
FACTS = "accelerator: A100-80GB, gpus_per_trial: 1, epoch_minutes: 1"


def check(tmp_path: Path, capsys: Any, text: str, name: str = "sweep.yaml") -> tuple[int, Any]:
    """``budget-gate check FILE --format json`` under a policy that asks nothing more."""
    policies = tmp_path / "policies"
    policies.mkdir(exist_ok=True)
    (policies / "default.yaml").write_text("apiVersion: budget-gate/v1\nkind: Policy\n")
    path = tmp_path / name
    path.write_text(text)
    capsys.readouterr()
    code = main(["check", str(path), "--policy-dir", str(policies), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)["results"][0]


def at(text: str, needle: str, skip: str = "") -> tuple[int, int]:
    """Line and column (1-based) of the last ``needle`` in ``text``, past its ``skip``."""
    before = text[: text.rindex(needle) + len(skip)]
    return before.count("\n") + 1, len(before) - before.rfind("\n")


def field(result: Any, name: str) -> Any:
    return next(f for f in result["imported"]["fields"] if f["field"] == name)


def only_error(result: Any) -> Any:
    (error,) = result["errors"]
    return error


def wandb(epochs: str, declared: str = ", max_epochs: 10", method: str = "random") -> str:
    return (
        f"method: {method}\n"
        "run_cap: 5\n"
        "parameters:\n"
        "  lr: {values: [0.1, 0.01]}\n"
        f"  epochs: {epochs}\n"
        f"# x-budget-gate: {{{FACTS}{declared}}}\n"
    )


RANGES = [
    "{min: 10, max: 1000}",
    "{distribution: int_uniform, min: 10, max: 1000}",
    "{distribution: uniform, min: 10.0, max: 1000.0}",
    "{distribution: log_uniform_values, min: 10, max: 1000}",
    "{distribution: q_uniform, min: 10, max: 1000, q: 10}",
]


@pytest.mark.parametrize("epochs", RANGES)
def test_a_wandb_epoch_range_above_the_declared_max_epochs_is_refused(
    tmp_path, capsys, epochs: str
) -> None:
    text = wandb(epochs)
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID and result["outcome"] == "invalid"
    error = only_error(result)
    assert error["message"].startswith("# x-budget-gate.max_epochs is 10, but the engine runs 1000")
    assert "parameters.epochs" in error["message"] and "may train up to 1000" in error["message"]
    assert (error["line"], error["col"]) == at(text, "max_epochs: 10", "max_epochs: ")
    assert error["hint"].startswith("remove # x-budget-gate.max_epochs")
    if "q_" not in epochs:
        assert error["hint"].endswith("make it parameters.epochs.max: 10")


def test_a_wandb_epoch_range_without_a_declaration_is_priced_at_its_top(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, wandb("{min: 10, max: 1000}", declared=""))
    assert code != INVALID, result["errors"]
    epochs = field(result, "workload.max_epochs")
    assert (epochs["value"], epochs["location"]["line"]) == ("1000", 5)
    assert result["estimate"]["worst"]["epochs_per_trial"] == 1000


def test_a_wandb_epoch_range_within_the_declared_max_epochs_passes(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, wandb("{min: 1, max: 10}"))
    assert code == 0, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "10"


@pytest.mark.parametrize(
    "epochs",
    [
        "{values: [10, 1000.0]}",  # a float is still 1000 epochs
        '{values: ["10", "1000"]}',  # a command-line word is too
    ],
)
def test_wandb_epoch_values_that_are_not_ints_still_count(tmp_path, capsys, epochs) -> None:
    code, result = check(tmp_path, capsys, wandb(epochs, method="grid"))
    assert code == INVALID
    assert "but the engine runs 1000" in only_error(result)["message"]


def test_a_nested_wandb_epochs_parameter_counts(tmp_path, capsys) -> None:
    text = wandb("{values: [1]}").replace(
        "  epochs: {values: [1]}\n",
        "  trainer:\n    parameters:\n      epochs: {min: 1, max: 500}\n",
    )
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    assert "runs 500 (parameters.trainer.epochs" in only_error(result)["message"]


@pytest.mark.parametrize(
    ("command", "epochs"),
    [
        # a literal flag trains what it says, whatever the parameter sweeps
        ("[python, train.py, --epochs=1000]", "1000"),
        ("[python, train.py, --max-epochs, '400', '${args}']", "400"),
        ("[sh, -c, 'python train.py --epochs 700']", "700"),
        ("[python, train.py, --nEpochs=400, '${args}']", "400"),  # a parameter named lr only
        ("[python, train.py, --epoch_count, '300']", "300"),
        # ${args} after it hands every run the parameter's own --epochs: the last counts
        ("['${env}', python, train.py, --epochs=1000, '${args}']", "10"),
    ],
)
def test_a_wandb_epochs_flag_in_the_command_counts(tmp_path, capsys, command, epochs) -> None:
    text = wandb("{values: [5, 10]}", declared="") + f"command: {command}\n"
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == epochs
    assert result["estimate"]["worst"]["epochs_per_trial"] == int(epochs)


def test_a_wandb_command_flag_above_the_declared_max_epochs_is_refused(tmp_path, capsys) -> None:
    text = wandb("{values: [5, 10]}") + "command: [python, train.py, '${args}', --epochs=1000]\n"
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    assert "but the engine runs 1000 (--epochs 1000 in command)" in only_error(result)["message"]


def test_an_unbounded_wandb_epochs_distribution_is_refused(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, wandb("{distribution: normal, mu: 10, sigma: 5}"))
    assert code == INVALID
    error = only_error(result)
    assert "parameters.epochs is a normal distribution" in error["message"]
    assert error["line"] == 5 and "min and max" in error["hint"]


HYDRA = """\
defaults:
  - override hydra/sweeper: optuna
trainer: {{max_epochs: 10}}
hydra:
  sweeper:
    n_trials: 5
    params:
      lr: interval(0.001, 0.1)
      {key}: {sweep}
x-budget-gate: {{{facts}{declared}}}
"""


def hydra(sweep: str, key: str = "trainer.max_epochs", declared: str = ", max_epochs: 10") -> str:
    return HYDRA.format(key=key, sweep=sweep, facts=FACTS, declared=declared)


@pytest.mark.parametrize(
    ("sweep", "top"),
    [("interval(10, 1000)", 1000), ("tag(log, interval(10, 1000))", 1000), ("10,1000.0", 1000)],
)
def test_a_hydra_epoch_sweep_above_the_declared_max_epochs_is_refused(
    tmp_path, capsys, sweep, top
) -> None:
    text = hydra(sweep)
    code, result = check(tmp_path, capsys, text, "config.yaml")
    assert code == INVALID
    error = only_error(result)
    assert error["message"].startswith(f"x-budget-gate.max_epochs is 10, but the engine runs {top}")
    assert (error["line"], error["col"]) == at(text, "max_epochs: 10", "max_epochs: ")
    assert "hydra.sweeper.params.trainer.max_epochs: " in error["hint"]


@pytest.mark.parametrize(
    ("key", "sweep", "top"),
    [
        ("trainer.max_epochs", "interval(10, 1000)", "1000"),  # the sweep overrides the base 10
        ("++trainer.max_epochs", "10,1000", "1000"),  # ++key is the same key
        ("trainer.max_epochs", "range(10, 1000)", "1000"),  # Optuna draws up to the stop
        ("epochs", "choice(10, 300)", "300"),  # another epoch key: the largest decides
    ],
)
def test_a_hydra_epoch_sweep_is_priced_at_its_top_over_the_base_config(
    tmp_path, capsys, key, sweep, top
) -> None:
    code, result = check(tmp_path, capsys, hydra(sweep, key, declared=""), "config.yaml")
    assert code != INVALID, result["errors"]
    epochs = field(result, "workload.max_epochs")
    assert (epochs["value"], epochs["location"]["line"]) == (top, 9)


def test_a_hydra_epoch_interval_within_the_declared_max_epochs_passes(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, hydra("interval(1, 10)"), "config.yaml")
    assert code == 0, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "10"


KATIB = """\
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: epochs
  annotations:
    budget-gate/accelerator: A100-80GB
    budget-gate/gpus_per_trial: "1"
    budget-gate/epoch_minutes: "1"
{declared}spec:
  maxTrialCount: 4
  parallelTrialCount: 2
  algorithm: {{algorithmName: random}}
  objective: {{type: minimize, objectiveMetricName: loss}}
  parameters:
    - name: lr
      parameterType: double
      feasibleSpace: {{min: "0.01", max: "0.1"}}
    - name: epochs
      parameterType: int
      feasibleSpace: {space}
  trialTemplate:
    trialParameters:
      - {{name: learningRate, reference: lr}}
      - {{name: numEpochs, reference: epochs}}
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            containers:
              - name: training-container
                image: ghcr.io/kubeflow/katib/pytorch-mnist-cpu:latest
                command: {command}
"""
DECLARED = '    budget-gate/max_epochs: "10"\n'
SWEPT = '["python3", "train.py", "--epochs=${trialParameters.numEpochs}", "--lr=0.1"]'


def katib(space: str, command: str = SWEPT, declared: str = DECLARED) -> str:
    return KATIB.format(space=space, command=command, declared=declared)


@pytest.mark.parametrize(
    ("space", "fix"),
    [
        ('{min: "10", max: "1000"}', 'spec.parameters[1].feasibleSpace.max: "10"'),
        ('{list: ["10", "1000"]}', 'spec.parameters[1].feasibleSpace: {list: ["10"]}'),
    ],
)
def test_a_katib_epoch_parameter_above_the_annotated_max_epochs_is_refused(
    tmp_path, capsys, space, fix
) -> None:
    code, result = check(tmp_path, capsys, katib(space), "experiment.yaml")
    assert code == INVALID
    error = only_error(result)
    assert error["message"].startswith(
        "metadata.annotations.budget-gate/max_epochs is 10, but the engine runs 1000"
    )
    assert "spec.parameters[1] epochs goes up to 1000" in error["message"]
    assert (error["line"], error["col"]) == (9, 29)
    assert error["hint"].endswith(f"make it {fix}")


def test_a_katib_epoch_range_within_the_annotated_max_epochs_passes(tmp_path, capsys) -> None:
    text = katib('{min: "1", max: "10"}')
    code, result = check(tmp_path, capsys, text, "experiment.yaml")
    assert code == 0, result["errors"]
    epochs = field(result, "workload.max_epochs")
    assert epochs["value"] == "10"
    assert (epochs["location"]["line"], epochs["location"]["col"]) == at(text, '"--epochs=$')


@pytest.mark.parametrize(
    ("command", "epochs", "word"),
    [
        ('["python3", "train.py", "--epochs", "1", "--lr=0.1", "--epochs", "200"]', "200", '"200"'),
        ('["python3", "train.py", "--epochs=1", "--lr=0.1", "--epochs", "200"]', "200", '"200"'),
        ('["python3", "train.py", "--epochs", "200", "--epochs=1"]', "1", '"--epochs=1"'),
        # two flags: each keeps its last value, and the larger counts
        ('["python3", "train.py", "--epochs=1", "--max-epochs=7", "--epochs=3"]', "7", '"--max-'),
    ],
)
def test_a_repeated_katib_epochs_flag_trains_its_last_value(
    tmp_path, capsys, command, epochs, word
) -> None:
    text = katib('{list: ["1"]}', command=command, declared="")
    code, result = check(tmp_path, capsys, text, "experiment.yaml")
    assert code != INVALID, result["errors"]
    found = field(result, "workload.max_epochs")
    assert found["value"] == epochs
    assert (found["location"]["line"], found["location"]["col"]) == at(text, word)


@pytest.mark.parametrize(
    ("command", "epochs"),
    [
        ('["sh", "-c", "python3 train.py --epochs 500 --lr=0.1"]', "500"),
        ('["bash", "-c", "python3 pre.py --epochs=300 && python3 train.py --epochs 5"]', "305"),
        ('["sh", "-c", "su -c \'python3 train.py --epochs 700\'"]', "700"),
        ('["sh", "-c", "python3 train.py --epochs 1 --epochs 90; echo done"]', "90"),
    ],
)
def test_a_katib_epochs_flag_inside_a_shell_script_counts(
    tmp_path, capsys, command, epochs
) -> None:
    text = katib('{list: ["1"]}', command=command, declared="")
    code, result = check(tmp_path, capsys, text, "experiment.yaml")
    assert code != INVALID, result["errors"]
    found = field(result, "workload.max_epochs")
    assert found["value"] == epochs
    assert (found["location"]["line"], found["location"]["col"]) == at(text, '"-c", ', '"-c", ')


def test_a_katib_script_above_the_annotation_is_refused(tmp_path, capsys) -> None:
    command = '["sh", "-c", "python3 train.py --epochs 1000 --lr=0.1"]'
    code, result = check(tmp_path, capsys, katib('{list: ["1"]}', command), "experiment.yaml")
    assert code == INVALID
    message = only_error(result)["message"]
    assert "but the engine runs 1000 (--epochs 1000 in the trial's command)" in message


def test_a_repeated_katib_flag_above_the_annotation_is_refused(tmp_path, capsys) -> None:
    command = '["python3", "train.py", "--epochs", "10", "--epochs", "200"]'
    code, result = check(tmp_path, capsys, katib('{list: ["1"]}', command), "experiment.yaml")
    assert code == INVALID
    message = only_error(result)["message"]
    assert "but the engine runs 200 (--epochs 200 in the trial's command (the last of 2))" in (
        message
    )


SKYPILOT = """\
name: train
resources: {{accelerators: "A100-80GB:1"}}
envs:
  LENGTH: 1000
  X_BUDGET_GATE_EPOCH_MINUTES: 1
{declared}run: {run}
"""


@pytest.mark.parametrize(
    ("run", "epochs"),
    [
        ("python train.py --epochs 1 --lr 0.1 --epochs=200", "200"),
        ("python train.py --epochs $LENGTH", "1000"),
        (
            "python pretrain.py --epochs 500 && python train.py --epochs 5",
            "505",
        ),  # one, then the other
    ],
)
def test_a_skypilot_run_trains_each_flags_last_value(tmp_path, capsys, run, epochs) -> None:
    text = SKYPILOT.format(declared="", run=run)
    code, result = check(tmp_path, capsys, text, "task.yaml")
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == epochs


def test_a_skypilot_run_above_the_declared_max_epochs_is_refused(tmp_path, capsys) -> None:
    text = SKYPILOT.format(
        declared="  X_BUDGET_GATE_MAX_EPOCHS: 10\n", run="python train.py --epochs ${LENGTH}"
    )
    code, result = check(tmp_path, capsys, text, "task.yaml")
    assert code == INVALID
    error = only_error(result)
    assert "envs.X_BUDGET_GATE_MAX_EPOCHS is 10, but the engine runs 1000" in error["message"]
    assert error["line"] == 6


# What a shell and argparse make of a command line: each line a command, `#` inside a word
# no comment, a prefix of --epochs the option itself, Hugging Face's and Lightning's names.
SHELL_CASES = [
    ("python3 train.py --epochs 1000\\npython3 eval.py --epochs 1", "1001"),  # they add up
    ("python3 train.py --run-name=exp#2 --epochs 1000", "1000"),
    ("python3 train.py --epochs=1 --epo=1000", "1000"),
    ("python3 run_glue.py --num_train_epochs 1000", "1000"),
    ("python3 main.py fit --trainer.max_epochs=1000", "1000"),
]


@pytest.mark.parametrize(("script", "epochs"), SHELL_CASES)
def test_a_katib_script_is_read_as_a_shell_and_argparse_read_it(
    tmp_path, capsys, script, epochs
) -> None:
    command = json.dumps(["sh", "-c", script.replace("\\n", "\n")])
    text = katib('{list: ["1"]}', command=command, declared="")
    code, result = check(tmp_path, capsys, text, "experiment.yaml")
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == epochs


@pytest.mark.parametrize(("script", "epochs"), SHELL_CASES)
def test_a_wandb_command_script_is_read_alike(tmp_path, capsys, script, epochs) -> None:
    command = json.dumps(["sh", "-c", script.replace("\\n", "\n")])
    text = wandb("{values: [1]}", declared="") + f"command: {command}\n"
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == epochs


def test_a_katib_env_var_in_args_is_expanded_from_the_container_env(tmp_path, capsys) -> None:
    """Kubernetes expands ``$(EPOCHS)`` in args from the container's env."""
    text = katib('{min: "1", max: "1000"}', command='["python3", "train.py", "--epochs=$(EPOCHS)"]')
    text = text.replace(
        "                command:",
        '                env: [{name: EPOCHS, value: "${trialParameters.numEpochs}"}]\n'
        "                command:",
    )
    code, result = check(tmp_path, capsys, text, "experiment.yaml")
    assert code == INVALID
    assert "but the engine runs 1000" in only_error(result)["message"]


def _katib_env(env: str) -> str:
    """A Katib trial whose command names no epochs, with ``env`` in its container."""
    text = katib('{list: ["1"]}', command='["python3", "train.py"]')
    return text.replace(
        "                command:", f"                env: {env}\n                command:"
    )


def test_a_katib_env_named_like_the_epochs_counts_though_no_command_names_it(
    tmp_path, capsys
) -> None:
    """The program may read ``NUM_EPOCHS`` from its environment: the env hands it 1000."""
    text = _katib_env('[{name: LOG_LEVEL, value: "9999"}, {name: NUM_EPOCHS, value: "1000"}]')
    code, result = check(tmp_path, capsys, text, "experiment.yaml")
    assert code == INVALID
    error = only_error(result)
    assert (
        "but the engine runs 1000 (env NUM_EPOCHS=1000 in the trial's container)"
        in (error["message"])
    )
    assert error["hint"].endswith('make it env NUM_EPOCHS: "10" in the trial\'s container')
    code, result = check(tmp_path, capsys, _katib_env('[{name: LOG_LEVEL, value: "9999"}]'))
    assert code != INVALID, result["errors"]  # an env not named like the epochs is not read


def test_a_katib_epochs_env_whose_value_is_outside_the_file_is_refused(tmp_path, capsys) -> None:
    text = _katib_env("[{name: EPOCHS, valueFrom: {configMapKeyRef: {name: cfg, key: e}}}]")
    code, result = check(tmp_path, capsys, text, "experiment.yaml")
    assert code == INVALID
    error = only_error(result)
    assert error["message"] == (
        "env EPOCHS of the trial's container: the epochs it hands the program are not in the "
        "file (valueFrom)"
    )
    assert error["line"] == at(text, "{name: EPOCHS", "{name: EPOCHS")[0]


@pytest.mark.parametrize(
    ("envs", "secrets", "message"),
    [
        ("  EPOCHS: 1000\n", "", "but the engine runs 1000 (envs EPOCHS: 1000, in the programs'"),
        ("  EPOCHNUM: 1000\n", "", "but the engine runs 1000 (envs EPOCHNUM: 1000, in the progr"),
        (  # a secret wins over an env of its name, as SkyPilot applies them
            "  NUM_EPOCHS: 5\n",
            "secrets:\n  NUM_EPOCHS: 700\n",
            "but the engine runs 700 (secrets NUM_EPOCHS: 700, in the programs'",
        ),
        ("  EPOCHS: null\n", "", "envs EPOCHS: null: the epochs it hands the task's programs"),
    ],
)
def test_a_skypilot_env_named_like_the_epochs_counts_though_no_command_names_it(
    tmp_path, capsys, envs, secrets, message
) -> None:
    """SkyPilot exports envs and secrets to run: the program may read EPOCHS from there."""
    text = SKYPILOT.format(declared="  X_BUDGET_GATE_MAX_EPOCHS: 10\n", run="python train.py")
    text = text.replace("  LENGTH: 1000\n", envs) + secrets
    code, result = check(tmp_path, capsys, text, "task.yaml")
    assert code == INVALID
    assert message in only_error(result)["message"]


@pytest.mark.parametrize(
    ("text", "name", "message"),
    [
        (
            katib('{list: ["1"]}', command='["sh", "-c", "E=1000; python3 train.py --epochs $E"]'),
            "experiment.yaml",
            "--epochs $E in the trial's command: the epochs it trains are not in the file",
        ),
        (
            wandb("{values: [1]}") + "command: [python, train.py, --epochs=$E]\n",
            "sweep.yaml",
            "--epochs $E in command: the epochs it trains are not in the file",
        ),
        (
            SKYPILOT.format(
                declared="", run="|\n  export LENGTH=1\n  python train.py --epochs $LENGTH"
            ),
            "task.yaml",
            "--epochs $LENGTH in run: the epochs it trains are not in the file",
        ),
    ],
)
def test_an_epochs_value_the_file_does_not_say_is_refused(
    tmp_path, capsys, text, name, message
) -> None:
    code, result = check(tmp_path, capsys, text, name)
    assert code == INVALID
    error = only_error(result)
    assert error["message"] == message and error["line"] > 1


def test_a_skypilot_setup_that_trains_counts(tmp_path, capsys) -> None:
    """SkyPilot runs ``setup`` on the task's GPU nodes before ``run``."""
    text = SKYPILOT.format(declared="", run="python eval.py --epochs 1")
    text = text.replace("run:", "setup: python train.py --epochs 700\nrun:")
    code, result = check(tmp_path, capsys, text, "task.yaml")
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "701"  # setup's 700, then run's 1


def test_a_hugging_face_epochs_parameter_counts(tmp_path, capsys) -> None:
    text = wandb("{values: [1]}").replace("  epochs:", "  num_train_epochs:")
    text = text.replace("{values: [1]}", "{values: [1000]}")
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    assert "runs 1000 (the largest of parameters.num_train_epochs" in only_error(result)["message"]


# A command a script repeats trains a number of times the file does not show.
LOOPS = [
    "for i in $(seq 1 100); do python train.py --epochs 5 --seed $i; done",
    "while true; do\n  python train.py --epochs 5\ndone",
    "python prep.py && until test -f done.txt; do bash -c 'python t.py --epochs=5'; done",
    "seq 1 100 | xargs -I{} python train.py --epochs 5 --seed {}",
    "(for i in 1 2 3; do python train.py --epochs 5; done)",
    'time for i in 1 2 3; do echo "done"; python train.py --epochs 5; done',
    "seq 100 | nice /usr/bin/xargs -I{} python train.py --epochs 5",
    "find . -name '*.cfg' -exec python train.py --epochs 5 --cfg {} ';'",
    "f() { python train.py --epochs 5; }; f; f; f",
    # bash's arithmetic loops: `for((` is `for` and `((`, as bash reads it
    "for((i=0;i<100;i++)); do python train.py --epochs 10; done",
    "i=0; until((i++>=100)); do python train.py --epochs 10; done",
    # a loop in a command substitution runs where the word is read
    "echo $(for i in $(seq 100); do python train.py --epochs 10; done)",
    "echo `for i in $(seq 100); do python train.py --epochs 10; done`",
    'echo "$(while true; do python train.py --epochs 10; done)"',
]


@pytest.mark.parametrize("script", LOOPS)
@pytest.mark.parametrize("engine", ["katib", "wandb", "skypilot"])
def test_an_epochs_flag_a_script_repeats_is_refused(tmp_path, capsys, engine, script) -> None:
    argv = json.dumps(["sh", "-c", script])
    if engine == "katib":
        text, name = katib('{list: ["1"]}', command=argv, declared=""), "experiment.yaml"
    elif engine == "wandb":
        text, name = wandb("{values: [1]}", declared="") + f"command: {argv}\n", "sweep.yaml"
    else:
        text, name = SKYPILOT.format(declared="", run=json.dumps(script)), "task.yaml"
    code, result = check(tmp_path, capsys, text, name)
    assert code == INVALID
    error = only_error(result)
    assert "which may run it a number of times the file does not show" in error["message"]
    assert error["line"] > 1


def test_a_loop_of_harmless_commands_beside_an_epochs_flag_passes(tmp_path, capsys) -> None:
    """The loop ends at its `done`: what it repeats copies files, and the training runs once."""
    for script in [
        "for f in a b; do cp $f /tmp; done\npython train.py --epochs 7",
        'for f in a b; do echo "done $f"; done; python train.py --epochs 7',
        "pip install -e . && python t.py --epochs 7",
    ]:
        text = SKYPILOT.format(declared="", run=json.dumps(script))
        code, result = check(tmp_path, capsys, text, "task.yaml")
        assert code != INVALID, result["errors"]
        assert field(result, "workload.max_epochs")["value"] == "7"


@pytest.mark.parametrize(
    "script",
    [
        'for f in a b; do echo "$f; done\npython train.py --epochs 7',  # an open quote
        "for f in a b; do cp $f /tmp\npython train.py --epochs 7",  # no done
    ],
)
def test_a_loop_in_a_script_that_cannot_be_read_is_refused_failing_closed(
    tmp_path, capsys, script
) -> None:
    """Where a shell would not run the script as written, where its loop ends is a guess."""
    text = SKYPILOT.format(declared="", run=json.dumps(script))
    code, result = check(tmp_path, capsys, text, "task.yaml")
    assert code == INVALID
    assert "--epochs in run, a script that also runs `for`" in only_error(result)["message"]


# With no epochs flag the declared epochs are one run's: a loop trains them a hundred times.
UNFLAGGED_LOOPS = [
    "for seed in $(seq 1 100); do\n  python train.py --seed $seed\ndone",
    "until python3 /app/train.py; do sleep 1; done",
    "seq 100 | xargs -I{} torchrun --nproc_per_node 8 train.py --seed {}",
    "for i in 1 2 3; do ./train.sh; done",
    "while((i++<100)); do python train.py; done",
    "until (( i >= 100 )); do python train.py; i=$((i+1)); done",
    "echo $(for i in $(seq 100); do python train.py; done)",
    # any program not known to be harmless may train: the list of what trains is open
    "for i in $(seq 100); do uv run train; done",
    "for i in $(seq 100); do poetry run train; done",
    "for i in $(seq 100); do tune run full_finetune_single_device --config c.yaml; done",
    "for i in $(seq 100); do llamafactory-cli train c.yaml; done",
    "for i in $(seq 100); do accelerate launch train.py; done",
    'for i in $(seq 100); do "$CMD"; done',
    "for i in $(seq 100); do ./run; done",
    "for i in $(seq 100); do timeout 2h nohup env SEED=$i python train.py; done",
    "parallel 'python train.py --seed {}' ::: $(seq 100)",
    "watch -n 600 python train.py",
    "docker exec trainer bash -c 'for i in $(seq 100); do python train.py; done'",
]


@pytest.mark.parametrize("script", UNFLAGGED_LOOPS)
@pytest.mark.parametrize("engine", ["katib", "skypilot"])
def test_a_training_command_a_script_repeats_is_refused_with_no_epochs_flag(
    tmp_path, capsys, engine, script
) -> None:
    """A red team's 100 trainings a trial passed at one run's price (33.71 USD, not 3,371)."""
    if engine == "katib":
        argv = json.dumps(["sh", "-c", script])
        text, name = katib('{list: ["1"]}', command=argv), "experiment.yaml"
    else:
        text, name = (
            SKYPILOT.format(declared="  X_BUDGET_GATE_MAX_EPOCHS: 10\n", run=json.dumps(script)),
            "task.yaml",
        )
    code, result = check(tmp_path, capsys, text, name)
    assert code == INVALID
    assert (
        "which may run it a number of times the file does not show" in only_error(result)["message"]
    )


# A loop or a repeater of harmless commands beside a training run once repeats no training.
HARMLESS_LOOPS = [
    (
        "setup",
        "pip install -r requirements.txt\n"
        "for m in en_core_web_sm de_core_news_sm; do python -m spacy download $m; done",
    ),
    ("setup", 'for f in scripts/*.sh; do chmod +x "$f"; done'),  # a glob, not a training script
    ("setup", "for p in numpy torch; do python -m pip install $p; done"),
    ("setup", "for i in 1 2 3; do wget https://x/data.tar && break; done\npython prepare_data.py"),
    ("run", 'while ! nc -z "$HEAD" 29500; do sleep 1; done\ntorchrun --nproc_per_node 8 train.py'),
    ("run", "ls data/*.tar | xargs -n1 tar xf\npython train.py"),
    ("run", "source .venv/bin/activate\nfind . -name '*.sh' -exec chmod +x {} ';'\npython t.py"),
]


@pytest.mark.parametrize(("key", "script"), HARMLESS_LOOPS)
def test_a_loop_that_repeats_no_training_passes(tmp_path, capsys, key, script) -> None:
    """A setup loop beside `run: python train.py --epochs 10`, or a run's wait loop."""
    declared = "  X_BUDGET_GATE_MAX_EPOCHS: 10\n"
    if key == "setup":
        text = SKYPILOT.format(declared=declared, run=json.dumps("python train.py --epochs 10"))
        text = text.replace("run:", f"setup: {json.dumps(script)}\nrun:", 1)
    else:
        text = SKYPILOT.format(declared=declared, run=json.dumps(script))
    code, result = check(tmp_path, capsys, text, "task.yaml")
    assert code == 0, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "10"


@pytest.mark.parametrize("engine", ["katib", "skypilot"])
def test_training_commands_repeated_with_no_epochs_flag_are_refused(
    tmp_path, capsys, engine
) -> None:
    """Three runs of one training were priced at the declared 10 epochs, one run's."""
    script = "python train.py\npython train.py --seed 2\naccelerate launch train.py"
    if engine == "katib":
        argv = json.dumps(["sh", "-c", script])
        text, name = katib('{list: ["1"]}', command=argv), "experiment.yaml"
    else:
        declared = "  X_BUDGET_GATE_MAX_EPOCHS: 10\n"
        text, name = SKYPILOT.format(declared=declared, run=json.dumps(script)), "task.yaml"
    code, result = check(tmp_path, capsys, text, name)
    assert code == INVALID
    error = only_error(result)
    assert error["message"].startswith("`python train.py` runs more than once in ")
    assert error["hint"].startswith("give each command that trains its epochs flag")


@pytest.mark.parametrize(
    "script",
    [
        "python prepare.py && python train.py",
        'python -c "import torch; print(torch.__version__)"\npython download.py\npython train.py',
    ],
)
def test_different_programs_run_once_each_are_no_repeat(tmp_path, capsys, script) -> None:
    """Preparation, then training: each runs once, and the declared epochs are the run's."""
    declared = "  X_BUDGET_GATE_MAX_EPOCHS: 10\n"
    text = SKYPILOT.format(declared=declared, run=json.dumps(script))
    code, result = check(tmp_path, capsys, text, "task.yaml")
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "10"


def test_training_commands_that_say_their_epochs_add_up(tmp_path, capsys) -> None:
    script = "python train.py --epochs 10\npython train.py --epochs 10\npython train.py --epochs 10"
    text = SKYPILOT.format(declared="", run=json.dumps(script))
    code, result = check(tmp_path, capsys, text, "task.yaml")
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "30"


def test_a_glued_epochs_flag_in_a_skypilot_run_counts(tmp_path, capsys) -> None:
    run = "python train.py --nepochs 1000"
    text = SKYPILOT.format(declared="  X_BUDGET_GATE_MAX_EPOCHS: 10\n", run=json.dumps(run))
    code, result = check(tmp_path, capsys, text, "task.yaml")
    assert code == INVALID
    assert "1000" in only_error(result)["message"]


@pytest.mark.parametrize(
    ("run", "envs"),
    [
        ("python train.py --epochs_per_trial 1000", ""),
        ("python train.py --max-epochs-per-run=1000", ""),
        ("python train.py", "  EPOCHS_PER_TRIAL: 1000\n"),
        ("EPOCHS_TO_TRAIN=1000 python train.py", ""),
    ],
)
def test_epochs_named_with_a_count_after_them_in_a_skypilot_task_count(
    tmp_path, capsys, run, envs
) -> None:
    """``--epochs_per_trial 1000`` beside a declared 10 was priced at 10 epochs."""
    text = SKYPILOT.format(declared="  X_BUDGET_GATE_MAX_EPOCHS: 10\n", run=json.dumps(run))
    code, result = check(tmp_path, capsys, text.replace("  LENGTH: 1000\n", envs), "task.yaml")
    assert code == INVALID
    assert "1000" in only_error(result)["message"]


def test_a_setup_loop_that_installs_is_no_training(tmp_path, capsys) -> None:
    setup = "for p in numpy torch; do python -m pip install $p; done"
    text = SKYPILOT.format(declared="", run=json.dumps("python t.py --epochs 7"))
    text = text.replace("run:", f"setup: {json.dumps(setup)}\nrun:", 1)
    code, result = check(tmp_path, capsys, text, "task.yaml")
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "7"


# Any name argparse could take as the epochs: W&B hands a parameter over as --name=value.
EPOCH_NAMES = [
    *["max-epochs", "nb_epochs", "n_epoch", "max_epoch", "num_epoch", "EPOCHS", "epo"],
    # camelCase (pytorch/examples' super_resolution takes --nEpochs) and a count after it
    *["nEpochs", "maxEpochs", "numTrainEpochs", "epoch_count", "epochs_total", "epochCount"],
    # a count's word glued on: a red team's nepochs: 1000 passed at the declared 10
    *["nepochs", "numepochs", "maxepochs", "NEPOCHS", "numtrainepochs", "nepoch"],
    # a count's word glued after it, as epoch_count and epoch_num count
    *["epochsnum", "epochcount", "epochstotal", "EPOCHNUM", "epochlimit"],
    # a count's words after it: a red team's epochs_per_trial: 1000 passed at the declared 1
    *["epochs_per_trial", "max_epochs_per_run", "epochs_to_train", "epochsPerTrial"],
    *["n_epochs_per_run", "epochs_budget", "train_epochs", "total_train_epochs"],
]


@pytest.mark.parametrize("name", EPOCH_NAMES)
def test_a_wandb_parameter_named_like_epochs_counts(tmp_path, capsys, name) -> None:
    text = wandb("{values: [1000]}").replace("  epochs:", f"  {name}:")
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    assert (
        f"the engine runs 1000 (the largest of parameters.{name}" in only_error(result)["message"]
    )


@pytest.mark.parametrize(
    "trainer", ["{value: {max_epochs: 1000}}", "{values: [{max_epochs: 5}, {max_epochs: 1000}]}"]
)
def test_epochs_inside_a_mapping_a_wandb_parameter_hands_a_run_count(
    tmp_path, capsys, trainer
) -> None:
    """W&B hands the run the whole mapping: config.trainer.max_epochs is 1000."""
    text = wandb("{values: [5]}").replace("  lr:", f"  trainer: {trainer}\n  lr:")
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    assert (
        "x-budget-gate.max_epochs is 10, but the engine runs 1000" in only_error(result)["message"]
    )


@pytest.mark.parametrize(
    "name",
    [
        *["eps", "step", "warmup_steps", "steps_per_epoch", "stepsPerEpoch", "keep", "deepNet"],
        *["warmupepochs", "minepochs", "stepsperepoch", "startepoch"],
        # a schedule's word glued inside the prefix, as lr_decay_epochs is no epochs
        *["lrdecayepochs", "lrwarmupepochs", "savecheckpointepochs"],
        # a part of the schedule, though a count's word may follow the epochs
        *["epochs_per_eval", "epochs_per_checkpoint", "eval_every_epochs", "save_epochs"],
        *["warmup_epochs_per_run", "min_epochs_to_train"],
    ],
)
def test_a_wandb_parameter_not_named_like_epochs_is_no_epochs(tmp_path, capsys, name) -> None:
    text = wandb("{values: [1000]}").replace("  epochs:", f"  {name}:")
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "10"


@pytest.mark.parametrize(
    "config",
    [
        "model: {max_epochs: 1000}",
        "n_epochs: 1000",
        "training: {num_epochs: 1000}",
        "optim: {epochs: 1000}",
        "num_train_epochs: 1000",
        "model: {maxEpochs: 1000}",
        "total: 1000\nscheduler: {total_epochs: '${total}'}",
        "model: {epochs_per_trial: 1000}",
        "training: {epochs_to_train: 1000}",
    ],
)
def test_a_hydra_key_named_like_epochs_anywhere_counts(tmp_path, capsys, config) -> None:
    text = hydra("interval(0.001, 0.1)", key="lr2") + config + "\n"
    code, result = check(tmp_path, capsys, text, "config.yaml")
    assert code == INVALID
    assert (
        "x-budget-gate.max_epochs is 10, but the engine runs 1000" in only_error(result)["message"]
    )


@pytest.mark.parametrize(
    "config",
    [
        "warmup_epochs: 0",
        "warmup_epochs: 0.5",
        "scheduler: {warmup_epochs: -1}",
        "scheduler: {warmup_epochs: '${trainer.max_epochs}'}",
        "data: {steps_per_epoch: 1000, samples_per_epoch: 50000}",
    ],
)
def test_a_hydra_key_that_restates_or_zeroes_epochs_changes_nothing(
    tmp_path, capsys, config
) -> None:
    text = hydra("interval(0.001, 0.1)", key="lr2") + config + "\n"
    code, result = check(tmp_path, capsys, text, "config.yaml")
    assert code == 0, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "10"


def test_a_hydra_trainer_epochs_beside_its_max_epochs_counts(tmp_path, capsys) -> None:
    text = hydra("interval(0.001, 0.1)", key="lr2")
    text = text.replace("trainer: {max_epochs: 10}", "trainer: {max_epochs: 10, epochs: 1000}")
    code, result = check(tmp_path, capsys, text, "config.yaml")
    assert code == INVALID
    assert "the engine runs 1000 (trainer.epochs)" in only_error(result)["message"]


def test_a_hydra_epochs_key_swept_under_another_group_counts(tmp_path, capsys) -> None:
    text = hydra("choice(10, 1000)", key="model.max_epochs")
    code, result = check(tmp_path, capsys, text, "config.yaml")
    assert code == INVALID
    assert "the engine runs 1000" in only_error(result)["message"]


@pytest.mark.parametrize(
    "command",
    [
        '["env", "NUM_EPOCHS=1000", "python3", "train.py"]',
        '["sh", "-c", "EPOCHS=1000 python3 train.py"]',
        '["sh", "-c", "export EPOCHS=1000 && python3 train.py"]',
        '["python3", "train.py", "trainer.max_epochs=1000"]',  # a Hydra override
    ],
)
def test_epochs_a_command_sets_for_its_program_count(tmp_path, capsys, command) -> None:
    """An env assignment or an override in the command hands the program 1,000 epochs."""
    code, result = check(tmp_path, capsys, katib('{list: ["1"]}', command), "experiment.yaml")
    assert code == INVALID
    assert "but the engine runs 1000 (" in only_error(result)["message"]


@pytest.mark.parametrize(
    "envs",
    [
        "  WARMUP_EPOCHS: 5\n",
        "  EP: 8\n",  # expert parallelism: no argparse completes an env variable's name
        "  RESUME_EPOCH: latest\n",
        "  SAVE_EVERY_EPOCHS: 2\n",
        "  START_EPOCH: 3\n",
        "  LRDECAYEPOCHS: 30\n",
    ],
)
def test_an_env_named_for_a_point_of_the_schedule_is_not_the_epochs(tmp_path, capsys, envs) -> None:
    text = SKYPILOT.format(declared="  X_BUDGET_GATE_MAX_EPOCHS: 10\n", run="python train.py")
    code, result = check(tmp_path, capsys, text.replace("  LENGTH: 1000\n", envs), "task.yaml")
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "10"


def _sky(tmp_path: Path, capsys: Any, script: str) -> tuple[int, Any]:
    """``check`` of a SkyPilot task whose ``run`` is ``script``, declaring 10 epochs."""
    declared = "  X_BUDGET_GATE_MAX_EPOCHS: 10\n"
    text = SKYPILOT.format(declared=declared, run=json.dumps(script))
    return check(tmp_path, capsys, text, "task.yaml")


# A script nested past any bound a reader may recurse to: refused (exit 3), never a crash (70).
TOO_DEEP = [
    "echo " + "$(" * 300 + "true" + ")" * 300,
    "{ " * 3000 + "python train.py" + "; }" * 3000,
    "if true; then " * 2000 + "python train.py" + "; fi" * 2000,
    "a=(" * 300 + ")" * 300 + "\npython train.py",
    "cat " + "<(" * 300 + "true" + ")" * 300 + "\npython train.py",
]


@pytest.mark.parametrize("script", TOO_DEEP, ids=["dollar", "brace", "if", "array", "procsub"])
def test_a_script_nested_past_the_bound_is_refused_not_a_crash(tmp_path, capsys, script) -> None:
    code, result = _sky(tmp_path, capsys, script)
    assert code == INVALID
    assert "nested more than" in only_error(result)["message"]


# Spaced arguments of programs other than shells are words, and comments are no words.
ORDINARY = [
    '# 8-GPU data parallel\npython -c "import torch; print(torch.cuda.device_count())"\n'
    "torchrun --nproc_per_node 8 train.py",
    'python -c "[x for x in y]"\npython train.py',
    'python train.py --notes "for the ablation table"',
    'python train.py --prompt "while you wait"',
    'python train.py --desc "until convergence"',
    '# fine-tune for one run\npython train.py --run-name "Bob\'s run"',
    # the run-twice check knows a command by its program and its script
    "python -u prepare.py\npython -u train.py",
    "python -m scripts.download_data\npython -m torch.distributed.run --nproc_per_node 8 train.py",
    "torchrun --nproc_per_node 8 train.py\ntorchrun --nproc_per_node 8 eval.py",
    "trap 'rm -rf /tmp/scratch' EXIT\npython train.py",
]


@pytest.mark.parametrize("script", ORDINARY)
def test_an_ordinary_script_passes(tmp_path, capsys, script) -> None:
    code, result = _sky(tmp_path, capsys, script)
    assert code != INVALID, result["errors"]


def test_a_katib_argument_with_a_loop_word_is_no_script(tmp_path, capsys) -> None:
    argv = json.dumps(["python", "train.py", "--notes", "for (paper)"])
    code, result = check(tmp_path, capsys, katib('{list: ["1"]}', command=argv), "exp.yaml")
    assert code != INVALID, result["errors"]


# One training run twice, written two ways; a script that cannot be read and may train; a
# script fed to a shell; one with no whitespace; a trap's body; a restart of the script.
REPEATED = [
    "python train.py\npython ./train.py",
    "python train.py\npython3 train.py",
    "python train.py\npython -u train.py",
    "torchrun train.py\npython -m torch.distributed.run train.py",
    "python train.py 2>&1 | tee log\npython train.py",
    "python train.py\npython train.py\nfi",
    'python train.py "',
    "shopt -s expand_aliases\nalias loop='for i in 1 2 3; do'\nloop python train.py; done",
    "echo 'for i in 1 2 3; do python train.py; done' | bash",
    "bash <<EOF\nfor i in 1 2 3; do python train.py; done\nEOF",
    "bash <<'EOF'\nfor i in 1 2 3; do python train.py; done\nEOF",
    "bash <<< 'for i in 1 2 3; do python train.py; done'",
    "bash <(printf 'for i in 1 2 3; do python train.py; done')",
    "bash -c \"$(printf 'for i in 1 2 3; do python train.py; done')\"",
    "bash -c $'for\\x20i in 1 2 3; do python train.py; done'",
    "bash -c 'for((i=0;i<3;i++));{(python${IFS}train.py);}'",
    "eval for i in 1 2 3 ';' do python train.py ';' done",
    "trap 'python train.py' DEBUG\necho a\necho b",
    "trap 'python train.py' ERR\nfalse",
    "trap 'python train.py' EXIT\npython train.py",
    'python train.py\nexec bash "$0"',
    'python train.py\nexec "$0"',
]


@pytest.mark.parametrize("script", REPEATED)
def test_a_training_a_script_may_run_again_is_refused(tmp_path, capsys, script) -> None:
    code, result = _sky(tmp_path, capsys, script)
    assert code == INVALID, result


@pytest.mark.parametrize(
    "env",
    [
        '[{name: TRAIN, value: "for i in 1 2 3; do python3 train.py; done"}]',
        "[{name: TRAIN, valueFrom: {configMapKeyRef: {name: cfg, key: t}}}]",  # not in the file
    ],
)
def test_a_katib_script_kubernetes_expands_from_the_env_is_read(tmp_path, capsys, env) -> None:
    """``sh -c "$(TRAIN)"`` runs the value of the container's env ``TRAIN``."""
    text = _katib_env(env).replace('["python3", "train.py"]', '["sh", "-c", "$(TRAIN)"]')
    code, result = check(tmp_path, capsys, text, "experiment.yaml")
    assert code == INVALID, result


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ("bash loop.sh", "loop.sh"),
        ("sh ./scripts/train.sh --epochs 10 && ./post.sh", "scripts/train.sh, ./post.sh"),
        ("source run.sh", "run.sh"),
        ("python train.py --epochs 10", None),  # the training itself
        ("torchrun --nproc-per-node 8 train.py", None),
        ("deepspeed train.py --deepspeed ds.json", None),  # a launcher of a Python program
        ("accelerate launch train.py", None),
        ("source .venv/bin/activate\npython train.py", None),  # sets up the shell
    ],
)
def test_a_script_the_task_hands_its_work_to_is_said_unread(tmp_path, capsys, script, said) -> None:
    """``bash loop.sh`` runs commands the file does not hold: a loop there repeats the
    training unpriced, so the check says beside the price that it did not read them."""
    code, result = _sky(tmp_path, capsys, script)
    assert code != INVALID, result["errors"]
    notes = [n for n in result["imported"]["notes"] if "budget-gate does not read" in n]
    expected = [f"run: runs {said}, whose commands budget-gate does not read: "] if said else []
    assert len(notes) == len(expected)
    assert all(n.startswith(e) for n, e in zip(notes, expected, strict=True))


def test_a_wandb_or_katib_command_that_runs_a_shell_script_says_it_is_unread(
    tmp_path, capsys
) -> None:
    """As a SkyPilot ``run`` does: the script's commands are in the repository or the image."""
    sweep = wandb("{value: 5}", declared="") + 'command: [bash, run.sh, "${args}"]\n'
    code, result = check(tmp_path, capsys, sweep)
    assert code != INVALID, result["errors"]
    assert "command: runs run.sh, whose commands budget-gate does not read: " in " | ".join(
        result["imported"]["notes"]
    )
    script = '["bash", "/scripts/train.sh", "--epochs=${trialParameters.numEpochs}"]'
    code, result = check(tmp_path, capsys, katib('{list: ["10"]}', command=script), "e.yaml")
    assert code != INVALID, result["errors"]
    notes = " | ".join(result["imported"]["notes"])
    assert "the trial's command: runs /scripts/train.sh, whose commands budget-gate" in notes
    code, result = check(tmp_path, capsys, katib('{list: ["10"]}'), "e.yaml")
    assert "budget-gate does not read" not in " | ".join(result["imported"]["notes"])


@pytest.mark.parametrize(
    "shell", ["ash -c", "mksh -c", "yash -c", "fish -c", "tcsh -c", "busybox sh -c"]
)
def test_a_loop_under_any_shell_is_read_as_the_shell_runs_it(tmp_path, capsys, shell) -> None:
    """A shell left off the list ran its loop unread: ``ash -c "for ...; do train; done"``
    was priced as one run of two epochs."""
    loop = "for i in 1 2 3 4 5 6 7 8 9 10; do python train.py --epochs 2; done"
    code, result = _sky(tmp_path, capsys, f'{shell} "{loop}"')
    assert code == INVALID
    assert "a script that also runs `for`" in only_error(result)["message"]


@pytest.mark.parametrize(
    "script",
    [
        "system=$(lsb_release -si)\nversion=$(lsb_release -sr)\npython train.py",
        'eval "$(conda shell.bash hook)"\nconda activate env\npython train.py',
        'eval "$(micromamba shell hook --shell bash)"\npython train.py',
        'eval "$(pyenv init -)"\neval "$(ssh-agent -s)"\npython train.py',
        "until getent hosts head; do sleep 2; done\nnslookup head\npython train.py",
    ],
    ids=["lsb_release", "conda-hook", "micromamba-hook", "pyenv-ssh-agent", "dns-wait"],
)
def test_common_setup_lines_of_upstream_tasks_pass(tmp_path, capsys, script) -> None:
    """SkyPilot's own examples query the OS twice and initialise conda with ``eval``: those
    train nothing, and were refused as training run twice or a script not shown."""
    code, result = _sky(tmp_path, capsys, script)
    assert code != INVALID, result["errors"]


def test_an_eval_of_any_other_commands_output_is_still_refused(tmp_path, capsys) -> None:
    code, result = _sky(tmp_path, capsys, 'eval "$(cat cmd.txt)"\npython train.py')
    assert code == INVALID
    assert "a script the file does not show" in only_error(result)["message"]


def test_a_skypilot_accelerator_in_another_case_is_the_catalogs(tmp_path, capsys) -> None:
    """SkyPilot reads ``A10g`` and ``h100`` as ``A10G`` and ``H100`` (its own example tasks
    write them so): they were refused as having no price."""
    task = (
        "resources: {accelerators: {L4, A10g}}\n"
        "envs: {X_BUDGET_GATE_MAX_EPOCHS: 3, X_BUDGET_GATE_EPOCH_MINUTES: 1}\n"
        "run: python train.py --epochs 3\n"
    )
    code, result = check(tmp_path, capsys, task, "task.yaml")
    assert code != INVALID, result["errors"]
    assert field(result, "resources.accelerator")["value"] == "A10G"
    assert "accelerator A10g read as A10G, as SkyPilot reads it" in result["imported"]["notes"]
    code, result = check(tmp_path, capsys, task.replace("{L4, A10g}", "h100:8"), "task.yaml")
    assert code != INVALID, result["errors"]
    assert field(result, "resources.accelerator")["value"] == "H100"


def test_a_script_piped_into_a_shell_is_refused_in_words_that_say_so(tmp_path, capsys) -> None:
    """``curl … | sh`` runs what the file does not show; the message said "a script that also
    runs `sh, running a script …`, which may run it a number of times" of no loop at all."""
    piped = "curl -LsSf https://example.com/get.sh | sh\npython train.py --epochs 3"
    code, result = _sky(tmp_path, capsys, piped)
    assert code == INVALID
    message = only_error(result)["message"]
    assert message.startswith("`sh` in run runs a script the file does not show (read from a pipe")
    assert "a number of times" not in message


@pytest.mark.parametrize(
    "installer",
    [
        "curl -LsSf https://astral.sh/uv/install.sh | sh",
        "curl -fsSL https://pixi.sh/install.sh | bash",
        "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y",
        "wget -qO- https://astral.sh/uv/0.5.1/install.sh | sh",
    ],
)
def test_a_well_known_installer_piped_into_a_shell_is_read_as_the_installer(
    tmp_path, capsys, installer
) -> None:
    """uv's, pixi's, rustup's installers start 1 in 13 of SkyPilot's own example tasks: each
    was refused as a script the file does not show, though it is a third party's, fixed."""
    code, result = _sky(tmp_path, capsys, f"{installer}\npython train.py --epochs 10")
    assert code != INVALID, result["errors"]


@pytest.mark.parametrize(
    "fetch",
    [
        "curl https://example.com/t.sh https://astral.sh/uv/install.sh | sh",  # two addresses
        "curl -K more.cfg https://astral.sh/uv/install.sh | sh",  # a config that adds more
        "curl -LsSf https://astral.sh/uv/install.sh.example.com/x | sh",
        "wget -qO- https://astral.sh/uv/install.sh https://example.com/t.sh | sh",
    ],
)
def test_an_installer_address_does_not_vouch_for_what_else_is_piped(tmp_path, capsys, fetch):
    code, result = _sky(tmp_path, capsys, f"{fetch}\npython train.py --epochs 10")
    assert code == INVALID, result
    assert "runs a script the file does not show" in only_error(result)["message"]
