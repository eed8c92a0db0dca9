"""Whether an approval given on GitHub counts for a spec (pure).

An approval is a pull request review in state APPROVED (the reviewer's latest decisive
review: a later "changes requested" withdraws it) or a comment whose first line is
``/budget-gate approve [commit] [reason]``. It counts for a spec when all of these hold:

1. it approved the last commit that changed the spec or a later one: a review the commit
   it was given on (its ``commit_id``), a comment the head of the pull request when
   budget-gate processed it (its *binding*, kept in the ledger and in the sticky comment).
   A comment that names a commit counts only if that commit was the head it was bound to.
   Commit dates never order anything: the author sets them. A comment whose binding is
   unknown (budget-gate never saw it while it was the newest) does not count, and an
   edited comment never counts (someone else may have edited it);
2. the approver is a person, not a bot, and not the pull request's author, the spec's
   owner, nor the author or committer of a commit of the pull request that changed the spec
   (:mod:`gate.ci.contributors`), unless the policy sets ``allow_self_approval``;
3. the approver is in ``approval.approvers.users``, or an active member of one of its
   ``teams`` (``slug`` in the repository's organization, or ``org/slug``), or has at least
   its ``permission`` on the repository.

Each check returns why it refuses, or None; the flow asks GitHub for team membership and
permission only when the cheaper checks pass.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

from gate.ci.event import named_commit, parse_command
from gate.ci.model import CommentInfo, CommitInfo, ReviewInfo
from gate.ledger.approvers import Approvers
from gate.ledger.records import LedgerRecord, RecordKind, Source, when

ROLES = ("read", "triage", "write", "maintain", "admin")
"""Repository roles, weakest first."""
_DECISIVE = frozenset({"APPROVED", "CHANGES_REQUESTED", "DISMISSED"})


class Via(str, Enum):
    """How the approval was given."""

    REVIEW = "review"
    COMMENT = "comment"


@dataclass(frozen=True, slots=True)
class Candidate:
    """An approval found on the pull request, before it is judged."""

    via: Via
    id: int
    login: str
    is_bot: bool
    at: dt.datetime
    reason: str | None = None
    commit_id: str | None = None
    """The commit it approves: a review's own, a comment's binding (``None``: unknown)."""
    edited: bool = False
    named: str | None = None
    """The commit a comment names (``/budget-gate approve <commit>``): it must be the head
    budget-gate bound the comment to."""

    @property
    def source(self) -> Source:
        """The ledger's name for where the approval came from."""
        return Source.GITHUB_REVIEW if self.via is Via.REVIEW else Source.GITHUB_COMMENT

    @property
    def key(self) -> str:
        """A stable id: ``review-123`` or ``comment-456``."""
        return f"{self.via.value}-{self.id}"

    def describe(self) -> str:
        """``the review by alice on 2026-11-29 14:03 UTC`` for messages."""
        what = "review" if self.via is Via.REVIEW else "/budget-gate approve"
        return f"the {what} by {self.login} on {when(self.at)}"


@dataclass(frozen=True, slots=True)
class SpecChange:
    """The last commit that changed a spec, its date, and the commits from it to the head.

    ``changes`` are the pull request's commits that changed the spec, newest first, read to
    learn who made them; ``complete`` is False when the walk stopped before the pull
    request's first commit, so earlier changes are unknown.
    """

    commit: str
    at: dt.datetime
    since: frozenset[str]
    changes: tuple[CommitInfo, ...] = ()
    complete: bool = True
    base_moved_at: dt.datetime | None = None
    """When the pull request's base was last edited: approvals given before it approved a
    diff against another base, and count no more."""
    walked: frozenset[str] = frozenset()
    """The commits the walk read from the head, and the base (empty: not known)."""


@dataclass(frozen=True, slots=True)
class Access:
    """What GitHub says about an approver: listed teams they belong to, their role.

    ``unreadable`` names the teams whose membership could not be read (a token without
    ``read:org``); ``role`` is None when the permission could not be read.
    """

    teams: tuple[str, ...] = ()
    unreadable: tuple[str, ...] = ()
    role: str | None = None


def candidates(
    reviews: Iterable[ReviewInfo],
    comments: Iterable[CommentInfo],
    bindings: Mapping[str, str] | None = None,
) -> list[Candidate]:
    """Every approval on the pull request, oldest first.

    A reviewer's latest decisive review (approved, changes requested, dismissed) is their
    decision, so an approval followed by a request for changes does not count. A comment
    approves the commit its binding names (``bindings``: ``comment-<id>`` → head SHA).
    """
    bound = bindings or {}
    latest: dict[str, ReviewInfo] = {}
    for review in reviews:
        if review.state in _DECISIVE and review.submitted_at is not None:
            latest[review.login.lower()] = review
    found = [
        Candidate(Via.REVIEW, r.id, r.login, r.is_bot, r.submitted_at, None, r.commit_id)
        for r in latest.values()
        if r.state == "APPROVED" and r.submitted_at is not None
    ]
    for comment in comments:
        command = parse_command(comment.body)
        if command is not None:
            named, reason = named_commit(command)
            edited = comment.updated_at != comment.created_at
            found.append(
                Candidate(
                    Via.COMMENT,
                    comment.id,
                    comment.login,
                    comment.is_bot,
                    comment.created_at,
                    reason or None,
                    commit_id=bound.get(f"{Via.COMMENT.value}-{comment.id}"),
                    edited=edited,
                    named=named,
                )
            )
    return sorted(found, key=lambda c: (c.at, c.id))


def standing(reviews: Iterable[ReviewInfo], comments: Iterable[CommentInfo]) -> frozenset[str]:
    """The keys (``review-<id>``, ``comment-<id>``) of the approvals GitHub still shows.

    A reviewer's approving reviews stand while their latest decision is an approval (a
    later approval replaces an earlier one, it does not withdraw it); a dismissed review,
    or one followed by a request for changes, no longer does. A command comment stands
    while it exists unedited (an edited one does not count, as when it was given).
    """
    reviews = list(reviews)
    latest: dict[str, ReviewInfo] = {}
    for review in reviews:
        if review.state in _DECISIVE and review.submitted_at is not None:
            latest[review.login.lower()] = review
    approving = {login for login, review in latest.items() if review.state == "APPROVED"}
    shown = {
        f"{Via.REVIEW.value}-{r.id}"
        for r in reviews
        if r.state == "APPROVED" and r.login.lower() in approving
    }
    shown |= {
        f"{Via.COMMENT.value}-{c.id}"
        for c in comments
        if parse_command(c.body) is not None and c.updated_at == c.created_at
    }
    return frozenset(shown)


def withdrawn(
    record: LedgerRecord, number: int, shown: frozenset[str], moved: dt.datetime | None = None
) -> str | None:
    """Why the ledger's copy of a GitHub approval of pull request ``number`` lapsed, or None.

    It lapses once GitHub no longer shows the review or comment (:func:`standing`), or once
    the pull request's base is edited after it was given (``moved``, :func:`moved_refusal`).
    """
    github = record.source in (Source.GITHUB_REVIEW, Source.GITHUB_COMMENT)
    # NOTE: event_id names the review or comment (``review-<id>``) the record copies.
    if record.kind is not RecordKind.APPROVAL or not github or record.pr_number != number:
        return None
    copied = f"the approval by {record.by} recorded from GitHub ({record.event_id})"
    stale = moved_refusal(record.event_at or record.recorded_at, moved)
    if stale is not None:
        return f"{copied} no longer counts: {stale}"
    if record.event_id in shown:
        return None
    return (
        f"{copied} was withdrawn there: the review was dismissed or followed by a request for "
        "changes, or the comment deleted"
    )


FULL_SHA = 40
"""A named commit must be whole: a 7-digit prefix is found for a costlier commit in seconds."""


def timing_refusal(candidate: Candidate, change: SpecChange) -> str | None:
    """Why the approval is for an older version of the spec than the head's, or None.

    Decided by the commit graph alone (the approved commit must be the spec's last change
    or after it on the way to the head), never by dates, which the author sets.
    """
    last = f"the spec's last change (commit {change.commit[:7]})"
    if candidate.edited:
        return "the comment was edited after it was posted; post a new one"
    if candidate.named is not None and len(candidate.named) < FULL_SHA:
        return (
            f"it names commit {candidate.named} by a prefix, which a commit made to share it "
            "matches too; comment again naming the head's full SHA (40 hex digits)"
        )
    if candidate.named is not None and (candidate.commit_id or "") != candidate.named:
        return (
            f"it names commit {candidate.named[:12]}, which was not the head when budget-gate "
            "processed it; comment again naming the head"
        )
    if candidate.commit_id is None:
        return (
            "the commit it approved is unknown (a comment binds to the head in its own run, "
            "and that is kept once it counts); comment again"
        )
    if candidate.commit_id not in change.since:
        verb = "reviewed" if candidate.via is Via.REVIEW else "approved"
        if change.walked and candidate.commit_id not in change.walked:
            return (
                f"it {verb} commit {candidate.commit_id[:7]}, which is not in the pull "
                "request's history now (pushed over, or another branch's): approve the head"
            )
        return f"it {verb} commit {candidate.commit_id[:7]}, from before {last}"
    return moved_refusal(candidate.at, change.base_moved_at)


def moved_refusal(given: dt.datetime, moved: dt.datetime | None) -> str | None:
    """Why an approval given at ``given`` predates the base it would now approve, or None.

    Both dates are GitHub's own (a review's submission, a comment's creation, the base's
    edit), never the author's: what the approver saw was the diff against the old base.
    """
    if moved is None or given > moved:
        return None
    return (
        f"it was given before the pull request's base was changed on {when(moved)}: it "
        "approved the diff against the old base; approve again"
    )


def identity_refusal(
    candidate: Candidate, approvers: Approvers, author: str, owner: str | None
) -> str | None:
    """Why this person may not approve whatever their rights (bot, self-approval), or None."""
    login = candidate.login
    if candidate.is_bot:
        return f"{login} is a bot"
    if approvers.allow_self_approval:
        return None
    if same_login(login, author):
        return f"{login} opened the pull request and the policy does not allow self-approval"
    if owner is not None and same_login(login, owner):
        return f"{login} owns the spec and the policy does not allow self-approval"
    return None


def listed(login: str, approvers: Approvers) -> bool:
    """Whether ``login`` is in ``approval.approvers.users`` (logins ignore case)."""
    return any(same_login(login, user) for user in approvers.users)


def access_refusal(login: str, approvers: Approvers, access: Access) -> str | None:
    """Why a person who is not listed by name may not approve, or None when they may."""
    if access.teams:
        return None
    needed = approvers.permission
    if needed is not None and access.role is not None and at_least(access.role, needed):
        return None
    facts = [f"not in approval.approvers.users ({', '.join(approvers.users) or 'none'})"]
    members = [t for t in approvers.teams if t not in access.unreadable]
    if members:
        facts.append(f"not an active member of {', '.join(members)}")
    if access.unreadable:
        facts.append(
            f"membership of {', '.join(access.unreadable)} could not be read "
            "(the token needs read:org)"
        )
    if needed is not None:
        if access.role is None:
            facts.append(f"has no readable permission (the policy accepts {needed} or more)")
        elif access.role == "none":
            facts.append(f"has no access to the repository (the policy accepts {needed} or more)")
        else:
            facts.append(f"has {access.role} permission where the policy accepts {needed} or more")
    return f"{login} is not an approver: " + "; ".join(facts)


def at_least(role: str, needed: str) -> bool:
    """Whether repository role ``role`` is ``needed`` or stronger (unknown roles are not)."""
    if role not in ROLES or needed not in ROLES:
        return False
    return ROLES.index(role) >= ROLES.index(needed)


def team_ref(entry: str, owner: str) -> tuple[str, str]:
    """``org/slug``, or a bare ``slug`` in the repository owner's organization."""
    org, sep, slug = entry.partition("/")
    return (org, slug) if sep else (owner, entry)


def same_login(a: str, b: str) -> bool:
    """GitHub logins are case-insensitive."""
    return a.casefold() == b.casefold()
