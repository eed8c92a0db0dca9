"""Red-team: the sticky's binding lines are rewritten from this run's judging only; a run in
which no spec needs an approval judges nothing and rewrites the sticky with no lines, so
every comment's binding is dropped (no ledger: nothing else keeps it).

Story: alice approves the 64-trial grid by comment (bound, kept in the sticky). The
platform team raises the approval trigger on the base branch (trials_over: 100); the next
run (a README push) passes the spec and rewrites the sticky without alice's line. The
trigger goes back to 32: the spec is unchanged and alice's comment still stands, yet it is
now "the commit it approved is unknown" and the pull request waits for a new approval.

Expected (safe): bindings of standing comments are carried through runs that judge nothing.
"""

from __future__ import annotations

import datetime as dt

from tests.github.ci_kit import BASE, POLICY, SPEC, T0, PullRequestStory, fresh, grid_spec

HOUR = dt.timedelta(hours=1)


def test_a_run_that_needs_no_approval_keeps_the_comment_bindings(story: PullRequestStory) -> None:
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    assert story.run("pull_request.opened", story.pull_request_event()).code == 0
    story.run("issue_comment", story.comment_event("alice", "/budget-gate approve ok", at=fresh()))
    assert story.status() == ("success", "approved by alice · worst case 580.27 USD")
    story.repo.put_file(
        "policies/default.yaml", POLICY.replace("trials_over: 32", "trials_over: 100"), ref=BASE
    )
    story.push({"README.md": "a\n"}, at=fresh())
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert story.status()[0] == "success"
    assert "budget-gate:bound:comment-" in story.bot_comments()[0], "the binding line was dropped"
    story.repo.put_file("policies/default.yaml", POLICY, ref=BASE)
    story.run("pull_request.labeled", story.pull_request_event("labeled"))
    assert story.status() == ("success", "approved by alice · worst case 580.27 USD")
