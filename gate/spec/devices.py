"""What hands a Kubernetes container accelerators (pure).

Device-plugin resources (``nvidia.com/gpu``, or any named like an accelerator), devices
claimed through Dynamic Resource Allocation, ``NVIDIA_VISIBLE_DEVICES``, and what reaches
every GPU of a node past them (:func:`reaches_every_gpu`). Shared by the
Kueue admission (a Workload's containers), the SkyPilot admission policy and the SkyPilot
importer (pod configs merged into a task's pods), so all three count the same resources.
What no object shows (an image's own ``ENV NVIDIA_VISIBLE_DEVICES=all``, as CUDA's base
images set it, or one from ``envFrom``) is the NVIDIA container toolkit's to refuse
(``docs/threat-model.md``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping
from typing import Any

_NO_DEVICES = ("", "void", "none")
"""NVIDIA_VISIBLE_DEVICES values that show no GPU (the container toolkit's)."""


def visible_devices(container: Mapping[str, Any]) -> str | None:
    """The GPUs a container's ``NVIDIA_VISIBLE_DEVICES`` shows it, when it shows any.

    NOTE: with the NVIDIA container toolkit's defaults, an unprivileged container that sets
    it sees those GPUs (``all``: every one of its node's) while asking for none. Of several
    entries the last counts, as the kubelet sets them; one whose value is outside the
    object (``valueFrom``) is taken as showing GPUs: it may.
    """
    env = container.get("env")
    shown = None
    for entry in env if isinstance(env, list) else []:
        if isinstance(entry, Mapping) and entry.get("name") == "NVIDIA_VISIBLE_DEVICES":
            if "valueFrom" in entry:
                shown = "(valueFrom, a value outside the object)"
                continue
            value = str(entry.get("value", "")).strip()
            shown = None if value.lower() in _NO_DEVICES else value
    return shown


DEVICE_LIST_ROOTS = ("/var/run/nvidia-container-devices", "/run/nvidia-container-devices")
"""Where NVIDIA's toolkit reads the GPUs a container gets from its mounts' paths."""


def reaches_every_gpu(container: Mapping[str, Any]) -> str | None:
    """How a container gets its node's GPUs past the device plugin, said, or ``None``.

    NOTE: the toolkit honours ``NVIDIA_VISIBLE_DEVICES`` (CUDA images set it to ``all``)
    in a privileged container, and takes one with ``CAP_SYS_ADMIN`` for privileged, even
    where the node refuses it to the unprivileged; and a mount whose path lies under its
    device-list root names GPUs to hand over (the ``volume-mounts`` strategy, the very
    hardening that refuses the variable, reads them so). Shared by the Kueue admission and
    the SkyPilot policy (pod configs); a value of the wrong type counts as what it may be.
    """
    context = _mapping(container.get("securityContext"))
    if context.get("privileged") not in (None, False):
        return "is privileged (securityContext.privileged)"
    added = _mapping(context.get("capabilities")).get("add") or []
    names = {str(c).strip().upper().removeprefix("CAP_") for c in _listed(added)}
    if names & {"SYS_ADMIN", "ALL"}:
        return "adds the capability SYS_ADMIN (securityContext.capabilities.add)"
    for mount in _listed(container.get("volumeMounts")):
        path = mount.get("mountPath", "") if isinstance(mount, Mapping) else mount
        where = posixpath.normpath("/" + str(path).strip().lstrip("/"))
        if any(where == root or where.startswith(root + "/") for root in DEVICE_LIST_ROOTS):
            return f"mounts a volume at {where}, the device list of NVIDIA's toolkit"
    return None


def _listed(value: Any) -> list[Any]:
    """A list as itself, any other value but none as a list of one (fail closed)."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


_ACCELERATOR_VENDORS = (
    "nvidia.com/",
    "amd.com/",
    "gpu.intel.com/",
    "google.com/tpu",
    "aws.amazon.com/neuron",
    "habana.ai/",
    "cloud-tpus.google.com/",
    "huawei.com/",
    "cambricon.com/",
    "enflame.com/",
    "qualcomm.com/",
    "hygon.com/",
    "furiosa.ai/",
    "rebellions.ai/",
    "metax-tech.com/",
    "iluvatar.ai/",
    "mthreads.com/",
    "sophgo.com/",
)
"""Extended resources of accelerator device plugins: one not priced is refused, not free."""
_NAMED_LIKE_ONE = re.compile(
    r"(?:^|[/._-])v?(?:gpu|cuda|tpu|npu|neuron|gaudi|accelerat)", re.IGNORECASE
)
"""A device plugin's resource named like an accelerator (``k8s.amazonaws.com/vgpu``,
``tencent.com/vcuda-core``, DRA's ``deviceclass.resource.kubernetes.io/gpu.nvidia.com``)."""


def counts_as_accelerator(resource: str) -> bool:
    """Whether a Kubernetes resource names an accelerator, priced or not (a GPU, a TPU)."""
    return resource.startswith(_ACCELERATOR_VENDORS) or (
        "/" in resource and _NAMED_LIKE_ONE.search(resource) is not None
    )


def devices_in(node: Any) -> Iterator[str]:
    """The accelerator resources, device claims and NVIDIA_VISIBLE_DEVICES in a config tree."""
    if isinstance(node, list):
        for item in node:
            yield from devices_in(item)
        return
    if not isinstance(node, dict):
        return
    if visible_devices(node) is not None:
        yield "NVIDIA_VISIBLE_DEVICES"
    asked = _mapping(node.get("resources"))
    if node.get("resourceClaims") or asked.get("claims"):
        yield "resourceClaims (dynamic resource allocation)"
    annotations = _mapping(node.get("annotations"))
    yield from (f"the annotation {k}" for k in annotations if cdi_annotation(str(k)))
    for part in ("limits", "requests"):
        yield from (str(n) for n in _mapping(asked.get(part)) if counts_as_accelerator(str(n)))
    for value in node.values():
        yield from devices_in(value)


CDI_PREFIX = "cdi.k8s.io/"
"""Pod annotations a CDI-enabled runtime (containerd 1.7+, CRI-O) reads as devices to inject
(``cdi.k8s.io/x: nvidia.com/gpu=all``), past the device plugin and any GPU request."""


def cdi_annotation(key: str) -> bool:
    """Whether a pod annotation asks the container runtime for devices (CDI)."""
    return key.strip().lower().startswith(CDI_PREFIX)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
