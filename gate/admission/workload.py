"""A Kueue Workload as the AdmissionCheck reads it: its pods, GPUs, placement and spec (pure).

Reads the object as the API server returns it (``kueue.x-k8s.io/v1beta2``, a plain dict):

- the spec it names: the :data:`~gate.admission.labels.SPEC_ANNOTATION` annotation of its
  pod sets' templates (Kueue copies the job's pod template into each pod set), else the
  caller follows the controller ``ownerReference`` to the job itself;
- per pod set, the pods admitted (``status.admission.podSetAssignments[].count``, else the
  pod set's ``count``) and each pod's GPUs, counted as Kubernetes sizes a pod
  (:func:`gate.admission.asks.pod_request`);
- where those GPUs run: the accelerator and spot-ness named by the pod template's
  ``nodeSelector``, its required node affinity, or the ResourceFlavor Kueue assigned to the
  GPU resource (its ``nodeLabels``, and last its name, unless the pods pick their nodes
  otherwise: a machine type, a node's name, other pods, a toleration).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gate.admission.affinity import Picker, node_pickers, pinned_labels, required_keys
from gate.admission.asks import pod_request
from gate.admission.commands import Run, container_runs
from gate.admission.labels import SPEC_ANNOTATION
from gate.spec.devices import cdi_annotation

ACCELERATOR_LABELS = (
    "budget-gate/accelerator",
    "nvidia.com/gpu.product",
    "cloud.google.com/gke-accelerator",
    "karpenter.k8s.aws/instance-gpu-name",
)
"""Node labels that name the accelerator, most explicit first (``budget-gate/accelerator``
holds the price catalog's own name)."""
PLACE_LABELS = ("kubernetes.io/os", "kubernetes.io/arch", "topology.kubernetes.io/")
"""Node labels that say where or on what system a pod runs, not on which GPU: a pod may pick
nodes by them and still be priced by its flavor's name."""
SPOT_LABELS: Mapping[str, str] = {
    "budget-gate/capacity": "spot",
    "cloud.google.com/gke-spot": "true",
    "cloud.google.com/gke-preemptible": "true",
    "karpenter.sh/capacity-type": "spot",
    "eks.amazonaws.com/capacityType": "SPOT",
    "kubernetes.azure.com/scalesetpriority": "spot",
}
"""Node labels, with their spot value, that put pods on spot (preemptible) capacity."""


class MalformedWorkload(Exception):
    """The object is not a Workload this check can read; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Placement:
    """What a pod set's nodes are, and which label or flavor said so."""

    accelerator: str | None
    accelerator_from: str
    spot: bool
    spot_from: str


@dataclass(frozen=True, slots=True)
class PodSet:
    """One pod set: its pods, each pod's GPUs (by resource), its placement and labels."""

    name: str
    pods: int
    gpus: Mapping[str, int]
    node_selector: Mapping[str, str]
    flavor: str | None
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    node_affinity: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The node labels its required node affinity pins, and the values it allows."""
    affinity_keys: tuple[str, ...] = ()
    """Every node label its required node affinity says anything of (``NotIn`` too)."""
    restart_policy: str | None = None
    """Its template's ``restartPolicy``, where written (``None``: not in the template)."""
    node_pickers: tuple[Picker, ...] = ()
    """The other ways its pods pick their nodes (:func:`~gate.admission.affinity.node_pickers`)."""
    requested: int | None = None
    """The pods its job asks for (the pod set's ``count``), where Kueue admitted fewer."""
    runs: tuple[Run, ...] = ()
    """What its containers run (:func:`~gate.admission.commands.container_runs`)."""

    @property
    def gpu_resources(self) -> dict[str, int]:
        """GPU and MIG resources per pod, only those asked for."""
        return {r: n for r, n in self.gpus.items() if n}

    @property
    def spec_ref(self) -> str | None:
        """The spec its template names, if any."""
        value = self.annotations.get(SPEC_ANNOTATION, "").strip()
        return value or None


@dataclass(frozen=True, slots=True)
class CheckStatus:
    """One entry of ``status.admissionChecks``: its state, message and when it last moved."""

    state: str
    message: str = ""
    since: str = ""


@dataclass(frozen=True, slots=True)
class Owner:
    """The controller ``ownerReference``: the job Kueue made the Workload for."""

    api_version: str
    kind: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class Workload:
    """The parts of a Workload the check decides on."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    pod_sets: tuple[PodSet, ...]
    owner: Owner | None
    checks: Mapping[str, CheckStatus] = field(default_factory=dict)
    """Each admission check's entry, by check name."""
    quota_reserved: bool = False
    active: bool = True

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    def spec_refs(self) -> set[str]:
        """The specs the pod sets' templates name (one, normally)."""
        return {ref for ps in self.pod_sets if (ref := ps.spec_ref) is not None}

    def pending(self, ours: Iterable[str]) -> list[str]:
        """Our checks this Workload waits on, once Kueue reserved quota for it."""
        if not self.quota_reserved or not self.active:
            return []
        return sorted(
            name for name in ours if name in self.checks and self.checks[name].state == "Pending"
        )


def read_workload(obj: Mapping[str, Any]) -> Workload:
    """The Workload ``obj`` (as the API returns it).

    Raises:
        MalformedWorkload: a field this check needs is missing or of the wrong type.
    """
    try:
        meta = obj["metadata"]
        status = obj.get("status") or {}
        assignments = {
            a["name"]: a for a in (status.get("admission") or {}).get("podSetAssignments", [])
        }
        pod_sets = tuple(_pod_set(ps, assignments.get(ps["name"])) for ps in obj["spec"]["podSets"])
        conditions = {c["type"]: c["status"] for c in status.get("conditions", [])}
        return Workload(
            namespace=meta["namespace"],
            name=meta["name"],
            uid=meta.get("uid", ""),
            resource_version=meta.get("resourceVersion", ""),
            pod_sets=pod_sets,
            owner=_owner(meta.get("ownerReferences", [])),
            checks=_checks(status),
            quota_reserved=conditions.get("QuotaReserved") == "True",
            active=obj["spec"].get("active", True) is not False,
        )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise MalformedWorkload(f"{type(exc).__name__}: {exc}") from None


def bare_workload(obj: Mapping[str, Any]) -> Workload | None:
    """What a Workload that cannot be read still says: who it is and its checks, or ``None``."""
    try:
        meta = obj["metadata"]
        return Workload(
            meta["namespace"],
            meta["name"],
            meta.get("uid", ""),
            meta.get("resourceVersion", ""),
            (),
            None,
            _checks(obj.get("status") or {}),
            quota_reserved=True,
        )
    except (KeyError, TypeError, AttributeError, ValueError):
        return None


def _checks(status: Mapping[str, Any]) -> dict[str, CheckStatus]:
    return {
        c["name"]: CheckStatus(c["state"], c.get("message", ""), c.get("lastTransitionTime", ""))
        for c in status.get("admissionChecks", [])
    }


def _pod_set(pod_set: Mapping[str, Any], assignment: Mapping[str, Any] | None) -> PodSet:
    template = pod_set["template"]
    meta = template.get("metadata") or {}
    pod = template["spec"]
    asked = int(pod_set.get("count", 1))
    count = int((assignment or {}).get("count", asked))
    flavors = (assignment or {}).get("flavors") or {}
    gpus = pod_request(pod)
    annotations = _texts(meta.get("annotations"))
    if cdi := sorted(k for k in annotations if cdi_annotation(k)):
        raise ValueError(
            f"the pod annotation {cdi[0]} asks the container runtime for devices (CDI), past "
            "the device plugin and budget-gate — ask for nvidia.com/gpu in its resources, and "
            "drop the annotation"
        )
    # NOTE: the flavor of a GPU resource the pods ask for, not of one listed at 0
    gpu_flavor = next((flavors[r] for r, n in gpus.items() if n and r in flavors), None)
    return PodSet(
        name=pod_set["name"],
        pods=count,
        gpus=gpus,
        node_selector=_texts(pod.get("nodeSelector")),
        flavor=gpu_flavor,
        labels=_texts(meta.get("labels")),
        annotations=annotations,
        node_affinity=pinned_labels(pod),
        affinity_keys=required_keys(pod),
        restart_policy=pod.get("restartPolicy"),
        node_pickers=node_pickers(pod, [r for r, n in gpus.items() if n]),
        requested=asked if count < asked else None,
        runs=container_runs(pod),
    )


def _texts(value: Any) -> dict[str, str]:
    """Labels, annotations or a node selector: a map of strings, else ``TypeError``."""
    found = dict(value or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
        raise TypeError(f"{str(found)[:80]} is not a map of strings")
    return found


def _owner(references: Iterable[Mapping[str, Any]]) -> Owner | None:
    for ref in references:
        if ref.get("controller"):
            said = _texts({k: ref[k] for k in ("apiVersion", "kind", "name")})
            said["uid"] = _texts({"uid": ref.get("uid", "")})["uid"]
            return Owner(said["apiVersion"], said["kind"], said["name"], said["uid"])
    return None


def placement(
    pod_set: PodSet, flavor_labels: Mapping[str, str] | None, names: Iterable[str]
) -> Placement:
    """Where ``pod_set``'s GPUs run: its accelerator, and whether that is spot capacity.

    The accelerator is one of ``names``, else the raw value, or ``None`` when nothing
    names one.
    ``flavor_labels`` are the ``nodeLabels`` of its GPU flavor (``None``: no such flavor).
    """
    flavor = pod_set.flavor
    pinned = pod_set.node_affinity
    affinity = {k: " or ".join(v) for k, v in pinned.items()}
    sources = [
        ("nodeSelector", pod_set.node_selector),
        ("nodeAffinity", affinity),
        (f"flavor {flavor}", flavor_labels or {}),
    ]
    accelerator, said, resolved = None, "nothing names it", None
    for where, labels in sources:
        key = next((k for k in ACCELERATOR_LABELS if labels.get(k)), None)
        if key is not None:
            accelerator, said = labels[key], f"{where} {key}={labels[key]}"
            resolved = _resolved(pinned[key] if where == "nodeAffinity" else (accelerator,), names)
            break
    if accelerator is None and flavor:  # a flavor's name counts only when it is a known one
        picked = _picked_by(pod_set)
        said = picked or f"the name of flavor {flavor}"
        resolved = None if picked else resolve_accelerator(flavor, names)
    spot, spot_from = False, "no spot node label"
    for where, labels in sources:
        key = next((k for k, v in SPOT_LABELS.items() if labels.get(k) == v), None)
        if key is not None:
            spot, spot_from = True, f"{where} {key}={labels[key]}"
            break
    return Placement(resolved or accelerator, said, spot, spot_from)


def _resolved(values: Iterable[str], names: Iterable[str]) -> str | None:
    """The catalog name all ``values`` mean (an affinity may allow several), or ``None``."""
    known = list(names)
    found = {resolve_accelerator(v, known) for v in values}
    return found.pop() if len(found) == 1 else None


def _picked_by(pod_set: PodSet) -> str | None:
    """How the pods pick their nodes beyond where they run, said, or ``None``.

    A pod that picks nodes by a label (a machine type, a node pool, a GPU family, a
    ``NotIn`` of a model), by a node's name (``nodeName``, ``matchFields``), by other pods, or
    onto tainted nodes (:func:`~gate.admission.affinity.node_pickers`) may land on GPUs its
    flavor's name does not say: the name is then no proof of the model, and the flavor must
    label its nodes.
    """
    selector = pod_set.node_selector
    pickers: list[Picker] = [
        *((key, f"{key}={value}") for key, value in selector.items()),
        *((key, f"required node affinity on {key}") for key in pod_set.affinity_keys),
        *pod_set.node_pickers,
    ]
    for key, how in pickers:
        if key is None or not key.startswith(PLACE_LABELS):
            return (
                f"the pods pick their nodes by {how}, and their flavor's nodeLabels name no "
                "accelerator, so its name proves no GPU model"
            )
    return None


def resolve_accelerator(value: str, names: Iterable[str]) -> str | None:
    """The catalog name a node label's ``value`` means, or ``None``.

    Equal names (any case) match; else the name whose every word is in the value, the one
    with most words winning (``NVIDIA-A100-SXM4-80GB`` is ``A100-80GB``, not ``A100``;
    ``nvidia-tesla-a100`` is ``A100``). A tie is no answer.
    """
    known = list(names)
    exact = [n for n in known if n.lower() == value.lower()]
    if exact:
        return exact[0]
    words = _words(value)
    fits = [n for n in known if _words(n) <= words]
    if not fits:
        return None
    best = max(len(_words(n)) for n in fits)
    winners = [n for n in fits if len(_words(n)) == best]
    return winners[0] if len(winners) == 1 else None


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if w}
