"""The node labels a pod's required node affinity pins, and to which values (pure).

A pod runs on a node that matches one of the ``nodeSelectorTerms`` of its
``requiredDuringSchedulingIgnoredDuringExecution`` (any one; within a term, every
expression). A label is pinned when every term says ``In`` for it: to the values those
terms list. Kueue copies the pod template, its affinity included, into the Workload: a pod
set that picks H100 nodes by affinity rather than by ``nodeSelector`` runs there all the same.
"""

from __future__ import annotations

from collections.abc import Mapping
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
