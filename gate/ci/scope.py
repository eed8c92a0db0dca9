"""What a pull request brings beyond its specs: spec-like files the globs miss, and its author.

Two questions the flow asks GitHub before judging: which changed files declare
``kind: Experiment`` but fall outside the action's ``specs`` globs (reported, since nothing
judges them), and which of the policies' ``owns.github_teams`` the pull request's author is
a member of (the :class:`gate.policy.rules.base.Spender` that BG205 checks).
"""

from __future__ import annotations

from typing import Protocol

from gate.ci.approvals import team_ref
from gate.ci.decisions import outside_candidates
from gate.ci.model import ChangedFile
from gate.errors import InputError
from gate.policy.loader import PolicySet
from gate.policy.rules.base import Spender
from gate.spec.globs import looks_like_spec

MAX_OUTSIDE = 50
"""How many changed YAML/JSON files outside the spec globs are read to see if they are specs."""


class Reader(Protocol):
    """The GitHub reads these need (see the facade for each method's contract)."""

    owner: str

    def read_file(self, path: str, ref: str) -> bytes | None: ...  # noqa: D102
    def team_member(self, org: str, slug: str, login: str) -> bool | None: ...  # noqa: D102


def unjudged_specs(
    gh: Reader, changed: list[ChangedFile], present: list[ChangedFile], head: str
) -> list[str]:
    """The changed spec-like files the globs leave out: read at the head, never judged."""
    found = []
    for path in outside_candidates(changed, present, MAX_OUTSIDE):
        try:
            content = gh.read_file(path, head)
        except InputError:  # too large or not a file: not a spec this run could judge
            continue
        if content is not None and looks_like_spec(content):
            found.append(path)
    return found


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
