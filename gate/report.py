"""The values reporters see: findings, rule docs, per-spec results and the whole report.

Reporters render these and never decide pass or fail; :mod:`gate.verdict` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from gate.budget import BudgetStatus
from gate.errors import Location, Problem
from gate.estimate import Estimate
from gate.ledger import ApprovalCheck
from gate.policy import Severity

if TYPE_CHECKING:  # NOTE: gate.diff builds on SpecResult, so it cannot be imported here
    from gate.diff import SpecDiff


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
    errors: tuple[Problem, ...] = ()
    budget: BudgetStatus | None = None
    approval: ApprovalCheck | None = None


DOCS_URL = "https://github.com/budget-gate/budget-gate/blob/main/docs/rules.md"
"""Where ``docs/rules.md`` is published; ``--docs-url`` points reports elsewhere."""


@dataclass(frozen=True, slots=True)
class RenderContext:
    """Where a report will be shown, filled in by the command (reporters read no env).

    ``repository``, ``workflow`` and ``policy_dir`` identify the pull-request comment so
    that a later run updates it in place instead of adding another; ``head_sha`` is the
    commit a pull-request comment was written for, so a run for an older commit can tell
    that it must not overwrite it.
    """

    repository: str = ""
    workflow: str = ""
    policy_dir: str = "policies"
    docs_url: str = DOCS_URL
    base_ref: str | None = None
    head_sha: str | None = None

    def rule_url(self, rule: RuleInfo) -> str:
        """The link to one rule's documentation."""
        return f"{self.docs_url}#{rule.anchor}"


@dataclass(frozen=True, slots=True)
class Report:
    """One evaluation of one or more specs, ready to render in any format.

    ``rules`` documents every rule that was evaluated, fired or not; :attr:`fired` says
    which ones fired. ``diffs`` holds the cost change against ``context.base_ref``, one per
    spec, deleted specs included.
    """

    results: tuple[SpecResult, ...]
    rules: dict[str, RuleInfo] = field(default_factory=dict)
    catalog_source: str = ""
    catalog_date: str = ""
    version: str = ""
    context: RenderContext = field(default_factory=RenderContext)
    diffs: tuple[SpecDiff, ...] = ()

    @property
    def outcome(self) -> Outcome:
        """The worst outcome over all specs (pass when there are none)."""
        return max((r.outcome for r in self.results), key=lambda o: o.rank, default=Outcome.PASS)

    @property
    def fired(self) -> list[str]:
        """The ids of the rules with at least one finding, sorted."""
        return sorted({f.rule_id for r in self.results for f in r.findings})

    def diff_for(self, file: str) -> SpecDiff | None:
        """The cost change of one spec against the base, when a base was given."""
        return next((d for d in self.diffs if d.file == file), None)

    @property
    def removed(self) -> list[SpecDiff]:
        """Diffs of specs that exist only in the base (deleted by the change)."""
        files = {r.file for r in self.results}
        return [d for d in self.diffs if d.file not in files]
