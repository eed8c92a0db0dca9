"""Which spec a Workload names: its pod templates' annotation, else the job's that owns it.

Kueue copies a job's pod templates into its Workload, so the spec annotation
(:data:`gate.admission.labels.SPEC_ANNOTATION`) on a pod template names the spec. For the
job kinds of :data:`SPEC_ON_THE_JOB` the pod sets do not come from a template the user
writes, so the spec is named on the job itself, read from the API server once per pass.
"""

from __future__ import annotations

from typing import Any

from gate.admission.labels import SPEC_ANNOTATION
from gate.admission.spec_file import SpecRefError
from gate.admission.workload import Owner, PodSet, Workload
from gate.integrations.kubernetes.api import KubeError, KueueApi

SPEC_ON_THE_JOB = {"TrainJob": "trainer.kubeflow.org", "SparkApplication": "sparkoperator.k8s.io"}
"""Job kinds whose pod sets Kueue does not copy from a pod template the user writes (a
TrainJob's come from its runtime, a SparkApplication's from its driver and executor specs):
their spec is named on the job itself, found by the Workload's ``ownerReference``."""

RERUN_KINDS = {"Job": "batch", "JobSet": "jobset.x-k8s.io"}
"""Job kinds whose pods may run again one after another (``completions`` over
``parallelism``), which the Workload does not show: Kueue counts only the pods at once."""

KUBEFLOW_JOBS = dict.fromkeys(
    ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob"), "kubeflow.org"
)
"""Kubeflow job kinds: each replica's ``restartPolicy`` is on its replica spec
(``spec.pytorchReplicaSpecs.Worker.restartPolicy``), which the operator writes into the pods
over the template's, and which the Workload does not show."""

ENDS_ITS_PODS = {"RayJob": "ray.io"}
"""Owners whose ``restartPolicy: Always`` pods end with the job (KubeRay's Ray pods)."""

HOLDS_ITS_PODS = {
    "RayCluster": "ray.io",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io",
    "Deployment": "apps",
    "StatefulSet": "apps",
    "ReplicaSet": "apps",
    "DaemonSet": "apps",
}
"""Owners that keep their pods, and the pods' GPUs, until someone deletes them, replacing a
pod that ends, whatever the pods' ``restartPolicy``: no spec prices that."""

POLICY_ELSEWHERE = {
    **KUBEFLOW_JOBS,
    "TrainJob": "trainer.kubeflow.org",
    "SparkApplication": "sparkoperator.k8s.io",
    "Job": "batch",
    "JobSet": "jobset.x-k8s.io",
}  # fmt: skip
"""Job kinds whose pod templates may leave ``restartPolicy`` unwritten and still end: a
Kubeflow job keeps it on the replica spec, the others run to completion (a batch Job's is
never unwritten). Any other template without one runs as a Pod's default: ``Always``."""

BARE = ("Pod", "v1")
"""A Pod of its own (Kueue's pod integration): nothing bounds its restarts."""

OwnerCache = dict[tuple[str, str, str, str], Any]
"""The owning jobs one pass has read, by namespace, API version, kind and name."""


def spec_named(api: KueueApi, workload: Workload, owners: OwnerCache) -> str | None:
    """The spec the pod templates name, else the one a job of :data:`SPEC_ON_THE_JOB` names.

    Raises:
        gate.admission.spec_file.SpecRefError: the pod sets name different specs, or the
            owning job cannot be read (RBAC).
    """
    refs = workload.spec_refs()
    if len(refs) > 1:
        raise SpecRefError(
            f"the pod sets of workload {workload.key} name different specs "
            f"({', '.join(sorted(refs))}) — name one spec for the whole job"
        )
    if refs:
        return refs.pop()
    owner = workload.owner
    if owner is None or SPEC_ON_THE_JOB.get(owner.kind) != owner.api_version.split("/")[0]:
        return None
    obj = _owner(api, workload.namespace, owner, owners, "the spec it names")
    meta = (obj or {}).get("metadata") or {}
    named = str((meta.get("annotations") or {}).get(SPEC_ANNOTATION, "")).strip()
    return named or None


def reruns(api: KueueApi, workload: Workload, owners: OwnerCache) -> str | None:
    """Why the job that owns ``workload`` runs more pods than the Workload shows, or ``None``.

    A GPU pod that restarts after every exit (a bare Pod, a Deployment's) runs its training
    again and again and holds its GPUs until deleted. A batch Job with ``completions: 1000``
    and ``parallelism: 1`` is one pod in its Workload and a thousand pod runs, one after
    another; a JobSet's replicated jobs likewise.

    Raises:
        gate.admission.spec_file.SpecRefError: the job cannot be read (RBAC).
    """
    owner = workload.owner
    again = next(filter(None, (_restarts(ps, owner) for ps in workload.pod_sets)), None)
    if again is not None:
        return f"workload {workload.key}: {again}"
    if owner is not None and _owned_by(owner, KUBEFLOW_JOBS):
        job = _owner(api, workload.namespace, owner, owners, "its replicas' restartPolicy")
        return _replica_restarts(workload, owner, job)
    if owner is None or RERUN_KINDS.get(owner.kind) != owner.api_version.split("/")[0]:
        return None
    found = _owner(api, workload.namespace, owner, owners, "how often it runs its pods")
    spec = (found or {}).get("spec") or {}
    jobs = [spec] if owner.kind == "Job" else [
        (job.get("template") or {}).get("spec") or {} for job in spec.get("replicatedJobs") or []
    ]  # fmt: skip
    for job in jobs:
        completions, parallelism = job.get("completions"), job.get("parallelism", 1)
        if isinstance(completions, int) and completions > max(1, int(parallelism or 0)):
            return (
                f"workload {workload.key}: its {owner.kind} {owner.name} runs {completions} "
                f"pods (completions), {parallelism} at a time (parallelism), but its Workload "
                "shows only those at once — make completions equal parallelism, and run "
                "the repeats as the trials of the spec's search"
            )
    return None


def _replica_restarts(workload: Workload, owner: Owner, job: Any) -> str | None:
    """Why a Kubeflow job's GPU replica restarts after every exit, or ``None``.

    ``restartPolicy: Always`` on a replica spec restarts its pods' training after it ends
    well too, so the job never ends. A replica whose pod set the Workload does not name is
    taken to hold GPUs: what it holds is not known.
    """
    spec = (job or {}).get("spec") or {}
    named = {pod_set.name for pod_set in workload.pod_sets}
    with_gpus = {pod_set.name for pod_set in workload.pod_sets if pod_set.gpu_resources}
    for key, replicas in spec.items():
        if not str(key).endswith("ReplicaSpecs") or not isinstance(replicas, dict):
            continue
        for kind, replica in replicas.items():
            pod_set = str(kind).lower()  # Kueue names a replica's pod set so
            always = isinstance(replica, dict) and replica.get("restartPolicy") == "Always"
            if always and (pod_set in with_gpus or pod_set not in named):
                return (
                    f"workload {workload.key}: its {owner.kind} {owner.name} restarts the pods "
                    f"of its replica {kind} after every exit ({key}.{kind}.restartPolicy "
                    "Always), so their training runs again and again and the job never ends, "
                    "which no spec prices — set restartPolicy: OnFailure (or Never, ExitCode) "
                    "on the replica"
                )
    return None


def _owner(api: KueueApi, namespace: str, owner: Owner, owners: OwnerCache, why: str) -> Any:
    """The job that owns a Workload, read once a pass; ``why`` says what it is read for."""
    key = (namespace, owner.api_version, owner.kind, owner.name)
    if key not in owners:
        try:
            owners[key] = api.get_owner(namespace, *key[1:])
        except KubeError as exc:
            if exc.status != 403:
                raise
            raise SpecRefError(
                f"its {owner.kind} {owner.name} cannot be read for {why} ({exc}) — let "
                f"budget-gate get {owner.kind} objects (the ClusterRole of budget-gate init "
                f"--kueue)"
                + (
                    f", or add the annotation {SPEC_ANNOTATION} to the pod template"
                    if why == "the spec it names"
                    else ""
                )
            ) from None
    return owners[key]


def _restarts(pod_set: PodSet, owner: Owner | None) -> str | None:
    """Why the pod set's GPU pods run again after every exit, or ``None``.

    ``restartPolicy: Always`` as written (Kubernetes writes it into a Pod's, a Deployment's
    and a StatefulSet's templates when none is given), or none written outside the kinds
    of :data:`POLICY_ELSEWHERE` (a bare Pod's, an AppWrapper's or a RayCluster's template
    runs as a Pod's default); and an owner of :data:`HOLDS_ITS_PODS` keeps them until
    deleted whatever their policy. A RayJob's Ray pods end with the job.
    """
    if not pod_set.gpu_resources or _owned_by(owner, ENDS_ITS_PODS):
        return None
    policy = pod_set.restart_policy
    if policy == "Always" or (policy is None and not _owned_by(owner, POLICY_ELSEWHERE)):
        said = "restartPolicy Always" if policy else "restartPolicy Always, a Pod's default"
        return (
            f"the pods of its pod set {pod_set.name} restart after every exit ({said}), so "
            "their training runs again and again and they hold the GPUs until deleted, which "
            "no spec prices — run the training as a Job with restartPolicy: Never (or "
            "OnFailure)"
        )
    if policy == "OnFailure" and (owner is None or (owner.kind, owner.api_version) == BARE):
        return (
            f"the pods of its pod set {pod_set.name} restart after every failure "
            "(restartPolicy OnFailure on a bare Pod, which has no backoffLimit), so a training "
            "that fails runs again and again, unpriced — run it as a Job (restartPolicy: "
            "Never, or OnFailure under the Job's backoffLimit)"
        )
    if owner is not None and _owned_by(owner, HOLDS_ITS_PODS):
        return (
            f"its {owner.kind} {owner.name} keeps the pods of its pod set {pod_set.name} "
            "running, each replaced when it ends, and holds their GPUs until it is deleted, "
            "which no spec prices — run the training as a Job (or a RayJob, a JobSet) that "
            "ends with it"
        )
    return None


def _owned_by(owner: Owner | None, kinds: dict[str, str]) -> bool:
    """Whether ``owner`` is one of ``kinds`` (kind → API group), its group included."""
    return owner is not None and kinds.get(owner.kind) == owner.api_version.rpartition("/")[0]
