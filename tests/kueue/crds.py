"""Kueue's own CRD schemas (vendored, tests/fixtures/kueue/) as a test oracle.

Why: the local API server must not drift into one that only agrees with our controller.
Every object it stores or returns, and every body it receives, is checked against the
``openAPIV3Schema`` of Kueue's CRDs at v1beta2, the way kube-apiserver checks custom
resources:

- the structural schema through jsonschema: types, enums, formats (``date-time``, int32 and
  int64 ranges), lengths, patterns, bounds, ``required``, ``nullable``,
  ``x-kubernetes-int-or-string``; an unknown field is an error (kube-apiserver would prune
  it silently, or refuse it under ``fieldValidation=Strict``: refusing catches typos);
- ``x-kubernetes-list-type: map`` and ``set``: keys unique;
- ``x-kubernetes-validations``: every CEL rule, evaluated with cel-python (``oldSelf`` on
  updates), at each node the instance has;
- structural defaulting: ``default`` values filled in where a property is absent, as the
  API server does on create.

A server-side apply body is a *partial* object: it is checked the same way without
``required`` (the merged result is then checked whole).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import yaml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kueue"
VERSION = "v1beta2"
KINDS = {
    "workloads": "Workload",
    "admissionchecks": "AdmissionCheck",
    "clusterqueues": "ClusterQueue",
    "resourceflavors": "ResourceFlavor",
}
_COPIED = (
    "enum", "format", "maxLength", "minLength", "pattern", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "maxItems", "minItems", "maxProperties",
    "minProperties", "multipleOf", "uniqueItems",
)  # fmt: skip
_FORMATS = jsonschema.FormatChecker()


@_FORMATS.checks("int32")
def _int32(value: object) -> bool:
    return not isinstance(value, int) or -(2**31) <= value < 2**31


@_FORMATS.checks("int64")
def _int64(value: object) -> bool:
    return not isinstance(value, int) or -(2**63) <= value < 2**63


@dataclass
class Rule:
    """One CEL rule of the schema: its program and the message kube-apiserver gives."""

    text: str
    message: str
    program: Any
    transition: bool


@dataclass
class Crd:
    """One CRD's v1beta2 schema, ready to validate, default and merge with."""

    plural: str
    group: str
    scope: str
    schema: dict[str, Any]
    subresources: dict[str, Any]
    full: jsonschema.protocols.Validator = field(init=False)
    parts: dict[str, jsonschema.protocols.Validator] = field(init=False)
    partial: jsonschema.protocols.Validator = field(init=False)
    rules: dict[int, list[Rule]] = field(default_factory=dict)
    uncompiled: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        converted = _convert(self.schema, True)
        self.full = jsonschema.Draft7Validator(converted, format_checker=_FORMATS)
        self.parts = {
            key: jsonschema.Draft7Validator(sub, format_checker=_FORMATS)
            for key, sub in converted.get("properties", {}).items()
        }
        self.partial = jsonschema.Draft7Validator(
            _convert(self.schema, False), format_checker=_FORMATS
        )
        environment = celpy.Environment()
        for node in _nodes(self.schema):
            for rule in node.get("x-kubernetes-validations", []):
                try:
                    program = environment.program(environment.compile(rule["rule"]))
                except Exception as exc:
                    self.uncompiled.append(f"{rule['rule']}: {exc}")
                    continue
                self.rules.setdefault(id(node), []).append(
                    Rule(rule["rule"], rule.get("message", rule["rule"]), program,
                         "oldSelf" in rule["rule"])
                )  # fmt: skip

    @property
    def kind(self) -> str:
        """The kind the CRD serves."""
        return KINDS[self.plural]

    def errors(
        self, obj: Any, *, partial: bool = False, old: Any = None, cel: bool = True
    ) -> list[str]:
        """What kube-apiserver would refuse in ``obj`` (empty when valid).

        ``cel=False`` leaves the CEL rules out (the benchmark: cel-python interprets each
        rule in milliseconds, where kube-apiserver runs compiled CEL in microseconds).
        """
        validator = self.partial if partial else self.full
        found = [
            f"{'.'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}"
            for e in validator.iter_errors(obj)
        ]
        found += list(_list_keys(self.schema, obj, ""))
        if not partial and cel:
            found += list(self._cel(self.schema, obj, old, ""))
        return found

    def status_errors(self, obj: Any, old: Any, *, cel: bool = True) -> list[str]:
        """:meth:`errors` after a write to the status subresource, which changes nothing else.

        Only ``status`` is validated again (what else the object holds was validated when
        it was written, as kube-apiserver's validation ratcheting leaves unchanged parts
        alone); the object's own CEL rules, which read ``spec`` and ``status``, all run.
        """
        status = obj.get("status", {})
        found = [
            f"status.{'.'.join(str(p) for p in e.absolute_path)}: {e.message}".rstrip(".")
            for e in self.parts["status"].iter_errors(status)
        ]
        found += list(_list_keys(self.schema["properties"]["status"], status, "status"))
        if cel:
            found += list(self._cel(self.schema, obj, old, "", only="status"))
        return found

    def _cel(
        self, node: dict[str, Any], value: Any, old: Any, path: str, only: str | None = None
    ) -> Iterator[str]:
        rules = self.rules.get(id(node), [])
        this = celpy.json_to_cel(value) if rules else None  # NOTE: converted once per node
        before = celpy.json_to_cel(old) if rules and old is not None else None
        for rule in rules:
            if rule.transition and old is None:
                continue
            context = {"self": this}
            if rule.transition:
                context["oldSelf"] = before
            try:
                verdict = rule.program.evaluate(context)
            except Exception as exc:
                yield f"{path or '<root>'}: {rule.message} (rule failed: {exc})"
                continue
            if verdict is not True and not (
                isinstance(verdict, celpy.celtypes.BoolType) and bool(verdict)
            ):
                yield f"{path or '<root>'}: {rule.message}"
        if isinstance(value, dict):
            for name, sub in (node.get("properties") or {}).items():
                if name in value and only in (None, name):
                    before = old.get(name) if isinstance(old, dict) else None
                    yield from self._cel(sub, value[name], before, f"{path}.{name}".lstrip("."))
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                for name, item in value.items():
                    yield from self._cel(extra, item, None, f"{path}.{name}".lstrip("."))
        elif isinstance(value, list) and isinstance(node.get("items"), dict):
            for index, item in enumerate(value):
                yield from self._cel(node["items"], item, None, f"{path}[{index}]")

    def default(self, obj: Any) -> Any:
        """``obj`` with the schema's defaults filled in (a copy)."""
        return _default(self.schema, copy.deepcopy(obj))

    def node(self, path: tuple[str, ...]) -> dict[str, Any]:
        """The schema node at a path of property names (list items: ``[]``)."""
        node = self.schema
        for part in path:
            node = node["items"] if part == "[]" else node["properties"][part]
        return node


@cache
def crd(plural: str) -> Crd:
    """The vendored CRD for ``plural`` (e.g. ``workloads``), loaded once."""
    text = (FIXTURES / f"kueue.x-k8s.io_{plural}.yaml").read_text(encoding="utf-8")
    doc = yaml.load(text, Loader=yaml.CSafeLoader)
    version = next(v for v in doc["spec"]["versions"] if v["name"] == VERSION)
    return Crd(
        plural,
        doc["spec"]["group"],
        doc["spec"]["scope"],
        version["schema"]["openAPIV3Schema"],
        version.get("subresources") or {},
    )


def _convert(node: dict[str, Any], required: bool) -> dict[str, Any]:
    out: dict[str, Any] = {key: node[key] for key in _COPIED if key in node}
    kind = node.get("type")
    if node.get("x-kubernetes-int-or-string"):
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        out.pop("format", None)
    elif kind:
        out["type"] = [kind, "null"] if node.get("nullable") else kind
    if node.get("nullable") and "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    for combinator in ("anyOf", "oneOf", "allOf"):
        if combinator in node and not node.get("x-kubernetes-int-or-string"):
            out[combinator] = [_convert(n, required) for n in node[combinator]]
    if "not" in node:
        out["not"] = _convert(node["not"], required)
    if "properties" in node:
        out["properties"] = {k: _convert(v, required) for k, v in node["properties"].items()}
        if "additionalProperties" not in node and not node.get(
            "x-kubernetes-preserve-unknown-fields"
        ):
            out["additionalProperties"] = False
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = _convert(node["additionalProperties"], required)
    if isinstance(node.get("items"), dict):
        out["items"] = _convert(node["items"], required)
    if required and node.get("required"):
        out["required"] = node["required"]
    return out


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for key in ("properties",):
            for sub in (node.get(key) or {}).values():
                yield from _nodes(sub)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                yield from _nodes(node[key])


def _list_keys(node: dict[str, Any], value: Any, path: str) -> Iterator[str]:
    """Duplicate keys in ``x-kubernetes-list-type`` map and set lists."""
    if isinstance(value, list):
        kind = node.get("x-kubernetes-list-type")
        seen: set[Any] = set()
        for index, item in enumerate(value):
            if kind == "map" and isinstance(item, dict):
                key = tuple(item.get(k) for k in node.get("x-kubernetes-list-map-keys", []))
            elif kind == "set":
                key = repr(item)
            else:
                key = None
            if key is not None:
                if key in seen:
                    yield f"{path}[{index}]: duplicate entry {key!r} in a list-type {kind}"
                seen.add(key)
            if isinstance(node.get("items"), dict):
                yield from _list_keys(node["items"], item, f"{path}[{index}]")
    elif isinstance(value, dict):
        for name, sub in (node.get("properties") or {}).items():
            if name in value:
                yield from _list_keys(sub, value[name], f"{path}.{name}".lstrip("."))
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for name, item in value.items():
                yield from _list_keys(extra, item, f"{path}.{name}".lstrip("."))


def _default(node: dict[str, Any], value: Any) -> Any:
    if isinstance(value, dict):
        for name, sub in (node.get("properties") or {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                value[name] = _default(sub, value[name])
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for name in value:
                value[name] = _default(extra, value[name])
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        return [_default(node["items"], item) for item in value]
    return value


LABEL_KEY = re.compile(
    r"^(([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def label_errors(labels: dict[str, str], where: str) -> list[str]:
    """Kubernetes' label syntax (``ValidateLabels``): keys with an optional DNS prefix."""
    out = []
    for key, value in labels.items():
        prefix = key.rpartition("/")[0]
        if not LABEL_KEY.match(key) or len(prefix) > 253:
            out.append(f"{where}: label key {key!r} is not a qualified name")
        if len(value) > 63 or not LABEL_VALUE.match(value):
            out.append(f"{where}: label {key}={value!r} is not a valid label value")
    return out
