"""The facts a file carries in its engine's own extension point, validated where they stand.

W&B and Hydra ignore unknown top-level keys, so an ``x-budget-gate:`` block holds them;
Kubernetes keeps any ``metadata.annotations`` (Katib: ``budget-gate/<fact>``); SkyPilot
refuses unknown keys but passes ``envs`` to the job (``X_BUDGET_GATE_<FACT>``). Annotation
and env values are strings: JSON when they parse as JSON (``3.5``, ``[0, 1]``), else text.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any

from gate.errors import InputError, InputErrors, Location
from gate.formats.model import Origin, Source, Traced
from gate.spec.facts import ANNOTATION_PREFIX, ENV_PREFIX, EXTENSION_KEY, Facts
from gate.spec.loader import DataPath, LoadedDoc, SourceMap
from gate.spec.validation import validate

FactMap = dict[str, Traced]
"""Fact name (``epoch_minutes``) → its value and where it was written."""


def block_facts(doc: LoadedDoc) -> FactMap:
    """The ``x-budget-gate:`` block of a W&B sweep or Hydra config (empty when there is none)."""
    block = doc.data.get(EXTENSION_KEY)
    if block is None:
        return {}
    prefix: DataPath = (EXTENSION_KEY,)
    if not isinstance(block, dict):
        raise InputError(
            f"{EXTENSION_KEY} is not a mapping",
            location=doc.source_map.locate(prefix),
            hint=f"write {EXTENSION_KEY}: {{accelerator: A100-80GB, epoch_minutes: 3.5}}",
        )
    sub = _rooted(doc.source_map, prefix)
    _validate(block, doc.file, sub, EXTENSION_KEY)
    return {
        name: Traced(
            value, Source(Origin.EXTENSION, f"{EXTENSION_KEY}.{name}", sub.locate((name,)))
        )
        for name, value in block.items()
    }


def annotation_facts(annotations: Any, file: str, where: SourceMap, path: DataPath) -> FactMap:
    """``budget-gate/<fact>`` annotations of a Kubernetes object at ``path``."""
    if not isinstance(annotations, dict):
        return {}
    named = {
        key.removeprefix(ANNOTATION_PREFIX): (value, (*path, key))
        for key, value in annotations.items()
        if key.startswith(ANNOTATION_PREFIX)
    }
    return _flat(named, file, where, "metadata.annotations." + ANNOTATION_PREFIX)


def env_facts(envs: Any, file: str, where: SourceMap, path: DataPath) -> FactMap:
    """``X_BUDGET_GATE_<FACT>`` envs of a SkyPilot task at ``path``."""
    if not isinstance(envs, dict):
        return {}
    named = {
        key.removeprefix(ENV_PREFIX).lower(): (value, (*path, key))
        for key, value in envs.items()
        if isinstance(key, str) and key.startswith(ENV_PREFIX)
    }
    return _flat(named, file, where, "envs." + ENV_PREFIX)


def _flat(
    named: Mapping[str, tuple[Any, DataPath]], file: str, where: SourceMap, spelled: str
) -> FactMap:
    """Facts written one per string (an annotation, an env): parse, check names, validate."""
    data: dict[str, Any] = {}
    values: dict[DataPath, Location] = {}
    for name, (raw, at) in named.items():
        location = where.locate(at)
        if name not in Facts.model_fields:
            close = difflib.get_close_matches(name, list(Facts.model_fields), n=1, cutoff=0.6)
            shown = f"{spelled}{name}" if spelled.endswith("/") else f"{spelled}{name.upper()}"
            raise InputError(
                f"{shown} is not a budget-gate fact",
                location=location,
                hint=f"did you mean {close[0]!r}?"
                if close
                else "see docs/configs.md for the facts",
            )
        data[name] = _parse(raw)
        if location is not None:
            values[(name,)] = location
    sub = SourceMap(values, dict(values))
    _validate(data, file, sub, spelled)
    return {
        name: Traced(value, Source(Origin.EXTENSION, _spelling(spelled, name), sub.locate((name,))))
        for name, value in data.items()
    }


def _spelling(spelled: str, name: str) -> str:
    return f"{spelled}{name}" if spelled.endswith("/") else f"{spelled}{name.upper()}"


def _parse(raw: Any) -> Any:
    """A string fact as JSON when it is JSON (``3.5``, ``[0, 1]``), else the text itself."""
    if not isinstance(raw, str):
        return raw  # SkyPilot envs may be written as YAML numbers
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _validate(data: dict[str, Any], file: str, where: SourceMap, spelled: str) -> None:
    """The facts' types, located at the fact; each error names the extension point."""
    try:
        validate(Facts, LoadedDoc(file, data, where))
    except InputErrors as exc:
        label = spelled.rstrip("./")
        for error in exc.errors:
            if "the top level" in error.message:
                error.message = error.message.replace("the top level", label)
            else:
                error.message = f"{label}: {error.message}"
        raise


def _rooted(source_map: SourceMap, prefix: DataPath) -> SourceMap:
    """The positions under ``prefix``, with ``prefix`` taken off their paths."""
    cut = len(prefix)
    return SourceMap(
        {p[cut:]: loc for p, loc in source_map.values.items() if p[:cut] == prefix},
        {p[cut:]: loc for p, loc in source_map.keys.items() if p[:cut] == prefix},
    )
