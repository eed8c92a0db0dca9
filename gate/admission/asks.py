"""What a launch asks for, against what its spec was priced with (pure).

A launch is matched on the accelerator's name, the GPUs in all (per node or pod × nodes or
pods) and whether it runs on spot. What one Kubernetes pod asks for is :func:`pod_request`:
its GPUs as Kubernetes sizes the pod, and a refusal of what reaches GPUs without asking. A
MIG spec's slices are counted as its GPUs; the caller that knows how slices are asked for
(Kueue's ``nvidia.com/mig-*`` resources) compares them, and SkyPilot, which can ask only
for whole GPUs, refuses a MIG spec after this.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gate.spec.devices import counts_as_accelerator, reaches_every_gpu, visible_devices
from gate.spec.experiment import Experiment
from gate.spec.trial import Capacity

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe")
"""Extended resources counted as whole GPUs."""
MIG_PREFIX = "nvidia.com/mig-"
"""``nvidia.com/mig-1g.10gb``: MIG slices of the profile after the prefix."""


@dataclass(frozen=True, slots=True)
class GpuAsk:
    """One candidate of a launch's resources: accelerator, count per node, nodes, spot."""

    accelerator: str
    per_node: float
    nodes: int
    spot: bool

    @property
    def total(self) -> float:
        """GPUs over all nodes."""
        return self.per_node * self.nodes

    def __str__(self) -> str:
        nodes = f" ({num(self.per_node)} per node × {self.nodes} nodes)" if self.nodes > 1 else ""
        return f"{num(self.total)} × {self.accelerator}{nodes}"


def matches(ask: GpuAsk, spec: Experiment) -> bool:
    """Same accelerator, same GPUs in all (a MIG spec's slices as GPUs), spot only for spot."""
    want = spec.resources
    same_name = ask.accelerator.lower() == want.accelerator.lower()
    same_count = ask.total == want.gpus_per_trial
    return same_name and same_count and ask.spot == (want.capacity is Capacity.SPOT)


def num(value: float) -> str:
    """``8`` for 8.0, ``0.5`` for 0.5."""
    return str(int(value)) if value == int(value) else str(value)


def pod_request(pod: Mapping[str, Any]) -> dict[str, int]:
    """GPUs one pod holds, per resource, as Kubernetes sizes a pod (its effective request).

    Containers and sidecars (``restartPolicy: Always`` init containers) summed; an init
    container runs beside the sidecars started before it, so it holds its own GPUs plus
    theirs; the pod holds the largest of these.

    Raises:
        ValueError: the pod asks for devices budget-gate cannot count (refused, not let
            through as asking for no GPU): through ``resourceClaims`` (DRA), or an
            accelerator resource it does not price (``google.com/tpu``, a renamed share).
    """
    if pod.get("resourceClaims"):
        raise ValueError(
            "the pod asks for devices through resourceClaims (dynamic resource allocation), "
            "which budget-gate cannot count — ask for nvidia.com/gpu in its resources"
        )
    held: dict[str, int] = {}
    for container in pod.get("containers", []):
        _add(held, _container_gpus(container))
    sidecars: dict[str, int] = {}
    peak: dict[str, int] = {}
    for container in pod.get("initContainers", []):
        asked = _container_gpus(container)
        if container.get("restartPolicy") == "Always":
            _add(held, asked)
            _add(sidecars, asked)
            asked = sidecars
        else:
            asked = _add(dict(asked), sidecars)
        for resource, amount in asked.items():
            peak[resource] = max(peak.get(resource, 0), amount)
    names = set(held) | set(peak)
    return {r: max(held.get(r, 0), peak.get(r, 0)) for r in sorted(names)}


def _add(into: dict[str, int], more: Mapping[str, int]) -> dict[str, int]:
    for resource, amount in more.items():
        into[resource] = into.get(resource, 0) + amount
    return into


def _container_gpus(container: Mapping[str, Any]) -> dict[str, int]:
    if (visible := visible_devices(container)) is not None:
        raise ValueError(
            f"container {container.get('name', '(unnamed)')!r} sets NVIDIA_VISIBLE_DEVICES="
            f"{visible}, which reaches the node's GPUs without asking for them — ask for "
            "nvidia.com/gpu in its resources, and drop the variable"
        )
    if (how := reaches_every_gpu(container)) is not None:
        raise ValueError(
            f"container {container.get('name', '(unnamed)')!r} {how}, which reaches every GPU "
            "of its node without asking for them (the NVIDIA container toolkit hands them "
            "over) — ask for nvidia.com/gpu in its resources, and drop it"
        )
    resources = container.get("resources") or {}
    # NOTE: an extended resource's request defaults to its limit; both set must be equal.
    asked = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
    for resource in asked:
        if counts_as_accelerator(resource) and not _priced(resource):
            raise ValueError(
                f"{resource} is an accelerator budget-gate does not price — ask for "
                f"{', '.join(GPU_RESOURCES)} or nvidia.com/mig-<profile>"
            )
    return {r: _whole(r, v) for r, v in asked.items() if _priced(r)}


def _priced(resource: str) -> bool:
    """Whether the gate counts ``resource`` as GPUs: whole ones, or MIG slices."""
    return resource in GPU_RESOURCES or is_mig(resource)


def is_mig(resource: str) -> bool:
    """Whether ``resource`` counts MIG slices (``nvidia.com/mig-1g.10gb``)."""
    return resource.startswith(MIG_PREFIX)


def _whole(resource: str, value: object) -> int:
    text = str(value)
    if not re.fullmatch(r"[0-9]+", text):
        raise ValueError(f"{resource}: {text!r} is not a whole number of devices")
    return int(text)
