"""Whether a GitHub approval counts: timing, identity and authority, without HTTP."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from gate.ci.approvals import (
    Access,
    Candidate,
    SpecChange,
    Via,
    access_refusal,
    at_least,
    candidates,
    identity_refusal,
    listed,
    team_ref,
    timing_refusal,
    withdrawn,
)
from gate.ci.model import CommentInfo, ReviewInfo
from gate.ledger.approvers import Approvers
from gate.ledger.records import LedgerRecord, RecordKind, Source

T = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)
MIN = dt.timedelta(minutes=1)
SEC = dt.timedelta(seconds=1)
CHANGE = SpecChange("c" * 40, T, frozenset({"c" * 40, "d" * 40}))
APPROVERS = Approvers(users=["Alice"], teams=["ml-platform"], permission="maintain")


def review(login: str, state: str, at: dt.datetime, id: int = 1, **kw) -> ReviewInfo:
    return ReviewInfo(id, login, kw.get("bot", False), state, at, kw.get("commit", "d" * 40))


def comment(login: str, body: str, at: dt.datetime, id: int = 9, edited: bool = False):
    return CommentInfo(id, login, False, body, at, at + MIN if edited else at)


def test_a_reviewers_latest_decision_counts_and_comments_are_commands() -> None:
    found = candidates(
        [
            review("alice", "APPROVED", T + MIN, 1),
            review("alice", "COMMENTED", T + 2 * MIN, 2),  # not a decision: the approval stands
            review("bob", "APPROVED", T + MIN, 3),
            review("bob", "CHANGES_REQUESTED", T + 3 * MIN, 4),  # withdraws bob's approval
            review("carol", "DISMISSED", T + MIN, 5),
            review("dave", "PENDING", None, 6),  # type: ignore[arg-type]
        ],
        [
            comment("erin", "/budget-gate approve for Q4", T + 5 * MIN, 7),
            comment("frank", "looks fine", T + 4 * MIN, 8),
        ],
    )
    assert [(c.via, c.login, c.key) for c in found] == [
        (Via.REVIEW, "alice", "review-1"),
        (Via.COMMENT, "erin", "comment-7"),
    ]
    assert (found[1].reason, found[1].source, found[0].source) == (
        "for Q4",
        Source.GITHUB_COMMENT,
        Source.GITHUB_REVIEW,
    )
    assert found[0].describe() == "the review by alice on 2026-11-29 12:01 UTC"
    assert found[1].commit_id is None  # no binding known: the comment approves nothing yet


def test_a_comment_approves_the_commit_its_binding_names() -> None:
    found = candidates([], [comment("erin", "/budget-gate approve", T, 7)], {"comment-7": "e" * 40})
    assert [(c.key, c.commit_id) for c in found] == [("comment-7", "e" * 40)]


def _candidate(
    at: dt.datetime, commit: str | None = None, edited: bool = False, via: Via = Via.REVIEW
) -> Candidate:
    return Candidate(via, 1, "alice", False, at, commit_id=commit, edited=edited)


@pytest.mark.parametrize(
    ("candidate", "refusal"),
    [
        (_candidate(T + MIN, "d" * 40), None),
        (_candidate(T + MIN, "c" * 40, via=Via.COMMENT), None),  # bound to the last change
        # dates order nothing: an approval of the head counts whatever the commit says
        (_candidate(T - 60 * MIN, "d" * 40), None),
        (_candidate(T + MIN, via=Via.COMMENT), "the commit it approved is unknown"),
        # dated after the change, but given on an older commit: commit dates can be set back
        (_candidate(T + MIN, "b" * 40), "it reviewed commit bbbbbbb, from before"),
        (_candidate(T + MIN, "b" * 40, via=Via.COMMENT), "it approved commit bbbbbbb, from"),
        (_candidate(T + MIN, edited=True), "the comment was edited after it was posted"),
    ],
)
def test_timing(candidate: Candidate, refusal: str | None) -> None:
    found = timing_refusal(candidate, CHANGE)
    assert found == refusal if refusal is None else found is not None and refusal in found


@pytest.mark.parametrize(
    ("login", "bot", "allow", "refusal"),
    [
        ("alice", False, False, None),
        ("codertocat", False, False, "codertocat opened the pull request"),  # logins ignore case
        ("Codertocat", False, True, None),
        ("bob", False, False, "bob owns the spec"),
        ("bob", False, True, None),
        ("renovate[bot]", True, True, "renovate[bot] is a bot"),
    ],
)
def test_identity(login: str, bot: bool, allow: bool, refusal: str | None) -> None:
    candidate = Candidate(Via.COMMENT, 1, login, bot, T)
    approvers = Approvers(users=[login], allow_self_approval=allow)
    found = identity_refusal(candidate, approvers, "Codertocat", "bob")
    assert found == refusal if refusal is None else found is not None and found.startswith(refusal)


def test_authority_by_name_team_or_permission() -> None:
    assert listed("alice", APPROVERS) and not listed("alicia", APPROVERS)
    assert access_refusal("x", APPROVERS, Access(teams=("ml-platform",))) is None
    assert access_refusal("x", APPROVERS, Access(role="admin")) is None
    assert access_refusal("x", APPROVERS, Access(role="maintain")) is None
    refusal = access_refusal("x", APPROVERS, Access(role="write"))
    assert refusal == (
        "x is not an approver: not in approval.approvers.users (Alice); not an active member "
        "of ml-platform; has write permission where the policy accepts maintain or more"
    )
    unreadable = access_refusal("x", APPROVERS, Access(unreadable=("ml-platform",)))
    assert unreadable is not None
    assert "membership of ml-platform could not be read (the token needs read:org)" in unreadable
    assert "has no readable permission" in unreadable
    no_permission = Approvers(users=["alice"])
    assert access_refusal("x", no_permission, Access(role="admin")) == (
        "x is not an approver: not in approval.approvers.users (alice)"
    )
    assert "has no access" in (access_refusal("x", APPROVERS, Access(role="none")) or "")


@pytest.mark.parametrize(
    ("role", "needed", "ok"),
    [
        ("admin", "maintain", True),
        ("maintain", "maintain", True),
        ("write", "maintain", False),
        ("triage", "write", False),
        ("custom-role", "write", False),
        ("none", "write", False),
    ],
)
def test_roles_rank(role: str, needed: str, ok: bool) -> None:
    assert at_least(role, needed) is ok


def test_teams_and_who_may_approve() -> None:
    assert team_ref("ml-platform", "acme") == ("acme", "ml-platform")
    assert team_ref("other-org/leads", "acme") == ("other-org", "leads")
    assert APPROVERS.describe() == (
        "users Alice; members of ml-platform; anyone with maintain permission or more"
    )
    assert Approvers().describe() == "nobody (the policy lists no approvers)"


@pytest.mark.parametrize("via", [Via.REVIEW, Via.COMMENT])
def test_an_approval_given_before_the_base_was_edited_does_not_count(via: Via) -> None:
    """GitHub dates the base's edit to the second; an approval of that same second may have
    seen the old diff, so it must come after (a second or more)."""
    moved = dataclasses.replace(CHANGE, base_moved_at=T + 10 * MIN)
    for at, counts in ((T + 5 * MIN, False), (T + 10 * MIN, False), (T + 10 * MIN + SEC, True)):
        candidate = Candidate(via, 1, "alice", False, at, commit_id="d" * 40)
        refusal = timing_refusal(candidate, moved)
        assert (refusal is None) is counts
        assert counts or "before the pull request's base was changed on 2026-11-29 12:10" in (
            refusal or ""
        )
        assert timing_refusal(candidate, CHANGE) is None  # never edited: counts


def test_the_ledger_copy_of_an_approval_from_before_the_base_edit_lapses() -> None:
    copy = LedgerRecord(
        kind=RecordKind.APPROVAL, spec="experiments/a.yaml", fingerprint="f" * 64,
        experiment="a", recorded_at=T + 2 * MIN, currency="USD", by="alice",
        source=Source.GITHUB_REVIEW,
        pr_number=7, event_at=T + MIN, event_id="review-1",
    )  # fmt: skip
    shown = frozenset({"review-1"})
    assert withdrawn(copy, 7, shown) is None
    assert withdrawn(copy, 7, shown, T) is None  # edited before the review
    why = withdrawn(copy, 7, shown, T + MIN) or ""
    assert why.startswith("the approval by alice recorded from GitHub (review-1) no longer")
    assert withdrawn(copy, 8, shown, T + MIN) is None  # another pull request's edit
    local = dataclasses.replace(copy, source=Source.LOCAL)
    assert withdrawn(local, 7, shown, T + MIN) is None  # approved by name, not by the diff
