"""Who may approve a spec, and from where: ``approval.approvers`` and ``sources`` (pure data).

The ledger owns it because :func:`gate.ledger.records.authorize` and the GitHub flow decide
with it; :class:`gate.policy.model.Policy` composes it.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from gate.model import Field, Model, StrictBool
from gate.spec.base import Name


class Origin(str, Enum):
    """What a policy's ``approval.sources`` lists: which approvals count toward a verdict.

    A ``local`` approval proves only that someone who can write to the ledger typed a name
    the policy lists; a ``github`` one was checked by the pull-request flow against the
    reviewer's GitHub identity, team membership or permission.
    """

    LOCAL = "local"
    GITHUB = "github"


ALL_ORIGINS = (Origin.LOCAL, Origin.GITHUB)


class Approvers(Model):
    """Who may approve large searches."""

    users: list[Name] = Field(default_factory=list)
    """Users who may approve (locally and on GitHub)."""
    teams: list[Name] = Field(default_factory=list)
    """GitHub teams (org/team) whose members may approve."""
    permission: Literal["admin", "maintain", "write"] | None = None
    """Anyone with this repository permission or more may approve."""
    allow_self_approval: StrictBool = False
    """Whether a spec's owner or pull-request author may approve it."""

    def describe(self) -> str:
        """``users alice; members of ml-platform; anyone with maintain permission or more``."""
        parts = []
        if self.users:
            parts.append(f"users {', '.join(self.users)}")
        if self.teams:
            parts.append(f"members of {', '.join(self.teams)}")
        if self.permission:
            parts.append(f"anyone with {self.permission} permission or more")
        return "; ".join(parts) or "nobody (the policy lists no approvers)"
