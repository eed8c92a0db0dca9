"""JSON bodies the fake GitHub answers with, shaped like GitHub's.

Why: PyGithub (and any client) reads many fields and follows ``url`` fields, so bodies must have
GitHub's full shape. The big objects (repository, pull request, issue, commit, org, team, check
run, rate limit) start from the examples in GitHub's own OpenAPI description, with the example's
owner/repo/number/sha swapped for ours and every ``api.github.com`` / ``github.com`` URL moved
onto the fake (PyGithub refuses to follow a URL to another host). The fields that carry state are
then overwritten from the fake's state. Small objects are written out in full.
"""

from __future__ import annotations

import base64
import datetime as dt
import posixpath
import urllib.parse
from typing import Any

from tests.github.openapi_contract import example
from tests.github.state import (
    PERMISSIONS,
    CheckRun,
    Comment,
    Commit,
    FileChange,
    GitHubState,
    Issue,
    IssueEvent,
    Label,
    Org,
    PullRequest,
    Repo,
    Review,
    Status,
    Team,
    fake_sha,
)

EXAMPLE_REPO = "octocat/Hello-World"
EXAMPLE_NUMBER = "/1347"
EXAMPLE_SHA = "6dcb09b5b57875f334f61aebed695e2e4193db5e"


def iso(value: dt.datetime | None) -> str | None:
    """GitHub's timestamp format: ``2026-11-29T12:00:00Z``."""
    return (
        None if value is None else value.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    )


def node_id(kind: str, number: int) -> str:
    """An opaque GraphQL-style node id."""
    return base64.b64encode(f"0{len(kind)}:{kind}{number}".encode()).decode()


def swap_strings(value: Any, pairs: list[tuple[str, str]]) -> Any:
    """``value`` with every string in it run through ``str.replace`` for each pair."""
    if isinstance(value, str):
        for old, new in pairs:
            value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [swap_strings(v, pairs) for v in value]
    if isinstance(value, dict):
        return {k: swap_strings(v, pairs) for k, v in value.items()}
    return value


def _quote(path: str) -> str:
    return urllib.parse.quote(path, safe="/")


class Render:
    """Builds response bodies for one fake at ``api`` (API root) and ``web`` (HTML root)."""

    def __init__(self, state: GitHubState, api: str, web: str, viewer: str) -> None:
        self.state = state
        self.api = api
        self.web = web
        self.viewer = viewer

    def template(self, name: str, *swaps: tuple[str, str]) -> dict[str, Any]:
        """Example ``name`` with ``swaps`` applied, then moved onto the fake's hosts."""
        hosts = [
            ("https://api.github.com", self.api),
            ("https://raw.githubusercontent.com", f"{self.web}/raw"),
            ("https://github.com", self.web),
        ]
        body: dict[str, Any] = swap_strings(example(name), [*swaps, *hosts])
        return body

    def repo_api(self, repo: Repo) -> str:
        """``.../repos/owner/name`` on the fake."""
        return f"{self.api}/repos/{repo.full_name}"

    # --- accounts ----------------------------------------------------------------------------

    def user(self, login: str) -> dict[str, Any]:
        """A ``simple-user``."""
        account = self.state.add_user(login)
        api = f"{self.api}/users/{_quote(login)}"
        return {
            "login": login,
            "id": account.id,
            "node_id": node_id(account.type, account.id),
            "avatar_url": f"{self.web}/avatars/u/{account.id}",
            "gravatar_id": "",
            "url": api,
            "html_url": f"{self.web}/{_quote(login)}",
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": account.type,
            "user_view_type": "public",
            "site_admin": False,
        }

    def public_user(self, login: str) -> dict[str, Any]:
        """A ``public-user`` (users/get-by-username)."""
        account = self.state.users[login]
        extra = dict.fromkeys(("company", "location", "email", "hireable", "bio"), None)
        return {
            **self.user(login),
            **extra,
            "name": account.name,
            "blog": "",
            "twitter_username": None,
            "public_repos": sum(r.owner == login for r in self.state.repos.values()),
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": iso(account.created_at),
            "updated_at": iso(account.created_at),
        }

    def org(self, org: Org) -> dict[str, Any]:
        """An ``organization-full``."""
        body = self.template("organization-full", ("/orgs/github", f"/orgs/{org.login}"))
        account = self.state.users[org.login]
        body.update(
            login=org.login,
            id=org.id,
            node_id=node_id("Organization", org.id),
            name=account.name or org.login,
            description=None,
            html_url=f"{self.web}/{org.login}",
            avatar_url=f"{self.web}/avatars/u/{org.id}",
            created_at=iso(account.created_at),
            updated_at=iso(account.created_at),
            archived_at=None,
            public_repos=sum(r.owner == org.login for r in self.state.repos.values()),
        )
        return body

    def team(self, team: Team) -> dict[str, Any]:
        """A ``team-full`` (also valid where a ``team`` is expected)."""
        api = f"{self.api}/teams/{team.id}"
        body = self.template("team-full")
        body.update(
            id=team.id,
            node_id=node_id("Team", team.id),
            url=api,
            html_url=f"{self.web}/orgs/{team.org}/teams/{team.slug}",
            name=team.name,
            slug=team.slug,
            description=None,
            permission="pull",
            members_url=f"{api}/members{{/member}}",
            repositories_url=f"{api}/repos",
            parent=None,
            members_count=sum(m.state == "active" for m in team.members.values()),
            repos_count=0,
            type="organization",
            organization=self.org(self.state.orgs[team.org]),
        )
        return body

    def membership(self, team: Team, login: str) -> dict[str, Any]:
        """A ``team-membership``."""
        member = team.members[login]
        url = f"{self.api}/teams/{team.id}/memberships/{_quote(login)}"
        return {"url": url, "role": member.role, "state": member.state}

    def permission(self, repo: Repo, login: str) -> dict[str, Any]:
        """A ``repository-collaborator-permission``."""
        permission, role = PERMISSIONS[repo.permission_of(login)]
        user = {**self.user(login), "permissions": self._flags(role), "role_name": role}
        return {"permission": permission, "role_name": role, "user": user}

    @staticmethod
    def _flags(role: str) -> dict[str, bool]:
        order = ["read", "triage", "write", "maintain", "admin"]
        rank = order.index(role) if role in order else -1
        names = ["pull", "triage", "push", "maintain", "admin"]
        return {name: rank >= i for i, name in enumerate(names)}

    # --- repositories ------------------------------------------------------------------------

    def repo(self, repo: Repo) -> dict[str, Any]:
        """A ``full-repository`` (also valid where ``repository`` is expected)."""
        body = self.template("full-repository-default-response", (EXAMPLE_REPO, repo.full_name))
        for key in ("organization", "parent", "source", "template_repository"):
            body.pop(key, None)
        owner = self.user(repo.owner)
        if owner["type"] == "Organization":
            body["organization"] = owner
        body.update(
            id=repo.id,
            node_id=node_id("Repository", repo.id),
            name=repo.name,
            full_name=repo.full_name,
            owner=owner,
            private=repo.private,
            visibility="private" if repo.private else "public",
            fork=repo.fork,
            description=None,
            language=None,
            homepage=None,
            default_branch=repo.default_branch,
            permissions=self._flags(PERMISSIONS[repo.permission_of(self.viewer)][1]),
            open_issues=sum(i.state == "open" for i in repo.issues.values()),
            open_issues_count=sum(i.state == "open" for i in repo.issues.values()),
            created_at=iso(repo.created_at),
            updated_at=iso(repo.created_at),
            pushed_at=iso(repo.created_at),
        )
        return body

    def label(self, repo: Repo, label: Label) -> dict[str, Any]:
        """A ``label``."""
        return {
            "id": label.id,
            "node_id": node_id("Label", label.id),
            "url": f"{self.repo_api(repo)}/labels/{urllib.parse.quote(label.name, safe='')}",
            "name": label.name,
            "description": label.description,
            "color": label.color,
            "default": False,
        }

    def labels(self, repo: Repo, issue: Issue) -> list[dict[str, Any]]:
        """The labels on ``issue``."""
        return [self.label(repo, repo.labels[name]) for name in issue.labels]

    def file_change(self, repo: Repo, change: FileChange, sha: str) -> dict[str, Any]:
        """A ``diff-entry`` for ``change`` as of commit ``sha``."""
        path = _quote(change.filename)
        body: dict[str, Any] = {
            "sha": fake_sha(change.filename, change.patch),
            "filename": change.filename,
            "status": change.status,
            "additions": change.additions,
            "deletions": change.deletions,
            "changes": change.additions + change.deletions,
            "blob_url": f"{self.web}/{repo.full_name}/blob/{sha}/{path}",
            "raw_url": f"{self.web}/{repo.full_name}/raw/{sha}/{path}",
            "contents_url": f"{self.repo_api(repo)}/contents/{path}?ref={sha}",
        }
        if change.patch is not None:
            body["patch"] = change.patch
        if change.previous_filename:
            body["previous_filename"] = change.previous_filename
        return body

    def commit(self, repo: Repo, commit: Commit) -> dict[str, Any]:
        """A ``commit`` with its files and stats."""
        body = self.template("commit", (EXAMPLE_REPO, repo.full_name), (EXAMPLE_SHA, commit.sha))
        author = commit.author or repo.owner
        committer = commit.committer or author
        files = [self.file_change(repo, f, commit.sha) for f in commit.files]
        additions = sum(f["additions"] for f in files)
        deletions = sum(f["deletions"] for f in files)
        body["commit"].update(
            author=self._signature(author, commit),
            committer=self._signature(committer, commit),
            message=commit.message,
            comment_count=0,
        )
        # NOTE: GitHub names an account only when the email is linked to one; else null.
        body.update(
            sha=commit.sha,
            node_id=node_id("Commit", int(commit.sha[:8], 16)),
            author=self.user(author) if commit.linked else None,
            committer=self.user(committer) if commit.linked else None,
            parents=[self._parent(repo, sha) for sha in commit.parents],
            stats={"additions": additions, "deletions": deletions, "total": additions + deletions},
            files=files,
        )
        return body

    @staticmethod
    def _signature(login: str, commit: Commit) -> dict[str, str]:
        """The git signature: GitHub's web edits and merges are committed as ``noreply``."""
        email = "noreply@github.com" if login == "web-flow" else f"{login}@users.noreply"
        if not commit.linked:
            email = f"{login}@unlinked.example"
        name = "GitHub" if login == "web-flow" else login
        return {"name": name, "email": email, "date": iso(commit.date)}

    def _parent(self, repo: Repo, sha: str) -> dict[str, str]:
        return {
            "sha": sha,
            "url": f"{self.repo_api(repo)}/commits/{sha}",
            "html_url": f"{self.web}/{repo.full_name}/commit/{sha}",
        }

    def content(self, repo: Repo, path: str, ref: str, data: bytes | None) -> dict[str, Any]:
        """A ``content-file`` (with base64 ``content``) or, for ``data=None``, a dir entry."""
        kind = "dir" if data is None else "file"
        sha = fake_sha(path, data)
        self_url = f"{self.repo_api(repo)}/contents/{_quote(path)}?ref={ref}"
        html = f"{self.web}/{repo.full_name}/{'tree' if data is None else 'blob'}/{ref}/{path}"
        git = f"{self.repo_api(repo)}/git/{'trees' if data is None else 'blobs'}/{sha}"
        body: dict[str, Any] = {
            "type": kind,
            "size": len(data or b""),
            "name": posixpath.basename(path),
            "path": path,
            "sha": sha,
            "url": self_url,
            "git_url": git,
            "html_url": html,
            "download_url": None
            if data is None
            else f"{self.web}/raw/{repo.full_name}/{ref}/{path}",
            "_links": {"self": self_url, "git": git, "html": html},
        }
        if data is not None:
            body["encoding"] = "base64"
            body["content"] = base64.encodebytes(data).decode()
        return body

    def symlink(self, repo: Repo, path: str, ref: str, target: str) -> dict[str, Any]:
        """A ``content-symlink``: a link whose target is no file in the repository."""
        body = self.content(repo, path, ref, target.encode())
        for key in ("encoding", "content"):
            del body[key]
        return {**body, "type": "symlink", "target": target}

    # --- issues, pull requests, conversation -------------------------------------------------

    def issue(self, repo: Repo, issue: Issue) -> dict[str, Any]:
        """An ``issue``; pull requests carry the ``pull_request`` link object."""
        number = f"/{issue.number}"
        body = self.template("issue", (EXAMPLE_REPO, repo.full_name), (EXAMPLE_NUMBER, number))
        if isinstance(issue, PullRequest):
            body["pull_request"]["merged_at"] = None
        else:
            body.pop("pull_request")
        body.update(self._issue_fields(repo, issue), closed_by=None, state_reason=None)
        body["pinned_comment"] = None
        return body

    def _issue_fields(self, repo: Repo, issue: Issue) -> dict[str, Any]:
        return {
            "id": issue.id,
            "number": issue.number,
            "title": issue.title,
            "body": issue.body,
            "user": self.user(issue.author),
            "labels": self.labels(repo, issue),
            "state": issue.state,
            "locked": False,
            "active_lock_reason": None,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": len(repo.comments_on(issue.number)),
            "author_association": repo.author_association(issue.author),
            "created_at": iso(issue.created_at),
            "updated_at": iso(issue.updated_at),
            "closed_at": None if issue.state == "open" else iso(issue.updated_at),
        }

    def pull(self, repo: Repo, pull: PullRequest) -> dict[str, Any]:
        """A ``pull-request`` (also valid where ``pull-request-simple`` is expected)."""
        body = self.template(
            "pull-request",
            (EXAMPLE_REPO, repo.full_name),
            (EXAMPLE_NUMBER, f"/{pull.number}"),
            (EXAMPLE_SHA, pull.head_sha),
        )
        head_home = self.state.repos[pull.head_repo] if pull.head_repo else repo
        body.update(
            self._issue_fields(repo, pull),
            node_id=node_id("PullRequest", pull.id),
            draft=pull.draft,
            merged=pull.merged,
            merged_at=iso(pull.updated_at) if pull.merged else None,
            merged_by=None,
            merge_commit_sha=pull.merge_commit_sha,
            requested_reviewers=[self.user(login) for login in pull.requested_users],
            requested_teams=[
                self.team(self.state.team(repo.owner, s)) for s in pull.requested_teams
            ],
            head=self._ref(head_home, pull.head_ref, pull.head_sha),
            base=self._ref(repo, pull.base_ref, pull.base_sha),
            auto_merge=None,
            mergeable=True,
            rebaseable=True,
            mergeable_state="clean",
            review_comments=0,
            commits=len(repo.pull_commits(pull)),
            additions=sum(f.additions for f in pull.files),
            deletions=sum(f.deletions for f in pull.files),
            changed_files=len(pull.files),
        )
        return body

    def _ref(self, repo: Repo, ref: str, sha: str) -> dict[str, Any]:
        return {
            "label": f"{repo.owner}:{ref}",
            "ref": ref,
            "sha": sha,
            "user": self.user(repo.owner),
            "repo": self.repo(repo),
        }

    def review_requests(self, repo: Repo, pull: PullRequest) -> dict[str, Any]:
        """A ``pull-request-review-request``: requested users and teams."""
        teams = [self.team(self.state.team(repo.owner, slug)) for slug in pull.requested_teams]
        return {"users": [self.user(login) for login in pull.requested_users], "teams": teams}

    def comment(self, repo: Repo, comment: Comment) -> dict[str, Any]:
        """An ``issue-comment``."""
        issue = repo.issues[comment.issue_number]
        kind = "pull" if isinstance(issue, PullRequest) else "issues"
        return {
            "id": comment.id,
            "node_id": node_id("IssueComment", comment.id),
            "url": f"{self.repo_api(repo)}/issues/comments/{comment.id}",
            "html_url": (
                f"{self.web}/{repo.full_name}/{kind}/{issue.number}#issuecomment-{comment.id}"
            ),
            "body": comment.body,
            "user": self.user(comment.author),
            "created_at": iso(comment.created_at),
            "updated_at": iso(comment.updated_at),
            "issue_url": f"{self.repo_api(repo)}/issues/{issue.number}",
            "author_association": repo.author_association(comment.author),
            "performed_via_github_app": None,
        }

    def review(self, repo: Repo, pull: PullRequest, review: Review) -> dict[str, Any]:
        """A ``pull-request-review``."""
        html = f"{self.web}/{repo.full_name}/pull/{pull.number}#pullrequestreview-{review.id}"
        pull_url = f"{self.repo_api(repo)}/pulls/{pull.number}"
        return {
            "id": review.id,
            "node_id": node_id("PullRequestReview", review.id),
            "user": self.user(review.author),
            "body": review.body,
            "state": review.state,
            "html_url": html,
            "pull_request_url": pull_url,
            "_links": {"html": {"href": html}, "pull_request": {"href": pull_url}},
            "submitted_at": iso(review.submitted_at),
            "commit_id": review.commit_id,
            "author_association": repo.author_association(review.author),
        }

    def issue_event(self, repo: Repo, event: IssueEvent) -> dict[str, Any]:
        """An ``issue-event-for-issue`` of the common shape (``state-change-issue-event``)."""
        return {
            "id": event.id,
            "node_id": node_id("IssueEvent", event.id),
            "url": f"{self.repo_api(repo)}/issues/events/{event.id}",
            "actor": self.user(event.actor),
            "event": event.event,
            "commit_id": None,
            "commit_url": None,
            "created_at": iso(event.created_at),
            "performed_via_github_app": None,
        }

    # --- statuses and checks -----------------------------------------------------------------

    def status(self, repo: Repo, status: Status) -> dict[str, Any]:
        """A ``status``."""
        return {
            "url": f"{self.repo_api(repo)}/statuses/{status.sha}",
            "avatar_url": f"{self.web}/avatars/u/{self.state.users[status.creator].id}",
            "id": status.id,
            "node_id": node_id("StatusContext", status.id),
            "state": status.state,
            "description": status.description,
            "target_url": status.target_url,
            "context": status.context,
            "created_at": iso(status.created_at),
            "updated_at": iso(status.created_at),
            "creator": self.user(status.creator),
        }

    def combined_status(self, repo: Repo, sha: str) -> dict[str, Any]:
        """A ``combined-commit-status`` for ``sha``."""
        statuses = [self.status(repo, s) for s in repo.latest_statuses(sha)]
        return {
            "state": repo.combined_state(sha),
            "statuses": statuses,
            "sha": sha,
            "total_count": len(statuses),
            "repository": self.repo(repo),
            "commit_url": f"{self.repo_api(repo)}/commits/{sha}",
            "url": f"{self.repo_api(repo)}/commits/{sha}/status",
        }

    def check_run(self, repo: Repo, run: CheckRun) -> dict[str, Any]:
        """A ``check-run`` (made by the GitHub Actions app)."""
        body = self.template("check-run", ("github/hello-world", repo.full_name))
        api = f"{self.repo_api(repo)}/check-runs/{run.id}"
        pulls = [
            p
            for p in repo.issues.values()
            if isinstance(p, PullRequest) and p.head_sha == run.head_sha
        ]
        shown = {k: run.output.get(k) for k in ("title", "summary", "text")}
        annotations = len(run.output.get("annotations", []))
        body["output"] = {
            **shown,
            "annotations_count": annotations,
            "annotations_url": f"{api}/annotations",
        }
        body["app"].update(id=15368, slug="github-actions", name="GitHub Actions")
        body.update(
            id=run.id,
            node_id=node_id("CheckRun", run.id),
            name=run.name,
            head_sha=run.head_sha,
            url=api,
            html_url=f"{self.web}/{repo.full_name}/runs/{run.id}",
            details_url=run.details_url,
            external_id=run.external_id,
            status=run.status,
            conclusion=run.conclusion,
            started_at=iso(run.started_at),
            completed_at=iso(run.completed_at),
            pull_requests=[self._pull_ref(repo, p) for p in pulls],
        )
        return body

    def _pull_ref(self, repo: Repo, pull: PullRequest) -> dict[str, Any]:
        mini = {"id": repo.id, "url": self.repo_api(repo), "name": repo.name}
        return {
            "url": f"{self.repo_api(repo)}/pulls/{pull.number}",
            "id": pull.id,
            "number": pull.number,
            "head": {"ref": pull.head_ref, "sha": pull.head_sha, "repo": mini},
            "base": {"ref": pull.base_ref, "sha": pull.base_sha, "repo": mini},
        }

    def rate_limit(self, reset: int) -> dict[str, Any]:
        """A ``rate-limit-overview``: plenty left, resetting at ``reset`` (epoch seconds)."""
        body = self.template("rate-limit-overview")
        for bucket in [*body["resources"].values(), body["rate"]]:
            bucket.update(reset=reset, used=0, remaining=bucket["limit"])
        return body
