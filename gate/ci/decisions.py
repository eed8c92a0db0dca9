"""What the pull-request flow writes, decided from values (pure).

Which changed files are specs, the commit status for a verdict, the approval label, whom
to ask for a review, whether the sticky comment may be overwritten, and the step's
outputs. The step's exit code under ``fail-on`` is :func:`gate.policy.verdict.exit_code`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from enum import Enum

from gate.ci.approvals import same_login, team_ref
from gate.ci.model import ChangedFile, PullInfo
from gate.estimate.settings import ScenarioName
from gate.evaluation.report import Report
from gate.ledger.approvers import Approvers
from gate.money import fixed, format_money
from gate.policy.findings import Outcome
from gate.spec.globs import is_spec_file, matches

STATUS_CONTEXT = "budget-gate"
"""The commit status's context: what branch protection requires."""


def status_context(pull: PullInfo) -> str:
    """The status's context: ``budget-gate`` into the default branch, else the base's own.

    A status belongs to a commit, not to a pull request: one commit in two pull requests
    (into ``main`` and into ``stage``) would take the green of the other base's judgement.
    Into another base it is ``budget-gate (stage)``, which that branch's protection requires.
    """
    if not pull.default_branch or pull.base_ref == pull.default_branch:
        return STATUS_CONTEXT
    return f"{STATUS_CONTEXT} ({pull.base_ref})"


APPROVAL_LABEL = "budget-approval-required"
_DESCRIPTION_LIMIT = 140  # GitHub refuses longer commit status descriptions


class CommentMode(str, Enum):
    """``comment``: update the sticky comment, post a new one every run, or none."""

    UPDATE = "update"
    NEW = "new"
    OFF = "off"


def select_specs(
    files: Iterable[ChangedFile], globs: Sequence[str]
) -> tuple[list[ChangedFile], list[ChangedFile]]:
    """The changed files that are specs: those at the head, and those the change removed.

    A spec is a spec file (:func:`gate.spec.globs.is_spec_file`: ``.yaml``, ``.yml`` or
    ``.json`` in any case) that the globs select (:mod:`gate.spec.globs`, gitignore's
    rules); a renamed file counts when either its new or its old path does.
    """

    def selected(path: str | None) -> bool:
        return path is not None and is_spec_file(path) and matches(globs, path)

    present, removed = [], []
    for file in files:
        if file.removed and selected(file.path):
            removed.append(file)
        elif not file.removed and (selected(file.path) or selected(file.previous_path)):
            present.append(file)
    return present, removed


def outside_candidates(files: Iterable[ChangedFile], present: Sequence[ChangedFile]) -> list[str]:
    """Changed spec files the globs did not select: each may be a spec nobody judges.

    In order; the flow reads each one (up to a cap, and says which it did not read) to see
    if it is a spec. Only spec files: a launch path refuses any other name.
    """
    taken = {file.path for file in present}
    others = [f.path for f in files if not f.removed and f.path not in taken]
    return [path for path in others if is_spec_file(path)]


def commit_status(report: Report) -> tuple[str, str]:
    """The ``budget-gate`` status state and description for the report's verdict."""
    outcome = report.outcome
    if not report.results:
        return "success", "no experiment spec changed"
    worst = totals(report, "worst")
    cost = f" · worst case {worst}" if worst else ""
    match outcome:
        case Outcome.PASS:
            approvers = sorted(
                {f.approved_by for r in report.results for f in r.findings if f.approved_by}
            )
            said = f"approved by {', '.join(approvers)}" if approvers else "within policy"
            return "success", _short(said + cost)
        case Outcome.APPROVAL_REQUIRED:
            return "pending", _short("approval required" + cost)
        case Outcome.VIOLATION:
            return "failure", _short("breaks policy" + cost)
        case Outcome.INVALID:
            return "failure", "invalid input: see the job's annotations"
        case Outcome.BACKEND_ERROR:
            return "error", "a backend failed: see the job's log"


def label_change(needs_approval: bool, labels: Iterable[str]) -> str | None:
    """``add`` or ``remove`` the approval label, or None when it is already right."""
    present = APPROVAL_LABEL in labels
    if needs_approval and not present:
        return "add"
    if not needs_approval and present:
        return "remove"
    return None


def reviewers_to_request(
    approvers: Iterable[Approvers], pull: PullInfo, owner: str
) -> tuple[list[str], list[str]]:
    """Listed users and teams (of the repository's organization) not yet asked for a review.

    GitHub refuses a review request from the pull request's author, and can only request
    teams of the repository's own organization.
    """
    users: list[str] = []
    teams: list[str] = []
    for group in approvers:
        for user in group.users:
            asked = [*pull.requested_users, *users, pull.author]
            if not any(same_login(user, other) for other in asked):
                users.append(user)
        for entry in group.teams:
            org, slug = team_ref(entry, owner)
            if same_login(org, owner) and slug not in pull.requested_teams and slug not in teams:
                teams.append(slug)
    return users, teams


def may_write_comment(written_for: str | None, ours: str, current_head: str) -> bool:
    """Whether a run for head ``ours`` may overwrite the comment written for ``written_for``.

    A run for the pull request's current head always may; a run for an older head only
    overwrites its own comment (never one written for a newer head).
    """
    return written_for is None or written_for == ours or ours == current_head


def outputs(report: Report, report_json: str) -> dict[str, str]:
    """The step's outputs (docs/github-action.md): verdict, costs, needs-approval, report-json."""
    return {
        "verdict": report.outcome.value,
        "worst-cost": totals(report, "worst", code=False),
        "expected-cost": totals(report, "expected", code=False),
        "needs-approval": str(
            any(r.outcome is Outcome.APPROVAL_REQUIRED for r in report.results)
        ).lower(),
        "report-json": report_json,
    }


def totals(report: Report, scenario: ScenarioName, *, code: bool = True) -> str:
    """The scenario's cost over all priced specs: ``1,611.31 USD``, or ``1611.31`` without code.

    Specs priced in several currencies give one ``amount CUR`` per currency, ``; ``-joined.
    """
    sums: dict[str, Decimal] = {}
    for result in report.results:
        if result.estimate is not None:
            cost = result.estimate.scenario(scenario).cost
            sums[result.currency] = sums.get(result.currency, Decimal(0)) + cost
    if not sums:
        return ""
    if len(sums) == 1 and not code:
        return str(fixed(next(iter(sums.values())), 2))
    return "; ".join(format_money(amount, cur) for cur, amount in sorted(sums.items()))


def _short(text: str) -> str:
    return text if len(text) <= _DESCRIPTION_LIMIT else text[: _DESCRIPTION_LIMIT - 1] + "…"
