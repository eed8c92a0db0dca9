"""The accelerator names a policy writes must be names a spec can match (pure).

A spec names its accelerator exactly as the price catalog does (``H200``); the policy's
``approval.accelerators`` and the keys of ``prices.overrides`` and ``prices.owned`` are
compared with it exactly too. Spelt in another case (``h200``), with spaces, or (in
``approval.accelerators``) as no name anything prices, they match no spec: the approval rule
or the price silently never applies. So they are refused here; a price key the catalog does
not know at all is an accelerator the policy prices itself.
"""

from __future__ import annotations

from collections.abc import Iterable

from gate.errors import InputError, InputErrors
from gate.estimate.prices import closest_accelerator
from gate.policy.model import Policy
from gate.spec.loader import SourceMap


def check_accelerator_names(policy: Policy, source_map: SourceMap, catalog: Iterable[str]) -> None:
    """Refuse price keys that are a catalog name in another case, and unknown approvals."""
    known = set(catalog)
    by_lower = {name.lower(): name for name in known}
    errors: list[InputError] = []
    for section, names in (("overrides", policy.prices.overrides), ("owned", policy.prices.owned)):
        for name in names:
            meant = by_lower.get(name.strip().lower())
            if name not in known and meant is not None:
                errors.append(
                    InputError(
                        f"prices.{section}: {name!r} is the catalog's {meant!r} in another "
                        f"case or with spaces, so a spec that names {meant} is not priced by it",
                        location=source_map.locate(("prices", section, name), key=True),
                        hint=f"write {meant}",
                    )
                )
    priced = known | set(policy.prices.overrides) | set(policy.prices.owned)
    for index, name in enumerate(policy.approval.accelerators):
        if name not in priced:
            errors.append(
                InputError(
                    f"approval.accelerators: {name!r} is no accelerator the catalog or the "
                    "policy's prices name, so no spec ever matches it",
                    location=source_map.locate(("approval", "accelerators", index)),
                    hint=_spelling(name, sorted(priced)),
                )
            )
    if errors:
        errors.sort(key=lambda e: (e.location.line, e.location.col) if e.location else (0, 0))
        raise InputErrors(errors)


def _spelling(name: str, known: list[str]) -> str:
    close = closest_accelerator(name, known)
    return f"did you mean {close!r}?" if close else "use a name budget-gate prices lists"
