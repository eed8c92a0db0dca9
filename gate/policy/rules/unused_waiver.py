"""A waiver for this spec suppressed nothing.

A waiver that matches the spec but whose rule did not fire is stale: the problem was
fixed, or the glob or rule id is wrong. Remove it so that it cannot hide a future
finding by surprise. Reported at the waiver's line in the policy.

Passes (BG104 fires on the spec and is waived)::

    waivers:
      - {rule: BG104, specs: "experiments/big.yaml", reason: "board approved", expires: 2099-01-01}

Fails (BG104 does not fire on the spec)::

    waivers:
      - {rule: BG104, specs: "experiments/small.yaml", reason: "old", expires: 2099-01-01}
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence

from gate.policy.model import Severity, Waiver
from gate.policy.rules.waivers import applies_to

ID = "BG902"
SLUG = "unused-waiver"
TITLE = "Waiver suppressed nothing"
DEFAULT_SEVERITY = Severity.WARN


def check_waivers(
    waivers: Sequence[Waiver], spec_file: str, today: dt.date, used: set[int]
) -> Iterator[tuple[int, str]]:
    """Yield (index, message) for each live waiver matching the spec that was not used."""
    for index, waiver in enumerate(waivers):
        live = applies_to(waiver, spec_file) and waiver.expires >= today
        if live and index not in used:
            yield index, f"waiver for {waiver.rule} on {waiver.specs!r} suppressed nothing"
