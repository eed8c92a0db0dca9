"""A task's candidate accelerators (SkyPilot's ``accelerators: {A100:8, H100:8}``, ``any_of``).

SkyPilot launches on the cheapest candidate it can get; the gate prices the dearest, the
worst case. The rules judge that one candidate, so any other must be judged alike: one that
needs an approval the priced one does not, or holds more GPUs a trial, is refused. An
``instance_type`` is refused wherever it stands: it, not the accelerators, decides what is billed.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from gate.errors import InputError, Location
from gate.formats.model import Draft, Mapped, Origin, Source, Traced
from gate.spec.loader import DataPath, SourceMap


def dearest(
    draft: Draft, mapped: Mapped, price: Callable[[str, bool], Decimal | None] | None
) -> None:
    """Of several candidate accelerators, the one whose trial costs most per hour."""
    if len(mapped.candidates) < 2 or price is None:
        return

    def hourly(candidate: tuple[str, int, bool, Location | None]) -> Decimal:
        found = price(candidate[0], candidate[2])
        if found is None:  # NOTE: dropped, a dearer candidate would go unpriced
            raise InputError(
                f"the task's candidate {candidate[0]}:{candidate[1]} has no price, so the "
                "dearest of its candidates is not known",
                location=candidate[3],
                hint="name each accelerator as the price catalog does (budget-gate prices "
                "lists them), or add it to the policy's prices.overrides",
            )
        return found * candidate[1]

    name, gpus, spot, where = max(mapped.candidates, key=hourly)
    detail = f"the dearest of the task's {len(mapped.candidates)} candidates"
    draft[("resources", "accelerator")] = Traced(name, Source(Origin.FILE, detail, where))
    draft[("resources", "gpus_per_trial")] = Traced(
        gpus, Source(Origin.FILE, f"{gpus} GPUs per trial on {name}", where)
    )
    if spot:
        draft[("resources", "capacity")] = Traced("spot", Source(Origin.FILE, "use_spot", where))
    else:
        draft.pop(("resources", "capacity"), None)


def refuse_unjudged(draft: Draft, mapped: Mapped, needs_approval: frozenset[str]) -> None:
    """Refuse a candidate the priced one does not stand for: it would launch unjudged.

    SkyPilot launches on the cheapest candidate it finds, the gate judges the dearest: one
    that needs an approval the priced one does not, or holds more GPUs (a trial over
    ``max_gpus_per_trial`` or a node), would launch past rules that never saw it.
    """
    if len(mapped.candidates) < 2 or ("resources", "accelerator") not in draft:
        return
    name = draft[("resources", "accelerator")].value
    gpus = draft[("resources", "gpus_per_trial")].value
    for other, count, _, where in mapped.candidates:
        if other not in needs_approval or name in needs_approval:
            if count <= gpus:
                continue
            why = f"{count} GPUs a trial, more than the {gpus} of the {name} priced"
        else:
            why = f"{other} needs an approval under the team's policy; the {name} priced does not"
        raise InputError(
            f"the task may launch on {other}:{count}, which the gate would not judge: {why}",
            location=where,
            hint="list candidates the policy judges alike (the same GPUs a trial, no accelerator "
            "that needs an approval beside one that does not), or name one accelerator",
        )


def refuse_instance_type(resources: dict[str, Any], path: DataPath, where: SourceMap) -> None:
    """An ``instance_type`` decides the machine SkyPilot bills, which the gate does not price.

    NOTE: refused only without ``accelerators`` before; beside them it was dropped, so
    ``{accelerators: T4:1, instance_type: p5.48xlarge}`` was priced as one T4 while SkyPilot
    (which never checks the two against each other) launched and billed 8 × H100.
    """
    instance = resources.get("instance_type")
    if instance is None:
        return
    what = (
        "holds the accelerators SkyPilot infers from it"
        if resources.get("accelerators") is None
        else "decides the machine SkyPilot bills, whatever the accelerators beside it say"
    )
    raise InputError(
        f"resources.instance_type {instance} {what}, which budget-gate does not price",
        location=where.locate((*path, "instance_type")),
        hint="name the accelerators (e.g. accelerators: H100:8) and drop instance_type "
        "(SkyPilot picks an instance that has them)",
    )
