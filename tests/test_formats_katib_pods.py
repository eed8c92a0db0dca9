"""A Katib trial's GPUs are what its pods hold, as Kubernetes counts them; odd fields never crash.

A GPU quantity is read as Kubernetes reads it (``8000m`` is 8), sidecars hold their GPUs
beside the main containers, a plain init container runs before them (and may train), and a
Job that runs its pods several times over is refused. Every file goes through
``budget-gate check``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from tests.test_formats_sniff import check as check_text

INVALID = 3
KATIB = """\
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: pods
  annotations: {{budget-gate/accelerator: A100-80GB, budget-gate/epoch_minutes: "1"}}
spec:
  maxTrialCount: 2
  parallelTrialCount: 1
  algorithm: {{algorithmName: random}}
  objective: {{type: minimize, objectiveMetricName: loss{goal}}}
  parameters:
    - {{name: lr, parameterType: double, feasibleSpace: {{min: "0.01", max: "0.1"}}}}
  trialTemplate:
    trialParameters: [{{name: learningRate, reference: lr}}]
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
{job}        template:
          spec:
{init}            containers:
              - name: train
                command: [python3, train.py, --epochs=3]
                resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
"""


def check(tmp_path: Path, capsys: Any, *, gpus: str = "1", job: str = "", init: str = "",
          goal: str = "") -> tuple[int, Any]:  # fmt: skip
    policies = tmp_path / "policies"
    policies.mkdir(exist_ok=True)
    (policies / "default.yaml").write_text("apiVersion: budget-gate/v1\nkind: Policy\n")
    path = tmp_path / "experiment.yaml"
    path.write_text(KATIB.format(gpus=gpus, job=job, init=init, goal=goal))
    capsys.readouterr()
    code = main(["check", str(path), "--policy-dir", str(policies), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)["results"][0]


def gpus_of(result: Any) -> int:
    field = next(
        f for f in result["imported"]["fields"] if f["field"] == "resources.gpus_per_trial"
    )
    return int(field["value"])


@pytest.mark.parametrize(("quantity", "gpus"), [("8", 8), ('"8"', 8), ("8000m", 8), ('"1k"', 1000)])
def test_a_gpu_quantity_is_read_as_kubernetes_reads_it(tmp_path, capsys, quantity, gpus) -> None:
    code, result = check(tmp_path, capsys, gpus=quantity)
    assert code != INVALID, result["errors"]
    assert gpus_of(result) == gpus


@pytest.mark.parametrize("quantity", ['"8.5"', "many", "-1", "[8]", '"1e999999999E"'])
def test_a_gpu_quantity_that_is_no_whole_number_is_refused(tmp_path, capsys, quantity) -> None:
    code, result = check(tmp_path, capsys, gpus=quantity)
    assert code == INVALID
    (error,) = result["errors"]
    assert "resources.limits.nvidia.com/gpu is" in error["message"]
    assert "not a whole number of GPUs" in error["message"] and error["line"] == 24


SIDECAR = """\
            initContainers:
              - name: side
                restartPolicy: Always
                resources: {limits: {nvidia.com/gpu: 7}}
"""
PLAIN_INIT = """\
            initContainers:
              - name: prepare
                command: [sh, -c, "python3 pretrain.py --epochs 900"]
                resources: {limits: {nvidia.com/gpu: 4}}
"""


def test_a_sidecar_holds_its_gpus_beside_the_main_containers(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, init=SIDECAR)
    assert code != INVALID, result["errors"]
    assert gpus_of(result) == 8


def test_a_plain_init_container_runs_before_them_and_its_training_counts(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, init=PLAIN_INIT)
    assert code != INVALID, result["errors"]
    assert gpus_of(result) == 4  # the most of either, as Kubernetes sizes the pod
    epochs = next(f for f in result["imported"]["fields"] if f["field"] == "workload.max_epochs")
    assert epochs["value"] == "903"  # the init container's 900, then the main container's 3


def test_a_job_that_runs_its_pods_many_times_over_is_refused(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, job="        completions: 50\n")
    assert code == INVALID
    (error,) = result["errors"]
    assert error["message"].startswith("the trial's Job runs 50 completions, 1 at a time")
    assert (
        error["line"] == 19 and error["hint"] == "set completions: 1 or less (or parallelism: 50)"
    )
    code, result = check(tmp_path, capsys, job="        parallelism: 4\n        completions: 2\n")
    assert code != INVALID, result["errors"]
    assert gpus_of(result) == 2  # two pods at once, not four


@pytest.mark.parametrize(
    ("job", "goal", "message"),
    [
        ("        parallelism: two\n", "", "parallelism is 'two', not a whole number of pods"),
        ('        parallelism: "\u00b2"\n', "", "parallelism is '\u00b2', not a whole number"),
        ('        parallelism: "\uff18"\n', "", "parallelism is '\uff18', not a whole number"),
        ("        parallelism: null\n", "", None),  # unset: one pod
        ("", ", goal: high", "objective.goal 'high' is not a number"),
    ],
)
def test_odd_fields_are_refused_at_their_line_or_read_as_unset(
    tmp_path, capsys, job, goal, message
) -> None:
    code, result = check(tmp_path, capsys, job=job, goal=goal)
    if message is None:
        assert code != INVALID, result["errors"]
        assert gpus_of(result) == 1
        return
    assert code == INVALID
    (error,) = result["errors"]
    assert error["message"].startswith(message) and error["line"] > 1


JOB = KATIB.format(gpus="8", job="", init="", goal="")
PYTORCH = (
    JOB.split("    trialSpec:\n")[0]
    + """\
    trialSpec:
      apiVersion: kubeflow.org/v1
      kind: PyTorchJob
      spec:
        elasticPolicy: {minReplicas: 1, maxReplicas: 4}
        pytorchReplicaSpecs:
          Worker:
            replicas: 1
            template:
              spec:
                containers:
                  - {name: pytorch, command: [python3, train.py, --epochs=3],
                     resources: {limits: {nvidia.com/gpu: 2}}}
"""
)
TRAINJOB = (
    JOB.split("    trialSpec:\n")[0]
    + """\
    trialSpec:
      apiVersion: trainer.kubeflow.org/v1alpha1
      kind: TrainJob
      spec:
        runtimeRef: {name: torch-distributed}
        trainer: {command: [python3, train.py, --epochs=3]}
"""
)


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        (
            JOB.replace("kind: Job", "kind: JobSet"),
            "the trial is a 'JobSet' of apiVersion 'batch/v1': budget-gate counts",
            17,
        ),
        (
            JOB.replace("kind: Job", "kind: Workflow"),
            "the trial is a 'Workflow' of apiVersion 'batch/v1'",
            17,
        ),
        (
            JOB.replace("nvidia.com/gpu: 8", "nvidia.com/mig-1g.10gb: 8"),
            "resources.limits.nvidia.com/mig-1g.10gb: an accelerator budget-gate does not count",
            24,
        ),
        (
            TRAINJOB,
            "the TrainJob has no trainer.resourcesPerNode: its GPUs come from its runtime",
            20,
        ),
        (  # its nodes come from the runtime's mlPolicy.numNodes
            TRAINJOB.replace(
                "trainer: {command:",
                "trainer: {resourcesPerNode: {limits: {nvidia.com/gpu: 1}}, command:",
            ),
            "the TrainJob has no trainer.numNodes",
            20,
        ),
        (JOB.split("  trialTemplate:")[0], "the Experiment has no trialTemplate.trialSpec", 0),
    ],
)
def test_a_trial_whose_gpus_are_not_in_the_file_is_refused_not_read_as_none(
    tmp_path, capsys, text, message, line
) -> None:
    """Read as a Job, a JobSet's pods hold no GPU, and the annotations would be believed."""
    text = text.replace(
        "budget-gate/epoch_minutes", 'budget-gate/gpus_per_trial: "1", budget-gate/epoch_minutes'
    )
    code, result = check_text(tmp_path, capsys, text)
    assert code == INVALID
    (error,) = result["errors"]
    assert message in error["message"]
    assert line == 0 or error["line"] == line


def test_amd_gpus_are_counted_as_gpus(tmp_path, capsys) -> None:
    code, result = check_text(tmp_path, capsys, JOB.replace("nvidia.com/gpu", "amd.com/gpu"))
    assert code != INVALID, result["errors"]
    assert gpus_of(result) == 8


@pytest.mark.parametrize("role", ["Worker", "worker"])  # the operator's defaults camel-case it
def test_an_elastic_pytorch_job_is_priced_at_its_most_workers(tmp_path, capsys, role) -> None:
    code, result = check_text(tmp_path, capsys, PYTORCH.replace("Worker:", f"{role}:"))
    assert code != INVALID, result["errors"]
    assert gpus_of(result) == 4 * 2


@pytest.mark.parametrize(
    "api", ["batch.volcano.sh/v1alpha1", "jobset.x-k8s.io/v1alpha2", "kubeflow.org/v1"]
)
def test_a_job_of_another_api_group_is_refused_not_read_as_a_batch_job(tmp_path, capsys, api):
    """A Volcano Job (4 replicas × 8 GPUs in its tasks) read as a batch/v1 Job held no GPU."""
    code, result = check_text(
        tmp_path, capsys, JOB.replace("apiVersion: batch/v1", f"apiVersion: {api}")
    )
    assert code == INVALID
    (error,) = result["errors"]
    assert f"the trial is a 'Job' of apiVersion '{api}'" in error["message"]


@pytest.mark.parametrize(
    ("extra", "gpus"), [({"nvidia.com/gpumem": 3000}, 8), ({"nvidia.com/gpucores": 30}, 8)]
)
def test_hamis_gpu_shares_beside_whole_gpus_are_no_refusal(tmp_path, capsys, extra, gpus):
    text = JOB.replace(
        "{nvidia.com/gpu: 8}",
        "{nvidia.com/gpu: 8, " + ", ".join(f"{k}: {v}" for k, v in extra.items()) + "}",
    )
    code, result = check_text(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    assert gpus_of(result) == gpus


def test_an_mxjob_trial_is_read_as_a_kubeflow_job(tmp_path, capsys):
    text = PYTORCH.replace("kind: PyTorchJob", "kind: MXJob").replace(
        "pytorchReplicaSpecs", "mxReplicaSpecs"
    )
    code, result = check_text(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    assert gpus_of(result) == 2


@pytest.mark.parametrize(
    "claims",
    [
        "            resourceClaims: [{name: gpus, resourceClaimTemplateName: eight-h100}]\n",
        "            initContainers:\n              - {name: w, resources: {claims: [name: g]}}\n",
    ],
)
def test_gpus_claimed_through_dynamic_resource_allocation_are_refused(
    tmp_path, capsys, claims
) -> None:
    """The claim template holding the devices is not in the file: read as no claim, the
    annotations' GPUs would be believed."""
    code, result = check(tmp_path, capsys, init=claims)
    assert code == INVALID
    (error,) = result["errors"]
    assert "claimed through Dynamic Resource Allocation" in error["message"]


AFFINITY = """\
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                    - matchExpressions:
                        - key: cloud.google.com/gke-accelerator
                          operator: In
                          values: [{models}]
"""


@pytest.mark.parametrize(
    ("pinned", "refused"),
    [
        ("            nodeSelector: {nvidia.com/gpu.product: NVIDIA-H200}\n", True),
        ("            nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n", False),
        (AFFINITY.format(models="nvidia-a100-80gb"), False),
        (AFFINITY.format(models="nvidia-tesla-a100"), True),  # GKE's A100 of 40 GB
        (AFFINITY.format(models="nvidia-a100-80gb, nvidia-h100-80gb"), True),
        ("            nodeSelector: {kubernetes.io/os: linux}\n", False),
    ],
)
def test_a_gpu_model_the_pods_are_pinned_to_must_be_the_one_priced(
    tmp_path, capsys, pinned, refused
) -> None:
    """The annotation says A100-80GB; pods that land on H200s would be priced as A100s."""
    code, result = check(tmp_path, capsys, init=pinned)
    if not refused:
        assert code != INVALID, result["errors"]
        return
    assert code == INVALID
    (error,) = result["errors"]
    assert "but the accelerator priced is A100-80GB" in error["message"]


def test_a_pinned_gpu_model_is_checked_against_the_accelerator_from_the_policy(
    tmp_path, capsys
) -> None:
    """No annotation: the policy's defaults name the accelerator, and it is the one pinned."""
    pinned = "            nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
    text = KATIB.format(gpus="1", job="", init=pinned, goal="").replace(
        "budget-gate/accelerator: A100-80GB, ", ""
    )
    policies = tmp_path / "policies"
    policies.mkdir()
    path = tmp_path / "experiment.yaml"
    path.write_text(text)
    for accelerator, refused in (("A100-80GB", False), ("H100", True)):
        (policies / "default.yaml").write_text(
            f"apiVersion: budget-gate/v1\nkind: Policy\ndefaults: {{accelerator: {accelerator}}}\n"
        )
        code = main(["check", str(path), "--policy-dir", str(policies), "--format", "json"])
        (result,) = json.loads(capsys.readouterr().out)["results"]
        assert (code == INVALID) is refused, result["errors"]


def test_pods_pinned_to_a_machine_type_are_said_not_refused(tmp_path, capsys) -> None:
    """p5.48xlarge names no GPU model: the annotation's is priced, and the pin is said."""
    pinned = "            nodeSelector: {node.kubernetes.io/instance-type: p5.48xlarge}\n"
    code, result = check(tmp_path, capsys, init=pinned)
    assert code != INVALID, result["errors"]
    notes = result["imported"]["notes"]
    assert [n for n in notes if "instance-type: p5.48xlarge" in n] == [
        "the pods are pinned to node.kubernetes.io/instance-type: p5.48xlarge, whose GPU model "
        "budget-gate does not read: the accelerator priced must be that machine's"
    ]


@pytest.mark.parametrize(
    ("algorithm", "refused"),
    [  # Katib's hyperband hands the resource parameter up to r_l, past its feasibleSpace
        ("{algorithmName: hyperband, algorithmSettings: [{name: resource_name, value: lr},"
         " {name: r_l, value: '1000'}, {name: eta, value: '1001'}]}", "hyperband's r_l 1000"),
        ("{algorithmName: hyperband, algorithmSettings: [{name: resource_name, value: lr},"
         " {name: r_l, value: '0.05'}]}", ""),
        ("{algorithmName: darts, algorithmSettings: [{name: num_epochs, value: '1000'}]}",
         "algorithm darts's setting num_epochs: 1000 sets the epochs"),
    ],
)  # fmt: skip
def test_an_algorithm_setting_that_sets_the_epochs_is_refused(
    tmp_path, capsys, algorithm, refused
) -> None:
    policies = tmp_path / "policies"
    policies.mkdir(exist_ok=True)
    (policies / "default.yaml").write_text("apiVersion: budget-gate/v1\nkind: Policy\n")
    path = tmp_path / "experiment.yaml"
    text = KATIB.format(gpus="1", job="", init="", goal="")
    path.write_text(text.replace("algorithm: {algorithmName: random}", f"algorithm: {algorithm}"))
    code = main(["check", str(path), "--policy-dir", str(policies), "--format", "json"])
    (result,) = json.loads(capsys.readouterr().out)["results"]
    if not refused:
        assert code != INVALID, result["errors"]
        return
    assert code == INVALID
    (error,) = result["errors"]
    assert refused in error["message"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (  # the training operator copies it onto the pods; the kubelet restarts a clean exit
            PYTORCH.replace(
                "            replicas: 1\n",
                "            replicas: 1\n            restartPolicy: Always\n",
            ),
            "Worker.restartPolicy is Always: the pods restart after the training ends too",
        ),
        (
            PYTORCH.replace(
                "        elasticPolicy:",
                "        runPolicy: {backoffLimit: 1000}\n        elasticPolicy:",
            ),
            "runPolicy.backoffLimit is 1000: a failed training runs again",
        ),
        (
            JOB.replace(
                "          spec:\n            containers:",
                "          spec:\n            restartPolicy: Always\n            containers:",
            ),
            "spec.restartPolicy is Always",
        ),
        (
            JOB.replace("        template:", "        backoffLimit: 100\n        template:"),
            "spec.backoffLimit is 100: a failed training runs again up to that many times",
        ),
    ],
)
def test_a_trial_that_reruns_its_training_is_refused(tmp_path, capsys, text, said) -> None:
    """``restartPolicy: Always`` on a replica (or the Job's pods) never lets the trial end: it
    trains again and again; a ``backoffLimit`` of 1,000 reruns a failed training 1,000 times
    under one trial. Both passed priced as 4 trials of one epoch."""
    code, result = check_text(tmp_path, capsys, text)
    assert code == INVALID, result
    (error,) = result["errors"]
    assert said in error["message"], error


def test_the_reruns_kubernetes_allows_by_default_pass(tmp_path, capsys) -> None:
    for text in (
        JOB.replace("        template:", "        backoffLimit: 6\n        template:"),
        PYTORCH.replace(
            "            replicas: 1\n",
            "            replicas: 1\n            restartPolicy: OnFailure\n",
        ),
    ):
        code, result = check_text(tmp_path, capsys, text)
        assert code != INVALID, result["errors"]
