"""The fake GitHub, driven by real PyGithub over loopback HTTP.

Why: the CI tests trust this fake, so it must behave like GitHub where budget-gate depends on it
(state, errors, permissions, URLs PyGithub follows) and speak exactly GitHub's published OpenAPI
description. The ``fake_github`` fixture fails any test whose requests — or the fake's responses —
break that description, so each test here also checks the fake's faithfulness.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import github
import pytest
from github import Github
from github.Repository import Repository

from tests.github.events import DELETE, event_names, load_event
from tests.github.fake_github import (
    DEFAULT_TOKEN,
    FORBIDDEN_FOR_INTEGRATION,
    FakeGitHub,
    handled_operations,
)
from tests.github.openapi_contract import operations

REPO = "Codertocat/Hello-World"
HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
BASE = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"


def raw(
    fake: FakeGitHub,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = DEFAULT_TOKEN,
    root: str | None = None,
) -> tuple[int, Any]:
    """One request with urllib (no PyGithub) below ``root`` (default: the API root)."""
    data = None if body is None else json.dumps(body).encode()
    url = (root or fake.base_url) + path
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as err:
        with err:
            return err.code, json.loads(err.read())


def test_every_operation_in_the_description_has_a_handler() -> None:
    ids = {op.operation_id for op in operations()}
    assert len(ids) == 36
    assert ids == handled_operations()


def test_repo_and_pull_request_come_from_the_event(github_client: Github) -> None:
    repo = github_client.get_repo(REPO)
    pull = repo.get_pull(2)
    assert (repo.default_branch, repo.private, repo.owner.login) == ("master", False, "Codertocat")
    assert (pull.user.login, pull.state, pull.title) == (
        "Codertocat",
        "open",
        "Update the README with new information.",
    )
    assert (pull.head.sha, pull.head.ref, pull.base.sha, pull.base.ref) == (
        HEAD,
        "changes",
        BASE,
        "master",
    )
    assert pull.head.repo.full_name == REPO
    assert [label.name for label in pull.labels] == ["bug"]
    assert [u.login for u in pull.requested_reviewers] == ["octocat"]
    assert pull.as_issue().pull_request is not None  # follows issue_url on the fake


def test_changed_files_with_status_and_patch(
    fake_github: FakeGitHub, github_client: Github
) -> None:
    repo = fake_github.repo(REPO)
    repo.change_file(2, "exp/new.yaml", after="a: 1\n")
    repo.change_file(2, "exp/old.yaml", before="a: 1\nb: 2\n", after="a: 1\nb: 3\n")
    repo.change_file(2, "exp/gone.yaml", before="x: 1\n")
    repo.change_file(2, "exp/moved.yaml", before="m: 1\n", after="m: 1\n", previous_path="m.yaml")
    files = list(github_client.get_repo(REPO).get_pull(2).get_files())
    assert [(f.filename, f.status) for f in files] == [
        ("exp/new.yaml", "added"),
        ("exp/old.yaml", "modified"),
        ("exp/gone.yaml", "removed"),
        ("exp/moved.yaml", "renamed"),
    ]
    assert files[1].patch == "@@ -1,2 +1,2 @@\n a: 1\n-b: 2\n+b: 3"
    assert (files[1].additions, files[1].deletions, files[3].previous_filename) == (1, 1, "m.yaml")


def file_at(repo: Repository, path: str, ref: str | None = None) -> bytes:
    """A file's decoded content via repos/get-content (PyGithub's ``ref`` omitted when None)."""
    found = repo.get_contents(path) if ref is None else repo.get_contents(path, ref=ref)
    assert not isinstance(found, list), f"{path} is a directory"
    return found.decoded_content


def test_contents_per_ref_base64(fake_github: FakeGitHub, github_client: Github) -> None:
    fake_github.repo(REPO).change_file(2, "policy.yaml", before="max: 1\n", after="max: 9\n")
    repo = github_client.get_repo(REPO)
    assert file_at(repo, "policy.yaml", ref="master") == b"max: 1\n"
    assert file_at(repo, "policy.yaml", ref=BASE) == b"max: 1\n"
    assert file_at(repo, "policy.yaml", ref=HEAD) == b"max: 9\n"
    assert file_at(repo, "policy.yaml") == b"max: 1\n"  # the default branch
    fake_github.repo(REPO).put_file("exp/a/b.yaml", "k: v\n", ref="changes")
    listing = repo.get_contents("exp", ref="changes")
    assert isinstance(listing, list)
    assert [(c.path, c.type) for c in listing] == [("exp/a", "dir")]
    assert file_at(repo, "exp/a/b.yaml", ref="changes") == b"k: v\n"
    with pytest.raises(github.UnknownObjectException):
        repo.get_contents("nope.yaml", ref="master")


def test_commit_date_and_files(fake_github: FakeGitHub, github_client: Github) -> None:
    fake_github.repo(REPO).add_commit(
        "a" * 40, date="2026-11-01T10:00:00Z", files=["exp/spec.yaml"], author="octocat"
    )
    commit = github_client.get_repo(REPO).get_commit("a" * 40)
    assert commit.commit.author.date.isoformat() == "2026-11-01T10:00:00+00:00"
    assert [f.filename for f in commit.files] == ["exp/spec.yaml"]
    assert commit.author.login == "octocat"
    with pytest.raises(github.GithubException) as err:
        github_client.get_repo(REPO).get_commit("b" * 40).sha  # noqa: B018
    assert err.value.status == 422


def test_commit_people_web_flow_and_unlinked_emails(
    fake_github: FakeGitHub, github_client: Github
) -> None:
    """A web edit is committed by web-flow; an email linked to no account gives null."""
    repo = fake_github.repo(REPO)
    repo.add_commit("c" * 40, files=["a.txt"], author="octocat", committer="web-flow")
    repo.add_commit("d" * 40, files=["a.txt"], author="octocat", linked=False)
    web = github_client.get_repo(REPO).get_commit("c" * 40)
    assert (web.author.login, web.committer.login) == ("octocat", "web-flow")
    assert web.commit.committer.email == "noreply@github.com"
    unlinked = github_client.get_repo(REPO).get_commit("d" * 40)
    assert (unlinked.author, unlinked.committer) == (None, None)
    assert unlinked.commit.author.name == "octocat"


def test_a_pull_request_counts_its_commits_not_the_bases(
    fake_github: FakeGitHub, github_client: Github
) -> None:
    repo = fake_github.repo(REPO)
    pull = repo.pull(2)
    assert github_client.get_repo(REPO).get_pull(2).commits == 1
    repo.add_commit("e" * 40, parents=[pull.base_sha])  # the base moves on
    repo.add_commit("f" * 40, parents=[pull.head_sha, "e" * 40])  # ... and is merged in
    pull.head_sha, pull.base_sha = "f" * 40, "e" * 40
    assert github_client.get_repo(REPO).get_pull(2).commits == 2  # the merge and the first


def test_comments_create_list_get_update_delete(
    fake_github: FakeGitHub, github_client: Github
) -> None:
    fake_github.repo(REPO).add_comment(2, "octocat", "/budget-gate approve")
    pull = github_client.get_repo(REPO).get_pull(2)
    mine = pull.create_issue_comment("budget report")
    assert (mine.user.login, mine.user.type, mine.body) == (
        "github-actions[bot]",
        "Bot",
        "budget report",
    )
    mine.edit("budget report v2")
    assert mine.body == "budget report v2"
    listed = list(pull.get_issue_comments())
    assert [(c.user.login, c.body) for c in listed] == [
        ("octocat", "/budget-gate approve"),
        ("github-actions[bot]", "budget report v2"),
    ]
    assert pull.get_issue_comment(mine.id).body == "budget report v2"
    assert listed[1].created_at <= listed[1].updated_at
    mine.delete()
    assert [c.body for c in fake_github.repo(REPO).comments_on(2)] == ["/budget-gate approve"]


def test_comment_listing_is_paginated(fake_github: FakeGitHub, github_client: Github) -> None:
    for i in range(35):
        fake_github.repo(REPO).add_comment(2, "octocat", f"c{i}")
    comments = list(github_client.get_repo(REPO).get_pull(2).get_issue_comments())
    assert [c.body for c in comments] == [f"c{i}" for i in range(35)]
    assert len(fake_github.requests_for("issues/list-comments")) == 2  # followed the Link header


def test_labels_add_set_remove(fake_github: FakeGitHub, github_client: Github) -> None:
    pull = github_client.get_repo(REPO).get_pull(2)
    pull.add_to_labels("budget:approved", "needs-review")
    assert [lb.name for lb in pull.get_labels()] == ["bug", "budget:approved", "needs-review"]
    pull.remove_from_labels("needs-review")
    with pytest.raises(github.GithubException) as err:
        pull.remove_from_labels("needs-review")
    # PyGithub raises UnknownObjectException only for the message "Not Found"
    assert not isinstance(err.value, github.UnknownObjectException)
    assert (err.value.status, err.value.data["message"]) == (404, "Label does not exist")
    pull.set_labels("only")
    assert fake_github.repo(REPO).issue(2).labels == ["only"]


def test_review_requests(fake_github: FakeGitHub, github_client: Github) -> None:
    fake_github.repo(REPO).set_permission("alice", "write")
    fake_github.add_team("Codertocat", "budget-approvers", members=["alice"])
    pull = github_client.get_repo(REPO).get_pull(2)
    pull.create_review_request(reviewers=["alice"], team_reviewers=["budget-approvers"])
    users, teams = pull.get_review_requests()
    assert [u.login for u in users] == ["octocat", "alice"]
    assert [t.slug for t in teams] == ["budget-approvers"]
    pull.delete_review_request(reviewers=["octocat"], team_reviewers=["budget-approvers"])
    assert fake_github.repo(REPO).pull(2).requested_users == ["alice"]
    assert fake_github.repo(REPO).pull(2).requested_teams == []
    for who in ("Codertocat", "stranger"):  # the author; not a collaborator
        with pytest.raises(github.GithubException) as err:
            pull.create_review_request(reviewers=[who])
        assert err.value.status == 422


def test_reviews_listed_in_rest_case(fake_github: FakeGitHub, github_client: Github) -> None:
    repo = fake_github.repo(REPO)
    repo.add_review(2, "alice", "approved", submitted_at="2026-11-02T09:00:00Z")
    repo.add_review(2, "bob", "CHANGES_REQUESTED", commit_id="c" * 40)
    reviews = list(github_client.get_repo(REPO).get_pull(2).get_reviews())
    assert [(r.user.login, r.state, r.commit_id) for r in reviews] == [
        ("alice", "APPROVED", HEAD),
        ("bob", "CHANGES_REQUESTED", "c" * 40),
    ]
    assert reviews[0].submitted_at.isoformat() == "2026-11-02T09:00:00+00:00"


def test_statuses_combine_per_context(fake_github: FakeGitHub, github_client: Github) -> None:
    commit = github_client.get_repo(REPO).get_commit(HEAD)
    assert commit.get_combined_status().state == "pending"  # no statuses yet
    commit.create_status("pending", description="pricing", context="budget-gate")
    commit.create_status("success", target_url="https://ci.example/1", context="budget-gate")
    combined = commit.get_combined_status()
    assert (combined.state, combined.total_count) == ("success", 1)
    assert combined.statuses[0].creator.login == "github-actions[bot]"
    commit.create_status("failure", context="other")
    assert commit.get_combined_status().state == "failure"
    assert github_client.get_repo(REPO).get_commit("changes").sha == HEAD  # branch name as ref


def test_check_runs(github_client: Github) -> None:
    repo = github_client.get_repo(REPO)
    run = repo.create_check_run("budget-gate", HEAD, status="in_progress")
    assert (run.status, run.app.slug) == ("in_progress", "github-actions")
    assert run.conclusion is None
    run.edit(conclusion="failure", output={"title": "Over budget", "summary": "$1,200 > $1,000"})
    again = repo.get_check_run(run.id)
    assert (again.status, again.conclusion, again.output.title) == (
        "completed",
        "failure",
        "Over budget",
    )
    assert [p.number for p in again.pull_requests] == [2]


def test_collaborator_permission_levels(fake_github: FakeGitHub, github_client: Github) -> None:
    expected = {
        "admin": ("admin", "admin"),
        "maintain": ("write", "maintain"),
        "write": ("write", "write"),
        "triage": ("read", "triage"),
        "read": ("read", "read"),
        "none": ("none", "none"),
    }
    repo = github_client.get_repo(REPO)
    for level, answer in expected.items():
        fake_github.repo(REPO).set_permission(f"user-{level}", level)
        got = repo.get_collaborator_permission(f"user-{level}")
        assert (got, repo.get_collaborator_role_name(f"user-{level}")) == answer
    assert repo.get_collaborator_permission("Codertocat") == "admin"  # the owner
    with pytest.raises(github.UnknownObjectException):
        repo.get_collaborator_permission("no-such-user")


def test_orgs_teams_membership(fake_github: FakeGitHub, github_client: Github) -> None:
    fake_github.add_team("Octocoders", "approvers", members={"alice": "active", "bob": "pending"})
    org = github_client.get_organization("Octocoders")
    team = org.get_team_by_slug("approvers")
    assert (team.slug, team.id) == ("approvers", fake_github.team("Octocoders", "approvers").id)
    assert team.get_team_membership("alice").state == "active"
    assert team.get_team_membership("bob").state == "pending"
    with pytest.raises(github.UnknownObjectException):
        team.get_team_membership("carol")
    alice, bob = github_client.get_user("alice"), github_client.get_user("bob")
    assert (team.has_in_members(alice), team.has_in_members(bob)) == (True, False)
    status, body = raw(fake_github, "GET", "/orgs/Octocoders/teams/approvers/memberships/carol")
    assert (status, body["message"]) == (404, "Not Found")
    with pytest.raises(github.UnknownObjectException):
        org.get_team_by_slug("nope")


def test_users_and_rate_limit(github_client: Github) -> None:
    assert github_client.get_user("Codertocat").type == "User"
    assert github_client.get_user("github-actions[bot]").type == "Bot"
    assert github_client.get_rate_limit().resources.core.remaining == 5000
    with pytest.raises(github.UnknownObjectException):
        github_client.get_user("nobody-here").login  # noqa: B018


def test_read_only_token_refuses_writes(fake_github: FakeGitHub, github_client: Github) -> None:
    fake_github.read_only = True
    pull = github_client.get_repo(REPO).get_pull(2)  # reads still work
    with pytest.raises(github.GithubException) as err:
        pull.create_issue_comment("hi")
    assert err.value.status == 403
    assert err.value.data["message"] == FORBIDDEN_FOR_INTEGRATION
    assert "documentation_url" in err.value.data
    with pytest.raises(github.GithubException):
        pull.add_to_labels("x")
    assert [r.status for r in fake_github.writes] == [403, 403]
    assert fake_github.repo(REPO).comments_on(2) == []


def test_bad_or_missing_token(fake_github: FakeGitHub) -> None:
    with (
        fake_github.client(token="ghs_wrong") as client,
        pytest.raises(github.BadCredentialsException),
    ):
        client.get_repo(REPO)
    status, _ = raw(fake_github, "POST", f"/repos/{REPO}/issues/2/comments", {"body": "x"}, None)
    assert status == 401


def test_authorization_header_is_recorded(fake_github: FakeGitHub, github_client: Github) -> None:
    github_client.get_repo(REPO)
    assert {r.authorization for r in fake_github.requests} == {f"token {DEFAULT_TOKEN}"}


@pytest.mark.parametrize("fake_github", ["/api/v3"], indirect=True)
def test_ghes_base_path(fake_github: FakeGitHub, github_client: Github) -> None:
    assert fake_github.base_url == f"{fake_github.web_url}/api/v3"
    pull = github_client.get_repo(REPO).get_pull(2)
    pull.create_issue_comment("from GHES")
    assert [c.body for c in pull.get_issue_comments()] == ["from GHES"]
    assert pull.url.startswith(fake_github.base_url)
    assert pull.html_url.startswith(f"{fake_github.web_url}/{REPO}/pull/2")
    fake_github.assert_all_requests_valid()
    status, _ = raw(fake_github, "GET", f"/repos/{REPO}", root=fake_github.web_url)
    assert status == 404
    (error,) = fake_github.validation_errors
    assert error.endswith("outside the API root /api/v3")
    fake_github.clear_log()


def test_malformed_request_is_flagged(fake_github: FakeGitHub) -> None:
    status, body = raw(fake_github, "POST", f"/repos/{REPO}/issues/2/comments", {"text": "x"})
    assert status == 422
    assert "'body' is a required property" in body["message"]
    (error,) = fake_github.validation_errors
    assert error.startswith(f"POST /repos/{REPO}/issues/2/comments: InvalidRequestBody")
    with pytest.raises(AssertionError, match="OpenAPI description rejects"):
        fake_github.assert_all_requests_valid()
    assert fake_github.repo(REPO).comments_on(2) == []
    fake_github.clear_log()


def test_unknown_operation_is_flagged(fake_github: FakeGitHub) -> None:
    assert raw(fake_github, "GET", f"/repos/{REPO}/pulls")[0] == 404  # list pulls: not in the cut
    assert raw(fake_github, "PUT", f"/repos/{REPO}/issues/2/comments", {"body": "x"})[0] == 404
    assert raw(fake_github, "GET", f"/repos/{REPO}/issues/two")[0] == 422
    assert len(fake_github.validation_errors) == 3
    fake_github.clear_log()


def test_injected_failure(fake_github: FakeGitHub) -> None:
    fake_github.fail_next("issues/create-comment", 502, "Bad Gateway")
    assert raw(fake_github, "POST", f"/repos/{REPO}/issues/2/comments", {"body": "x"})[0] == 502
    assert raw(fake_github, "POST", f"/repos/{REPO}/issues/2/comments", {"body": "x"})[0] == 201


def test_every_operation_answers_per_the_description(
    fake_github: FakeGitHub, github_client: Github
) -> None:
    """A tour of all 36 operations; teardown validates every request and response."""
    repo_state = fake_github.repo(REPO)
    repo_state.set_permission("alice", "write")
    repo_state.change_file(2, "p.yaml", before="a\n", after="b\n")
    repo_state.add_review(2, "alice", "APPROVED")
    fake_github.add_team("Octocoders", "t", members=["alice"])
    repo = github_client.get_repo(REPO)
    pull = repo.get_pull(2)
    issue = repo.get_issue(2)
    list(pull.get_files())
    list(pull.get_reviews())
    comment = issue.create_comment("x")
    comment.edit("y")
    repo.get_issue(2).get_comment(comment.id)
    list(issue.get_comments())
    comment.delete()
    issue.add_to_labels("a")
    issue.set_labels("b")
    issue.remove_from_labels("b")
    list(issue.get_labels())
    made = repo.create_issue("budget-gate report 2026-11", body="b")
    made.edit(body="c")
    [listed] = repo.get_issues(state="all", creator=made.user.login)
    assert (listed.number, listed.body, fake_github.repo(REPO).issue(made.number).body) == (
        made.number,
        "c",
        "c",
    )
    repo_state.base_edited(2, by="alice")
    (moved,) = list(issue.get_events())
    assert (moved.event, moved.actor.login) == ("base_ref_changed", "alice")
    pull.create_review_request(reviewers=["alice"])
    pull.get_review_requests()[0].totalCount  # noqa: B018
    pull.delete_review_request(reviewers=["alice"])
    commit = repo.get_commit(HEAD)
    commit.create_status("success", context="c")
    commit.get_combined_status()
    run = repo.create_check_run("c", HEAD)
    run.edit(status="in_progress")
    repo.get_check_run(run.id)
    repo.get_contents("p.yaml", ref=HEAD)
    repo.get_collaborator_permission("alice")
    team = github_client.get_organization("Octocoders").get_team_by_slug("t")
    team.get_team_membership("alice")
    team.has_in_members(github_client.get_user("alice"))
    raw(fake_github, "GET", "/orgs/Octocoders/teams/t/memberships/alice")
    github_client.get_rate_limit()
    hit = {r.operation_id for r in fake_github.requests}
    assert hit == {op.operation_id for op in operations()}
    assert fake_github.response_errors == []


# --- events and the workflow environment -----------------------------------------------------


def test_load_event_applies_deep_overrides() -> None:
    payload = load_event(
        "pull_request_review.submitted.commented",
        review__state="approved",
        pull_request__head__sha="f" * 40,
        pull_request__labels__0__name="budget",
        installation=DELETE,
        **{"comment.body": "/budget-gate approve"},
        sender={"login": "alice"},
    )
    assert payload["review"]["state"] == "approved"
    assert payload["pull_request"]["head"]["sha"] == "f" * 40
    assert payload["pull_request"]["labels"][0]["name"] == "budget"
    assert "installation" not in payload
    assert payload["comment"] == {"body": "/budget-gate approve"}
    assert payload["sender"]["login"] == "alice"
    assert payload["sender"]["id"] == 21031067  # merged, not replaced
    assert "issue_comment.created.on-pull-request" in event_names()


def test_github_env_for_a_review_event(
    fake_github: FakeGitHub, github_env: Any, github_client: Github
) -> None:
    env = github_env("pull_request_review.submitted.approved")
    assert env["GITHUB_EVENT_NAME"] == "pull_request_review"
    assert env["GITHUB_REPOSITORY"] == "baxterthehacker/public-repo"
    assert env["GITHUB_API_URL"] == fake_github.base_url
    assert env["GITHUB_TOKEN"] == fake_github.token
    assert env["GITHUB_REF"] == "refs/pull/8/merge"
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
        assert Path(env[name]).read_text() == ""
    event = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text())
    assert event["pull_request"]["url"].startswith(fake_github.base_url)
    assert "api.github.com" not in json.dumps(event)
    repo = fake_github.repo("baxterthehacker/public-repo")
    pull = repo.pull(8)
    assert (pull.author, pull.head_repo) == ("skalnik", "skalnik/public-repo")  # a fork PR
    assert [(r.author, r.state) for r in pull.reviews] == [("baxterthehacker", "APPROVED")]
    assert env["GITHUB_SHA"] in repo.commits
    head = github_client.get_repo("baxterthehacker/public-repo").get_pull(8).head
    assert (head.repo.full_name, head.repo.fork) == ("skalnik/public-repo", True)


def test_github_env_for_a_pr_comment(fake_github: FakeGitHub, github_env: Any) -> None:
    env = github_env("issue_comment.created.on-pull-request", comment__body="/budget-gate approve")
    assert env["GITHUB_EVENT_NAME"] == "issue_comment"
    assert (env["GITHUB_HEAD_REF"], env["GITHUB_REF"]) == ("", "refs/heads/master")
    (comment,) = fake_github.repo("chhsia0/knative-route-demo").comments_on(3)
    assert (comment.author, comment.body) == ("chhsia0", "/budget-gate approve")
