"""Which waivers apply to which spec and rule (shared by the verdict and the waiver rules)."""

from __future__ import annotations

import datetime as dt
import fnmatch
from collections.abc import Sequence
from pathlib import PurePath

from gate.policy.model import Waiver


def applies_to(waiver: Waiver, spec_file: str) -> bool:
    """Whether the waiver's glob matches the spec path (as given, with / separators)."""
    return fnmatch.fnmatchcase(PurePath(spec_file).as_posix(), waiver.specs)


def find_waiver(
    waivers: Sequence[Waiver], rule_id: str, spec_file: str, today: dt.date
) -> int | None:
    """Index of the first live waiver for this rule and spec, if any."""
    for index, waiver in enumerate(waivers):
        if waiver.rule == rule_id and waiver.expires >= today and applies_to(waiver, spec_file):
            return index
    return None
