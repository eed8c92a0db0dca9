"""Ways past the Kueue admission check found by the launch red team, each closed and kept closed.

Every case goes through the controller against the local API server (Kueue's CRDs, the
shipped ClusterRole) with the session's MLflow ledger, as in ``test_admission_check.py``.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.kueue import objects
from tests.kueue.conftest import controller, submit, write_spec

MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
COMPLETIONS_EQUAL = "kueue.x-k8s.io/job-completions-equal-parallelism"


def only(outcomes):
    assert len(outcomes) == 1, outcomes
    return outcomes[0]


def _partial_job(name: str, spec: str, annotations: dict[str, str]) -> tuple[dict, list]:
    """16 pods × 1 GPU (completions 16), which Kueue may admit 8 at a time."""
    job, pod_sets = objects.batch_job(name, spec=spec, gpus=1, parallelism=16)
    job["metadata"]["annotations"] = dict(annotations)
    job["spec"]["completionMode"] = "Indexed"  # Kueue's webhook wants it for COMPLETIONS_EQUAL
    if MIN_PARALLELISM in annotations:
        pod_sets[0]["minCount"] = 8
    return job, pod_sets


@pytest.mark.parametrize(
    ("equal", "state"),
    [(None, "Rejected"), ("false", "Rejected"), ("yes", "Rejected"), ("true", "Ready"),
     ("True", "Ready"), ("1", "Ready")],
)  # fmt: skip
def test_a_job_admitted_partially_runs_its_completions_at_the_pods_admitted(
    repo, kube, equal, state
):
    """Kueue admits 8 of a Job's 16 pods (``job-min-parallelism: 8``) and cuts its
    parallelism to 8, leaving completions 16 unless the Job says
    ``job-completions-equal-parallelism`` (true as Go's ``ParseBool`` reads it): 16 pod runs,
    8 at a time, were cleared as one 8-GPU trial."""
    spec = write_spec(repo, trials=2)  # 8 × A100
    annotations = {MIN_PARALLELISM: "8"} | ({COMPLETIONS_EQUAL: equal} if equal else {})
    job = _partial_job(f"partial-{(equal or 'none').lower()}", spec, annotations)
    workload = submit(kube, job, counts={"main": 8})
    assert only(controller(repo, kube).sync()).state == state
    if state == "Rejected":
        message = kube.check(workload)["message"]
        assert "runs 16 pods (completions), 8 at a time (parallelism)" in message, message
        assert f'add {COMPLETIONS_EQUAL}: "true" to cut both' in message


def test_a_job_admitted_whole_under_min_parallelism_is_judged_as_before(repo, kube):
    spec = write_spec(repo, trials=2)
    job, pod_sets = _partial_job("whole", spec, {MIN_PARALLELISM: "4"})
    pod_sets[0]["count"] = job["spec"]["parallelism"] = job["spec"]["completions"] = 8
    submit(kube, (job, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Ready"


def _short_jobset(spec: str) -> tuple[dict, list]:
    """A JobSet of 2 × 2 workers × 4 GPUs (16), its pod set admitted for 2 of its 4 pods."""
    return objects.jobset("short", spec=spec, replicated=(("workers", 2, 2, 4),))


@pytest.mark.parametrize(
    ("case", "make", "said"),
    [
        ("JobSet", _short_jobset, "its JobSet short runs all 4"),
        (
            "Job without min-parallelism",
            lambda spec: objects.batch_job("short", spec=spec, gpus=1, parallelism=16),
            "its Job short runs all 16",
        ),
        (
            "Job with a min-parallelism Kueue does not read",
            lambda spec: _partial_job("short", spec, {MIN_PARALLELISM: "8.0"}),
            "its Job short runs all 16",
        ),
    ],
)
def test_a_pod_set_admitted_short_of_a_job_kueue_does_not_cut_is_rejected(
    repo, kube, case, make, said
):
    """Kueue cuts only a batch Job with a ``job-min-parallelism`` it reads to the pods it
    admitted; any other job admitted below its count runs all it asks for, and was
    cleared for the pods admitted."""
    spec = write_spec(repo, trials=2)
    job, pod_sets = make(spec)
    name, count = pod_sets[-1]["name"], pod_sets[-1]["count"]
    workload = submit(kube, (job, pod_sets), counts={name: count // 2})
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert f"its pod set {name} is admitted for {count // 2} of its {count} pods" in message
    assert said in message, message


def _template_specs(job_and_pod_sets: Any) -> list[dict[str, Any]]:
    job, pod_sets = job_and_pod_sets
    return [job["spec"]["template"]["spec"], pod_sets[0]["template"]["spec"]]


def _by_field() -> dict[str, Any]:
    rule = {"key": "metadata.name", "operator": "In", "values": ["h100-node-7"]}
    required = {"nodeSelectorTerms": [{"matchFields": [rule]}]}
    return {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    }


def _by_pods(kind: str, key: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": "h100-agent"}}, "topologyKey": key}
    return {"affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


def _spread(key: str, when: str = "DoNotSchedule") -> dict[str, Any]:
    spread = {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when,
              "labelSelector": {"matchLabels": {"app": "filler"}}}  # fmt: skip
    return {"topologySpreadConstraints": [spread]}


def _tolerate(key: str | None, effect: str | None = None) -> dict[str, Any]:
    toleration = {"key": key, "operator": "Exists"} if key else {"operator": "Exists"}
    return {"tolerations": [toleration | ({"effect": effect} if effect else {})]}


PICKERS = [
    ("nodeName", {"nodeName": "h100-node-7"}, "spec.nodeName=h100-node-7"),
    ("matchFields", _by_field(), "required node affinity on the field metadata.name (matchFields)"),
    ("pod affinity", _by_pods("podAffinity", "kubernetes.io/hostname"),
     "required podAffinity by kubernetes.io/hostname"),
    ("pod anti-affinity", _by_pods("podAntiAffinity", "kubernetes.io/hostname"),
     "required podAntiAffinity by kubernetes.io/hostname"),
    ("topology spread", _spread("kubernetes.io/hostname"),
     "a topology spread by kubernetes.io/hostname (whenUnsatisfiable DoNotSchedule)"),
    ("toleration", _tolerate("gpu-model"), "a toleration of the taint gpu-model"),
    ("toleration of all", _tolerate(None), "a toleration of every taint"),
    ("GPU toleration, every effect", _tolerate("nvidia.com/gpu"),
     "a toleration of the taint nvidia.com/gpu"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "extra", "said"), PICKERS, ids=[p[0] for p in PICKERS])
def test_pods_that_pick_their_node_otherwise_prove_nothing_by_a_flavors_name(
    repo, kube, case, extra, said
):
    """Flavor ``a100-pool`` has no nodeLabels, so Kueue puts no node selector on the pods:
    a ``nodeName`` (past the scheduler), a ``matchFields`` term on the node's name, other
    pods (affinity, a hard spread) or a toleration put them on an H100 node, and they
    were cleared as A100s by the flavor's name."""
    spec = write_spec(repo, trials=2)
    job = objects.batch_job(f"pick-{case}".replace(",", "").replace(" ", "-").lower(), spec=spec)
    for pod in _template_specs(job):
        pod.update(extra)
    workload = submit(kube, job, flavor="a100-pool")
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert (
        f"runs pod set main on an unknown accelerator (the pods pick their nodes by {said}, "
        "and their flavor's nodeLabels name no accelerator, so its name proves no GPU model)"
    ) in message, message


PLAIN = [
    ("nothing", {}, "a100-pool"),
    ("zone spread", _spread("topology.kubernetes.io/zone"), "a100-pool"),
    ("soft spread", _spread("kubernetes.io/hostname", "ScheduleAnyway"), "a100-pool"),
    ("zone anti-affinity", _by_pods("podAntiAffinity", "topology.kubernetes.io/zone"), "a100-pool"),
    ("node conditions", _tolerate("node.kubernetes.io/not-ready"), "a100-pool"),
    ("GPU toleration", _tolerate("nvidia.com/gpu", "NoSchedule"), "a100-pool"),
    ("GPU toleration as GKE writes it", {"tolerations": [{"key": "nvidia.com/gpu",
     "operator": "Equal", "value": "present", "effect": "NoSchedule"}]}, "a100-pool"),
    ("nodeName, labelled flavor", {"nodeName": "a100-node-1"}, "a100"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "extra", "flavor"), PLAIN, ids=[p[0] for p in PLAIN])
def test_pods_that_pick_no_kind_of_node_are_still_priced_by_their_flavor(
    repo, kube, case, extra, flavor
):
    """By zone, softly, or onto nodes in trouble: no GPU model is picked. Under a flavor with
    nodeLabels, Kueue's node selector holds the pod (the kubelet checks it on ``nodeName``).
    The toleration Kubernetes adds to a pod that asks for GPUs tolerates what every GPU
    node may carry."""
    spec = write_spec(repo, trials=2)
    job = objects.batch_job(f"plain-{case}".replace(" ", "-").replace(",", "").lower(), spec=spec)
    for pod in _template_specs(job):
        pod.update(extra)
    submit(kube, job, flavor=flavor)
    assert only(controller(repo, kube).sync()).state == "Ready"


def test_node_pickers_read_malformed_parts_as_nothing():
    """What no API server stores is no way to pick a node (and no crash)."""
    from gate.admission.affinity import node_pickers

    assert node_pickers({"tolerations": "x", "affinity": [], "topologySpreadConstraints": 1}) == ()
    assert node_pickers({"nodeName": ""}) == ()


def test_a_gpu_pod_group_that_no_job_owns_is_rejected(repo, kube):
    """Kueue owns a pod group's Workload by its pods (none its controller) and admits a pod
    made to replace one that failed under the same admission: ``restartPolicy: Never``
    pods whose owner fails and recreates them train again without a bound."""
    spec = write_spec(repo, trials=2)
    labels = {objects.QUEUE_LABEL: "gpu", "kueue.x-k8s.io/pod-group-name": "group"}
    meta = {"name": "group-0", "namespace": "ml", "uid": str(uuid.uuid4()), "labels": labels}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta}
    pod_sets = [{"name": "a1b2c3d4", "count": 2, "template": objects.template(4, spec=spec)}]
    obj = objects.workload_for(pod, pod_sets)
    obj["metadata"]["annotations"] = {"kueue.x-k8s.io/is-group-workload": "true"}
    first = obj["metadata"]["ownerReferences"][0] | {"controller": False}
    second = first | {"name": "group-1", "uid": str(uuid.uuid4())}
    obj["metadata"]["ownerReferences"] = [first, second]
    workload = kube.add(obj)
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert "no job owns its GPU pods (a Kueue pod group, kueue.x-k8s.io/pod-group-name" in message


def _runs(job: Any, command: list[str], env: dict[str, str] | None = None) -> None:
    for pod in _template_specs(job):
        pod["containers"][0]["command"] = command
        if env:
            pod["containers"][0]["env"] = [{"name": k, "value": v} for k, v in env.items()]


COMMANDS = [
    ("epochs", ["python", "train.py", "--epochs", "1000"], None, "trains 1000 epochs"),
    ("kubelet variable", ["python", "train.py", "--epochs", "$(EPOCHS)"], {"EPOCHS": "1000"},
     "trains 1000 epochs"),
    ("shell script", ["bash", "-c", "python train.py --epochs $EPOCHS"], {"EPOCHS": "1000"},
     "trains 1000 epochs"),
    ("steps", ["python", "train.py", "--max_steps", "10000000"], None,
     "bounds the training by steps"),
    ("steps env", ["python", "train.py"], {"MAX_STEPS": "10000000"},
     "bounds the training by steps"),
    ("restarts", ["torchrun", "--max-restarts", "1000", "train.py"], None,
     "reruns the whole training after a failure"),
    ("multirun", ["python", "train.py", "-m", "seed=range(1,1000)"], None,
     "runs a job for each combination of the sweep"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "command", "env", "said"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_container_that_runs_more_than_its_spec_is_rejected(repo, kube, case, command, env, said):
    """The check read a Workload's GPUs, not what its containers run: a Job cleared for a
    spec of a few epochs ran ``--epochs 1000``, a step budget, a repeater or 1,000 restarts."""
    spec = write_spec(repo, trials=2)
    job = objects.batch_job(f"runs-{case}".replace(" ", "-"), spec=spec)
    _runs(job, command, env)
    workload = submit(kube, job)
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert "container train of pod set main" in message and said in message, message


def test_a_container_within_its_spec_is_ready(repo, kube):
    spec = write_spec(repo, trials=2)
    job = objects.batch_job("runs-within", spec=spec)
    _runs(job, ["python", "train.py", "--epochs", "$(EPOCHS)", "--save_steps", "500"],
          {"EPOCHS": "2"})  # fmt: skip
    submit(kube, job)
    assert only(controller(repo, kube).sync()).state == "Ready"
