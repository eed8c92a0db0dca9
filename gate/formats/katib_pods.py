"""What one Katib trial's pods hold: their GPUs, how many run at once, the containers in them.

A trial is a Job (``parallelism`` pods at once, ``completions`` in all), a Kubeflow job of
replica sets (``*ReplicaSpecs``: ``replicas`` pods of each role) or a TrainJob
(``numNodes``). A pod holds the GPUs its containers ask for, as Kubernetes counts them: its
main containers' and its sidecars' (init containers with ``restartPolicy: Always``, which
run beside them) together, or the most one plain init container asks for, whichever is
more. Counts are whole numbers or refused; a GPU quantity may be written as Kubernetes
writes one (``"8"``, ``8000m``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, DecimalException
from typing import Any

from gate.errors import InputError, Location
from gate.formats.katib_epochs import Epochs, pod_epochs
from gate.formats.katib_nodes import gpu_labels, refuse_claims, refuse_unasked_gpus
from gate.formats.model import mapping, value_at
from gate.spec.devices import cdi_annotation, counts_as_accelerator
from gate.spec.loader import DataPath, LoadedDoc

GPU = "nvidia.com/gpu"
GPUS = (GPU, "amd.com/gpu")
"""The device-plugin resources counted as whole GPUs."""
_ACCELERATOR_LIKE = re.compile(r"gpu|mig-|neuron|gaudi|tpu", re.IGNORECASE)
"""Resource names of other accelerators (MIG slices, Intel, Habana, Trainium): not counted,
so refused rather than read as no GPU."""
_GPU_SHARES = ("nvidia.com/gpumem", "nvidia.com/gpucores")
"""HAMi's memory and core shares beside ``nvidia.com/gpu``: no GPUs of their own."""
REPLICA_KINDS = frozenset(
    {"PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", "MXJob"}
)
"""Kubeflow Training Operator jobs: pods by ``*ReplicaSpecs``."""
_GROUPS = {"Job": ("batch",), "TrainJob": ("trainer.kubeflow.org",)}
"""The API group each kind is read for (the Training Operator's: ``kubeflow.org``)."""
Locate = Callable[[DataPath], Location | None]


@dataclass(frozen=True, slots=True)
class Pod:
    """One kind of pod of the trial: how many run at once, its spec, where it is written."""

    replicas: int
    spec: dict[str, Any]
    path: DataPath


def _refuse_cdi(node: Any, path: DataPath, locate: Locate) -> None:
    """Refuse a ``cdi.k8s.io/`` annotation anywhere in the trial.

    A CDI-enabled runtime injects the devices it names (``nvidia.com/gpu=all``), past any
    GPU count.
    """
    if isinstance(node, list):
        for i, item in enumerate(node):
            _refuse_cdi(item, (*path, i), locate)
        return
    if not isinstance(node, dict):
        return
    for key in mapping(node.get("annotations")):
        if cdi_annotation(str(key)):
            raise InputError(
                f"the annotation {key} asks the container runtime for devices (CDI), past the "
                "GPUs budget-gate counts",
                location=locate((*path, "annotations", key)) or locate(path),
                hint="ask for nvidia.com/gpu in the container's resources, and drop it",
            )
    for key, value in node.items():
        _refuse_cdi(value, (*path, key), locate)


def trial_pods(trial: dict[str, Any], base: DataPath, locate: Locate) -> list[Pod]:
    """The pods of a Job, a PyTorchJob (any ``*ReplicaSpecs``) or a TrainJob.

    Another kind (a JobSet, an Argo Workflow) is refused: its pods are not where a Job
    keeps them, and reading it as one would count no GPU and believe the annotations.
    """
    spec = mapping(trial.get("spec"))
    here = (*base, "spec")
    kind = trial.get("kind")
    if not trial:
        raise InputError(
            "the Experiment has no trialTemplate.trialSpec (a template in a ConfigMap is not "
            "in the file): the trial's pods and GPUs cannot be counted",
            location=locate(base[:-1]) or locate(()),
            hint="write the trial in trialTemplate.trialSpec",
        )
    _refuse_cdi(trial, base, locate)
    group = str(trial.get("apiVersion") or "").rpartition("/")[0]
    if kind not in ("Job", "TrainJob", *REPLICA_KINDS) or group not in _GROUPS.get(
        str(kind), ("kubeflow.org",)
    ):
        raise InputError(
            f"the trial is a {kind!r} of apiVersion {trial.get('apiVersion')!r}: budget-gate "
            "counts the pods and GPUs of a batch/v1 Job, a TrainJob or a Kubeflow training job "
            "(PyTorchJob, TFJob, MPIJob ...), not of this",
            location=locate((*base, "kind")) or locate(base),
            hint="run the trial as a Job or a Kubeflow training job, or write the experiment "
            "as a budget-gate spec",
        )
    if kind == "TrainJob":
        return [_trainjob_pod(spec, here, locate)]
    _refuse_reruns(spec, here, locate)
    replica_sets = [k for k in spec if k.endswith("ReplicaSpecs") and isinstance(spec[k], dict)]
    if replica_sets:
        out = []
        for key in replica_sets:
            for role, replica in spec[key].items():
                if isinstance(replica, dict):
                    where = (*here, key, role)
                    pod = mapping(mapping(replica.get("template")).get("spec"))
                    n = count(
                        replica.get("replicas"), f"{role}.replicas", (*where, "replicas"), locate
                    )
                    # NOTE: the training operator's defaults spell a role in camel case
                    if str(role).lower() == "worker" and kind == "PyTorchJob":
                        n = max(n, _elastic_top(spec, here, locate))
                    out.append(Pod(n, pod, (*where, "template", "spec")))
        return out
    pod = mapping(mapping(spec.get("template")).get("spec"))
    return [Pod(_job_at_once(spec, here, locate), pod, (*here, "template", "spec"))]


_JOB_BACKOFF = 6
"""A Kubernetes Job's default ``backoffLimit``: the reruns of a failure no file asks for."""


def _refuse_reruns(spec: dict[str, Any], here: DataPath, locate: Locate) -> None:
    """Refuse a trial that reruns its training: ``restartPolicy: Always``, a ``backoffLimit``.

    NOTE: the training operator copies a replica's ``restartPolicy`` onto its pods, and the
    kubelet restarts an ``Always`` container after a clean exit too: the trial never ends,
    retraining its epochs without bound. A ``backoffLimit`` reruns a failed training that
    many times under one trial, as torchrun's ``--max-restarts`` does: one past a Job's
    default (6) is refused.
    """
    policies = [
        ((*here, key, role, "restartPolicy"), replica.get("restartPolicy"))
        for key in spec
        if key.endswith("ReplicaSpecs") and isinstance(spec[key], dict)
        for role, replica in spec[key].items()
        if isinstance(replica, dict)
    ]
    pod = mapping(mapping(spec.get("template")).get("spec"))
    policies.append(((*here, "template", "spec", "restartPolicy"), pod.get("restartPolicy")))
    for path, value in policies:
        if value == "Always":
            raise InputError(
                f"{'.'.join(map(str, path[-3:]))} is Always: the pods restart after the "
                "training ends too, so the trial never completes and trains again without bound",
                location=locate(path),
                hint="use OnFailure or Never (ExitCode for a Kubeflow job)",
            )
    for path in ((*here, "runPolicy", "backoffLimit"), (*here, "backoffLimit")):
        limit = mapping(spec.get(path[-2]) if path[-2] == "runPolicy" else spec).get("backoffLimit")
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > _JOB_BACKOFF:
            raise InputError(
                f"{'.'.join(map(str, path[-2:]))} is {limit}: a failed training runs again up "
                f"to that many times under one trial, past Kubernetes' default of {_JOB_BACKOFF}",
                location=locate(path),
                hint=f"set backoffLimit to at most {_JOB_BACKOFF} (0: no rerun), and let "
                "Katib's maxFailedTrialCount and the policy's retries decide what failures cost",
            )


def _trainjob_pod(spec: dict[str, Any], here: DataPath, locate: Locate) -> Pod:
    """A TrainJob's nodes: each a pod of ``resourcesPerNode``, both in the file or refused."""
    trainer = mapping(spec.get("trainer"))
    where = (*here, "trainer")
    per_node = trainer.get("resourcesPerNode")
    if not isinstance(per_node, dict):
        raise InputError(
            "the TrainJob has no trainer.resourcesPerNode: its GPUs come from its runtime "
            "(runtimeRef), which is not in the file",
            location=locate(where) or locate(here),
            hint="write trainer.resourcesPerNode (limits: {nvidia.com/gpu: N}) and "
            "trainer.numNodes in the trial",
        )
    if trainer.get("numNodes") is None:
        raise InputError(
            "the TrainJob has no trainer.numNodes: its nodes come from its runtime "
            "(runtimeRef), which is not in the file",
            location=locate(where) or locate(here),
            hint="write trainer.numNodes: N in the trial",
        )
    nodes = count(trainer.get("numNodes"), "trainer.numNodes", (*where, "numNodes"), locate)
    # NOTE: the trainer's container: its args and env are the program's as much as its command
    container = {key: trainer.get(key) for key in ("command", "args", "env")}
    pod = {"containers": [{**container, "resources": per_node}]}
    return Pod(nodes, pod, where)


def _elastic_top(spec: dict[str, Any], here: DataPath, locate: Locate) -> int:
    """The most workers an elastic PyTorchJob scales to (``elasticPolicy.maxReplicas``)."""
    elastic = mapping(spec.get("elasticPolicy"))
    if elastic.get("maxReplicas") is None:
        return 0
    where = (*here, "elasticPolicy", "maxReplicas")
    return count(elastic["maxReplicas"], "elasticPolicy.maxReplicas", where, locate)


def _job_at_once(spec: dict[str, Any], here: DataPath, locate: Locate) -> int:
    """A Job's pods at once; a Job that runs its pods more than once over is refused."""
    parallel = count(spec.get("parallelism"), "parallelism", (*here, "parallelism"), locate)
    if spec.get("completions") is None:
        return parallel
    completions = count(spec["completions"], "completions", (*here, "completions"), locate)
    if completions > parallel:
        raise InputError(
            f"the trial's Job runs {completions} completions, {parallel} at a time: each "
            f"trial trains {math.ceil(completions / parallel)} times over, which budget-gate "
            "prices as once",
            location=locate((*here, "completions")),
            hint=f"set completions: {parallel} or less (or parallelism: {completions})",
        )
    return completions


def pod_gpus(pod: dict[str, Any], path: DataPath, locate: Locate) -> tuple[int, Location | None]:
    """The GPUs one pod holds, as Kubernetes counts them, and where the first is asked for."""
    running, init, first = 0, 0, None
    for key, container, here in containers(pod, path):
        gpus, where = container_gpus(container, here, locate)
        first = first or where
        sidecar = key == "initContainers" and container.get("restartPolicy") == "Always"
        if key == "containers" or sidecar:
            running += gpus
        else:
            init = max(init, gpus)
    return max(running, init), first


def containers(pod: dict[str, Any], path: DataPath) -> list[tuple[str, dict[str, Any], DataPath]]:
    """Every container of a pod, init containers too: (list key, container, its path)."""
    found = []
    for key in ("initContainers", "containers"):
        listed = pod.get(key)
        for j, container in enumerate(listed if isinstance(listed, list) else []):
            if isinstance(container, dict):
                found.append((key, container, (*path, key, j)))
    return found


def container_gpus(
    container: dict[str, Any], here: DataPath, locate: Locate
) -> tuple[int, Location | None]:
    """The GPUs a container asks for (its limit, else its request), and where."""
    resources = mapping(container.get("resources"))
    for section in ("limits", "requests"):
        asked = mapping(resources.get(section))
        for name in asked:
            shares = str(name).startswith(_GPU_SHARES)
            other = _ACCELERATOR_LIKE.search(str(name)) or counts_as_accelerator(str(name))
            if name not in GPUS and not shares and other:
                raise InputError(
                    f"resources.{section}.{name}: an accelerator budget-gate does not count "
                    f"({' or '.join(GPUS)} it does)",
                    location=locate((*here, "resources", section, name)),
                    hint="ask for whole GPUs, or write the experiment as a budget-gate spec "
                    "(resources.mig_profile prices MIG slices)",
                )
        named = [name for name in GPUS if asked.get(name) is not None]
        if named:  # NOTE: NVIDIA's and AMD's both, on a node that has both: they add up
            paths = [(*here, "resources", section, name) for name in named]
            gpus = sum(
                quantity(asked[name], f"resources.{section}.{name}", where, locate)
                for name, where in zip(named, paths, strict=True)
            )
            return gpus, locate(paths[0])
    return 0, None


_QUANTITY = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$"
)
_SUFFIX = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    **{f"{p}i": Decimal(1024) ** (i + 1) for i, p in enumerate("KMGTPE")},
}


def quantity(value: Any, what: str, path: DataPath, locate: Locate) -> int:
    """A Kubernetes quantity of GPUs (``8``, ``"8"``, ``8000m``) as a whole number, or refused."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    match = _QUANTITY.fullmatch(str(value).strip()) if isinstance(value, (str, float)) else None
    try:
        amount = (
            Decimal(match.group(1)) * _SUFFIX.get(match.group(2) or "", Decimal(1))
            if match
            else None
        )
    except DecimalException:  # InvalidOperation, or Overflow (1e999999999E)
        amount = None
    if amount is None or amount < 0 or amount != amount.to_integral_value():
        raise InputError(
            f"{what} is {value!r}: not a whole number of GPUs",
            location=locate(path),
            hint=f"write the GPUs as a whole number, e.g. {GPU}: 8",
        )
    return int(amount)


def count(value: Any, what: str, path: DataPath, locate: Locate) -> int:
    """A count of pods the file gives (``replicas``, ``parallelism``): unset is 1."""
    if value is None:
        return 1
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise InputError(
        f"{what} is {value!r}, not a whole number of pods",
        location=locate(path),
        hint=f"write {what.rsplit('.', 1)[-1]}: N with N a whole number",
    )


def trial_reading(
    trial: dict[str, Any], spec: dict[str, Any], doc: LoadedDoc
) -> tuple[int, Location | None, list[Epochs], list[tuple[str, str, DataPath]]]:
    """One trial's GPUs (and where), epochs flags and the GPU models its pods pick."""
    base: DataPath = ("spec", "trialTemplate", "trialSpec")
    locate = doc.source_map.locate
    gpus, gpu_at = 0, None
    epochs: list[Epochs] = []
    labels = []
    # NOTE: Katib injects a Custom metrics collector into the trial's pods: a sidecar of each
    collector: DataPath = ("spec", "metricsCollectorSpec", "collector", "customCollector")
    sidecar = mapping(value_at(spec, collector[1:]))
    for pod in trial_pods(trial, base, locate):
        refuse_claims(pod.spec, pod.path, locate)
        refuse_unasked_gpus(pod.spec, pod.path, locate)
        labels.extend(gpu_labels(pod.spec, pod.path))
        held, where = pod_gpus(pod.spec, pod.path, locate)
        extra, extra_at = container_gpus(sidecar, collector, locate)
        gpus += pod.replicas * (held + extra)
        gpu_at = gpu_at or where or extra_at
        epochs.extend(pod_epochs(containers(pod.spec, pod.path), spec, doc))
    if sidecar:
        refuse_unasked_gpus({"containers": [sidecar]}, collector[:-1], locate)
        epochs.extend(pod_epochs([("containers", sidecar, collector)], spec, doc))
    return gpus, gpu_at, epochs, labels
