"""Cut GitHub's OpenAPI description down to the operations budget-gate calls.

Usage: ``python tests/github/cut_github_openapi.py SOURCE OUT OPERATION_ID ...`` (stdlib only).
``SOURCE`` is ``generated/api.github.com.json`` of the npm package ``@octokit/openapi``; see
tests/fixtures/github/openapi/SOURCES.md for the version, its hash and the operations kept.
Run with the 32 operations SOURCES.md first listed, it writes the earlier cut's exact bytes.
"""

from __future__ import annotations

import json
import sys
from typing import Any

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
"""A path item's operations, in the order the OpenAPI specification lists them."""
KINDS = ("schemas", "responses", "parameters", "examples", "headers")


def _refs(node: Any, found: list[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.append(value)
            else:
                _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def _strip(node: Any) -> Any:
    """``node`` without octokit's ``x-octokit`` keys."""
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k != "x-octokit"}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def _paths(source: dict[str, Any], keep: set[str]) -> tuple[dict[str, Any], list[str]]:
    paths: dict[str, Any] = {}
    kept_ops: list[str] = []
    for path, item in source["paths"].items():
        kept = {k: v for k, v in item.items() if k not in METHODS}
        for method in METHODS:
            operation = item.get(method)
            if operation is not None and operation.get("operationId") in keep:
                kept[method] = operation
                kept_ops.append(operation["operationId"])
        if any(k in METHODS for k in kept):
            paths[path] = _strip(kept)
    return paths, kept_ops


def _components(source: dict[str, Any], paths: dict[str, Any]) -> dict[str, Any]:
    """Every component ``paths`` refers to, followed to a fixed point, in the source's order."""
    found: dict[str, dict[str, Any]] = {}
    todo: list[str] = []
    _refs(paths, todo)
    while todo:
        _, _, kind, name = todo.pop().split("/", 3)
        if name not in found.setdefault(kind, {}):
            found[kind][name] = _strip(source["components"][kind][name])
            _refs(found[kind][name], todo)
    return {
        kind: {n: found[kind][n] for n in source["components"][kind] if n in found[kind]}
        for kind in KINDS
        if kind in found
    }


def cut(source: dict[str, Any], keep: set[str]) -> dict[str, Any]:
    """The description with only the ``keep`` operations and what they reference."""
    paths, kept_ops = _paths(source, keep)
    missing = keep - set(kept_ops)
    if missing:
        raise SystemExit(f"not in the source: {', '.join(sorted(missing))}")
    tags = {t for item in paths.values() for m in METHODS for t in item.get(m, {}).get("tags", [])}
    out: dict[str, Any] = {}
    for key, value in source.items():
        if key in ("x-webhooks", "webhooks"):
            continue
        if key == "paths":
            value = paths
        elif key == "components":
            value = _components(source, paths)
        elif key == "tags":
            value = [t for t in value if t["name"] in tags]
        elif key == "info":
            value = dict(value)
            value["description"] += (
                f"\n\nCut down by cut_github_openapi.py to {len(kept_ops)} operations "
                f"({', '.join(sorted(kept_ops))})."
            )
        out[key] = _strip(value)
    return out


def main(argv: list[str]) -> None:
    """Read SOURCE, write OUT (two-space indented JSON, as GitHub's own files)."""
    source_path, out_path, *keep = argv
    with open(source_path, encoding="utf-8") as f:
        source = json.load(f)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(cut(source, set(keep)), f, indent=2, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
