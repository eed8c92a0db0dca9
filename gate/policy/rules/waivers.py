"""Which waivers apply to which spec and rule (shared by the verdict and the waiver rules).

A waiver's ``specs`` glob matches the spec's path relative to the repository root, the
way ``.gitignore`` patterns do (via ``pathspec``): ``*`` stays within one directory, ``**``
spans directories, and a glob without a ``/`` matches a file name at any depth. The
command works out the repository-relative path; this module only matches it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from gate.policy.model import Waiver

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec


def applies_to(waiver: Waiver, repo_path: str) -> bool:
    """Whether the waiver's glob matches the spec's repository-relative path."""
    return _compiled(waiver.specs).match_file(repo_path.removeprefix("./"))


@lru_cache(maxsize=256)
def _compiled(glob: str) -> GitIgnoreSpec:
    # NOTE: imported here: pathspec costs ~30 ms to import, and most policies have no waivers.
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines([glob])


def find_waiver(
    waivers: Sequence[Waiver], rule_id: str, repo_path: str, today: dt.date
) -> int | None:
    """Index of the first live waiver for this rule and spec, if any."""
    for index, waiver in enumerate(waivers):
        if waiver.rule == rule_id and waiver.expires >= today and applies_to(waiver, repo_path):
            return index
    return None
