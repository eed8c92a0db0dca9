"""An engine's file read as a spec under its team's policy, and judged in its own words.

The team is the one the file names (its extension point, or the task that launches it);
that team's policy, the same one that judges the spec afterwards, lends the ``defaults:``,
says whether and how the calibration counts (``calibration.use``, ``min_runs``), and
prices the candidates a SkyPilot task may launch on. The fixes and cheaper plans found for
the spec are then written as changes to the engine's file, and a finding about a field the
file lacks says where in that file to add it.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import TYPE_CHECKING

from gate.errors import InputError
from gate.estimate.prices import Catalog, quote, same_in_any_case
from gate.policy.findings import Edit, Finding
from gate.policy.rules import missing_labels, no_quality_gate, spot_without_checkpoints
from gate.spec.loader import DataPath, LoadedDoc
from gate.spec.trial import Capacity

if TYPE_CHECKING:
    from gate.calibrate.model import Calibration
    from gate.evaluation.alternatives import Alternative
    from gate.formats import Format
    from gate.formats.model import FactMap, Imported, Words
    from gate.formats.translate import Team
    from gate.policy.loader import PolicySet


def import_doc(
    doc: LoadedDoc,
    fmt: Format,
    *,
    policies: PolicySet,
    catalog: Catalog,
    calibration: Calibration | None,
    launch: FactMap,
) -> Imported:
    """``doc`` (a W&B, Katib, SkyPilot or Hydra file) as the spec it stands for."""
    from gate.formats.translate import Context, Team, translate

    def team(name: str | None) -> Team:
        loaded = policies.for_team(name)
        policy = loaded.policy
        where = (
            "the built-in default policy"
            if loaded.builtin
            else f"{policies.policy_dir / loaded.chain[0]}.yaml"
        )

        def price(accelerator: str, spot: bool) -> Decimal | None:
            capacity = Capacity.SPOT if spot else Capacity.ON_DEMAND
            try:
                found = quote(catalog, policy, accelerator, capacity, policy.prices.cloud)
            except InputError:
                return None
            return found.per_gpu_hour

        def canonical(accelerator: str) -> str:
            known = [*catalog.accelerators, *policy.prices.overrides]
            return same_in_any_case(accelerator, known) or accelerator

        return Team(
            defaults=policy.defaults,
            policy=where,
            calibration=calibration if policy.calibration.use else None,
            min_runs=policy.calibration.min_runs,
            price=price,
            canonical=canonical,
            needs_approval=frozenset(policy.approval.accelerators),
        )

    return translate(doc, fmt, Context(team, launch))


def in_file_words(
    findings: list[Finding], alternatives: tuple[Alternative, ...], words: Words
) -> tuple[list[Finding], tuple[Alternative, ...]]:
    """Every fix and cheaper plan of an imported file, its edits in the file's own words."""

    def respelled(edits: tuple[Edit, ...]) -> tuple[Edit, ...]:
        return tuple(dataclasses.replace(e, in_file=words.edit(e.path, e.value)) for e in edits)

    fixed = [
        dataclasses.replace(
            f, fixes=tuple(dataclasses.replace(x, edits=respelled(x.edits)) for x in f.fixes)
        )
        if f.fixes
        else f
        for f in findings
    ]
    plans = tuple(dataclasses.replace(a, edits=respelled(a.edits)) for a in alternatives)
    return fixed, plans


_ABOUT_MISSING: dict[str, DataPath | None] = {
    missing_labels.ID: None,  # the label's own path: ("metadata", "labels", name)
    no_quality_gate.ID: ("quality_gate",),
    spot_without_checkpoints.ID: ("resources", "checkpoint_every_minutes"),
}
"""The rules that fire for a field the spec lacks, and that field (None: the violation's)."""


def with_where_to_add(rule_id: str, message: str, path: DataPath, words: Words | None) -> str:
    """A finding's message; for an imported file lacking the field, where to add it there."""
    if words is None or rule_id not in _ABOUT_MISSING:
        return message
    where = words.missing(_ABOUT_MISSING[rule_id] or path)
    return f"{message} — add {where}" if where else message
