"""Red-team: a comment that plainly names the reviewed commit, but not in the exact form the
parser knows (a sentence's full stop after it, a commit link, a non-breaking space), is read
as an *unnamed* comment and bound to whatever the head is when its run gets to it.

Story: alice reviews H1 (64 trials) and comments ``/budget-gate approve <H1>. reviewed``
(or pastes the commit's link). The author pushes a 128-trial grid in the moments before the
comment's run: the comment is bound to the costly head and the status turns green, though
alice named H1. Expected (safe): a first word that holds a full SHA approves that commit
or nothing; never the head by default.
"""

from __future__ import annotations

import datetime as dt

import pytest

from tests.github.ci_kit import REPO, SPEC, T0, PullRequestStory, fresh, grid_spec

HOUR = dt.timedelta(hours=1)


@pytest.mark.parametrize(
    "form",
    [
        "{sha}. reviewed",  # a sentence
        "{sha}; reviewed",
        "https://github.com/" + REPO + "/commit/{sha} reviewed",  # GitHub's commit link
        "{sha}\u00a0reviewed",  # a non-breaking space, as copied from a web page
        "[{sha}] reviewed",
        "lgtm at {sha}",  # named, but not first
    ],
)
def test_a_comment_that_names_its_commit_loosely_never_approves_a_later_push(
    story: PullRequestStory, form: str
) -> None:
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    assert story.run("pull_request.opened", story.pull_request_event()).code == 0
    reviewed = story.head
    body = "/budget-gate approve " + form.format(sha=reviewed)
    event = story.comment_event("alice", body, at=fresh())
    story.push({SPEC: grid_spec(8)}, at=fresh())  # between the comment and its run
    ran = story.run("issue_comment", event)
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "pending", (
        f"alice named {reviewed[:12]} (64 trials); the 128-trial push {story.head[:12]} "
        f"was approved: {story.status()}"
    )
