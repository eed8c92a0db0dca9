"""Jobs and the Workloads Kueue makes of them, built exactly as Kueue v0.19.2's code does.

Not invented shapes: each step cites the Kueue source it follows (kubernetes-sigs/kueue at
v0.19.2, c3785e520aeeb0e0a93e8a3785a6e46c51502246):

- the Workload's name: ``pkg/controller/jobframework/workload_names.go``
  (``GetWorkloadNameForOwnerWithGVK``: ``<kind lower>-<job name>`` cut to 247 characters,
  ``-`` and the first 5 hex of SHA-1 over kind, group, name and uid, newline-separated);
- its metadata: ``jobframework/utils.go`` ``NewWorkload`` (finalizer
  ``kueue.x-k8s.io/resource-in-use``, only provisioning-request annotations copied, no
  labels but ``kueue.x-k8s.io/job-uid``) and ``reconciler.go`` ``ConstructWorkload``
  (controller ownerReference to the job, ``blockOwnerDeletion``); ``spec.priority`` 0 with
  no priority class (``PrepareWorkloadPriority``); ``spec.queueName`` from the job's
  ``kueue.x-k8s.io/queue-name`` label;
- its pod sets: a batch Job's one ``main`` pod set of the job's template with the Job
  controller's labels removed except ``batch.kubernetes.io/job-name``
  (``jobs/job/job_controller.go`` ``PodSets``, ``cleanLabels``; count = min(parallelism,
  completions)); a JobSet's one pod set per replicated job, named after it, count =
  replicas × min(parallelism, completions) (``jobs/jobset/jobset_controller.go``); a
  PyTorchJob's ``master`` then ``worker`` (the replica types lower-cased,
  ``NewPodSetReference``), count = replicas (``kubeflow/kubeflowjob``);
- once quota is reserved: ``status.admission`` (cluster queue, per pod set the flavors,
  resource usage = pods × requests, count) and the ``QuotaReserved`` condition
  (``pkg/workload/workload.go`` ``SetQuotaReservation``), then the admission checks'
  ``Pending`` entries with an empty message (``core/workload_controller.go``
  ``syncAdmissionCheckConditions``), sorted by name.

The batch Job's template carries what kube-apiserver's Job defaulting adds (the same fields
``kubectl get job -o yaml`` shows); a JobSet's and a PyTorchJob's are custom resources, so
their templates hold what the user wrote, plus the Workload CRD's own defaults when the API
server stores the Workload.
"""

from __future__ import annotations

import copy
import hashlib
import uuid
from typing import Any

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
FINALIZER = "kueue.x-k8s.io/resource-in-use"
GPU = "nvidia.com/gpu"
TIME = "2026-11-20T09:00:00Z"


def workload_name(kind: str, group: str, name: str, uid: str) -> str:
    """``GetWorkloadNameForOwnerWithGVK`` (long names: ShortWorkloadNames is off)."""
    digest = hashlib.sha1(f"{kind}\n{group}\n{name}\n{uid}".encode()).hexdigest()
    prefix = f"{kind.lower()}-{name}"[: 253 - 1 - 5]
    return f"{prefix}-{digest[:5]}"


def container(gpus: int = 0, *, name: str = "train", limits_only: bool = True) -> dict[str, Any]:
    """A training container as a user writes it, GPUs in limits (and requests)."""
    resources: dict[str, Any] = {"requests": {"cpu": "4", "memory": "16Gi"}}
    if gpus:
        resources["limits"] = {GPU: str(gpus)}
        if not limits_only:
            resources["requests"][GPU] = str(gpus)
    return {
        "name": name,
        "image": "ghcr.io/acme/train:1.4",
        "command": ["python", "train.py"],
        "resources": resources,
    }


def template(
    gpus: int,
    *,
    spec: str | None = None,
    node_selector: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    restart: str = "Never",
) -> dict[str, Any]:
    """A pod template as a user writes it in a job."""
    meta: dict[str, Any] = {}
    if spec is not None:
        meta["annotations"] = {"budget-gate/spec": spec}
    if labels:
        meta["labels"] = dict(labels)
    pod: dict[str, Any] = {"restartPolicy": restart, "containers": [container(gpus)]}
    if node_selector:
        pod["nodeSelector"] = dict(node_selector)
    return {"metadata": meta, "spec": pod}


def _job_defaults(job_name: str, uid: str, tmpl: dict[str, Any]) -> dict[str, Any]:
    """What kube-apiserver adds to a batch Job's template (Job strategy and v1 defaults)."""
    out = copy.deepcopy(tmpl)
    meta = out.setdefault("metadata", {})
    meta.setdefault("labels", {}).update(
        {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": job_name,
            "controller-uid": uid,
            "job-name": job_name,
        }
    )
    pod = out["spec"]
    pod.setdefault("dnsPolicy", "ClusterFirst")
    pod.setdefault("schedulerName", "default-scheduler")
    pod.setdefault("securityContext", {})
    pod.setdefault("terminationGracePeriodSeconds", 30)
    for c in pod["containers"]:
        c.setdefault("imagePullPolicy", "IfNotPresent")
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
    return out


def _clean_labels(tmpl: dict[str, Any]) -> dict[str, Any]:
    """``cleanLabels``: the Job controller's labels go, except ``batch.kubernetes.io/job-name``."""
    out = copy.deepcopy(tmpl)
    labels = out.get("metadata", {}).get("labels", {})
    for key in ("job-name", "controller-uid", "batch.kubernetes.io/controller-uid"):
        labels.pop(key, None)
    return out


def batch_job(
    name: str,
    *,
    namespace: str = "ml",
    queue: str = "gpu",
    gpus: int = 8,
    parallelism: int = 1,
    spec: str | None = None,
    node_selector: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    uid: str | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A batch/v1 Job and its pod sets."""
    uid = uid or str(uuid.uuid5(uuid.NAMESPACE_URL, f"job/{namespace}/{name}"))
    tmpl = _job_defaults(name, uid, template(gpus, spec=spec, node_selector=node_selector,
                                             labels=labels))  # fmt: skip
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "uid": uid,
                     "labels": {QUEUE_LABEL: queue}},
        "spec": {"parallelism": parallelism, "completions": parallelism, "suspend": True,
                 "template": tmpl},
    }  # fmt: skip
    pod_sets = [{"name": "main", "count": parallelism, "template": _clean_labels(tmpl)}]
    return job, pod_sets


def jobset(
    name: str,
    *,
    namespace: str = "ml",
    queue: str = "gpu",
    replicated: tuple[tuple[str, int, int, int], ...] = (("driver", 1, 1, 0), ("workers", 2, 2, 4)),
    spec: str | None = None,
    node_selector: dict[str, str] | None = None,
    uid: str | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A JobSet (jobset.x-k8s.io/v1alpha2): ``(name, replicas, parallelism, GPUs per pod)``."""
    uid = uid or str(uuid.uuid5(uuid.NAMESPACE_URL, f"jobset/{namespace}/{name}"))
    jobs, pod_sets = [], []
    for job_name, replicas, parallelism, gpus in replicated:
        tmpl = template(gpus, spec=spec, node_selector=node_selector if gpus else None,
                        restart="OnFailure")  # fmt: skip
        jobs.append({
            "name": job_name,
            "replicas": replicas,
            "template": {"spec": {"parallelism": parallelism, "completions": parallelism,
                                  "template": tmpl}},
        })  # fmt: skip
        pod_sets.append({"name": job_name, "count": replicas * parallelism, "template": tmpl})
    job = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace, "uid": uid,
                     "labels": {QUEUE_LABEL: queue}},
        "spec": {"suspend": True, "replicatedJobs": jobs},
    }  # fmt: skip
    return job, pod_sets


def pytorch_job(
    name: str,
    *,
    namespace: str = "ml",
    queue: str = "gpu",
    workers: int = 3,
    gpus: int = 8,
    spec: str | None = None,
    node_selector: dict[str, str] | None = None,
    uid: str | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A PyTorchJob (kubeflow.org/v1) with a master and ``workers`` workers."""
    uid = uid or str(uuid.uuid5(uuid.NAMESPACE_URL, f"pytorchjob/{namespace}/{name}"))
    replicas = {}
    pod_sets = []
    for kind, count in (("Master", 1), ("Worker", workers)):
        tmpl = template(gpus, spec=spec, node_selector=node_selector, restart="OnFailure")
        tmpl["spec"]["containers"][0]["name"] = "pytorch"
        replicas[kind] = {"replicas": count, "restartPolicy": "OnFailure", "template": tmpl}
        pod_sets.append({"name": kind.lower(), "count": count, "template": tmpl})
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": namespace, "uid": uid,
                     "labels": {QUEUE_LABEL: queue}},
        "spec": {"runPolicy": {"suspend": True}, "pytorchReplicaSpecs": replicas},
    }  # fmt: skip
    return job, pod_sets


def workload_for(
    job: dict[str, Any],
    pod_sets: list[dict[str, Any]],
    *,
    cluster_queue: str = "gpu-cluster",
    flavor: str = "a100",
    checks: tuple[str, ...] = ("budget-gate",),
    reserved: bool = True,
    counts: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The Workload Kueue writes for ``job``, with quota reserved and its checks Pending."""
    meta = job["metadata"]
    group, _, _ = job["apiVersion"].rpartition("/")
    workload: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": workload_name(job["kind"], group, meta["name"], meta["uid"]),
            "namespace": meta["namespace"],
            "labels": {JOB_UID_LABEL: meta["uid"]},
            "finalizers": [FINALIZER],
            "ownerReferences": [{
                "apiVersion": job["apiVersion"], "kind": job["kind"], "name": meta["name"],
                "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True,
            }],
        },
        "spec": {
            "podSets": copy.deepcopy(pod_sets),
            "queueName": meta["labels"][QUEUE_LABEL],
            "priority": 0,
        },
    }  # fmt: skip
    if reserved:
        workload["status"] = _reserved(pod_sets, cluster_queue, flavor, checks, counts or {})
    return workload


def _reserved(
    pod_sets: list[dict[str, Any]],
    cluster_queue: str,
    flavor: str,
    checks: tuple[str, ...],
    counts: dict[str, int],
) -> dict[str, Any]:
    assignments = []
    for ps in pod_sets:
        count = counts.get(ps["name"], ps["count"])
        usage = {"cpu": str(4 * count), "memory": f"{16 * count}Gi"}
        flavors = {"cpu": "default", "memory": "default"}
        limits = ps["template"]["spec"]["containers"][0]["resources"].get("limits", {})
        for resource, amount in limits.items():  # GPUs, or MIG slices: the GPU flavor's
            usage[resource] = str(int(amount) * count) if amount.isdigit() else amount
            flavors[resource] = flavor
        assignments.append(
            {"name": ps["name"], "flavors": flavors, "resourceUsage": usage, "count": count}
        )
    return {
        "admission": {"clusterQueue": cluster_queue, "podSetAssignments": assignments},
        "conditions": [{
            "type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
            "message": f"Quota reserved in ClusterQueue {cluster_queue}",
            "observedGeneration": 1, "lastTransitionTime": TIME,
        }],
        "admissionChecks": [
            {"name": name, "state": "Pending", "message": "", "lastTransitionTime": TIME}
            for name in sorted(checks)
        ],
    }  # fmt: skip


def admission_check(name: str = "budget-gate", controller: str = "budget-gate/kueue-admission"):
    """An AdmissionCheck naming ``controller``, as a platform team writes it."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": {"controllerName": controller},
    }


def resource_flavor(name: str, node_labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A ResourceFlavor with ``node_labels``."""
    spec = {"nodeLabels": dict(node_labels)} if node_labels else {}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": spec,
    }
