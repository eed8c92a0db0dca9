"""The values reporters see: findings, rule docs, per-spec results and the whole report.

Reporters render these and never decide pass or fail; :mod:`gate.verdict` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from gate.budget import BudgetStatus
from gate.errors import Location
from gate.estimate import Estimate
from gate.ledger import ApprovalCheck
from gate.policy import Severity


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

    @property
    def active(self) -> bool:
        """Whether the finding counts toward the verdict (neither waived nor approved)."""
        return self.waived_by is None and self.approved_by is None


@dataclass(frozen=True, slots=True)
class SpecResult:
    """Everything known about one spec after evaluation.

    ``budget`` is this month's spend of its team or cost center (only with a monthly
    budget); ``approval`` is the ledger lookup (only when approvals were consulted).
    """

    file: str
    outcome: Outcome
    name: str | None = None
    policy: str | None = None
    fingerprint: str | None = None
    estimate: Estimate | None = None
    currency: str = "USD"
    findings: tuple[Finding, ...] = ()
    errors: tuple[str, ...] = ()
    budget: BudgetStatus | None = None
    approval: ApprovalCheck | None = None


@dataclass(frozen=True, slots=True)
class Report:
    """One evaluation of one or more specs, ready to render in any format."""

    results: tuple[SpecResult, ...]
    rules: dict[str, RuleInfo] = field(default_factory=dict)
    catalog_source: str = ""
    catalog_date: str = ""
    version: str = ""

    @property
    def outcome(self) -> Outcome:
        """The worst outcome over all specs (pass when there are none)."""
        return max((r.outcome for r in self.results), key=lambda o: o.rank, default=Outcome.PASS)
