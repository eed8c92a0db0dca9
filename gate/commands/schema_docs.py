"""The field reference of specs and policies: Markdown pages generated from the JSON Schemas.

``budget-gate schema --docs --write`` writes them to ``docs/reference/``; a test fails when
the committed pages no longer match ``schemas/``. Each object of a schema is one section
with a table (key, type, default, what it means); enumerations are spelled out in place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

PAGES: dict[str, tuple[str, str]] = {
    "experiment.schema.json": ("experiment.md", "Spec fields (`kind: Experiment`)"),
    "policy.schema.json": ("policy.md", "Policy fields (`kind: Policy`)"),
    "x-budget-gate.schema.json": ("x-budget-gate.md", "`x-budget-gate:` facts"),
}
"""Each committed schema's page under ``docs/reference/`` and its title."""

_PRINTABLE = r"^[^\x00-\x1f\x7f-\x9f]*$"
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_CODE = re.compile(r"(``?[^`]+``?)")


def render_reference(schema: Mapping[str, Any], source: str, title: str) -> str:
    """One schema's field reference: a section per object, the document's own first."""
    defs: Mapping[str, Any] = schema.get("$defs", {})
    lines = [
        f"# {title}",
        "",
        f"<!-- generated from {source} by `budget-gate schema --docs --write`; do not edit -->",
        "",
        f"Generated from [`{source}`]({_repo(source)}), the JSON Schema editors validate "
        "with; a test fails when this page and the schema differ.",
        "",
    ]
    for name, node, paths in _sections(schema, defs):
        lines += [f"## {name}", ""]
        if paths:
            lines += ["At " + ", ".join(f"`{p}`" for p in paths) + ".", ""]
        for paragraph in str(node.get("description", "")).split("\n\n"):
            lines += [_prose(paragraph), ""] if paragraph.strip() else []
        lines += _table(node, defs)
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def render_all(schemas: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Every page, by its file name under ``docs/reference/``, from the schemas by file name."""
    return {
        PAGES[name][0]: render_reference(schema, f"schemas/{name}", PAGES[name][1])
        for name, schema in schemas.items()
    }


def _repo(source: str) -> str:
    return f"https://github.com/budget-gate/budget-gate/blob/main/{source}"


def _sections(
    schema: Mapping[str, Any], defs: Mapping[str, Any]
) -> Iterator[tuple[str, Mapping[str, Any], list[str]]]:
    """The root object, then each object definition in the order the document reaches it."""
    paths: dict[str, list[str]] = {}
    order: list[str] = []
    todo: list[tuple[Mapping[str, Any], str]] = [(schema, "")]
    while todo:
        node, at = todo.pop(0)
        for key, prop in node.get("properties", {}).items():
            for ref, path in _refs(prop, f"{at}.{key}" if at else key):
                if ref not in paths:
                    paths[ref] = []
                    order.append(ref)
                    todo.append((defs[ref], path))
                if path not in paths[ref]:
                    paths[ref].append(path)
    yield str(schema.get("title", "Document")), schema, []
    for ref in order:
        if defs[ref].get("type") == "object":
            yield ref, defs[ref], paths[ref]


def _refs(node: Mapping[str, Any], path: str) -> Iterator[tuple[str, str]]:
    """The definitions a property's schema names, each with the path where it sits."""
    if "$ref" in node:
        yield node["$ref"].rsplit("/", 1)[1], path
    for option in node.get("anyOf", []):
        yield from _refs(option, path)
    if isinstance(node.get("items"), Mapping):
        yield from _refs(node["items"], f"{path}[]")
    for value in _map_values(node):
        yield from _refs(value, f"{path}.*")


def _map_values(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    values = list(node.get("patternProperties", {}).values())
    if isinstance(node.get("additionalProperties"), Mapping):
        values.append(node["additionalProperties"])
    return values


def _table(node: Mapping[str, Any], defs: Mapping[str, Any]) -> list[str]:
    required = set(node.get("required", []))
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key, prop in node.get("properties", {}).items():
        default = "**required**" if key in required else _default(prop)
        cells = (f"`{key}`", _type(prop, defs), default, _prose(prop.get("description", "")))
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return rows


def _default(prop: Mapping[str, Any]) -> str:
    if "default" not in prop or prop["default"] is None:
        return "—"
    value = prop["default"]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"`{text}`"


def _type(node: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    """A schema in words: links to objects, enumerations spelled out, bounds as ranges."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        target = defs[name]
        return _type(target, defs) if "enum" in target else f"[{name}](#{name.lower()})"
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o.get("type") != "null"]
        if "description" in node and len(options) > 1:
            return _prose(node["description"]).rstrip(".")
        return " or ".join(_type(o, defs) for o in options)
    if "const" in node:
        return f"`{node['const']}`"
    if "enum" in node:
        return " | ".join(f"`{v}`" for v in node["enum"])
    kind = node.get("type")
    if kind == "array":
        items = node.get("items") or {}
        text = f"list of {_type(items, defs)}"
        return f"{text} (at least {node['minItems']})" if "minItems" in node else text
    if kind == "object" and (values := _map_values(node)):
        return f"map of {_keys(node)} → {_type(values[0], defs)}"
    if kind in ("number", "integer"):
        return " ".join([kind, *_bounds(node)])
    if kind == "string":
        return " ".join(["string", *_string(node)])
    return str(kind) if kind else "any value"


def _keys(node: Mapping[str, Any]) -> str:
    patterns = [p for p in node.get("patternProperties", {}) if p != _PRINTABLE]
    return f"key matching `{patterns[0]}`" if patterns else "name"


def _bounds(node: Mapping[str, Any]) -> list[str]:
    low, high = node.get("minimum"), node.get("maximum")
    if low is not None and high is not None:
        return [f"{_number(low)} … {_number(high)}"]
    words = []
    if low is not None:
        words.append(f"≥ {_number(low)}")
    if "exclusiveMinimum" in node:
        words.append(f"> {_number(node['exclusiveMinimum'])}")
    if "exclusiveMaximum" in node:
        words.append(f"< {_number(node['exclusiveMaximum'])}")
    if high is not None:
        words.append(f"≤ {_number(high)}")
    return [", ".join(words)] if words else []


def _number(value: float) -> str:
    """10¹² and 10⁻⁶ as powers of ten, other figures as written (0.5, 10)."""
    if abs(value) >= 1e6 or 0 < abs(value) <= 1e-4:
        exponent = f"{value:e}".split("e")
        if float(exponent[0]) == 1:
            return "10" + str(int(exponent[1])).translate(_SUPERSCRIPT)
    return f"{value:g}"


def _string(node: Mapping[str, Any]) -> list[str]:
    words = []
    if node.get("format") == "date":
        words.append("(a date, YYYY-MM-DD)")
    elif "format" in node:
        words.append(f"({node['format']})")
    low, high = node.get("minLength"), node.get("maxLength")
    if low and high is not None:
        words.append(f"of {low}–{high} characters")
    elif high is not None:
        words.append(f"of at most {high} characters")
    elif low:
        words.append(f"of at least {low} characters")
    pattern = node.get("pattern")
    if pattern and pattern != _PRINTABLE:
        words.append(f"matching `{pattern}`")
    return words


def _prose(text: str) -> str:
    """A docstring as one Markdown line: `<` and `>` escaped outside code spans."""
    parts = _CODE.split(" ".join(text.split()))
    return "".join(
        p if p.startswith("`") else p.replace("<", "&lt;").replace(">", "&gt;") for p in parts
    )
