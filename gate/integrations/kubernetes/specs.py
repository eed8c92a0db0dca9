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
from gate.admission.workload import Owner, Workload
from gate.integrations.kubernetes.api import KubeError, KueueApi

SPEC_ON_THE_JOB = {"TrainJob": "trainer.kubeflow.org", "SparkApplication": "sparkoperator.k8s.io"}
"""Job kinds whose pod sets Kueue does not copy from a pod template the user writes (a
TrainJob's come from its runtime, a SparkApplication's from its driver and executor specs):
their spec is named on the job itself, found by the Workload's ``ownerReference``."""

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
    obj = read_owner(api, workload.namespace, owner, owners, "the spec it names")
    meta = (obj or {}).get("metadata") or {}
    named = str((meta.get("annotations") or {}).get(SPEC_ANNOTATION, "")).strip()
    return named or None


def read_owner(api: KueueApi, namespace: str, owner: Owner, owners: OwnerCache, why: str) -> Any:
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
