"""A waiver for this spec has expired.

Waivers are temporary by design: each has a reason and an ``expires`` date. Once expired
it no longer suppresses anything, and this finding asks for it to be renewed with a new
reason or removed. Reported at the waiver's line in the policy.

Passes::

    waivers:
      - {rule: BG104, specs: "experiments/llm-*.yaml", reason: "Q4 launch", expires: 2099-12-31}

Fails::

    waivers:
      - {rule: BG104, specs: "experiments/llm-*.yaml", reason: "Q4 launch", expires: 2020-01-31}
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence

from gate.policy.model import Severity, Waiver
from gate.policy.rules.waivers import applies_to

ID = "BG901"
SLUG = "expired-waiver"
TITLE = "Expired waiver"
DEFAULT_SEVERITY = Severity.WARN


def check_waivers(
    waivers: Sequence[Waiver], spec_file: str, today: dt.date
) -> Iterator[tuple[int, str]]:
    """Yield (index, message) for each waiver that matches the spec but has expired."""
    for index, waiver in enumerate(waivers):
        if applies_to(waiver, spec_file) and waiver.expires < today:
            yield (
                index,
                (
                    f"waiver for {waiver.rule} on {waiver.specs!r} expired on {waiver.expires} "
                    f"({waiver.reason})"
                ),
            )
