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

ENDS_ITS_PODS = frozenset({"RayJob"})
"""Owners whose ``restartPolicy: Always`` pods end with the job (KubeRay's Ray pods)."""

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
    again = next((ps.name for ps in workload.pod_sets if _restarts(ps, owner)), None)
    if again is not None:
        return (
            f"workload {workload.key}: the pods of its pod set {again} restart after every "
            "exit (restartPolicy Always, a Pod's default), so their training runs again and "
            "again and they hold the GPUs until deleted, which no spec prices — run the "
            "training as a Job with restartPolicy: Never (or OnFailure)"
        )
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


def _restarts(pod_set: PodSet, owner: Owner | None) -> bool:
    """Whether the pod set's GPU pods restart after every exit.

    ``restartPolicy: Always`` as written (Kubernetes writes it into a Pod's, a Deployment's
    and a StatefulSet's templates when none is given); an unwritten one only for a bare Pod
    (no owner, or a Pod). A Kubeflow job keeps its policy on the replica spec, outside the
    template Kueue copies, and a RayJob's Ray pods end with the job.
    """
    if not pod_set.gpu_resources or (owner is not None and owner.kind in ENDS_ITS_PODS):
        return False
    if pod_set.restart_policy is None:
        return owner is None or owner.kind == "Pod"
    return pod_set.restart_policy == "Always"
