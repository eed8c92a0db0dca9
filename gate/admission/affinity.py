"""The node labels a pod's required node affinity pins, and to which values (pure).

A pod runs on a node that matches one of the ``nodeSelectorTerms`` of its
``requiredDuringSchedulingIgnoredDuringExecution`` (any one; within a term, every
expression). A label is pinned when every term says ``In`` for it: to the values those
terms list. Kueue copies the pod template, its affinity included, into the Workload: a pod
set that picks H100 nodes by affinity rather than by ``nodeSelector`` runs there all the same.

:func:`node_pickers` says the other ways a pod picks its node: by its name (``nodeName``, a
``matchFields`` term), by other pods (required pod affinity or anti-affinity, a hard topology
spread), or onto tainted nodes (a toleration). None of them is a label a flavor's name can
vouch for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def pinned_labels(pod: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Each label every required term pins with ``In``, and the values any of them allows."""
    affinity = _mapping(_mapping(pod.get("affinity")).get("nodeAffinity"))
    required = _mapping(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    terms = required.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        return {}
    per_term = [_term(_mapping(term)) for term in terms]
    keys = set.intersection(*(set(pins) for pins in per_term))
    return {
        key: tuple(dict.fromkeys(value for pins in per_term for value in pins[key]))
        for key in sorted(keys)
    }


def required_keys(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """Every node label any required term of the pod's node affinity says anything of."""
    affinity = _mapping(_mapping(pod.get("affinity")).get("nodeAffinity"))
    required = _mapping(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    terms = required.get("nodeSelectorTerms")
    keys: list[str] = []
    for term in terms if isinstance(terms, list) else []:
        expressions = _mapping(term).get("matchExpressions")
        rules = expressions if isinstance(expressions, list) else []
        keys.extend(str(_mapping(rule).get("key")) for rule in rules)
    return tuple(dict.fromkeys(keys))


NODE_CONDITIONS = "node.kubernetes.io/"
"""The taints Kubernetes itself puts on a node in trouble (``not-ready``, ``unreachable``,
``unschedulable``, …): tolerating them picks no kind of node."""

Picker = tuple[str | None, str]
"""How a pod picks its nodes: the node label it groups them by (``None``: none, it picks
them otherwise) and the way, said."""


def node_pickers(pod: Mapping[str, Any], asked: Iterable[str] = ()) -> tuple[Picker, ...]:
    """The ways ``pod`` picks its nodes other than by node selector or node affinity labels.

    ``spec.nodeName`` binds it to one node past the scheduler; a required node affinity term
    with ``matchFields`` (``metadata.name``) picks nodes by name; required pod affinity or
    anti-affinity, and a topology spread that does not schedule past its skew
    (``DoNotSchedule``), move it by where other pods run, grouping nodes by their
    ``topologyKey`` label; a toleration lets it onto nodes tainted to keep pods away.
    ``asked``: the device resources it asks for (their own toleration is no way).
    """
    found: list[Picker] = []
    node_name = pod.get("nodeName")
    if node_name:
        found.append((None, f"spec.nodeName={node_name}"))
    affinity = _mapping(pod.get("affinity"))
    required = _mapping(
        _mapping(affinity.get("nodeAffinity")).get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    for term in _list(required.get("nodeSelectorTerms")):
        for rule in _list(_mapping(term).get("matchFields")):
            field = _mapping(rule).get("key")
            found.append((None, f"required node affinity on the field {field} (matchFields)"))
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = _mapping(affinity.get(kind)).get("requiredDuringSchedulingIgnoredDuringExecution")
        for term in _list(terms):
            key = str(_mapping(term).get("topologyKey"))
            found.append((key, f"required {kind} by {key}"))
    for spread in _list(pod.get("topologySpreadConstraints")):
        spread = _mapping(spread)
        if spread.get("whenUnsatisfiable") != "ScheduleAnyway":
            key = str(spread.get("topologyKey"))
            found.append((key, f"a topology spread by {key} (whenUnsatisfiable DoNotSchedule)"))
    found.extend((None, how) for how in _tolerations(pod, asked))
    return tuple(dict.fromkeys(found))


def _tolerations(pod: Mapping[str, Any], asked: Iterable[str]) -> list[str]:
    """The pod's tolerations that let it onto nodes tainted to keep pods away, said.

    Not those of a node in trouble (:data:`NODE_CONDITIONS`), nor the one Kubernetes'
    ``ExtendedResourceToleration`` adds to a pod that asks for a device (its resource's
    name, ``NoSchedule``), written ``Exists`` or as GKE's and EKS's GPU docs write it
    (``Equal``, ``present``): every node with that device may carry that taint.
    """
    said = []
    for toleration in _list(pod.get("tolerations")):
        toleration = _mapping(toleration)
        key = str(toleration.get("key") or "")
        operator = toleration.get("operator", "Equal")
        device = toleration.get("effect") == "NoSchedule" and (
            operator == "Exists" or (operator == "Equal" and toleration.get("value") == "present")
        )
        if not key.startswith(NODE_CONDITIONS) and not (device and key in asked):
            said.append(f"a toleration of {f'the taint {key}' if key else 'every taint'}")
    return said


def _term(term: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The labels one term pins with ``In`` (two expressions on a label: both hold)."""
    pins: dict[str, tuple[str, ...]] = {}
    expressions = term.get("matchExpressions")
    for rule in expressions if isinstance(expressions, list) else []:
        rule = _mapping(rule)
        values = rule.get("values")
        if rule.get("operator") != "In" or not isinstance(values, list) or not values:
            continue
        key, allowed = str(rule.get("key")), tuple(str(v) for v in values)
        pins[key] = tuple(v for v in pins[key] if v in allowed) if key in pins else allowed
    return pins


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
