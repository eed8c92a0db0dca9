"""Security properties of ``budget-gate ci``, each shown against the fake GitHub.

Policies come from the base commit; self-approval, stale approvals and approvals by people who
are not approvers are refused; spec text cannot inject Markdown or HTML; the token never shows;
a read-only token (a fork's pull request) degrades to annotations and the job summary.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest

from tests.github.ci_kit import (
    BASE,
    HOSTILE_POLICY,
    NUMBER,
    POLICY,
    SPEC,
    T0,
    PullRequestStory,
    fresh,
    grid_spec,
)
from tests.reporters.test_markdown import OUR_TAGS, to_html

HOUR = dt.timedelta(hours=1)


def opened(story: PullRequestStory, spec: str = SPEC, text: str | None = None):
    story.change(spec, text or grid_spec(4), at=T0 + HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    return ran


def test_policies_changed_in_the_pull_request_are_not_used(story: PullRequestStory) -> None:
    # The PR loosens the policy in the same change, and the checkout's policies/ agree with it.
    story.change("policies/default.yaml", HOSTILE_POLICY, before=POLICY, at=T0 + HOUR)
    opened(story)
    assert story.status()[0] == "pending"
    assert "64 trials is over the approval trigger of 32" in story.bot_comments()[0]
    reads = [r for r in story.fake.requests_for("repos/get-content") if "polic" in r.path]
    # The head's policies are read only to validate them and show their impact, which the
    # comment keeps apart from the verdict.
    assert reads and {r.query["ref"][0] for r in reads} == {BASE, story.head}
    assert "### Policy change" in story.bot_comments()[0]
    # ... and the author, whom only the PR's policy would let self-approve, is still refused.
    story.run("pull_request_review", story.review_event("Codertocat", at=T0 + 2 * HOUR))
    assert story.status()[0] == "pending"


@pytest.mark.parametrize("allowed", [False, True])
def test_self_approval_is_refused_unless_the_policy_allows_it(
    story: PullRequestStory, allowed: bool
) -> None:
    if allowed:
        policy = POLICY.replace(
            "permission: maintain", "permission: maintain\n    allow_self_approval: true"
        )
        story.repo.put_file("policies/default.yaml", policy, ref=BASE)
    opened(story)
    # Codertocat opened the PR and owns the repository (admin): only the policy can stop them.
    story.run("pull_request_review", story.review_event("Codertocat", at=T0 + 2 * HOUR))
    if allowed:
        assert story.status()[0] == "success"
    else:
        assert story.status()[0] == "pending"
        assert (
            "Codertocat opened the pull request and the policy does not allow self-approval"
            in story.bot_comments()[0]
        )


def test_an_approval_of_a_commit_before_the_last_spec_change_is_refused(
    story: PullRequestStory,
) -> None:
    story.repo.add_review(
        NUMBER, "alice", "APPROVED", commit_id=BASE, submitted_at=T0 + 30 * dt.timedelta(minutes=1)
    )
    opened(story)  # the spec changes in a commit after the one alice reviewed
    assert story.status()[0] == "pending"
    assert (
        f"it reviewed commit {BASE[:7]}, from before the spec's last change"
        in (story.bot_comments()[0])
    )


@pytest.mark.parametrize(
    ("link", "shown"),
    [("../data/grid.txt", "data/grid.txt"), ("/etc/budget.yaml", "/etc/budget.yaml")],
)
def test_a_spec_that_is_a_symbolic_link_is_refused_not_followed(
    story: PullRequestStory, link: str, shown: str
) -> None:
    """GitHub answers a link to a file with the file; a push that changes only the target
    lists the target, so a review of the link's old target would approve its new one."""
    story.change("data/grid.txt", grid_spec(4), at=T0 + HOUR)
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    story.repo.put_link(SPEC, link, ref=story.head)
    ran = story.run("pull_request.opened", story.pull_request_event())
    state, _ = story.status()
    assert state == "failure", (state, ran.stderr)
    comment = story.bot_comments()[0]
    assert f"{SPEC}: a symbolic link (to {shown})" in comment
    assert "commit the file itself in place of the link" in comment
    story.run("pull_request_review", story.review_event("alice", at=T0 + 2 * HOUR))
    assert story.status()[0] == "failure"  # no review approves a spec nobody could read


PADDING = {f"assets/pad-{i:04d}.txt": "x\n" for i in range(3000)}
"""3,000 files: GitHub lists no more of a pull request or a commit (its REST docs)."""


def test_a_misnamed_team_policy_on_the_base_fails_as_it_does_locally(
    story: PullRequestStory,
) -> None:
    """``policies/nlp.yml`` is never read: CI refuses it, as ``check`` does on disk."""
    base = story.repo.pull(NUMBER).base_sha
    nlp = "apiVersion: budget-gate/v1\nkind: Policy\nlimits: {max_experiment_cost: 100}\n"
    story.repo.put_file("policies/nlp.yml", nlp, ref=base)
    story.change(SPEC, grid_spec(1), at=T0 + HOUR)  # team nlp: 145 USD, over nlp's 100
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 3
    assert "policies/nlp.yml: not read — a policy file is named <team>.yaml" in ran.stderr
    statuses = [
        s.state for s in story.repo.latest_statuses(story.head) if s.context == "budget-gate"
    ]
    assert "success" not in statuses


def test_a_team_policy_in_a_folder_of_the_base_fails_as_it_does_locally(
    story: PullRequestStory,
) -> None:
    """``policies/teams/nlp.yaml`` is never read (only files directly in ``policies/`` are):
    the team was judged by the default policy in silence; CI refuses it, as ``check`` does."""
    base = story.repo.pull(NUMBER).base_sha
    nlp = "apiVersion: budget-gate/v1\nkind: Policy\nlimits: {max_experiment_cost: 100}\n"
    story.repo.put_file("policies/teams/nlp.yaml", nlp, ref=base)
    story.repo.put_file("policies/tests/nlp-fixture.yaml", "a: 1\n", ref=base)  # fixtures: fine
    story.change(SPEC, grid_spec(1), at=T0 + HOUR)  # team nlp: 145 USD, over nlp's 100
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 3, ran.stderr
    assert "policies/teams/nlp.yaml: not read — only the files directly in policies" in ran.stderr
    assert "nlp-fixture" not in ran.stderr
    statuses = [
        s.state for s in story.repo.latest_statuses(story.head) if s.context == "budget-gate"
    ]
    assert "success" not in statuses


def test_a_spec_past_the_3000_files_github_lists_fails_closed(story: PullRequestStory) -> None:
    """The file list stops at 3,000: a spec among the rest would pass unjudged."""
    story.push(PADDING, at=T0 + HOUR)
    story.push({SPEC: grid_spec(4)}, at=T0 + 2 * HOUR)  # the 3,001st file: 64 trials
    ran = story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert ran.code == 3
    assert (
        f"pull request #{NUMBER} changes 3,001 files, but GitHub lists only 3,000 of them "
        "(3,000 at most): a spec among the rest would go unjudged — split the pull request"
    ) in ran.stderr
    statuses = [
        s.state for s in story.repo.latest_statuses(story.head) if s.context == "budget-gate"
    ]
    assert "success" not in statuses  # the job fails: nothing says the change is clear


def test_a_commit_past_the_3000_files_github_lists_is_taken_to_change_the_spec(
    story: PullRequestStory,
) -> None:
    """A review of the cheap commit must not approve a costlier spec hidden in a commit whose
    file list GitHub cut at 3,000 (the padding then removed, so the pull request's list is
    short again)."""
    opened(story)
    cheap = story.head
    story.run("pull_request_review", story.review_event("alice", at=T0 + 2 * HOUR))
    assert story.status()[0] == "success"
    story.push({**PADDING, SPEC: grid_spec(8)}, at=T0 + 3 * HOUR)  # the spec: file 3,001
    pull = story.repo.pull(NUMBER)
    pull.files = [f for f in pull.files if f.filename not in PADDING]  # as if removed again
    assert len(story.fake.repo(story.repo.full_name).commits[story.head].files) == 3001
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert story.status()[0] == "pending"
    assert f"it reviewed commit {cheap[:7]}, from before" in story.bot_comments()[0]


def test_a_review_of_an_older_commit_is_refused_even_if_commit_dates_are_set_back(
    story: PullRequestStory,
) -> None:
    opened(story)
    approved_head = story.head
    story.run("pull_request_review", story.review_event("alice", at=T0 + 3 * HOUR))
    assert story.status()[0] == "success"
    # A push whose commit claims an earlier date than the approval: the date would pass ...
    story.push({SPEC: grid_spec(8)}, at=T0 + 2 * HOUR)
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    # ... but the review was given on the commit before it.
    assert story.status()[0] == "pending"
    assert f"it reviewed commit {approved_head[:7]}, from before" in story.bot_comments()[0]


def test_a_comment_approval_by_a_non_member_is_refused_with_a_reply(
    story: PullRequestStory,
) -> None:
    opened(story)
    story.repo.set_permission("dave", "write")  # write is below the policy's maintain
    for login in ("mallory", "dave"):
        ran = story.run(
            "issue_comment",
            story.comment_event(login, "/budget-gate approve ship it", at=fresh()),
        )
        assert ran.code == 0, ran.stderr
        assert story.status()[0] == "pending"
        reply = story.comments()[-1]
        assert reply.startswith(f"@{login} your `/budget-gate approve` was not accepted:")
        assert f"{login} is not an approver: not in approval.approvers.users (alice)" in reply
    assert "has write permission where the policy accepts maintain or more" in reply
    assert "has no access to the repository" in story.comments()[-2]  # mallory's reply
    assert len(story.bot_comments()) == 3  # the report and two replies


@pytest.mark.parametrize(
    ("login", "setup"),
    [
        ("carol", lambda s: None),  # an active member of Octocoders/budget-approvers
        ("erin", lambda s: s.repo.set_permission("erin", "maintain")),
        ("alice", lambda s: None),  # listed by name
    ],
)
def test_members_maintainers_and_listed_users_may_approve_by_comment(
    story: PullRequestStory, login: str, setup
) -> None:
    setup(story)
    opened(story)
    ran = story.run(
        "issue_comment",
        story.comment_event(login, "/budget-gate approve Q4 launch", at=fresh()),
    )
    assert ran.code == 0, ran.stderr
    assert story.status() == ("success", f"approved by {login} · worst case 580.27 USD")
    assert f"**Approval:** {login} (github-comment, " in story.bot_comments()[0]
    assert "): Q4 launch — covers this version" in story.bot_comments()[0]
    assert len(story.comments()) == 2  # the report and the command; no reply


def test_a_pending_team_member_and_an_edited_comment_are_refused(story: PullRequestStory) -> None:
    story.fake.set_team_member("Octocoders", "budget-approvers", "pat", "pending")
    opened(story)
    story.run("issue_comment", story.comment_event("pat", "/budget-gate approve", at=fresh()))
    assert "not an active member of Octocoders/budget-approvers" in story.comments()[-1]
    edited = story.comment_event("alice", "/budget-gate approve", at=fresh())
    story.fake.seed_from_event(edited)  # as GitHub holds it: posted, then edited by someone
    story.repo.comments[edited["comment"]["id"]].updated_at = fresh() + HOUR
    story.run("issue_comment", edited)
    assert story.status()[0] == "pending"
    assert "the comment was edited after it was posted" in story.comments()[-1]


HOSTILE = "<img src=x onerror=alert(1)> @Octocoders/budget-approvers [x](javascript:alert(1)) |"


def test_markdown_and_html_in_spec_fields_are_escaped(story: PullRequestStory) -> None:
    text = (
        grid_spec(4, name="evil")
        .replace("name: evil", f"name: {HOSTILE!r}")
        .replace("owner: bob", f"owner: {HOSTILE!r}")
    )
    path = "experiments/<b>x</b>.yaml"
    ran = opened(story, path, text)
    story.run("issue_comment", story.comment_event("mallory", "/budget-gate approve", at=fresh()))
    for body in [*story.bot_comments(), ran.summary]:
        page = to_html(body)
        assert set(re.findall(r"<([a-z0-9]+)", page)) <= OUR_TAGS | {"code"}
        assert "javascript:" not in " ".join(re.findall(r'href="([^"]*)"', page))
        assert "@Octocoders" not in body  # mentions are broken with a zero-width space
    assert "&lt;img src=x onerror=alert(1)&gt;" in story.bot_comments()[0]
    assert "::warning file=experiments/<b>x</b>.yaml,line=21" in ran.stdout


def test_a_wrong_token_fails_as_a_backend_error_without_showing_it(story: PullRequestStory) -> None:
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    secret = "ghs_SecretThatMustNotLeak00000000000000"
    ran = story.run("pull_request.opened", story.pull_request_event(), GITHUB_TOKEN=secret)
    assert ran.code == 4
    assert "refused the token while reading pull request #2 (401)" in ran.stderr
    assert secret not in ran.stdout + ran.stderr + ran.summary


def test_a_read_only_token_falls_back_to_annotations_and_the_summary(
    story: PullRequestStory,
) -> None:
    story.fake.read_only = True  # what a fork's pull request gets
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr  # fail-on: error, and the spec only needs approval
    assert "::warning file=experiments/llm-grid.yaml,line=21,col=3" in ran.stdout
    assert "needs approval" in ran.summary
    warnings = [line for line in ran.stdout.splitlines() if line.startswith("::warning title=")]
    assert len(warnings) == 3  # comment, status, label; reviews are asked with the label
    assert all("GitHub refused the write" in w and "(403)" in w for w in warnings)
    assert story.comments() == [] and story.repo.statuses == []
    assert {r.status for r in story.fake.writes} == {403}
    assert ran.outputs["verdict"] == "approval-required"
    strict = story.run(
        "pull_request.opened", story.pull_request_event(), BUDGET_GATE_FAIL_ON="approval"
    )
    assert strict.code == 2
