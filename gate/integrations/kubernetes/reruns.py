"""What a Workload does not show: pods that run their training again, one run after another.

Kueue counts the pods a job holds at once. A pod that restarts after every exit, a batch
Job whose ``completions`` exceed its ``parallelism``, a Kubeflow replica whose replica spec
says ``restartPolicy: Always``, or any of those inside an AppWrapper, runs the training
again and again under one admission, which no spec prices: :func:`reruns` says why, so the
controller rejects the Workload. What the pod templates do not say is read from the job
that owns the Workload, once per pass.

Kueue may admit a pod set below its ``count`` (partial admission): it then cuts a batch Job
with ``kueue.x-k8s.io/job-min-parallelism`` to the pods it admitted (its ``parallelism``),
and leaves its ``completions`` unless the Job says
``kueue.x-k8s.io/job-completions-equal-parallelism``. No other job is cut: it runs every pod
it asks for, more than the Workload admitted.
"""

from __future__ import annotations

import re
from typing import Any

from gate.admission.workload import Owner, PodSet, Workload
from gate.integrations.kubernetes.api import KueueApi
from gate.integrations.kubernetes.specs import OwnerCache, read_owner

RERUN_KINDS = {"Job": "batch", "JobSet": "jobset.x-k8s.io"}
"""Job kinds whose pods may run again one after another (``completions`` over
``parallelism``), which the Workload does not show: Kueue counts only the pods at once."""

KUBEFLOW_JOBS = dict.fromkeys(
    ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob"), "kubeflow.org"
)
"""Kubeflow job kinds: each replica's ``restartPolicy`` is on its replica spec
(``spec.pytorchReplicaSpecs.Worker.restartPolicy``), which the operator writes into the pods
over the template's, and which the Workload does not show."""

WRAPPERS = {"AppWrapper": "workload.codeflare.dev"}
"""Owners whose components are whole objects (a Job, a PyTorchJob, …), each read as its
kind is read on its own."""

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
}
"""Job kinds whose pod templates may leave ``restartPolicy`` unwritten and still end: a
Kubeflow job keeps it on the replica spec, the others run to completion (a batch Job's is
never unwritten). Any other template without one runs as a Pod's default: ``Always``."""

BARE = ("Pod", "v1")
"""A Pod of its own (Kueue's pod integration): nothing bounds its restarts."""

_READ = {**RERUN_KINDS, **KUBEFLOW_JOBS, **WRAPPERS}

MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
"""A batch Job's annotation that lets Kueue admit it partially, cutting its ``parallelism``
to the pods it admits (Kueue reads it with Go's ``strconv.Atoi``)."""
COMPLETIONS_EQUAL = "kueue.x-k8s.io/job-completions-equal-parallelism"
"""With :data:`MIN_PARALLELISM`, Kueue sets the Job's ``completions`` to its cut
``parallelism`` too (read with Go's ``strconv.ParseBool``)."""
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


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
    found = None
    if owner is not None and _owned_by(owner, _READ):
        kubeflow = owner.kind in KUBEFLOW_JOBS
        why = "its replicas' restartPolicy" if kubeflow else "how often it runs its pods"
        found = read_owner(api, workload.namespace, owner, owners, why) or {}
    kinds = _component_kinds(found) if _owned_by(owner, WRAPPERS) else _kind_of(owner)
    again = next(filter(None, (_restarts(ps, owner, kinds) for ps in workload.pod_sets)), None)
    again = again or _admitted_short(workload, owner, found) or _ownerless(workload)
    if again is not None:
        return f"workload {workload.key}: {again}"
    if owner is None or found is None:
        return None
    said = _runs_again(owner.kind, found, workload)
    return (
        None if said is None else f"workload {workload.key}: its {owner.kind} {owner.name} {said}"
    )


def _runs_again(kind: str, job: Any, workload: Workload | None) -> str | None:
    """Why ``job`` (an owner of ``kind``, or an AppWrapper's component) runs its pods again.

    ``workload`` names the pod sets of an owner; ``None`` for a component, whose pod sets
    are not told apart, so each of its replicas is taken to hold GPUs.
    """
    spec = job.get("spec") if isinstance(job, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    if kind in KUBEFLOW_JOBS:
        return _replica_restarts(spec, workload)
    if kind in WRAPPERS:
        return _components(spec)
    jobs = [spec] if kind == "Job" else [
        (job.get("template") or {}).get("spec") or {} for job in spec.get("replicatedJobs") or []
    ]  # fmt: skip
    for each in jobs:
        completions, parallelism = each.get("completions"), each.get("parallelism", 1)
        if kind == "Job" and workload is not None and _cut_to_admitted(job):
            completions, parallelism = _as_admitted(job, completions, workload)
        if isinstance(completions, int) and completions > max(1, int(parallelism or 0)):
            return (
                f"runs {completions} pods (completions), {parallelism} at a time "
                "(parallelism), but its Workload shows only those at once — make completions "
                "equal parallelism, and run the repeats as the trials of the spec's search"
                f"{_EQUAL_FIX if kind == 'Job' and _cut_to_admitted(job) else ''}"
            )
    return None


_EQUAL_FIX = (
    f" (under {MIN_PARALLELISM}, Kueue cuts parallelism to the pods it admits and leaves "
    f'completions: add {COMPLETIONS_EQUAL}: "true" to cut both)'
)


def _annotations(job: Any) -> dict[str, Any]:
    meta = job.get("metadata") if isinstance(job, dict) else None
    found = meta.get("annotations") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def _cut_to_admitted(job: Any) -> bool:
    """Whether Kueue surely cuts this batch Job's ``parallelism`` to the pods it admits.

    Only a :data:`MIN_PARALLELISM` that Go's ``strconv.Atoi`` reads: a value this reads
    and Kueue would not would take a Job that runs every pod as cut.
    """
    value = _annotations(job).get(MIN_PARALLELISM)
    return isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]{1,9}", value) is not None


def _as_admitted(job: Any, completions: Any, workload: Workload) -> tuple[Any, int]:
    """The ``completions`` and ``parallelism`` Kueue gives a Job it cuts to what it admits.

    ``parallelism`` becomes the pods admitted; ``completions`` too only under
    :data:`COMPLETIONS_EQUAL` (true as Go's ``strconv.ParseBool`` reads it).
    """
    admitted = min((pod_set.pods for pod_set in workload.pod_sets), default=0)
    if _annotations(job).get(COMPLETIONS_EQUAL) in _GO_TRUE:
        return admitted, admitted
    return completions, admitted


def _ownerless(workload: Workload) -> str | None:
    """Why GPU pods that no job owns run again: a Kueue pod group's failed pods are replaced.

    Kueue owns a pod group's Workload by its pods, none of them its controller, and admits
    a pod made to replace one that failed under the same admission (unless a pod says
    ``kueue.x-k8s.io/retriable-in-group: "false"``, which no pod set shows and a pod may
    drop later): nothing bounds how often the training runs.
    """
    if workload.owner is not None or not any(ps.gpu_resources for ps in workload.pod_sets):
        return None
    return (
        "no job owns its GPU pods (a Kueue pod group, kueue.x-k8s.io/pod-group-name, whose "
        "failed pods Kueue replaces under the same admission), so nothing bounds how often "
        "their training runs, which no spec prices — run the training as a Job "
        "(restartPolicy: Never, or OnFailure under the Job's backoffLimit)"
    )


def _admitted_short(workload: Workload, owner: Owner | None, job: Any) -> str | None:
    """Why a pod set Kueue admitted below its ``count`` runs more pods than admitted.

    Kueue cuts only a batch Job with :data:`MIN_PARALLELISM` to the pods it admits (its
    completions are judged by :func:`_runs_again`); any other job runs all it asks for.
    """
    short = next((ps for ps in workload.pod_sets if ps.requested is not None), None)
    if short is None or (_owned_by(owner, {"Job": "batch"}) and _cut_to_admitted(job)):
        return None
    whose = "its job" if owner is None else f"its {owner.kind} {owner.name}"
    return (
        f"its pod set {short.name} is admitted for {short.pods} of its {short.requested} "
        f"pods, but {whose} runs all {short.requested}, which the Workload does not show "
        f"(Kueue cuts only a batch Job with {MIN_PARALLELISM} to the pods it admits) — "
        "ask for the pods the spec prices, and queue it where they fit"
    )


def _components(spec: dict[str, Any]) -> str | None:
    """Why a component of an AppWrapper runs its pods again: each is read as its kind is."""
    for index, component in enumerate(spec.get("components") or []):
        template = component.get("template") if isinstance(component, dict) else None
        if not isinstance(template, dict):
            continue
        kind = str(template.get("kind", ""))
        group = str(template.get("apiVersion", "")).rpartition("/")[0]
        name = str((template.get("metadata") or {}).get("name", "")).strip() or f"#{index}"
        where = f"holds a {kind} {name} that"
        if HOLDS_ITS_PODS.get(kind) == group:
            return (
                f"{where} keeps its pods running, each replaced when it ends, and holds their "
                "GPUs until it is deleted, which no spec prices — wrap a Job (or a JobSet, a "
                "Kubeflow job) that ends with it"
            )
        if _READ.get(kind) == group and kind not in WRAPPERS:
            said = _runs_again(kind, template, None)
            if said is not None:
                return f"{where} {said}"
    return None


def _replica_restarts(spec: dict[str, Any], workload: Workload | None) -> str | None:
    """Why a Kubeflow job's GPU replica restarts after every exit, or ``None``.

    ``restartPolicy: Always`` on a replica spec restarts its pods' training after it ends
    well too, so the job never ends. A replica whose pod set the Workload does not name is
    taken to hold GPUs: what it holds is not known.
    """
    pod_sets = workload.pod_sets if workload is not None else ()
    named = {pod_set.name for pod_set in pod_sets}
    with_gpus = {pod_set.name for pod_set in pod_sets if pod_set.gpu_resources}
    for key, replicas in spec.items():
        if not str(key).endswith("ReplicaSpecs") or not isinstance(replicas, dict):
            continue
        for kind, replica in replicas.items():
            pod_set = str(kind).lower()  # Kueue names a replica's pod set so
            always = isinstance(replica, dict) and replica.get("restartPolicy") == "Always"
            if always and (pod_set in with_gpus or pod_set not in named):
                return (
                    f"restarts the pods of its replica {kind} after every exit "
                    f"({key}.{kind}.restartPolicy Always), so their training runs again and "
                    "again and the job never ends, which no spec prices — set restartPolicy: "
                    "OnFailure (or Never, ExitCode) on the replica"
                )
    return None


Kinds = frozenset[tuple[str, str]]
"""The (kind, API group) of the job a pod set's pods belong to: an AppWrapper's components'."""


def _kind_of(owner: Owner | None) -> Kinds:
    return frozenset() if owner is None else frozenset({(owner.kind, _group(owner.api_version))})


def _component_kinds(wrapper: Any) -> Kinds:
    """The kinds an AppWrapper holds; none read (``{}``): nothing vouches for its pods."""
    components = ((wrapper or {}).get("spec") or {}).get("components") or []
    templates = [c.get("template") for c in components if isinstance(c, dict)]
    return frozenset(
        (str(t.get("kind", "")), _group(str(t.get("apiVersion", ""))))
        for t in templates
        if isinstance(t, dict)
    )


def _all_in(kinds: Kinds, known: dict[str, str]) -> bool:
    return bool(kinds) and all(known.get(kind) == group for kind, group in kinds)


def _restarts(pod_set: PodSet, owner: Owner | None, kinds: Kinds) -> str | None:
    """Why the pod set's GPU pods run again after every exit, or ``None``.

    ``restartPolicy: Always`` as written (Kubernetes writes it into a Pod's, a Deployment's
    and a StatefulSet's templates when none is given), or none written outside the kinds
    of :data:`POLICY_ELSEWHERE` (a bare Pod's or a RayCluster's template runs as a Pod's
    default); and an owner of :data:`HOLDS_ITS_PODS` keeps them until deleted whatever
    their policy. A RayJob's Ray pods end with the job. ``kinds`` are those of the job the
    pods belong to: the owner, or the components of an AppWrapper (all of them must end).
    """
    if not pod_set.gpu_resources or _all_in(kinds, ENDS_ITS_PODS):
        return None
    policy = pod_set.restart_policy
    elsewhere = _all_in(kinds, {**POLICY_ELSEWHERE, **ENDS_ITS_PODS})
    if policy == "Always" or (policy is None and not elsewhere):
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
    return owner is not None and kinds.get(owner.kind) == _group(owner.api_version)


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]
