"""Ways past the Kueue admission check found by red-teaming it, each closed and kept closed.

Every case goes through the controller against the local API server (Kueue's CRDs, the
shipped ClusterRole) with the session's MLflow ledger, as in ``test_admission_check.py``.
"""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

import pytest

from gate.admission.workload import MalformedWorkload, read_workload
from gate.ledger.signing import CI_PRINCIPAL, SIGNERS_FILE
from tests.kueue import objects
from tests.kueue.conftest import approve, controller, submit, write_spec
from tests.revocation_kit import as_principal, bob_leaves, git, policies_committed


def only(outcomes):
    assert len(outcomes) == 1, outcomes
    return outcomes[0]


def _first_container(job_and_pod_sets: Any) -> list[dict[str, Any]]:
    """The training container of the job's template and of its pod set (the same edit)."""
    job, pod_sets = job_and_pod_sets
    return [job["spec"]["template"]["spec"]["containers"][0],
            pod_sets[0]["template"]["spec"]["containers"][0]]  # fmt: skip


NODE_ACCESS = [
    ("privileged", {"securityContext": {"privileged": True}}, "is privileged"),
    (
        "SYS_ADMIN",
        {"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}},
        "adds the capability SYS_ADMIN",
    ),
    (
        "CAP_SYS_ADMIN",
        {"securityContext": {"capabilities": {"add": ["NET_RAW", "CAP_SYS_ADMIN"]}}},
        "adds the capability SYS_ADMIN",
    ),
    (
        "device-list mount",
        {"volumeMounts": [{"name": "n", "mountPath": "/var/run/nvidia-container-devices/all"}]},
        "mounts a volume at /var/run/nvidia-container-devices/all, the device list",
    ),
    (
        "device-list mount, /run, doubled slashes",
        {"volumeMounts": [{"name": "n", "mountPath": "//run//nvidia-container-devices/0/"}]},
        "mounts a volume at /run/nvidia-container-devices/0, the device list",
    ),
]


@pytest.mark.parametrize(("case", "extra", "said"), NODE_ACCESS, ids=[c[0] for c in NODE_ACCESS])
@pytest.mark.parametrize("gpus", [0, 8])
def test_a_container_that_reaches_every_gpu_past_the_device_plugin_is_rejected(
    repo, kube, case, extra, said, gpus
):
    """The NVIDIA toolkit hands a privileged container (or one with CAP_SYS_ADMIN, which it
    takes for privileged) the GPUs of ``NVIDIA_VISIBLE_DEVICES`` from its image (CUDA's set
    ``all``), and reads a mount under its device-list root as the GPUs to hand over, even
    on nodes hardened as the threat model advises: a GPU-less workload was Ready ("asks for
    no GPU"), and an 8-GPU one was cleared for 8 while reaching all of its node's."""
    spec = write_spec(repo, trials=2) if gpus else None
    job = objects.batch_job(f"reach-{gpus}", gpus=gpus, spec=spec)
    for container in _first_container(job):
        container.update(copy.deepcopy(extra))
    if "volumeMounts" in extra:
        for _, template in ((0, job[0]["spec"]["template"]), (1, job[1][0]["template"])):
            template["spec"]["volumes"] = [{"name": "n", "hostPath": {"path": "/dev/null"}}]
    workload = submit(kube, job)
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert f"container 'train' {said}" in message, message
    assert "which reaches every GPU of its node without asking for them" in message


@pytest.mark.parametrize("sidecar_first", [True, False])
def test_an_init_container_beside_a_sidecar_holds_both_their_gpus(repo, kube, sidecar_first):
    """A sidecar (an init container that keeps running) started before an init container
    runs beside it: the pod holds 4 + 8 GPUs, and Kubernetes sizes it at 12. Counted as
    max(containers + sidecars, largest init) = 8, it was cleared for an 8-GPU spec. In the
    other order the init container ends before the sidecar starts (8, not 12)."""
    spec = write_spec(repo, trials=2)
    job, pod_sets = objects.batch_job(f"sidecar-{sidecar_first}".lower(), spec=spec, gpus=4)
    sidecar = objects.container(4, name="sidecar") | {"restartPolicy": "Always"}
    init = objects.container(8, name="warmup")
    order = [sidecar, init] if sidecar_first else [init, sidecar]
    for template in (job["spec"]["template"], pod_sets[0]["template"]):
        template["spec"]["initContainers"] = copy.deepcopy(order)
    workload = submit(kube, (job, pod_sets))
    state = only(controller(repo, kube).sync()).state
    assert state == ("Rejected" if sidecar_first else "Ready")
    if sidecar_first:
        message = kube.check(workload)["message"]
        assert "asks for 12 × A100 (main: 1 pod × 12 nvidia.com/gpu), but " in message


def _owned(kind: str, api_version: str, spec: str, restart: str | None) -> tuple[dict, list]:
    """A job of ``kind`` whose GPU pod set's template names ``spec``, and its pod sets."""
    tmpl = objects.template(8, spec=spec, restart=restart or "Never")
    if restart is None:
        del tmpl["spec"]["restartPolicy"]  # as the user wrote the custom resource
    meta = {"name": f"{kind.lower()}-{restart or 'unwritten'}".lower(), "namespace": "ml",
            "uid": str(uuid.uuid4()), "labels": {objects.QUEUE_LABEL: "gpu"}}  # fmt: skip
    owner = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    return owner, [{"name": "workers", "count": 1, "template": tmpl}]


@pytest.mark.parametrize(
    ("kind", "api_version", "restart", "said"),
    [
        ("RayCluster", "ray.io/v1", None, "restart after every exit (restartPolicy Always, a Pod"),
        ("RayCluster", "ray.io/v1", "Never", "its RayCluster raycluster-never keeps the pods"),
        ("AppWrapper", "workload.codeflare.dev/v1beta2", None, "restart after every exit"),
    ],
)
def test_an_owner_that_keeps_its_gpu_pods_until_deleted_is_rejected(
    repo, kube, kind, api_version, restart, said
):
    """A RayCluster lives (and KubeRay replaces its pods) until deleted; a template that
    writes no restartPolicy outside the kinds known to end runs as a Pod's default
    (Always). Only an unwritten policy under a bare Pod was refused: these were Ready."""
    spec = write_spec(repo, trials=2)
    owner, pod_sets = _owned(kind, api_version, spec, restart)
    workload = kube.add(objects.workload_for(owner, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert said in message, message
    assert "which no spec prices" in message


@pytest.mark.parametrize(
    ("kind", "api_version"),
    [
        ("RayJob", "ray.io/v1"),
        ("PyTorchJob", "kubeflow.org/v1"),
        ("JobSet", "jobset.x-k8s.io/v1alpha2"),
    ],
)
def test_kinds_that_end_their_pods_are_still_admitted_without_a_written_policy(
    repo, kube, kind, api_version
):
    spec = write_spec(repo, trials=2)
    owner, pod_sets = _owned(kind, api_version, spec, None)
    if kind == "JobSet":  # the rerun check reads it
        owner["spec"] = {"replicatedJobs": []}
        kube.add_other(owner, "jobsets")
    kube.add(objects.workload_for(owner, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Ready"


def test_a_kind_named_like_one_that_ends_its_pods_in_another_group_is_not_exempt(repo, kube):
    """The RayJob exemption was matched on the kind alone."""
    spec = write_spec(repo, trials=2)
    owner, pod_sets = _owned("RayJob", "example.com/v1", spec, "Always")
    workload = kube.add(objects.workload_for(owner, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert "restart after every exit (restartPolicy Always)" in kube.check(workload)["message"]


def test_the_gpu_flavor_is_the_one_of_a_resource_the_pods_ask_for(repo, kube):
    """A resource listed at 0 (``amd.com/gpu: 0``) sorted first and its flavor was taken
    for the GPUs': H100 nodes ran an 8 × A100 spec."""
    spec = write_spec(repo, trials=2)
    job, pod_sets = objects.batch_job("zero-first", spec=spec)
    for container in _first_container((job, pod_sets)):
        container["resources"]["limits"] = {"amd.com/gpu": "0", "nvidia.com/gpu": "8"}
    obj = objects.workload_for(job, pod_sets)
    obj["status"]["admission"]["podSetAssignments"][0]["flavors"]["nvidia.com/gpu"] = "h100"
    kube.add_other(job, "jobs")
    workload = kube.add(obj)
    assert only(controller(repo, kube).sync()).state == "Rejected"
    assert "runs pod set main on H100 (flavor h100 " in kube.check(workload)["message"]


BROKEN = [
    ("annotation", ("spec", "podSets", 0, "template", "metadata", "annotations"),
     {"budget-gate/spec": ["experiments/a.yaml"]}),
    ("node selector", ("spec", "podSets", 0, "template", "spec", "nodeSelector"),
     {"nvidia.com/gpu.product": True}),
    ("owner", ("metadata", "ownerReferences"),
     [{"apiVersion": True, "kind": ["Job"], "name": "x", "controller": True}]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "path", "value"), BROKEN, ids=[b[0] for b in BROKEN])
def test_fields_of_the_wrong_type_are_a_rejection_not_a_crash(repo, kube, case, path, value):
    """What no API server stores, but a pass must survive: one such object raised out of
    the pass (``AttributeError``), and every Workload of the batch waited with it."""
    job, pod_sets = objects.batch_job("typed", spec=write_spec(repo, trials=2))
    obj = objects.workload_for(job, pod_sets)
    obj["metadata"]["uid"] = str(uuid.uuid4())
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(MalformedWorkload, match="TypeError"):
        read_workload(obj)
    gate = controller(repo, kube)
    gate.activate()
    outcome = only(gate.decide([obj]))  # never stored: the write finds no Workload (404)
    assert outcome.state == "Rejected" and not outcome.applied
    assert "cannot be read (TypeError: " in outcome.message


@pytest.mark.parametrize("gpus", [0, 1])
def test_a_pod_annotation_that_asks_the_runtime_for_devices_is_rejected(repo, kube, gpus):
    """A CDI-enabled runtime (containerd 1.7+, CRI-O) injects the devices a
    ``cdi.k8s.io/...`` pod annotation names, past the device plugin: a GPU-less pod with
    ``nvidia.com/gpu=all`` there gets every GPU of its node."""
    spec = write_spec(repo, trials=2) if gpus else None
    job, pod_sets = objects.batch_job(f"cdi-{gpus}", gpus=gpus, spec=spec)
    for template in (job["spec"]["template"], pod_sets[0]["template"]):
        meta = template.setdefault("metadata", {})
        meta.setdefault("annotations", {})["cdi.k8s.io/train"] = "nvidia.com/gpu=all"
    workload = submit(kube, (job, pod_sets))
    assert only(controller(repo, kube).sync()).state == "Rejected"
    message = kube.check(workload)["message"]
    assert "the pod annotation cdi.k8s.io/train asks the container runtime for devices" in message


def test_a_revocation_by_a_former_approver_keeps_the_workload_out(repo, kube, keys, monkeypatch):
    """bob revoked alice's approval, then left the approver list: the controller judged
    revocations by the current list alone, and admitted the Workload (``verify`` refused)."""
    signers = keys.signers("alice", "bob", CI_PRINCIPAL, "launcher")
    (Path(repo.policy_dir) / SIGNERS_FILE).write_text(signers, encoding="ascii")
    policies_committed(repo)
    spec = write_spec(repo, trials=8)  # needs an approval
    as_principal(monkeypatch, keys, "alice")
    approve(repo, spec)
    as_principal(monkeypatch, keys, "bob")
    assert repo.cli("revoke", spec, "--by", "bob", "--reason", "data not cleared")[0] == 0
    bob_leaves(repo)
    git(repo.root, "commit", "-qam", "bob left")
    as_principal(monkeypatch, keys, "launcher")
    workload = submit(kube, objects.batch_job("b", spec=spec))
    assert only(controller(repo, kube).sync()).state == "Retry"
    assert "was revoked (revocation by bob on" in kube.check(workload)["message"]
