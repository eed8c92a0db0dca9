"""Red-team findings on W&B sweeps and Katib Experiments: what the engines run, read.

Each case is a file a W&B agent or Katib launches with more epochs or GPUs than
``budget-gate check`` priced: a value Katib writes into the trial's text, a variable
Kubernetes, a shell or the agent expands, a metrics collector Katib injects, a TrainJob's
args, init containers one after another, a hook or a probe that trains. Every file goes
through ``budget-gate check FILE --format json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_formats_epochs import at, field, only_error
from tests.test_formats_epochs import check as epochs_check

INVALID = 3

KATIB = """\
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: injected
  annotations:
    budget-gate/accelerator: H100
    budget-gate/epoch_minutes: "6"
spec:
  parallelTrialCount: 2
  maxTrialCount: 4
  objective: {{type: minimize, objectiveMetricName: loss}}
  algorithm: {{algorithmName: random}}
  parameters:
    - name: lr
      parameterType: double
      feasibleSpace: {{min: "0.01", max: "0.05"}}
    - name: extra
      parameterType: categorical
      feasibleSpace: {{list: {listed}}}
{collector}\
  trialTemplate:
    primaryContainerName: training
    trialParameters:
      - {{name: learningRate, reference: lr}}
      - {{name: extra, reference: extra}}
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            restartPolicy: Never
{init}\
            containers:
              - name: training
                image: train
                command: {command}
{more}\
                resources:
                  limits:
                    nvidia.com/gpu: 1
"""
PLAIN = '["python3", "train.py", "--epochs=1", "--lr=${trialParameters.learningRate}"]'


def katib(
    *,
    command: str = PLAIN,
    listed: str = '["a", "b"]',
    more: str = "",
    init: str = "",
    collector: str = "",
) -> str:
    return KATIB.format(command=command, listed=listed, more=more, init=init, collector=collector)


def check(tmp_path: Path, capsys: Any, text: str, name: str = "experiment.yaml") -> Any:
    """``budget-gate check`` under a policy that asks nothing more: the exit code, the result."""
    return epochs_check(tmp_path, capsys, text, name)


def epochs_of(result: Any) -> int:
    return int(field(result, "workload.max_epochs")["value"])


def gpus_of(result: Any) -> int:
    return int(field(result, "resources.gpus_per_trial")["value"])


def test_the_plain_experiment_trains_its_one_epoch(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, katib())
    assert code != INVALID, result["errors"]
    assert (epochs_of(result), gpus_of(result)) == (1, 1)


# --- 1. Katib writes a list value into the trial's text: a whole flag, a flag's name -------


TRAIN = '"python3", "train.py", "--epochs=1", '


@pytest.mark.parametrize(
    ("command", "listed"),
    [  # Katib's generator replaces ${trialParameters.NAME} in the trial's JSON text
        (f'[{TRAIN}"${{trialParameters.extra}}"]', '["--epochs=1000", "--x=1"]'),
        (f'[{TRAIN}"${{trialParameters.extra}}", "1000"]', '["--epochs", "--x"]'),
        (f'[{TRAIN}"--${{trialParameters.extra}}=1000"]', '["epochs", "x"]'),
        (f'[{TRAIN}"${{trialParameters.extra}}"]', '["trainer.max_epochs=1000"]'),
        (
            '["sh", "-c", "python3 train.py --epochs 1 --lr ${trialParameters.extra}"]',
            '["0.1 --epochs 1000", "0.2"]',
        ),
    ],
)
def test_a_list_value_katib_writes_into_the_command_is_read(
    tmp_path, capsys, command, listed
) -> None:
    code, result = check(tmp_path, capsys, katib(command=command, listed=listed))
    assert code != INVALID, result["errors"]
    assert epochs_of(result) == 1000
    assert "${trialParameters.extra} = " in field(result, "workload.max_epochs")["detail"]


def test_a_list_value_that_would_break_the_trials_json_is_refused(tmp_path, capsys) -> None:
    """``0.1", "--epochs=1000`` adds an argv word once Katib writes it into the JSON text."""
    listed = "['0.1\", \"--epochs=1000', '0.2']"
    command = '["python3", "train.py", "--epochs=1", "--lr=${trialParameters.extra}"]'
    text = katib(command=command, listed=listed)
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    error = only_error(result)
    assert "Katib writes it into the trial's JSON text" in error["message"]
    assert (error["line"], error["col"]) == at(text, "'0.1")


# --- 2. Kubernetes expands $(NAME), a shell $NAME, from the container's env ----------------


@pytest.mark.parametrize(
    "command",
    [
        '["python3", "train.py", "--epochs=1", "$(EXTRA)"]',
        '["sh", "-c", "python3 train.py --epochs 1 $(EXTRA)"]',
        '["sh", "-c", "python3 train.py --epochs 1 $EXTRA"]',
        '["sh", "-c", "python3 train.py --epochs 1 ${EXTRA}"]',
    ],
)
def test_flags_the_env_hands_the_command_are_read(tmp_path, capsys, command) -> None:
    env = '                env: [{name: EXTRA, value: "--epochs=1000"}]\n'
    code, result = check(tmp_path, capsys, katib(command=command, more=env))
    assert code != INVALID, result["errors"]
    assert epochs_of(result) == 1000


# --- 3. A Custom metrics collector: a sidecar Katib injects into the trial's pods ----------

COLLECTOR = """\
  metricsCollectorSpec:
    collector:
      kind: Custom
      customCollector:
        name: collector
        image: collect
        command: ["python3", "train.py", "--epochs=1000"]
        resources: {limits: {nvidia.com/gpu: 8}}
"""


def test_a_custom_metrics_collectors_gpus_and_training_count(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, katib(collector=COLLECTOR))
    assert code != INVALID, result["errors"]
    assert (gpus_of(result), epochs_of(result)) == (9, 1000)


# --- 4. A TrainJob's trainer: its args and env are the program's too -----------------------

TRAINJOB = """\
      apiVersion: trainer.kubeflow.org/v1alpha1
      kind: TrainJob
      spec:
        runtimeRef: {{name: torch-distributed}}
        trainer:
          numNodes: 1
          command: ["python3", "train.py", "--epochs=1"]
{extra}\
          resourcesPerNode: {{limits: {{nvidia.com/gpu: 1}}}}
"""


@pytest.mark.parametrize(
    "extra",
    ['          args: ["--epochs=1000"]\n', '          env: [{name: NUM_EPOCHS, value: "1000"}]\n'],
)
def test_a_trainjobs_args_and_env_count(tmp_path, capsys, extra) -> None:
    text = katib()
    text = text[: text.index("      apiVersion: batch/v1")] + TRAINJOB.format(extra=extra)
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    assert epochs_of(result) == 1000


# --- 5. Plain init containers run to their end, one by one, before the main containers -----

INIT = """\
            initContainers:
              - name: pretrain
                image: train
                command: ["python3", "pretrain.py", "--epochs=500"]
              - name: sidecar
                image: train
                restartPolicy: Always
                command: ["python3", "side.py", "--epochs=7"]
"""


def test_init_containers_train_before_the_main_containers(tmp_path, capsys) -> None:
    command = '["python3", "train.py", "--epochs=1000"]'
    code, result = check(tmp_path, capsys, katib(command=command, init=INIT))
    assert code != INVALID, result["errors"]
    assert epochs_of(result) == 1500  # 500, then the most of 1000 and its sidecar's 7


# --- 6. A hook or a probe that trains ------------------------------------------------------


@pytest.mark.parametrize(
    "hook",
    [
        "lifecycle: {postStart: {exec: {command: [python3, train.py, --epochs=1000]}}}",
        'livenessProbe: {exec: {command: [sh, -c, "python3 train.py --epochs 1000"]}}',
        'startupProbe: {exec: {command: [python3, train.py, --epochs, "1000"]}}',
    ],
)
def test_training_in_a_hook_or_a_probe_is_refused(tmp_path, capsys, hook) -> None:
    text = katib(more=" " * 16 + hook + "\n")
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    error = only_error(result)
    assert "training a hook or a probe runs is not priced" in error["message"]
    assert error["line"] == at(text, "--epochs")[0]


def test_a_probe_that_trains_nothing_passes(tmp_path, capsys) -> None:
    more = "                livenessProbe: {exec: {command: [cat, /tmp/healthy]}}\n"
    code, result = check(tmp_path, capsys, katib(more=more))
    assert code != INVALID, result["errors"]


# --- 7. NVIDIA's and AMD's GPUs of one container --------------------------------------------


def test_nvidia_and_amd_gpus_of_one_container_add_up(tmp_path, capsys) -> None:
    text = katib().replace(
        "nvidia.com/gpu: 1", "nvidia.com/gpu: 1\n                    amd.com/gpu: 8"
    )
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    assert gpus_of(result) == 9


# --- 8. W&B: the agent writes ${envvar:NAME} over the macro, wherever it is in a word -------

SWEEP = """\
method: random
run_cap: 5
command: {command}
parameters:
  lr: {{values: [0.1, 0.01]}}
  epochs: {{value: 2}}
# x-budget-gate: {{accelerator: A100-80GB, gpus_per_trial: 1, epoch_minutes: 1}}
"""


@pytest.mark.parametrize(
    "command",
    [
        '[python, train.py, "${args}", "${envvar:EXTRA}"]',
        '[python, train.py, "${args}", "--${envvar:FLAG}=1000"]',
        '[sh, -c, "python train.py ${envvar:EXTRA}"]',
        '[bash, -c, "--data=${envvar:DATA}", python, train.py]',
        '["${envvar:RUNNER}"]',
    ],
)
def test_an_agent_variable_that_may_add_words_is_refused(tmp_path, capsys, command) -> None:
    text = SWEEP.format(command=command)
    code, result = check(tmp_path, capsys, text, "sweep.yaml")
    assert code == INVALID
    error = only_error(result)
    assert "${envvar:" in error["message"]
    assert error["line"] == 3


def test_an_agent_variable_inside_an_options_value_passes(tmp_path, capsys) -> None:
    text = SWEEP.format(command='[python, train.py, "--data=${envvar:DATA}/set", "${args}"]')
    code, result = check(tmp_path, capsys, text, "sweep.yaml")
    assert code != INVALID, result["errors"]
    assert epochs_of(result) == 2


# --- 9. A list value Katib writes where the pods' GPUs are decided ---------------------------


def test_a_list_value_that_names_the_gpu_resource_counts_its_gpus(tmp_path, capsys) -> None:
    """``"${trialParameters.extra}": 8`` under limits: Katib writes ``nvidia.com/gpu`` there."""
    text = katib(listed='["nvidia.com/gpu", "cpu"]').replace(
        "nvidia.com/gpu: 1", '"${trialParameters.extra}": 8'
    )
    annotated = text.replace(
        '    budget-gate/epoch_minutes: "6"\n',
        '    budget-gate/epoch_minutes: "6"\n    budget-gate/gpus_per_trial: "1"\n',
    )
    code, result = check(tmp_path, capsys, annotated)
    assert code == INVALID
    assert "but the engine runs 8" in only_error(result)["message"]
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    assert gpus_of(result) == 8


SIDECAR_BY_VALUE = """\
            initContainers:
              - name: side
                image: train
                restartPolicy: "${trialParameters.extra}"
                resources: {limits: {nvidia.com/gpu: 8}}
"""


def test_a_list_value_that_makes_an_init_container_a_sidecar_counts(tmp_path, capsys) -> None:
    """``restartPolicy: Always`` runs the init container beside the main one: 8 + 1 GPUs."""
    text = katib(listed='["Always", "Never"]', init=SIDECAR_BY_VALUE)
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    assert gpus_of(result) == 9


# --- 10. GPUs a trial's container reaches without asking for them ---------------------------


@pytest.mark.parametrize(
    ("more", "said"),
    [
        (
            "env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]",
            "sets NVIDIA_VISIBLE_DEVICES=all",
        ),
        ("securityContext: {privileged: true}", "is privileged"),
        ("securityContext: {capabilities: {add: [CAP_SYS_ADMIN]}}", "SYS_ADMIN"),
        (
            "volumeMounts: [{name: gpus, mountPath: /var/run/nvidia-container-devices/all}]",
            "the device list of NVIDIA's toolkit",
        ),
    ],
)
def test_a_container_that_reaches_gpus_without_asking_is_refused(
    tmp_path, capsys, more, said
) -> None:
    """As the admission refuses it: the NVIDIA toolkit hands the node's GPUs over."""
    text = katib(more=" " * 16 + more + "\n")
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    error = only_error(result)
    assert said in error["message"]
    assert error["line"] == at(text, "- name: training")[0]


@pytest.mark.parametrize("resource", ["huawei.com/Ascend910", "tencent.com/vcuda-core"])
def test_an_accelerator_of_another_vendor_is_refused_not_free(tmp_path, capsys, resource):
    text = katib().replace("nvidia.com/gpu: 1", f"{resource}: 8")
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    assert "an accelerator budget-gate does not count" in only_error(result)["message"]


# --- 11. A variable the shell splits into words of the training command, from outside -------


def test_a_sweep_script_variable_from_the_agents_environment_is_refused(tmp_path, capsys):
    """``$EXTRA="--epochs 1000"`` in the agent's environment: two words of the command."""
    command = '[bash, -c, "python train.py --epochs=2 $EXTRA"]'
    code, result = check(tmp_path, capsys, SWEEP.format(command=command), "sweep.yaml")
    assert code == INVALID
    error = only_error(result)
    assert "$EXTRA in command: the shell makes it words" in error["message"]
    assert error["line"] == 3


@pytest.mark.parametrize("env", ["", "                envFrom: [{configMapRef: {name: extra}}]\n"])
def test_a_trial_script_variable_not_in_the_containers_env_is_refused(tmp_path, capsys, env):
    command = '["sh", "-c", "python3 train.py --epochs 1 ${EXTRA}"]'
    text = katib(command=command, more=env)
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    error = only_error(result)
    assert "${EXTRA} in the trial's command: the shell makes it words" in error["message"]
    assert error["line"] == at(text, "${EXTRA}")[0]


@pytest.mark.parametrize(
    "script",
    ["python3 train.py --epochs 1 $(cat /etc/args)", "python3 train.py --epochs 1 `cat args`"],
)
def test_a_trial_script_command_substitution_is_refused(tmp_path, capsys, script) -> None:
    text = katib(command=f'["sh", "-c", "{script}"]')
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    assert "a command's output" in only_error(result)["message"]


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ("python3 train.py --epochs 1 {--epochs,1000}", "brace expansion"),
        ("python3 train.py --epochs 1 *", "names of files"),
        ("python3 train.py --epochs 1 x$(cat args)", "a command's output"),
    ],
)
def test_a_trial_script_word_the_shell_expands_into_flags_is_refused(
    tmp_path, capsys, script, said
) -> None:
    """``bash -c`` brace-expands ``{--epochs,1000}`` into two words, a glob may match a file
    named ``--epochs=1000``, and an unquoted output splits wherever it sits in a word."""
    for text in (
        katib(command=f'["bash", "-c", "{script}"]'),
        SWEEP.format(command=f'[bash, -c, "{script}"]'),
    ):
        code, result = check(tmp_path, capsys, text, "sweep.yaml")
        assert code == INVALID, result
        assert said in only_error(result)["message"]


@pytest.mark.parametrize(
    "command",
    [
        '["sh", "-c", "python3 train.py --epochs 1 --data $DATA_DIR --out $(pwd)/o"]',
        '["sh", "-c", "python3 train.py --epochs 1 \'*\' --name run-$(date +%s)"]',
        '["python3", "train.py", "--epochs=1", "$EXTRA", "{--epochs,1000}", "*"]',  # no shell
    ],
)
def test_a_variable_as_an_options_value_or_outside_a_script_passes(tmp_path, capsys, command):
    code, result = check(tmp_path, capsys, katib(command=command))
    assert code != INVALID, result["errors"]
    assert epochs_of(result) == 1


def test_a_long_list_of_numbers_is_read_without_a_variant_each(tmp_path, capsys) -> None:
    """A seed list of 2,000 numbers: a number makes no flag, so it needs no reading of its own."""
    listed = "[" + ", ".join(f'"{i}"' for i in range(2000)) + "]"
    command = f'[{TRAIN}"--seed=${{trialParameters.extra}}"]'
    code, result = check(tmp_path, capsys, katib(command=command, listed=listed))
    assert code != INVALID, result["errors"]
    assert epochs_of(result) == 1


def test_a_date_in_the_trial_is_text_to_the_reading_of_each_value(tmp_path, capsys) -> None:
    """An unquoted timestamp Kubernetes reads as text: no shape error for the variants."""
    text = katib(command=f'[{TRAIN}"${{trialParameters.extra}}"]').replace(
        "            restartPolicy: Never\n",
        "            restartPolicy: Never\n            x: {made: 2024-01-01 10:00:00}\n",
    )
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]


@pytest.mark.parametrize(
    "script", ["python train.py $@", "python train.py $*", "python t.py $1 $2"]
)
def test_a_value_a_shell_splits_into_flags_is_refused(tmp_path, capsys, script) -> None:
    """The agent hands ``--lr=0.1 --epochs 1000`` as one word; an unquoted ``$@`` splits it."""
    text = SWEEP.format(command=f'[sh, -c, "{script}", sh, "${{args}}"]').replace(
        "lr: {values: [0.1, 0.01]}", 'lr: {values: ["0.1 --epochs 1000"]}'
    )
    code, result = check(tmp_path, capsys, text, "sweep.yaml")
    assert code == INVALID
    error = only_error(result)
    assert "split at its spaces" in error["message"]
    assert error["line"] == at(text, "lr:")[0]


def test_a_value_with_spaces_handed_to_no_shell_passes(tmp_path, capsys) -> None:
    text = SWEEP.format(command='[python, train.py, "${args}"]').replace(
        "lr: {values: [0.1, 0.01]}", 'lr: {values: ["0.1 --epochs 1000"]}'
    )
    code, result = check(tmp_path, capsys, text, "sweep.yaml")
    assert code != INVALID, result["errors"]
    assert epochs_of(result) == 2


def test_a_word_joining_two_listed_values_is_refused(tmp_path, capsys) -> None:
    """``--${a}${b}=1000`` with ``a: [ep, x]``, ``b: [ochs, y]`` makes ``--epochs=1000`` only
    when both are written at once; each value was read alone and it passed at 1 epoch."""
    text = katib(
        command='["python3", "train.py", "--epochs=1", '
        '"--${trialParameters.extra}${trialParameters.b}=1000"]',
        listed='["ep", "x"]',
    )
    text = text.replace(
        "  trialTemplate:\n",
        '    - name: b\n      parameterType: categorical\n      feasibleSpace: {list: ["ochs",'
        ' "y"]}\n  trialTemplate:\n',
    ).replace(
        "      - {name: extra, reference: extra}\n",
        "      - {name: extra, reference: extra}\n      - {name: b, reference: b}\n",
    )
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    message = result["errors"][0]["message"]
    assert "joins the listed values of trial parameters b and extra" in message


@pytest.mark.parametrize(
    "env",
    [
        "                envFrom: [{configMapRef: {name: train-args}}]\n",
        "                env: [{name: EXTRA, valueFrom: {configMapKeyRef: {name: a, key: b}}}]\n",
    ],
    ids=["envFrom", "valueFrom"],
)
def test_a_kubernetes_reference_to_a_value_outside_the_file_is_refused(tmp_path, capsys, env):
    """Kubernetes writes ``$(EXTRA)`` from the container's env, no shell needed: a value
    from a ConfigMap may be ``--epochs=1000``."""
    text = katib(command='["python3", "train.py", "--epochs=1", "$(EXTRA)"]', more=env)
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    message = result["errors"][0]["message"]
    assert "$(EXTRA) in the trial's command: Kubernetes writes there the value of EXTRA" in message


def test_a_kubernetes_reference_through_another_env_value_is_followed(tmp_path, capsys) -> None:
    """``B: $(A)`` with ``A: --epochs=1000``: Kubernetes expands a value from the entries
    before it, so ``$(B)`` in the command trains 1000 epochs."""
    env = '                env: [{name: A, value: "--epochs=1000"}, {name: B, value: "$(A)"}]\n'
    text = katib(command='["python3", "train.py", "--epochs=1", "$(B)"]', more=env)
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    assert epochs_of(result) == 1000


def test_a_katib_pod_annotation_that_asks_the_runtime_for_devices_is_refused(tmp_path, capsys):
    """``cdi.k8s.io/x: nvidia.com/gpu=all`` on the trial's pods: a CDI-enabled runtime hands
    them every GPU of the node, whatever their resources ask."""
    text = katib().replace(
        "          spec:\n            restartPolicy: Never\n",
        "          metadata:\n            annotations: {cdi.k8s.io/train: nvidia.com/gpu=all}\n"
        "          spec:\n            restartPolicy: Never\n",
    )
    assert "cdi.k8s.io/train" in text
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    message = result["errors"][0]["message"]
    assert "the annotation cdi.k8s.io/train asks the container runtime for devices" in message


def test_an_option_value_from_outside_the_file_stays_that_options_value(tmp_path, capsys):
    """``--data-dir=$(DATA_DIR)`` with DATA_DIR from ``envFrom``: Kubernetes writes the value
    into that one argv word, which stays the option's value whatever it holds."""
    env = "                envFrom: [{configMapRef: {name: paths}}]\n"
    text = katib(command='["python3", "train.py", "--epochs=1", "--data=$(DATA_DIR)"]', more=env)
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    assert epochs_of(result) == 1


def test_a_pod_fact_in_a_katib_script_is_no_outside_word(tmp_path, capsys) -> None:
    """``$(POD)`` from ``fieldRef: metadata.name`` inside ``sh -c``: a pod's name holds no
    shell syntax, so it adds no words (a ConfigMap's value would)."""
    env = "                env: [{name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]\n"
    command = '["sh", "-c", "python3 train.py --epochs=1 --tag=$(POD)"]'
    code, result = check(tmp_path, capsys, katib(command=command, more=env))
    assert code != INVALID, result["errors"]
    secret = env.replace("fieldRef: {fieldPath: metadata.name}", "secretKeyRef: {name: s, key: k}")
    code, result = check(tmp_path, capsys, katib(command=command, more=secret))
    assert code == INVALID
