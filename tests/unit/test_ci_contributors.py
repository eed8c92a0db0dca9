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
        # a web-flow merge the walk did not prove the base's (base_merge) is its author's
        (commit("alice", "Web-Flow", parents=2), (("authored", "alice"),)),
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


class _Graph:
    """Commits by SHA, as the GitHub facade reads them one at a time."""

    def __init__(self, *commits: tuple[str, tuple[str, ...], str, bool]) -> None:
        self.commits = {
            sha.ljust(40, "0"): CommitInfo(
                sha.ljust(40, "0"),
                AT,
                frozenset({PATH} if changes else ()),
                tuple(p.ljust(40, "0") for p in parents),
                True,
                who,
                who,
            )
            for sha, parents, who, changes in commits
        }
        self.read: list[str] = []

    def commit(self, sha: str) -> CommitInfo:
        self.read.append(sha)
        return self.commits[sha]

    def base_moved_at(self, number: int) -> None:
        return None  # the base was never edited


def test_a_walk_past_a_merge_stops_where_the_pull_request_left_the_base() -> None:
    """main: a0 (alice made the spec) → a1 → a2 (tip); the pull request: b1 (bob's change) on
    a0, carol's c1 merged in by bob (m). GitHub counts 4 commits; the first-parent line
    m → b1 → a0 → ... must stop at a0, which is the base's, not blame alice for it."""
    from gate.ci.history import SpecHistory
    from gate.ci.model import PullInfo

    graph = _Graph(
        ("a0", (), "alice", True),
        ("a1", ("a0",), "dave", False),
        ("a2", ("a1",), "dave", False),
        ("b1", ("a0",), "bob", True),
        ("c1", ("a0",), "carol", False),
        ("c2", ("c1",), "carol", False),
        ("m", ("b1", "c2"), "bob", False),
    )
    pull = PullInfo(1, "bob", "open", "m".ljust(40, "0"), "a2".ljust(40, "0"), "main", commits=4)
    change = SpecHistory(graph, pull, pull.head_sha).last_change(PATH)
    assert [c.author for c in change.changes] == ["bob"] and change.complete
    assert contributor_refusal("alice", APPROVERS, PATH, change) is None
    assert contributor_refusal("bob", APPROVERS, PATH, change) is not None
