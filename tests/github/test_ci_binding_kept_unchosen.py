"""Red-team: the sticky keeps the binding only of the approval *chosen* for a spec (the
latest that passes), not of every comment that passed every check in its own run.

Story: alice comments ``/budget-gate approve`` on the head (64 trials); before her run reads
the pull request, carol (an approver by team) submits an approving review of the same head.
alice's run binds her comment, finds it passes every check, but counts carol's newer
review, so alice's binding is dropped from the sticky. Then carol's review is dismissed
(branch protection's "dismiss stale approvals" on a README push, or carol changing her
mind): alice's comment now reads "the commit it approved is unknown" and the pull request
goes back to pending, though alice approved this very spec version and never withdrew.

Expected (safe): a comment that passed every check in its own run keeps its binding.
"""

from __future__ import annotations

import datetime as dt

from tests.github.ci_kit import NUMBER, SPEC, T0, PullRequestStory, grid_spec

HOUR = dt.timedelta(hours=1)


def test_a_comment_that_passed_in_its_own_run_outlives_a_newer_review_s_dismissal(
    story: PullRequestStory,
) -> None:
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    assert story.run("pull_request.opened", story.pull_request_event()).code == 0
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    alice = story.comment_event(
        "alice", "/budget-gate approve ok", at=now - dt.timedelta(seconds=90)
    )
    story.fake.seed_from_event(alice)
    # carol's review lands between alice's comment and alice's run
    story.fake.seed_from_event(story.review_event("carol", at=now - dt.timedelta(seconds=45)))
    ran = story.run("issue_comment", alice)
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "success"
    (review,) = story.repo.pull(NUMBER).reviews
    review.state = "DISMISSED"
    dismissed = story.review_event("carol", at=now, state="dismissed", id=review.id)
    again = story.run("pull_request_review", dismissed)
    assert again.code == 0, again.stderr
    said = " ".join(story.bot_comments()[0].split())
    assert story.status() == ("success", "approved by alice · worst case 580.27 USD"), (
        story.status(),
        said[said.find("does not count") - 200 : said.find("does not count") + 200],
    )
