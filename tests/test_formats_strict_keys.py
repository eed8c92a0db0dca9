"""A key the engine does not have, or a near miss of an extension prefix, is said, not dropped.

Each file is written to disk and checked by the real CLI under a policy whose ``defaults:``
would otherwise fill what the dropped key said: exit 3, at the key's ``file:line:col``,
with the fix. Keys the engines accept (their schemas' full lists) still pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.cli import main

HEAD = "apiVersion: budget-gate/v1\nkind: Policy\n"
DEFAULT = HEAD + (
    "teams: [vision]\n"
    "defaults:\n"
    "  accelerator: A100-80GB\n"
    "  gpus_per_trial: 1\n"
    "  max_epochs: 10\n"
    "  epoch_minutes: 3\n"
    "  labels: {cost-center: cc-0, environment: research, workload-type: training}\n"
    "  quality_gate: [{metric: val_acc, op: '>=', value: 0.5}]\n"
)
VISION = HEAD + "limits:\n  max_trial_cost: 0.01\n"  # any trial is a violation (exit 1)

NO_KIND = """\
# a budget-gate spec whose author left out apiVersion and kind
metadata:
  name: big-run
  team: vision
  labels: {cost-center: cc-1042, environment: research, workload-type: training}
resources:
  accelerator: H200
  gpus_per_trial: 64
workload:
  max_epochs: 4000
  epoch_minutes: 30
search:
  strategy: grid
  parameters:
    lr: {values: [0.1, 0.01, 0.001, 0.0001]}
  seeds: [0, 1, 2, 3]
"""


def check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``budget-gate check FILE`` under the policies above: exit code, output, the file."""
    policies = tmp_path / "policies"
    policies.mkdir(exist_ok=True)
    (policies / "default.yaml").write_text(DEFAULT)
    (policies / "vision.yaml").write_text(VISION)
    target = tmp_path / "config.yaml"
    target.write_text(text)
    code = main(["check", "--policy-dir", str(policies), str(target)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err, str(target)


def test_a_spec_without_apiversion_and_kind_is_refused_not_read_as_a_skypilot_task(
    tmp_path, capsys
):
    code, out, file = check(tmp_path, NO_KIND, capsys)
    assert code == 3
    assert f"{file}:2:1: metadata is not a key of a SkyPilot task" in out
    assert "add `apiVersion: budget-gate/v1` and `kind: Experiment`" in out


@pytest.mark.parametrize(
    ("text", "at"),
    [
        ("resources:\n  accelerator: H100\n  gpus_per_trial: 8\nrun: python train.py\n", "2:3"),
        ("resources:\n  gpus_per_trial: 8\nrun: python train.py\n", "2:3"),
        ("run: python train.py\nworkload: {max_epochs: 10}\n", "2:1"),
        ("num_nodes: 2\nstopping: {max_trial_hours: 1}\n", "2:1"),
        ("run: python train.py\nquality_gate: []\n", "2:1"),
    ],
)
def test_a_budget_gate_key_in_a_task_says_the_spec_lost_its_first_lines(tmp_path, capsys, text, at):
    code, out, file = check(tmp_path, text, capsys)
    assert code == 3
    assert f"{file}:{at}:" in out
    assert "looks like a budget-gate spec without its apiVersion/kind lines" in out


TASK = "resources:\n  accelerators: H100:8\nrun: python train.py --epochs 10\n"


@pytest.mark.parametrize(
    ("text", "at", "said"),
    [
        (TASK + "num_node: 4\n", "4:1", "did you mean 'num_nodes'"),
        (
            "resources:\n  acelerators: H100:8\nrun: python train.py --epochs 10\n",
            "2:3",
            "did you mean 'accelerators'",
        ),
        (TASK + "foo: 1\n", "4:1", "remove foo"),
        (
            "resources:\n  any_of:\n    - {accelerators: H100:8, use_sopt: true}\nrun: x\n",
            "3:30",
            "did you mean 'use_spot'",
        ),
    ],
)
def test_a_key_skypilots_task_schema_lacks_is_refused_at_its_line(tmp_path, capsys, text, at, said):
    code, out, file = check(tmp_path, text, capsys)
    assert code == 3
    assert f"{file}:{at}:" in out and said in out


@pytest.mark.parametrize(
    "resources",
    ["  gpus: H100:8\n", "  any_of:\n    - {gpus: H100:8}\n    - {accelerators: A100:8}\n"],
)
def test_skypilots_gpus_alias_is_read_as_accelerators(tmp_path, capsys, resources):
    """SkyPilot renames ``gpus`` to ``accelerators`` before it checks its schema: refused as
    an unknown key ("did you mean 'cpus'?"), two upstream examples could not be checked."""
    text = f"resources:\n{resources}run: python train.py --epochs 10\n"
    code, out, _ = check(tmp_path, text, capsys)
    assert code != 3, out
    assert "H100" in out and "8 GPUs per trial" in out
    code, out, file = check(
        tmp_path, "resources:\n  gpus: H100:8\n  accelerators: H100:8\nrun: x\n", capsys
    )
    assert code == 3
    assert f"{file}:2:3: resources gives both gpus and accelerators, which SkyPilot refuses" in out


def test_skypilots_own_aliases_are_the_ones_read():
    resources = pytest.importorskip("sky.resources")
    from gate.formats.spelling import SKYPILOT_ALIASES

    assert resources.RESOURCE_CONFIG_ALIASES == SKYPILOT_ALIASES


def test_a_task_of_skypilots_own_keys_and_a_null_key_passes(tmp_path, capsys):
    """A key whose value is null sets nothing, so it is passed over (SkyPilot itself drops
    its known keys' nulls and refuses unknown ones: laxer here, and harmless)."""
    text = (
        "name: t\nworkdir: .\nnum_nodes: 1\nfile_mounts: {/data: s3://b}\n"
        "envs: {X_BUDGET_GATE_TEAM: vision, BUDGET_GATE_SPEC: x.yaml, WANDB_MODE: offline}\n"
        "resources:\n  accelerators: A100-80GB:1\n  use_spot: false\n  disk_size: 100\n"
        "  infra: aws\n  job_recovery: {max_restarts_on_errors: 1}\n  spot_recovery:\n"
        "setup: pip install -r r.txt\nrun: python train.py --epochs 10\nexperimental:\n"
    )
    code, out, _ = check(tmp_path, text, capsys)
    assert code == 1, out  # the vision policy's cost limit: read, and judged by its team
    assert "is not a key" not in out


def test_the_task_keys_are_skypilots_own_schema():
    schemas = pytest.importorskip("sky.utils.schemas")
    from gate.formats.spelling import SKYPILOT_RESOURCES, SKYPILOT_TASK

    assert set(schemas.get_task_schema()["properties"]) == SKYPILOT_TASK
    assert set(schemas.get_resources_schema()["properties"]) == SKYPILOT_RESOURCES


SWEEP = """\
method: grid
parameters:
  lr: {values: [0.1, 0.01]}
  epochs: {value: 10}
# x-budget-gate: {team: vision}
"""


@pytest.mark.parametrize(
    ("text", "at", "said"),
    [
        (SWEEP.replace("method: grid\n", "method: grid\nfoo: 1\n"), "2:1", "remove foo"),
        (SWEEP.replace("method: grid\n", "method: grid\nruncap: 1\n"), "2:1", "'run_cap'"),
        (SWEEP.replace("{values: [0.1", "{valuse: [0.1"), "3:8", "'value' or 'values'"),
        (
            SWEEP + "metric: {name: acc, goal: maximize, targt: 0.9}\n",
            "6:37",
            "did you mean 'target'",
        ),
        (
            SWEEP + "early_terminate: {type: hyperband, min_itr: 3}\n",
            "6:36",
            "did you mean 'min_iter'",
        ),
        (
            SWEEP.replace(
                "  epochs:", "  opt:\n    parameters: {lr: {value: 1}}\n    valu: 2\n  e:"
            ),
            "6:5",
            "remove valu",
        ),
    ],
)
def test_a_key_wandbs_sweeps_schema_lacks_is_refused_at_its_line(tmp_path, capsys, text, at, said):
    code, out, file = check(tmp_path, text, capsys)
    assert code == 3
    assert f"{file}:{at}:" in out and said in out


def test_a_sweep_of_every_top_level_key_wandb_accepts_is_read(tmp_path, capsys):
    text = SWEEP + (
        "program: train.py\nproject: p\nentity: e\ndescription: d\nname: n\nrun_cap: 2\n"
        "command: [python, train.py, --epochs=10]\ncontroller: {type: local}\njob: j\n"
        "image_uri: i\nlaunch: {queue: q}\n"
        "metric: {name: acc, goal: maximize, target: 0.9, impute: worst}\n"
        "early_terminate: {type: hyperband, min_iter: 3, eta: 2, strict: true}\n"
    )
    code, out, _ = check(tmp_path, text, capsys)
    assert code == 1, out  # read, and judged by the vision policy
    assert "is not a key" not in out


KATIB = """\
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: k1
  annotations:
    budget-gate/team: vision
spec:
  objective: {type: maximize, objectiveMetricName: acc}
  algorithm: {algorithmName: random}
  maxTrialCount: 12
  parallelTrialCount: 3
  parameters:
    - name: lr
      parameterType: double
      feasibleSpace: {min: "0.01", max: "0.1"}
  trialTemplate:
    primaryContainerName: training
    trialParameters:
      - {name: lr, reference: lr}
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            containers:
              - name: training
                image: x
                command: [python, train.py, "--lr=${trialParameters.lr}", "--epochs=10"]
                resources: {limits: {nvidia.com/gpu: 1}}
            restartPolicy: Never
"""


@pytest.mark.parametrize(
    ("old", "new", "at", "said"),
    [
        ("  parallelTrialCount: 3", "  parallelTrialCont: 1", "11:3", "'parallelTrialCount'"),
        ("  annotations:", "  anotations:", "5:3", "did you mean 'annotations'"),
        ('{min: "0.01"', '{mn: "0.01", min: "0.01"', "15:23", "did you mean 'min'"),
    ],
)
def test_a_near_miss_of_a_katib_field_is_refused_at_its_line(tmp_path, capsys, old, new, at, said):
    """Katib's CRD keeps any field and its controller drops those its Go types lack."""
    code, out, file = check(tmp_path, KATIB.replace(old, new), capsys)
    assert code == 3
    assert f"{file}:{at}:" in out and said in out


def test_a_katib_experiment_as_written_and_one_with_a_field_of_its_own_are_read(tmp_path, capsys):
    assert check(tmp_path, KATIB, capsys)[0] == 1
    code, out, _ = check(
        tmp_path, KATIB.replace("  maxTrialCount", "  owner: me\n  maxTrialCount"), capsys
    )
    assert code == 1, out


OPTUNA = """\
defaults:
  - override hydra/sweeper: optuna
x-budget-gate: {team: vision}
trainer: {max_epochs: 10}
hydra:
  sweeper:
    n_trials: 4
    n_jobs: 2
    params:
      lr: interval(0.001, 0.1)
"""


@pytest.mark.parametrize(
    ("text", "at", "said"),
    [
        (OPTUNA.replace("n_trials: 4", "n_trial: 500"), "7:5", "did you mean 'n_trials'"),
        (OPTUNA.replace("n_jobs: 2", "n_job: 1"), "8:5", "did you mean 'n_jobs'"),
        (
            OPTUNA.replace("  - override hydra/sweeper: optuna\n", "  - _self_\n")
            .replace("    n_trials: 4\n    n_jobs: 2\n", "")
            .replace("params:", "param:"),
            "7:5",
            "did you mean 'params'",
        ),
    ],
)
def test_a_key_the_hydra_sweepers_config_lacks_is_refused_at_its_line(
    tmp_path, capsys, text, at, said
):
    """Hydra merges hydra.sweeper into the sweeper's dataclass, which refuses other keys."""
    code, out, file = check(tmp_path, text, capsys)
    assert code == 3
    assert f"{file}:{at}:" in out and said in out


def test_an_optuna_sweeper_of_its_own_keys_is_read(tmp_path, capsys):
    text = OPTUNA + "    direction: maximize\n    study_name: s\n    storage: null\n"
    code, out, _ = check(tmp_path, text, capsys)
    assert code == 1, out


def test_a_hydra_group_file_with_a_tasks_keys_is_said_to_be_hydras(tmp_path, capsys):
    """lightning-hydra-template's trainer/ddp.yaml has num_nodes: read as a task before."""
    text = "defaults:\n  - default\nstrategy: ddp\naccelerator: gpu\nnum_nodes: 1\n"
    code, out, file = check(tmp_path, text, capsys)
    assert code == 3
    assert f"{file}:1:1: defaults is not a key of a SkyPilot task, but of a Hydra config" in out


def test_a_wandb_exponent_without_a_dot_is_said_to_be_text(tmp_path, capsys):
    """``min: 5e-6`` is a string to YAML 1.1 (PyYAML, W&B's reader), which W&B refuses: the
    message said "a uniform distribution needs min <= max", of two numbers in order."""
    text = (
        "method: random\nrun_cap: 4\nparameters:\n  lr: {min: 5e-6, max: 0.001}\n"
        "  epochs: {value: 3}\n# x-budget-gate: {team: vision}\n"
    )
    code, out, file = check(tmp_path, text, capsys)
    assert code == 3
    assert f"{file}:4:7: parameters.lr: min '5e-6' is text, not a number" in out
    assert "write it with a dot, e.g. 5.0e-6" in out
