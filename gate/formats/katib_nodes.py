"""What a trial's pods say of their GPUs beyond their limits: claims and node selectors.

A pod may claim its GPUs through Dynamic Resource Allocation (``resourceClaims``, a
container's ``resources.claims``): the devices are in a claim template outside the file, so
the claim is refused rather than read as no GPU. A pod may pick its GPU model by a node
label (``nvidia.com/gpu.product: NVIDIA-H200``, GKE's ``gke-accelerator``): the accelerator
priced (``budget-gate/accelerator``) must then be that model, or the file is refused — the
annotation would price an A100 for pods that run on H200s. A Hydra Submitit job's typed
``gres: gpu:h200:1`` pins its model the same way (:func:`refuse_other_models`).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from gate.errors import InputError, Location
from gate.formats.model import Draft, dotted, mapping
from gate.spec.devices import visible_devices
from gate.spec.loader import DataPath

Locate = Any
_GPU_LABEL = re.compile(r"gpu\.product|gke-accelerator|instance-gpu-name|(?:^|/)accelerator$")
"""Node labels that name a GPU model (NVIDIA's feature discovery, GKE, Karpenter, custom)."""
INSTANCE_LABEL = re.compile(r"instance-type$|instance-family$")
"""Node labels that name a machine type (``p5.48xlarge``): its GPU model is not in the name."""
_TOKENS = re.compile(r"[A-Za-z0-9]+")


def refuse_claims(pod: dict[str, Any], path: DataPath, locate: Locate) -> None:
    """Refuse devices a pod claims through Dynamic Resource Allocation: not in the file."""
    claimed = [((*path, "resourceClaims"), pod.get("resourceClaims"))]
    for key in ("initContainers", "containers"):
        listed = pod.get(key)
        for j, container in enumerate(listed if isinstance(listed, list) else []):
            resources = mapping(mapping(container).get("resources"))
            claimed.append(((*path, key, j, "resources", "claims"), resources.get("claims")))
    for where, claims in claimed:
        if claims:
            raise InputError(
                f"{dotted(where[-2:])}: devices claimed through Dynamic Resource "
                "Allocation, whose count is in a claim template outside the file",
                location=locate(where),
                hint="ask for GPUs as resources.limits (nvidia.com/gpu: N), or write the "
                "experiment as a budget-gate spec",
            )


_DEVICE_LIST_ROOTS = ("/var/run/nvidia-container-devices", "/run/nvidia-container-devices")
"""Where NVIDIA's container toolkit reads a container's GPUs from its mounts' paths."""


def refuse_unasked_gpus(pod: dict[str, Any], path: DataPath, locate: Locate) -> None:
    """Refuse a container that reaches its node's GPUs without asking for them.

    As the admission refuses it: ``NVIDIA_VISIBLE_DEVICES`` (``all``: every GPU of the node,
    under the toolkit's defaults), a privileged container or one with ``SYS_ADMIN``, a
    mount at the toolkit's device list: the GPUs it gets are not its limits.
    """
    for key in ("initContainers", "containers"):
        listed = pod.get(key)
        for j, container in enumerate(listed if isinstance(listed, list) else []):
            how = _reaches_gpus(mapping(container))
            if how is not None:
                raise InputError(
                    f"{key}[{j}] {how}: it reaches its node's GPUs without asking for them, "
                    "so the GPUs it uses are not its nvidia.com/gpu limits",
                    location=locate((*path, key, j)) or locate(path),
                    hint="ask for GPUs as resources.limits (nvidia.com/gpu: N) and drop it",
                )


def _reaches_gpus(container: dict[str, Any]) -> str | None:
    if (shown := visible_devices(container)) is not None:
        return f"sets NVIDIA_VISIBLE_DEVICES={shown}"
    context = mapping(container.get("securityContext"))
    if context.get("privileged") is True:
        return "is privileged (securityContext.privileged)"
    added = mapping(context.get("capabilities")).get("add")
    names = (
        {str(c).upper().removeprefix("CAP_") for c in added or []}
        if isinstance(added, list)
        else set()
    )
    if names & {"SYS_ADMIN", "ALL"}:
        return "adds the capability SYS_ADMIN"
    mounts = container.get("volumeMounts")
    for mount in mounts if isinstance(mounts, list) else []:
        where = posixpath.normpath("/" + str(mapping(mount).get("mountPath", "")).lstrip("/"))
        if any(where == root or where.startswith(root + "/") for root in _DEVICE_LIST_ROOTS):
            return f"mounts a volume at {where}, the device list of NVIDIA's toolkit"
    return None


def gpu_labels(pod: dict[str, Any], path: DataPath) -> list[tuple[str, str, DataPath]]:
    """The GPU models a pod's node selector and required node affinity pick: label, value."""
    found = []
    for label, value in mapping(pod.get("nodeSelector")).items():
        if _picks_hardware(str(label)):
            found.append((str(label), str(value), (*path, "nodeSelector", label)))
    affinity = mapping(mapping(pod.get("affinity")).get("nodeAffinity"))
    required = mapping(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    terms = required.get("nodeSelectorTerms")
    for i, term in enumerate(terms if isinstance(terms, list) else []):
        expressions = mapping(term).get("matchExpressions")
        for j, rule in enumerate(expressions if isinstance(expressions, list) else []):
            rule = mapping(rule)
            key = str(rule.get("key"))
            if rule.get("operator") == "In" and _picks_hardware(key):
                where: DataPath = (*path, "affinity", "nodeAffinity", "nodeSelectorTerms", i, j)
                found.extend((key, str(value), where) for value in rule.get("values") or [])
    return found


def refuse_other_models(draft: Draft, pinned: tuple[tuple[str, str, Location | None], ...]) -> None:
    """Refuse a GPU model the pods are pinned to that is not the accelerator priced.

    Checked once the accelerator is known, from the file, its launcher or the policy.
    """
    traced = draft.get(("resources", "accelerator"))
    named = str(traced.value) if traced is not None else None
    for label, model, where in pinned:
        # NOTE: either names the other, the more closely: NVIDIA-A100-SXM4-80GB is an A100-80GB,
        # Slurm's gpu:a100 may be one (priced the dearer); GKE's nvidia-tesla-a100 is not
        if named is not None and (
            _tokens(named) <= _tokens(model) or _tokens(model) <= _tokens(named)
        ):
            continue
        said = f"{named} ({traced.source.detail})" if traced is not None else "not named"
        raise InputError(
            f"the trials run on {label}: {model}, but the accelerator priced is {said}",
            location=where,
            hint=f"give the accelerator as {model}, spelt as the price catalog names it "
            "(budget-gate prices lists them), or write the experiment as a budget-gate spec",
        )


def _picks_hardware(label: str) -> bool:
    return bool(_GPU_LABEL.search(label) or INSTANCE_LABEL.search(label))


def _tokens(name: str) -> set[str]:
    """A GPU name's parts, in capitals: NVIDIA-A100-SXM4-80GB → {NVIDIA, A100, SXM4, 80GB}."""
    return {part.upper() for part in _TOKENS.findall(name)}
