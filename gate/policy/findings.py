"""What a verdict is made of: findings, outcomes and the rule facts reporters show (pure).

:mod:`gate.policy.verdict` decides with these; :mod:`gate.evaluation.report` carries them to
the reporters.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

from gate.errors import Location
from gate.policy.model import Severity


class Outcome(str, Enum):
    """A spec's result, each with its exit code (DESIGN.md §3)."""

    PASS = "pass"
    VIOLATION = "violation"
    APPROVAL_REQUIRED = "approval-required"
    INVALID = "invalid"
    BACKEND_ERROR = "backend-error"

    @property
    def exit_code(self) -> int:
        """The process exit code for this outcome."""
        return _EXIT[self]

    @property
    def rank(self) -> int:
        """Across specs the worst outcome wins: 3 > 4 > 1 > 2 > 0."""
        return _RANK[self]


_EXIT = {
    Outcome.PASS: 0,
    Outcome.VIOLATION: 1,
    Outcome.APPROVAL_REQUIRED: 2,
    Outcome.INVALID: 3,
    Outcome.BACKEND_ERROR: 4,
}
_RANK = {
    Outcome.PASS: 0,
    Outcome.APPROVAL_REQUIRED: 1,
    Outcome.VIOLATION: 2,
    Outcome.BACKEND_ERROR: 3,
    Outcome.INVALID: 4,
}


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """What a reporter needs to know about a rule: id, name, title and documentation."""

    id: str
    slug: str
    title: str
    default_severity: Severity
    help: str

    @property
    def anchor(self) -> str:
        """The fragment of this rule's section in ``docs/rules.md`` (GitHub's heading ids)."""
        return f"{self.id}-{self.slug}".lower()


@dataclass(frozen=True, slots=True)
class Edit:
    """One change to a spec: the key's path (``search.max_trials``) and its new value."""

    path: tuple[str, ...]
    value: Any
    in_file: str | None = None
    """The same edit in the words of the file it applies to, when that file is a W&B,
    Katib, SkyPilot or Hydra config (``run_cap: 12``); reports print it instead."""

    @property
    def dotted(self) -> str:
        """The path as the reports write it: ``search.max_concurrent_trials``."""
        return ".".join(self.path)

    def __str__(self) -> str:
        """``search.max_concurrent_trials: 7`` (the value as YAML flow reads it)."""
        if self.in_file is not None:
            return self.in_file
        return f"{self.dotted}: {json.dumps(self.value)}"


@dataclass(frozen=True, slots=True)
class Fix:
    """Edits that make a finding pass, proven by re-evaluating the edited spec.

    ``summary`` says what the edited plan comes to (trials, waves, cost, wall-clock).
    """

    edits: tuple[Edit, ...]
    summary: str

    def __str__(self) -> str:
        """``search.max_trials: 12 → worst-case 12 trials, ...``."""
        return f"{', '.join(str(e) for e in self.edits)} → {self.summary}"


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule firing on one spec, with the severity the policy gave it.

    ``waived_by`` holds the waiver's reason, ``approved_by`` the approver whose fresh
    approval satisfies an approval-level finding; either makes the finding inactive.
    """

    rule_id: str
    severity: Severity
    message: str
    location: Location | None
    waived_by: str | None = None
    approved_by: str | None = None
    fixes: tuple[Fix, ...] = ()
    """Edits proven to make this finding pass with no new error (limit findings only)."""

    @property
    def active(self) -> bool:
        """Whether the finding counts toward the verdict (neither waived nor approved)."""
        return self.waived_by is None and self.approved_by is None
