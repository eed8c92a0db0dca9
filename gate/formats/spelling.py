"""Edits and missing fields of an imported file, in the engine file's own words.

A fix such as ``resources.gpus_per_trial: 8`` names a spec path that a W&B sweep or a Katib
Experiment does not have. For an imported file each edit is written as the engine's key
(``run_cap: 12``, ``spec.parallelTrialCount: 4``), or, for a fact the engine cannot hold,
as the file's extension point (``# x-budget-gate: {gpus_per_trial: 8}``), or, where the
engine itself sets the value some other way, as the place that sets it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gate.formats import Format
from gate.formats.model import Draft, Mapped, Origin
from gate.spec.facts import FACT_PATHS
from gate.spec.loader import DataPath

_FACT_AT: dict[DataPath, str] = {path: name for name, path in FACT_PATHS.items()}


def flow(value: Any) -> str:
    """A value as YAML flow reads it (JSON is YAML)."""
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class EngineWords:
    """How to write a change to one imported file (:class:`gate.formats.model.Words`)."""

    format: Format
    draft: Draft
    mapped: Mapped

    def edit(self, path: DataPath, value: Any) -> str:
        """The edit ``path: value`` as a change to the engine's file."""
        own = self.mapped.spell(path, value)
        if own is not None:
            return own
        have = self.draft.get(path)
        fact = _FACT_AT.get(path)
        if have is not None and have.source.origin in (Origin.FILE, Origin.ENGINE):
            at = have.source.location
            where = f" (line {at.line})" if at else ""
            return f"{have.source.detail}{where} gives {flow(have.value)}: make it {flow(value)}"
        if fact is not None:
            return self.mapped.where(fact, flow(value))
        dotted = ".".join(str(p) for p in path)
        return (
            f"{dotted}: {flow(value)} has no key in a {self.format.value}: write a budget-gate "
            "spec for it (budget-gate import FILE --write SPEC)"
        )

    def missing(self, path: DataPath) -> str | None:
        """Where to add a field no source set (a required label, a quality gate)."""
        if any(p[: len(path)] == path for p in self.draft):
            return None
        for end in range(len(path), 0, -1):
            fact = _FACT_AT.get(path[:end])
            if fact is None:
                continue
            rest = path[end:]
            example = flow({str(rest[0]): "..."}) if rest else _EXAMPLES.get(fact, "...")
            native = self.mapped.native.get(fact)
            return self.mapped.where(fact, example) + (f" (or {native})" if native else "")
        return None


_EXAMPLES = {
    "quality_gate": '[{metric: "...", op: ">=", value: ...}]',
    "labels": '{"...": "..."}',
}
