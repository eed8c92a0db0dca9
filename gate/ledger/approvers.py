"""Who may approve a spec: the ``approval.approvers`` part of a policy (pure data).

The ledger owns it because :func:`gate.ledger.records.authorize` and the GitHub flow decide
with it; :class:`gate.policy.model.Policy` composes it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictBool

from gate.spec.experiment import Model, Name


class Approvers(Model):
    """Who may approve large searches."""

    users: list[Name] = Field(default_factory=list)
    teams: list[Name] = Field(default_factory=list)
    permission: Literal["admin", "maintain", "write"] | None = None
    allow_self_approval: StrictBool = False

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
