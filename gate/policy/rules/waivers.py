"""Which waivers apply to which spec and rule (shared by the verdict and the waiver rules).

A waiver's ``specs`` glob matches the spec's path relative to the repository root in the
one glob dialect of :mod:`gate.spec.globs` (``.gitignore``'s): ``*`` stays within one
directory, ``**`` spans directories, and a glob without a ``/`` matches a file name at any
depth. The command works out the repository-relative path; this module only matches it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from gate.policy.model import Waiver
from gate.spec.globs import matches_in_repository


def applies_to(waiver: Waiver, repo_path: str) -> bool:
    """Whether the waiver's glob matches the spec's repository-relative path."""
    return matches_in_repository([waiver.specs], repo_path)


def find_waiver(
    waivers: Sequence[Waiver], rule_id: str, repo_path: str, today: dt.date
) -> int | None:
    """Index of the first live waiver for this rule and spec, if any."""
    for index, waiver in enumerate(waivers):
        if waiver.rule == rule_id and waiver.expires >= today and applies_to(waiver, repo_path):
            return index
    return None
