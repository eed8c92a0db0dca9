"""The whole story of an experiment pull request, through the real ``budget-gate ci``."""

from __future__ import annotations

import datetime as dt

from tests.github.ci_kit import SPEC, T0, PullRequestStory, grid_spec


def test_open_approve_then_push_more_trials(story: PullRequestStory) -> None:
    hour = dt.timedelta(hours=1)
    # 1. A PR opens with a 64-trial grid: comment, pending status, label, review request.
    story.change(SPEC, grid_spec(4), at=T0 + hour)
    first = story.head
    opened = story.run("pull_request.opened", story.pull_request_event())
    assert opened.code == 0, opened.stderr  # fail-on: error; the status carries the wait
    assert story.status() == ("pending", "approval required · worst case 580.27 USD")
    (comment,) = story.bot_comments()
    assert "needs approval" in comment and "64" in comment
    assert story.labels == ["bug", "budget-approval-required"]
    assert "alice" in story.requested[0]
    assert opened.outputs["needs-approval"] == "true"
    assert "::warning file=experiments/llm-grid.yaml" in opened.stdout
    assert "needs approval" in opened.summary

    # 2. An authorized reviewer approves: status green, comment updated.
    approved = story.run("pull_request_review", story.review_event("alice", at=T0 + 2 * hour))
    assert approved.code == 0, approved.stderr
    assert story.status() == ("success", "approved by alice · worst case 580.27 USD")
    (comment,) = story.bot_comments()
    assert "**Approval:** alice (github-review" in comment
    assert "budget-approval-required" not in story.labels
    assert approved.outputs["verdict"] == "pass"

    # 3. More trials are pushed: the approval is stale, the status pending again.
    second = story.push({SPEC: grid_spec(8)}, at=T0 + 3 * hour)
    pushed = story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert pushed.code == 0, pushed.stderr
    assert story.status(second) == ("pending", "approval required · worst case 1,160.53 USD")
    assert story.status(first)[0] == "success"  # the old commit keeps its own status
    (comment,) = story.bot_comments()
    assert f"it reviewed commit {first[:7]}, from before the spec" in comment.replace("\n", " ")
    assert "budget-approval-required" in story.labels
