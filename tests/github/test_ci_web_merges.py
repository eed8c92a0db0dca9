"""A merge GitHub commits (``web-flow``) is no one's only when it merges the base.

The red team's story: Codertocat's pull request has a 16-trial grid; alice, a listed approver
with push access, branches off its head, makes it 64 trials and merges her side branch into
the pull request's branch on GitHub (a pull request into it merged with the button, the
merges API, the conflict editor). GitHub commits that merge as ``web-flow`` with alice as
its author, just as it does "Update branch". Only a merge whose other parents are on the
base's first-parent line is GitHub's own; any other is its author's, so alice's approval of
her own 64 trials must not count.
"""

from __future__ import annotations

import datetime as dt

import pytest

from gate.ci.contributors import contributor_refusal, made_by
from gate.ci.history import SpecHistory
from gate.ci.model import CommitInfo, PullInfo
from gate.ledger.approvers import Approvers
from tests.github.ci_kit import BASE, NUMBER, SPEC, PullRequestStory, fresh, grid_spec

HOUR = dt.timedelta(hours=1)
PENDING = ("pending", "approval required · worst case 580.27 USD")
APPROVED_BY = ("success", "approved by {} · worst case 580.27 USD")
NOT_ALLOWED = "and the policy does not allow self-approval"


def _opened(story: PullRequestStory, warmups: int) -> None:
    """Codertocat's pull request with a grid of 16 × ``warmups`` trials, checked once."""
    story.change(SPEC, grid_spec(warmups), at=fresh() - 4 * HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code in (0, 2), ran.stderr


def _side_branch(story: PullRequestStory, author: str, warmups: int) -> str:
    """A commit by ``author`` off the pull request's head that makes the grid costlier."""
    side = story.repo.add_commit(
        date=fresh() - 3 * HOUR, files=[SPEC], author=author, parents=[story.head]
    ).sha
    story.repo.contents[side] = dict(story.repo.files_at(story.head))
    story.repo.put_file(SPEC, grid_spec(warmups), ref=side)
    return side


def _merged_on_github(story: PullRequestStory, by: str, other: str, text: str) -> str:
    """``other`` merged into the pull request's branch on GitHub by ``by``: web-flow commits."""
    merged = story.push(
        {SPEC: text}, at=fresh() - HOUR, author=by, committer="web-flow", merging=other
    )
    ran = story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert ran.code in (0, 2), ran.stderr
    return merged


def _review(story: PullRequestStory, login: str) -> None:
    ran = story.run("pull_request_review", story.review_event(login, at=fresh()))
    assert ran.code in (0, 2), ran.stderr


def test_an_approver_who_merges_her_costly_side_branch_on_github_cannot_approve_it(
    story: PullRequestStory,
) -> None:
    _opened(story, 1)
    assert story.status()[0] == "success"
    side = _side_branch(story, "alice", 4)
    merged = _merged_on_github(story, "alice", side, grid_spec(4))
    assert story.status() == PENDING
    _review(story, "alice")
    assert story.status() == PENDING
    comment = story.bot_comments()[0].replace("\n", " ")
    assert f"alice authored {merged[:7]}, which changed {SPEC}, {NOT_ALLOWED}" in comment
    _review(story, "carol")  # who did not make the change still approves it
    assert story.status() == (APPROVED_BY[0], APPROVED_BY[1].format("carol"))


def test_update_branch_by_the_approver_still_lets_her_approve(story: PullRequestStory) -> None:
    """The base moved on (its tip changed the spec too) and alice pressed "Update branch"."""
    _opened(story, 4)  # Codertocat's 64 trials
    assert story.status() == PENDING
    pull = story.repo.pull(NUMBER)
    main = story.repo.add_commit(
        date=fresh() - 2 * HOUR, files=[SPEC], author="bob", parents=[BASE], branch=pull.base_ref
    ).sha
    story.repo.contents[main] = dict(story.repo.files_at(BASE))
    pull.base_sha = main  # GitHub names the base's tip once the pull request's head moves
    merged = _merged_on_github(story, "alice", main, grid_spec(4) + "# from main\n")
    assert SPEC in [f.filename for f in story.repo.commits[merged].files]
    _review(story, "alice")
    assert story.status() == (APPROVED_BY[0], APPROVED_BY[1].format("alice"))


def test_a_side_branch_the_author_merged_on_github_is_the_authors_not_alices(
    story: PullRequestStory,
) -> None:
    """Codertocat merges his own costlier side branch: alice made none of it."""
    _opened(story, 1)
    side = _side_branch(story, "Codertocat", 4)
    _merged_on_github(story, "Codertocat", side, grid_spec(4))
    assert story.status() == PENDING
    _review(story, "alice")
    assert story.status() == (APPROVED_BY[0], APPROVED_BY[1].format("alice"))


AT = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
PATH = "experiments/x.yaml"


def _merge(author: str | None, committer: str | None, *, base_merge: bool) -> CommitInfo:
    parents = ("b" * 40, "c" * 40)
    return CommitInfo("a" * 40, AT, frozenset({PATH}), parents, True, author, committer, base_merge)


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        (_merge("alice", "web-flow", base_merge=True), ()),  # "Update branch": GitHub's own
        (_merge(None, "Web-Flow", base_merge=True), ()),
        (_merge("alice", "web-flow", base_merge=False), (("authored", "alice"),)),
        (_merge(None, "web-flow", base_merge=False), None),  # may be anyone's: fail closed
        (
            _merge("alice", "alice", base_merge=True),  # merged on her machine: she chose
            (("authored", "alice"), ("committed", "alice")),
        ),
    ],
)
def test_only_githubs_merge_of_the_base_is_no_ones(made: CommitInfo, expected: object) -> None:
    assert made_by(made) == expected


class _Graph:
    """Commits by name (padded to 40 characters), read one at a time as the facade does."""

    def __init__(self, *commits: tuple[str, tuple[str, ...], str, str, bool]) -> None:
        self.commits = {
            _sha(name): CommitInfo(
                _sha(name),
                AT,
                frozenset({PATH} if changes else ()),
                tuple(_sha(p) for p in parents),
                True,
                author,
                committer,
            )
            for name, parents, author, committer, changes in commits
        }

    def commit(self, sha: str) -> CommitInfo:
        return self.commits[sha]

    def base_moved_at(self, number: int) -> None:
        return None


def _sha(name: str) -> str:
    return name.ljust(40, "0")


def test_the_walk_marks_only_a_merge_of_the_base_lines_commits_a_base_merge() -> None:
    """main: a0 → a1 → a2 (tip). The pull request: b1 on a0 (Codertocat's spec), m1 merges
    a2 in ("Update branch" by alice), s1 is alice's costlier side branch off m1, and m2
    merges it (GitHub's button, pressed by alice): m1 is GitHub's, m2 is alice's."""
    graph = _Graph(
        ("a0", (), "dave", "dave", False),
        ("a1", ("a0",), "dave", "dave", False),
        ("a2", ("a1",), "dave", "dave", True),
        ("b1", ("a0",), "Codertocat", "Codertocat", True),
        ("m1", ("b1", "a2"), "alice", "web-flow", True),
        ("s1", ("m1",), "alice", "alice", True),
        ("m2", ("m1", "s1"), "alice", "web-flow", True),
    )
    pull = PullInfo(1, "Codertocat", "open", _sha("m2"), _sha("a2"), "main", commits=4)
    change = SpecHistory(graph, pull, pull.head_sha).last_change(PATH)
    assert [(c.sha, c.base_merge) for c in change.changes] == [
        (_sha("m2"), False),
        (_sha("m1"), True),
        (_sha("b1"), False),
    ]
    approvers = Approvers(users=["alice", "bob"])
    refusal = contributor_refusal("alice", approvers, PATH, change)
    assert refusal == f"alice authored {_sha('m2')[:7]}, which changed {PATH}, {NOT_ALLOWED}"
    assert contributor_refusal("bob", approvers, PATH, change) is None
