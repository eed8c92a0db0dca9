"""Who made a spec's change on a pull request (gate.ci.contributors), as plain values."""

from __future__ import annotations

import datetime as dt

import pytest

from gate.ci.approvals import SpecChange
from gate.ci.contributors import contributor_refusal, made_by
from gate.ci.model import CommitInfo
from gate.ledger.approvers import Approvers

AT = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
PATH = "experiments/x.yaml"
APPROVERS = Approvers(users=["alice", "bob"])


def commit(author: str | None, committer: str | None, parents: int = 1) -> CommitInfo:
    sha = f"{len(str(author)) * 7 + parents:x}".rjust(40, "a")
    return CommitInfo(
        sha, AT, frozenset({PATH}), tuple("b" * 40 for _ in range(parents)), True, author, committer
    )


def change(*commits: CommitInfo, complete: bool = True) -> SpecChange:
    head = commits[0] if commits else commit("x", "x")
    return SpecChange(head.sha, AT, frozenset({head.sha}), commits, complete)


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        (commit("alice", "alice"), (("authored", "alice"), ("committed", "alice"))),
        (commit("alice", "web-flow"), (("authored", "alice"),)),  # a web edit is its author's
        (commit("alice", "Web-Flow", parents=2), ()),  # GitHub merged the base in
        (commit("alice", "alice", parents=2), (("authored", "alice"), ("committed", "alice"))),
        (commit(None, "alice"), None),
        (commit("alice", None), None),
    ],
)
def test_who_answers_for_a_commit(made: CommitInfo, expected: object) -> None:
    assert made_by(made) == expected


def test_the_newest_commit_naming_the_approver_is_the_reason() -> None:
    theirs = commit("Codertocat", "ALICE")
    refusal = contributor_refusal("alice", APPROVERS, PATH, change(theirs, commit(None, None)))
    assert refusal == (
        f"alice committed {theirs.sha[:7]}, which changed {PATH}, and the policy does not "
        "allow self-approval"
    )
    assert contributor_refusal("bob", APPROVERS, PATH, change(theirs)) is None


def test_a_commit_of_no_known_account_refuses_everyone_unless_self_approval_is_allowed() -> None:
    unknown = change(commit("Codertocat", "Codertocat"), commit(None, None))
    refusal = contributor_refusal("bob", APPROVERS, PATH, unknown)
    assert refusal is not None and "names no GitHub account" in refusal and "bob's own" in refusal
    allowed = Approvers(users=["bob"], allow_self_approval=True)
    assert contributor_refusal("bob", allowed, PATH, unknown) is None


def test_a_history_not_read_to_its_start_refuses() -> None:
    refusal = contributor_refusal("bob", APPROVERS, PATH, change(complete=False))
    assert refusal is not None and "more commits than budget-gate reads" in refusal
    assert contributor_refusal("bob", APPROVERS, PATH, change()) is None
