"""The pull request's approvals judged: which review or ``/budget-gate approve`` counts.

For each spec that needs an approval, every review and approving comment is a candidate;
one counts when it came after the spec's last change (:mod:`gate.ci.history`), from someone
the policy's approvers name, directly, by team or by repository role (each asked of GitHub
once per run), and not from the author, the owner or whoever made a commit that changed the
spec, where the policy says so (the pure checks are :mod:`gate.ci.approvals`' and
:mod:`gate.ci.contributors`'). A comment approves the commit it names by its full SHA, or
else the commit that was the head when its own run first processed it; those bindings are
kept in the ledger and the sticky comment (:mod:`gate.ci.bindings`). An approval that counts
becomes a ledger record.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
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
from gate.ci.bindings import bindings, standing_bindings
from gate.ci.contributors import contributor_refusal
from gate.ci.event import Event
from gate.ci.history import SpecHistory
from gate.ci.model import CommentInfo, CommitInfo, PullInfo, ReviewInfo
from gate.evaluation.evaluate import Evaluation, Evaluator
from gate.evaluation.report import SpecResult
from gate.ledger.approvals import NO_APPROVAL, ApprovalCheck
from gate.ledger.approvers import Approvers
from gate.ledger.records import LedgerRecord, RecordKind
from gate.ledger.tracking import COST_CENTER_LABEL, spec_path
from gate.policy.findings import Outcome
from gate.policy.verdict import apply_approval, decide


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
    """What the sticky comment keeps: which commit each standing ``/budget-gate approve``
    that counted approved (``comment-<id>`` → head SHA)."""
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
    *,
    sticky: bool,
    signs: bool = False,
) -> Judged:
    """Judge the reviews and approve comments of each spec; ``activity``, ``history``: read once.

    ``sticky``, ``signs``: what may keep the comments' bindings (:func:`bindings`).
    """
    reviews, comments = activity
    bound = bindings(
        comments, evaluator.ledger, evaluations, event, head_sha, now, sticky=sticky, signs=signs
    )
    found = candidates(reviews, comments, bound.commits)
    history = history or SpecHistory(gh, pull, head_sha)
    access = _AccessCache(gh)
    command = event.command.comment_id if event.command else None
    unbound = {command: bound.unbound} if bound.unbound and command is not None else {}
    command_reasons: list[str] = []
    counted: set[int] = set()  # NOTE: comments that passed every check, chosen or not
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
            (c, _refusal(c, (result.file, change), approvers, people, access, gh, unbound))
            for c in found
        ]
        chosen = next((c for c, refusal in reversed(verdicts) if refusal is None), None)
        for candidate, refusal in verdicts:
            if candidate.via is Via.COMMENT and refusal is None:
                counted.add(candidate.id)
            elif candidate.via is Via.COMMENT and candidate.id == command:
                command_reasons.append(f"{result.file}: {refusal}")
        stale = _stale(result, verdicts, approvers if chosen is None else None, head_sha)
        results[index] = _with_approval(
            result, evaluation, chosen, stale, pull.number, evaluator.fail_on_warn
        )
        if chosen is not None:
            accepted.append((evaluation, chosen))
    refusals = command_reasons if command is not None and command not in counted else []
    keep = standing_bindings(bound, comments, counted)
    return Judged(results, comments, keep, all_approvers, accepted, refusals)


def _stale(
    result: SpecResult,
    verdicts: list[tuple[Candidate, str | None]],
    unmet: Approvers | None,
    head_sha: str,
) -> list[str]:
    """Why no approval counts for ``result``: the ledger's, each candidate's, who may give one.

    ``unmet``: the approvers, when none of the candidates counts. The comment it suggests
    names the head, so a push before the comment's run is not what it approves.
    """
    # NOTE: why the ledger's approvals do not count (approval.sources, a revocation) is
    # kept; that it holds none at all is no news on a pull request.
    ledger = result.approval.stale if result.approval else ()
    stale = [reason for reason in ledger if not reason.startswith(NO_APPROVAL)]
    stale += [f"{c.describe()} does not count: {refusal}" for c, refusal in verdicts if refusal]
    if unmet is not None:
        stale.append(
            f"approvers: {unmet.describe()} — approve the pull request or comment "
            f"“/budget-gate approve {head_sha} <reason>”"
        )
    return stale


def _refusal(
    candidate: Candidate,
    spec: tuple[str, SpecChange],
    approvers: Approvers,
    people: tuple[str, str | None],
    access: _AccessCache,
    gh: Reader,
    unbound: dict[int, str],
) -> str | None:
    """Why ``candidate`` does not approve the spec (``None``: it does): who, when, authority.

    ``spec`` is its path and history; ``people`` the pull request's author and the spec's
    owner. Neither they nor whoever made a commit that changed the spec may approve it.
    ``unbound`` says why this run did not bind its own comment (by comment id). What GitHub
    must be asked (teams, roles) comes last: a flood of stale comments costs no requests.
    """
    (author, owner), (path, change) = people, spec
    plain = candidate.commit_id is None and candidate.named is None and not candidate.edited
    return (
        identity_refusal(candidate, approvers, author, owner)
        or (unbound.get(candidate.id) if plain and candidate.via is Via.COMMENT else None)
        or timing_refusal(candidate, change)
        or contributor_refusal(candidate.login, approvers, path, change)
        or _authority_refusal(candidate.login, approvers, access, gh.owner)
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
        repository=approval.repository,
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
