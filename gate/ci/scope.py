"""What a pull request brings beyond its specs: spec files the globs miss, and its author.

Two questions the flow asks GitHub before judging: which changed files are specs a launch
would judge but fall outside the action's ``specs`` globs (reported, since nothing judges
them), and which of the policies' ``owns.github_teams`` the pull request's author is a
member of (the :class:`gate.policy.rules.base.Spender` that BG205 checks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from gate.ci.approvals import team_ref
from gate.ci.decisions import outside_candidates
from gate.ci.model import ChangedFile
from gate.errors import InputError, InputErrors
from gate.formats import Format, sniff
from gate.policy.loader import PolicySet
from gate.policy.rules.base import Spender
from gate.spec.loader import load_bytes

MAX_OUTSIDE = 50
"""How many changed spec files outside the spec globs are read to see if they are specs
(one GitHub request each); the rest are listed as not read."""


class Reader(Protocol):
    """The GitHub reads these need (see the facade for each method's contract)."""

    owner: str

    def read_file(self, path: str, ref: str) -> bytes | None: ...  # noqa: D102
    def team_member(self, org: str, slug: str, login: str) -> bool | None: ...  # noqa: D102


@dataclass(frozen=True, slots=True)
class Outside:
    """The changed spec files the globs leave out: specs, and those never known to be none."""

    specs: list[str] = field(default_factory=list)
    unread: list[tuple[str, str]] = field(default_factory=list)
    """Files that could not be read at the head, and why (each may be a spec)."""
    unchecked: list[str] = field(default_factory=list)
    """Files past :data:`MAX_OUTSIDE`, not read (each may be a spec)."""


def unjudged_specs(
    gh: Reader, changed: list[ChangedFile], present: list[ChangedFile], head: str
) -> Outside:
    """The changed spec files the globs leave out, read at the head: never judged.

    NOTE: nothing is left out unsaid: a file that cannot be read, and every file past the
    cap, is kept as one that may be a spec.
    """
    candidates = outside_candidates(changed, present)
    found = Outside(unchecked=candidates[MAX_OUTSIDE:])
    for path in candidates[:MAX_OUTSIDE]:
        try:
            content = gh.read_file(path, head)
        except InputError as exc:  # a symbolic link, or too large for the contents API
            found.unread.append((path, exc.message))
            continue
        if content is None:
            found.unread.append((path, f"no file at the head commit {head[:12]} (a submodule?)"))
        elif is_spec(content, path):
            found.specs.append(path)
    return found


def is_spec(content: bytes, path: str) -> bool:
    """Whether a launch would judge this file as a spec: parsed as a launch parses it.

    Parsed by the spec loader, not matched as text, so no spelling hides one (a tag, an
    anchor, a comment, an escape, a ``? kind`` key). A W&B, Katib, SkyPilot or Hydra file
    is judged as the spec it stands for, so it counts; a file the loader refuses is no
    spec, since every launch path refuses it too.
    """
    try:
        data = load_bytes(content, path).data
    except (InputError, InputErrors, RecursionError):
        return False
    if not isinstance(data, Mapping):
        return False
    declared = data.get("kind") == "Experiment" or data.get("apiVersion") == "budget-gate/v1"
    return declared or sniff(data) is not Format.BUDGET_GATE


def spender(gh: Reader, author: str, policies: PolicySet) -> Spender:
    """The pull request's author, with each owning GitHub team GitHub says they are in.

    Asks about every ``owns.github_teams`` entry of the base's policies (one request each);
    an answer GitHub will not give (no ``read:org``) is kept as unknown, which BG205 refuses.
    """
    entries = sorted({e for owns in policies.owners().values() for e in owns.github_teams})
    member, unknown = set(), set()
    for entry in entries:
        answer = gh.team_member(*team_ref(entry, gh.owner), author)
        if answer:
            member.add(entry)
        elif answer is None:
            unknown.add(entry)
    return Spender(author, frozenset(member), frozenset(unknown))
