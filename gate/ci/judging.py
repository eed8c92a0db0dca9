"""The pull request's approvals judged: which review or ``/budget-gate approve`` counts.

For each spec that needs an approval, every review and approving comment is a candidate;
one counts when it came after the spec's last change (:mod:`gate.ci.history`), from someone
the policy's approvers name, directly, by team or by repository role (each asked of GitHub
once per run), and not from the author, the owner or whoever made a commit that changed the
spec, where the policy says so (the pure checks are :mod:`gate.ci.approvals`' and
:mod:`gate.ci.contributors`'). A comment binds to the
commit that was the head when it was first processed; the bindings are kept in the ledger
and the sticky comment. An approval that counts becomes a ledger record.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from gate.ci.approvals import (
    Access,
    Candidate,
    SpecChange,
    Via,
    access_refusal,
    candidates,
    identity_refusal,
    listed,
    team_ref,
    timing_refusal,
)
from gate.ci.contributors import contributor_refusal
from gate.ci.event import Event, named_commit, parse_command
from gate.ci.history import SpecHistory
from gate.ci.model import CommentInfo, CommitInfo, PullInfo, ReviewInfo
from gate.evaluation.evaluate import Evaluation, Evaluator
from gate.evaluation.report import SpecResult
from gate.ledger.approvals import NO_APPROVAL, ApprovalCheck
from gate.ledger.approvers import Approvers
from gate.ledger.records import LedgerQuery, LedgerRecord, RecordKind, Source
from gate.ledger.tracking import COST_CENTER_LABEL, spec_path
from gate.ledger.view import LedgerView
from gate.policy.findings import Outcome
from gate.policy.verdict import apply_approval, decide

BIND_WITHIN = dt.timedelta(minutes=10)
"""A ``/budget-gate approve`` processed later than this after it was posted binds to no
commit: the head may have moved since (a re-run, a queued runner), and it must be posted
again."""
_BOUND = re.compile(
    r"^<!-- budget-gate:bound:(comment-[0-9]+):([0-9a-f]{40}|[0-9a-f]{64}) -->$", re.MULTILINE
)


class Reader(Protocol):
    """The GitHub reads the judging needs (see the facade for each method's contract)."""

    owner: str

    def commit(self, sha: str) -> CommitInfo: ...  # noqa: D102
    def base_moved_at(self, number: int) -> dt.datetime | None: ...  # noqa: D102
    def reviews(self, number: int) -> list[ReviewInfo]: ...  # noqa: D102
    def comments(self, number: int) -> list[CommentInfo]: ...  # noqa: D102
    def team_member(self, org: str, slug: str, login: str) -> bool | None: ...  # noqa: D102
    def role(self, login: str) -> str | None: ...  # noqa: D102


@dataclass(frozen=True, slots=True)
class Judged:
    """The approvals of one run judged: each spec's result with the approval that counts."""

    results: list[SpecResult]
    """The evaluations' results, in order, those needing approval with its check applied."""
    comments: list[CommentInfo]
    bindings: dict[str, str]
    """Which commit each ``/budget-gate approve`` approved (``comment-<id>`` → head SHA)."""
    approvers: list[Approvers]
    accepted: list[tuple[Evaluation, Candidate]]
    refusals: list[str]
    """Why the comment that triggered the run was not accepted (empty when it was, or none)."""


def judge_approvals(
    gh: Reader,
    event: Event,
    evaluations: list[Evaluation],
    pull: PullInfo,
    head_sha: str,
    evaluator: Evaluator,
    now: dt.datetime,
    activity: tuple[list[ReviewInfo], list[CommentInfo]],
    history: SpecHistory | None = None,
) -> Judged:
    """Judge the reviews and approve comments of each spec; ``activity``, ``history``: read once."""
    reviews, comments = activity
    bindings = _bindings(comments, evaluator.ledger, evaluations, event, head_sha, now)
    found = candidates(reviews, comments, bindings)
    history = history or SpecHistory(gh, pull, head_sha)
    access = _AccessCache(gh)
    command = event.command.comment_id if event.command else None
    command_reasons: list[str] = []
    accepted_command = False
    results = [e.result for e in evaluations]
    all_approvers: list[Approvers] = []
    accepted: list[tuple[Evaluation, Candidate]] = []
    for index, evaluation in enumerate(evaluations):
        result = evaluation.result
        if result.outcome is not Outcome.APPROVAL_REQUIRED or evaluation.policy is None:
            continue
        approvers = evaluation.policy.approval.approvers
        all_approvers.append(approvers)
        owner = evaluation.spec.metadata.owner if evaluation.spec else None
        change, people = history.last_change(result.file), (pull.author, owner)
        verdicts = [
            (candidate, _refusal(candidate, (result.file, change), approvers, people, access, gh))
            for candidate in found
        ]
        chosen = next((c for c, refusal in reversed(verdicts) if refusal is None), None)
        # NOTE: why the ledger's approvals do not count (approval.sources, a revocation) is
        # kept; that it holds none at all is no news on a pull request.
        ledger = result.approval.stale if result.approval else ()
        stale = [reason for reason in ledger if not reason.startswith(NO_APPROVAL)]
        stale += [f"{c.describe()} does not count: {refusal}" for c, refusal in verdicts if refusal]
        for candidate, refusal in verdicts:
            if candidate.via is Via.COMMENT and candidate.id == command:
                accepted_command |= refusal is None
                if refusal is not None:
                    command_reasons.append(f"{result.file}: {refusal}")
        if chosen is None:
            stale.append(
                f"approvers: {approvers.describe()} — approve the pull request or "
                "comment “/budget-gate approve <reason>”"
            )
        results[index] = _with_approval(
            result, evaluation, chosen, stale, pull.number, evaluator.fail_on_warn
        )
        if chosen is not None:
            accepted.append((evaluation, chosen))
    refusals = command_reasons if command is not None and not accepted_command else []
    return Judged(results, comments, bindings, all_approvers, accepted, refusals)


def _refusal(
    candidate: Candidate,
    spec: tuple[str, SpecChange],
    approvers: Approvers,
    people: tuple[str, str | None],
    access: _AccessCache,
    gh: Reader,
) -> str | None:
    """Why ``candidate`` does not approve the spec (``None``: it does): when, who, authority.

    ``spec`` is its path and history; ``people`` the pull request's author and the spec's
    owner. Neither they nor whoever made a commit that changed the spec may approve it.
    """
    (author, owner), (path, change) = people, spec
    return (
        timing_refusal(candidate, change)
        or identity_refusal(candidate, approvers, author, owner)
        or contributor_refusal(candidate.login, approvers, path, change)
        or _authority_refusal(candidate.login, approvers, access, gh.owner)
    )


def _bindings(
    comments: list[CommentInfo],
    ledger: LedgerView | None,
    evaluations: list[Evaluation],
    event: Event,
    head_sha: str,
    now: dt.datetime,
) -> dict[str, str]:
    """The commit each approving comment approved, as first processed.

    This run's own comment binds to the head now, if it was posted moments ago; any comment
    that names the head by its full SHA binds to it, whichever run reads it. Earlier
    bindings come from the ledger (CI's records of the approvals it accepted), and, unless
    the ledger's records must be signed, from budget-gate's own sticky comments (by the
    action's ``bot-login``: another bot's lines bind nothing).
    """
    bound: dict[str, str] = {}
    trust = ledger.trusted() if ledger is not None else None
    if trust is None or not trust.signed:
        ours = [c for c in comments if c.ours]
        bound.update(found for c in ours for found in _BOUND.findall(c.body))
    if ledger is not None:
        for evaluation in evaluations:
            fp = evaluation.result.fingerprint
            if fp is not None and evaluation.result.outcome is Outcome.APPROVAL_REQUIRED:
                bound.update(_recorded(ledger.records(LedgerQuery(fingerprint=fp))))
    command = event.command
    if command is not None and f"comment-{command.comment_id}" not in bound:
        comment = next((c for c in comments if c.id == command.comment_id), None)
        named, _ = named_commit(command.reason or "")
        fresh = comment is not None and now - comment.created_at <= BIND_WITHIN
        if fresh and (named is None or head_sha == named):
            bound[f"comment-{command.comment_id}"] = head_sha
    for comment in comments:  # NOTE: one whose own run was skipped (a newer run took its place)
        reason = None if comment.ours or comment.is_bot else parse_command(comment.body)
        if reason is not None and named_commit(reason)[0] == head_sha:
            bound.setdefault(f"comment-{comment.id}", head_sha)
    return bound


def _recorded(records: Iterable[LedgerRecord]) -> dict[str, str]:
    return {
        r.event_id: r.head_sha
        for r in records
        if r.kind is RecordKind.APPROVAL
        and r.source is Source.GITHUB_COMMENT
        and r.event_id
        and r.head_sha
    }


def binding_lines(bindings: dict[str, str]) -> str:
    """The hidden lines of the sticky comment that keep the comments' bindings."""
    return "".join(
        f"<!-- budget-gate:bound:{key}:{sha} -->\n" for key, sha in sorted(bindings.items())
    )


def _authority_refusal(
    login: str, approvers: Approvers, access: _AccessCache, owner: str
) -> str | None:
    if listed(login, approvers):
        return None
    return access_refusal(login, approvers, access.of(login, approvers, owner))


def _with_approval(
    result: SpecResult,
    evaluation: Evaluation,
    chosen: Candidate | None,
    stale: list[str],
    pr_number: int,
    fail_on_warn: bool,
) -> SpecResult:
    record = None if chosen is None else approval_record(evaluation, chosen, pr_number)
    findings = list(result.findings)
    if record is not None:
        findings = apply_approval(findings, record)
    outcome = decide(findings, fail_on_warn=fail_on_warn)
    check = ApprovalCheck(record, tuple(stale))
    return dataclasses.replace(result, findings=tuple(findings), outcome=outcome, approval=check)


def approval_record(evaluation: Evaluation, chosen: Candidate, pr_number: int) -> LedgerRecord:
    """The GitHub approval as a ledger record: this version, its estimate, who, when."""
    result, spec = evaluation.result, evaluation.spec
    assert result.fingerprint is not None and result.estimate is not None and spec is not None
    return LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec=evaluation.path or spec_path(result.file),
        fingerprint=result.fingerprint,
        experiment=spec.metadata.name,
        recorded_at=chosen.at,  # in this run's report; the ledger stamps its own write time
        currency=result.currency,
        worst_cost=result.estimate.worst.cost,
        expected_cost=result.estimate.expected.cost,
        team=spec.metadata.team,
        cost_center=spec.metadata.labels.get(COST_CENTER_LABEL),
        by=chosen.login,
        reason=chosen.reason or f"approved on GitHub ({chosen.via.value})",
        source=chosen.source,
        pr_number=pr_number,
        record_id=chosen.key,
        event_at=chosen.at,
        head_sha=chosen.commit_id,
        event_id=chosen.key,
    )


def revocation_record(
    approval: LedgerRecord, why: str, pr_number: int, now: dt.datetime
) -> LedgerRecord:
    """The revocation of a GitHub approval that GitHub withdrew (:func:`withdrawn`)."""
    assert approval.record_id is not None
    return LedgerRecord(
        kind=RecordKind.REVOCATION,
        spec=approval.spec,
        fingerprint=approval.fingerprint,
        experiment=approval.experiment,
        recorded_at=now,
        currency=approval.currency,
        team=approval.team,
        cost_center=approval.cost_center,
        by=approval.by,
        reason=f"withdrawn on GitHub: {why}",
        source=approval.source,
        pr_number=pr_number,
        revokes=(approval.record_id,),
    )


class _AccessCache:
    """Team memberships and repository roles, each asked of GitHub at most once per run."""

    def __init__(self, gh: Reader) -> None:
        self._gh = gh
        self._members: dict[tuple[str, str, str], bool | None] = {}
        self._roles: dict[str, str | None] = {}

    def of(self, login: str, approvers: Approvers, owner: str) -> Access:
        teams: list[str] = []
        unreadable: list[str] = []
        for entry in approvers.teams:
            member = self._member(*team_ref(entry, owner), login)
            if member:
                teams.append(entry)
                break  # one team is enough
            if member is None:
                unreadable.append(entry)
        role = self._role(login) if approvers.permission and not teams else None
        return Access(tuple(teams), tuple(unreadable), role)

    def _member(self, org: str, slug: str, login: str) -> bool | None:
        key = (org, slug, login.casefold())
        if key not in self._members:
            self._members[key] = self._gh.team_member(org, slug, login)
        return self._members[key]

    def _role(self, login: str) -> str | None:
        if login.casefold() not in self._roles:
            self._roles[login.casefold()] = self._gh.role(login)
        return self._roles[login.casefold()]
