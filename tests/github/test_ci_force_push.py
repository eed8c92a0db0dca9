"""A force-push that rewrites a commit an approval was bound to says so (found by a red team).

Story: the spec changes at H1 (64 trials); a README commit H2 on top; alice comments
``/budget-gate approve <H2> ok`` (or unnamed, bound to H2). The author amends the README
commit and force-pushes H2' (parent H1). H2 is no longer in the pull request: the approval
no longer counts without a ledger (with one, its record of the spec version still does),
and the reason said "from before the spec's last change", which sent the approver looking
for a change that was never made. It says now that the commit left the history.
"""

from __future__ import annotations

import datetime as dt

import pytest

from tests.github.ci_kit import NUMBER, SPEC, T0, PullRequestStory, fresh, grid_spec

HOUR = dt.timedelta(hours=1)


@pytest.mark.parametrize("named", [True, False])
def test_a_force_push_over_an_approved_commit_says_the_commit_left_the_history(
    story: PullRequestStory, named: bool
) -> None:
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    assert story.run("pull_request.opened", story.pull_request_event()).code == 0
    h1 = story.head
    story.push({"README.md": "v1\n"}, at=T0 + 2 * HOUR)
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    h2 = story.head
    body = f"/budget-gate approve {h2} ok" if named else "/budget-gate approve ok"
    story.run("issue_comment", story.comment_event("alice", body, at=fresh()))
    assert story.status() == ("success", "approved by alice · worst case 580.27 USD")
    story.repo.pull(NUMBER).head_sha = h1  # git commit --amend; git push --force
    story.push({"README.md": "v1, typo fixed\n"}, at=fresh())
    ran = story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert ran.code == 0, ran.stderr
    said = " ".join(story.bot_comments()[0].split())
    assert story.status()[0] == "pending"
    assert (
        f"it approved commit {h2[:7]}, which is not in the pull request's history now "
        "(pushed over, or another branch's): approve the head"
    ) in said
