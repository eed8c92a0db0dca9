"""No one approves a spec change they made: the red team's self-approval by push, closed.

Codertocat opens a pull request with a 16-trial grid (it passes); alice, a listed approver,
pushes a commit that makes it 64 trials and then approves the pull request. GitHub names
Codertocat as the pull request's author, but alice wrote the costly change, so her approval
must not count unless the policy allows self-approval. Who wrote a commit comes from GitHub's
commits API (``author.login``, ``committer.login``); GitHub's own merges of the base into the
pull request (committed by ``web-flow``) make no one a contributor.
"""

from __future__ import annotations

import datetime as dt

import pytest

from tests.github.ci_kit import BASE, NUMBER, POLICY, SPEC, PullRequestStory, fresh, grid_spec

HOUR = dt.timedelta(hours=1)
PENDING = ("pending", "approval required · worst case 580.27 USD")
APPROVED_BY = "approved by {} · worst case 580.27 USD"


def _alice_makes_it_64_trials(story: PullRequestStory, **who: object) -> str:
    """The red team's pull request: 16 trials by Codertocat, then alice's push to 64."""
    story.change(SPEC, grid_spec(1), at=fresh() - 3 * HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "success"
    pushed = story.push({SPEC: grid_spec(4)}, at=fresh() - 2 * HOUR, **{"author": "alice", **who})
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert story.status() == PENDING
    return pushed


def _allow_self_approval(story: PullRequestStory) -> None:
    policy = POLICY.replace(
        "permission: maintain", "permission: maintain\n    allow_self_approval: true"
    )
    story.repo.put_file("policies/default.yaml", policy, ref=BASE)


def _review(story: PullRequestStory, login: str) -> None:
    ran = story.run("pull_request_review", story.review_event(login, at=fresh()))
    assert ran.code in (0, 2), ran.stderr


def test_the_approver_who_pushed_the_costly_change_cannot_approve_it(
    story: PullRequestStory,
) -> None:
    pushed = _alice_makes_it_64_trials(story)
    _review(story, "alice")
    assert story.status() == PENDING
    assert "budget-approval-required" in story.labels
    (comment,) = story.bot_comments()
    assert (
        f"alice authored {pushed[:7]}, which changed {SPEC}, and the policy does not allow "
        "self-approval" in comment.replace("\n", " ")
    )


def test_a_commit_alice_only_committed_still_makes_it_hers(story: PullRequestStory) -> None:
    """A rebase or cherry-pick keeps the author and makes the one who ran it the committer."""
    pushed = _alice_makes_it_64_trials(story, author="Codertocat", committer="alice")
    _review(story, "alice")
    assert story.status() == PENDING
    assert f"alice committed {pushed[:7]}, which changed {SPEC}" in story.bot_comments()[0]


def test_an_approver_who_did_not_push_still_approves(story: PullRequestStory) -> None:
    _alice_makes_it_64_trials(story)
    _review(story, "carol")  # a member of Octocoders/budget-approvers
    assert story.status() == ("success", APPROVED_BY.format("carol"))


def test_allow_self_approval_lets_the_pusher_approve(story: PullRequestStory) -> None:
    _allow_self_approval(story)
    _alice_makes_it_64_trials(story)
    _review(story, "alice")
    assert story.status() == ("success", APPROVED_BY.format("alice"))


def test_a_push_that_leaves_the_spec_alone_makes_no_one_its_contributor(
    story: PullRequestStory,
) -> None:
    story.change(SPEC, grid_spec(4), at=fresh() - 3 * HOUR)  # by Codertocat
    story.run("pull_request.opened", story.pull_request_event())
    story.push({"README.md": "typo\n"}, at=fresh() - HOUR, author="alice")
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    _review(story, "alice")
    assert story.status() == ("success", APPROVED_BY.format("alice"))


def test_an_earlier_change_counts_not_only_the_last(story: PullRequestStory) -> None:
    """alice's 64 trials stay hers after Codertocat's later edit of the same spec."""
    pushed = _alice_makes_it_64_trials(story)
    story.push({SPEC: grid_spec(4) + "# tidied\n"}, at=fresh() - HOUR, author="Codertocat")
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    _review(story, "alice")
    assert story.status() == PENDING
    assert f"alice authored {pushed[:7]}" in story.bot_comments()[0]


@pytest.mark.parametrize("committer", ["web-flow", "alice"])
def test_githubs_merge_of_the_base_makes_no_one_a_contributor(
    story: PullRequestStory, committer: str
) -> None:
    """ "Update branch": authored by whoever clicked, committed by web-flow, base as 2nd parent.

    The base changed the spec too, so the merge's diff (against its first parent) lists it.
    The same merge made on alice's machine (committed by alice) is hers: she chose what it
    holds, conflict resolution included. The base moved on to ``main`` (GitHub's pull request
    then names it as its base): only a merge of the base's own line is GitHub's.
    """
    story.change(SPEC, grid_spec(4), at=fresh() - 3 * HOUR)  # Codertocat's 64 trials
    story.run("pull_request.opened", story.pull_request_event())
    pull = story.repo.pull(NUMBER)
    main = story.repo.add_commit(
        date=fresh() - 2 * HOUR, files=[SPEC], author="bob", parents=[BASE], branch=pull.base_ref
    ).sha
    story.repo.contents[main] = dict(story.repo.files_at(BASE))
    pull.base_sha = main
    merged = story.push(
        {SPEC: grid_spec(4) + "# from main\n"},
        at=fresh() - HOUR,
        author="alice",
        committer=committer,
        merging=main,
    )
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    _review(story, "alice")
    if committer == "web-flow":
        assert story.status() == ("success", APPROVED_BY.format("alice"))
    else:
        assert story.status() == PENDING
        assert f"alice authored {merged[:7]}, which changed {SPEC}" in story.bot_comments()[0]


def test_a_change_by_no_known_account_blocks_every_approval_on_github(
    story: PullRequestStory,
) -> None:
    """Its emails link to no account, so it may be any approver's own (fail closed)."""
    pushed = _alice_makes_it_64_trials(story, linked=False)
    _review(story, "carol")
    assert story.status() == PENDING
    comment = story.bot_comments()[0].replace("\n", " ")
    assert f"{pushed[:7]}, which changed {SPEC}, names no GitHub account" in comment
    assert story.repo.pull(NUMBER).head_sha == pushed
