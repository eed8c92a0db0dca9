"""A policy over the ones it extends: mappings merged key by key, no limit lifted unsaid (pure)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gate.errors import InputError, InputErrors
from gate.policy.model import NO_BASE
from gate.spec.loader import LoadedDoc


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Merge mappings recursively; the override wins, and lists are replaced, not joined."""
    result = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = value
    return result


def refuse_lifted(inherited: dict[str, Any], doc: LoadedDoc, chain: list[LoadedDoc]) -> None:
    """Refuse an empty value (null) in ``doc`` over one the policies it extends set.

    NOTE: null means "not enforced": ``cost_over:`` with its number forgotten would lift the
    company's trigger without a word. A team may set its own value, or start from nothing
    with ``extends: none`` (which every spec's verdict then says).
    """
    at = chain.index(doc) + 1
    parent = Path(chain[at].file).name if at < len(chain) else "the policy it extends"
    errors = []
    for path in _nulls_over_values(inherited, doc.data):
        key = ".".join(str(part) for part in path)
        errors.append(
            InputError(
                f"{key} is empty (null) in {Path(doc.file).name}, which would lift the value "
                f"{parent} sets",
                location=doc.source_map.locate(path),
                hint=f"give {key} a value of this team's, or drop the key to keep the inherited "
                f"one (extends: {NO_BASE} starts from no policy, and says so)",
            )
        )
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InputErrors(errors)


def _nulls_over_values(
    base: dict[str, Any], override: dict[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    for key, value in override.items():
        inherited = base.get(key)
        if value is None and inherited is not None:
            yield (*path, key)
        elif isinstance(value, dict) and isinstance(inherited, dict):
            yield from _nulls_over_values(inherited, value, (*path, key))
