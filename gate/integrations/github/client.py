"""All GitHub I/O of the pull-request flow, through PyGithub, behind a small typed facade.

Imported only on the ``budget-gate ci`` path. The token is handed to PyGithub and to
nothing else: it is never part of a message, a log line or an exception this module
raises. Failures become :class:`gate.errors.BackendError` (exit 4) naming what was being
done; a write refused with 403 (the read-only token of a fork's pull request) becomes
:class:`gate.errors.WriteForbidden`, which the flow turns into "annotations and job summary only".

# NOTE: PyGithub throttles by default (0.25 s between requests, 1 s between writes);
# budget-gate makes a few dozen calls per run, well within GitHub's limits, so it is off.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import quote

import requests
from github import Auth, BadCredentialsException, Github, GithubException, GithubRetry
from github.Issue import Issue
from github.PullRequest import PullRequest

from gate.ci.approvals import ROLES
from gate.ci.model import ChangedFile, CommentInfo, CommitInfo, PullInfo, ReviewInfo
from gate.errors import BackendError, InputError, WriteForbidden
from gate.integrations.github.contents import RepositoryContents

DEFAULT_API_URL = "https://api.github.com"
_TIMEOUT_S = 30
_RETRIES = 2
_MAX_PAGES = 30  # GitHub lists at most 3,000 files of a commit
DEFAULT_BOT_LOGIN = "github-actions[bot]"
"""The account a workflow's GITHUB_TOKEN posts as."""


@dataclass(frozen=True)
class PostedIssue:
    """An issue :meth:`GitHubClient.upsert_issue` wrote: where, whether new, and as whom."""

    url: str
    opened: bool
    author: str
    ours: bool  # the author is the configured bot: else the next run will not find it


def bot_login(env: Mapping[str, str]) -> str:
    """The account the token posts as: BUDGET_GATE_BOT_LOGIN (the action's ``bot-login``)."""
    return env.get("BUDGET_GATE_BOT_LOGIN", "").strip() or DEFAULT_BOT_LOGIN


class GitHubClient(RepositoryContents):
    """One repository on one GitHub (github.com or Enterprise), for one run of the flow."""

    def __init__(
        self, api_url: str, token: str, repository: str, bot_login: str = DEFAULT_BOT_LOGIN
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.repository = repository
        self.owner = repository.split("/", 1)[0]
        # NOTE: the token cannot say whom it posts as (GET /user refuses GITHUB_TOKEN and App
        # tokens), and any bot can post budget-gate's markers: the account is configured.
        self.bot_login = bot_login
        self._gh = Github(
            base_url=self.api_url,
            auth=Auth.Token(token),
            timeout=_TIMEOUT_S,
            retry=GithubRetry(total=_RETRIES, backoff_factor=0.5),
            per_page=100,
            seconds_between_requests=0,
            seconds_between_writes=0,
            lazy=True,  # no GET /repos/{repo} before the first real call
        )
        self._repo = self._gh.get_repo(repository)
        self._pulls: dict[int, PullRequest] = {}

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GitHubClient:
        """Connect as a workflow step's environment says.

        It reads GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL (GitHub Enterprise) and
        BUDGET_GATE_BOT_LOGIN (the account the token posts as; default github-actions[bot]).

        Raises:
            gate.errors.InputError: ``GITHUB_TOKEN`` or ``GITHUB_REPOSITORY`` is missing.
        """
        token, repository = env.get("GITHUB_TOKEN", ""), env.get("GITHUB_REPOSITORY", "")
        missing = [
            n for n, v in (("GITHUB_TOKEN", token), ("GITHUB_REPOSITORY", repository)) if not v
        ]
        if missing:
            hint = (
                "in a workflow, pass env: GITHUB_TOKEN: ${{ github.token }}"
                if "GITHUB_TOKEN" in missing
                else "set GITHUB_REPOSITORY to owner/name (a workflow sets it)"
            )
            raise InputError(f"cannot write to GitHub: {' and '.join(missing)} not set", hint=hint)
        api_url = env.get("GITHUB_API_URL") or DEFAULT_API_URL
        return cls(api_url, token, repository, bot_login(env))

    def close(self) -> None:
        """Close PyGithub's connections."""
        self._gh.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- reads ----------------------------------------------------------------------------

    def pull(self, number: int) -> PullInfo:
        """The pull request: author, state, head and base, labels, requested reviewers."""
        with self._failing(f"reading pull request #{number}"):
            pull = self._repo.get_pull(number)
            self._pulls[number] = pull
            return PullInfo(
                number=number,
                author=pull.user.login,
                state=pull.state,
                head_sha=pull.head.sha,
                base_sha=pull.base.sha,
                base_ref=pull.base.ref,
                labels=tuple(label.name for label in pull.labels),
                requested_users=tuple(u.login for u in pull.requested_reviewers),
                requested_teams=tuple(t.slug for t in pull.requested_teams),
                changed_files=pull.changed_files,
                commits=pull.commits,
                default_branch=pull.base.repo.default_branch or "",
            )

    def changed_files(self, number: int) -> list[ChangedFile]:
        """The pull request's file list (GitHub lists at most 3,000 files)."""
        with self._failing(f"listing the files of pull request #{number}"):
            return [
                ChangedFile(f.filename, f.status, f.previous_filename)
                for f in self._pull(number).get_files()
            ]

    def commit(self, sha: str) -> CommitInfo:
        """A commit's date, the paths it touched (old names too), its parents and its people.

        Its author and committer are the GitHub accounts their emails are linked to (null,
        or an empty object, when there is none).
        """
        url = f"/repos/{self.repository}/commits/{_seg(sha)}"
        paths: set[str] = set()
        complete = False  # a full last page: GitHub may have stopped at its 3,000 files
        with self._failing(f"reading commit {sha[:12]}"):
            for page in range(1, _MAX_PAGES + 1):
                data = self._get(url, {"per_page": 100, "page": page})
                files = data.get("files") or []
                paths |= {f["filename"] for f in files}
                paths |= {f["previous_filename"] for f in files if f.get("previous_filename")}
                if len(files) < 100:
                    complete = True
                    break
        return CommitInfo(
            sha=str(data["sha"]),
            date=_parse_time(data["commit"]["committer"]["date"]),
            paths=frozenset(paths),
            parents=tuple(str(p["sha"]) for p in data.get("parents") or []),
            complete=complete,
            author=_login(data.get("author")),
            committer=_login(data.get("committer")),
        )

    def reviews(self, number: int) -> list[ReviewInfo]:
        """Submitted reviews, oldest first (reviews by deleted accounts are left out)."""
        with self._failing(f"listing the reviews of pull request #{number}"):
            return [
                ReviewInfo(
                    id=r.id,
                    login=r.user.login,
                    is_bot=r.user.type == "Bot",
                    state=r.state,
                    submitted_at=_utc(r.submitted_at) if r.submitted_at else None,
                    commit_id=r.commit_id,
                    body=r.body or "",
                )
                for r in self._pull(number).get_reviews()
                if r.user is not None
            ]

    def comments(self, number: int) -> list[CommentInfo]:
        """Conversation comments, oldest first (comments by deleted accounts left out)."""
        with self._failing(f"listing the comments of pull request #{number}"):
            return [
                CommentInfo(
                    id=c.id,
                    login=c.user.login,
                    is_bot=c.user.type == "Bot",
                    body=c.body or "",
                    created_at=_utc(c.created_at),
                    updated_at=_utc(c.updated_at),
                    ours=self._ours(c.user.login),
                )
                for c in self._pull(number).get_issue_comments()
                if c.user is not None
            ]

    def base_moved_at(self, number: int) -> dt.datetime | None:
        """When the pull request's base was last edited (GitHub's ``base_ref_changed``)."""
        with self._failing(f"listing the events of pull request #{number}"):
            events = self._pull(number).as_issue().get_events()
            moves = [e.created_at for e in events if e.event in _BASE_MOVES]
        now = dt.datetime.now(dt.timezone.utc)  # NOTE: an undated edit: taken as just now
        return max(_utc(m) if m else now for m in moves) if moves else None

    def team_member(self, org: str, slug: str, login: str) -> bool | None:
        """Whether ``login`` is an active member of ``org/slug``; None when it can't be read.

        GitHub answers 404 both for "not a member" and for a team the token cannot see.
        """
        url = f"/orgs/{_seg(org)}/teams/{_seg(slug)}/memberships/{_seg(login)}"
        with self._failing(f"reading {login}'s membership of {org}/{slug}"):
            try:
                data = self._get(url)
            except GithubException as exc:
                if exc.status == 404:
                    return False
                if exc.status == 403:
                    return None
                raise
        return bool(data.get("state") == "active")

    def role(self, login: str) -> str | None:
        """``login``'s role on the repository (admin ... read, or none); None if unreadable."""
        url = f"/repos/{self.repository}/collaborators/{_seg(login)}/permission"
        with self._failing(f"reading {login}'s permission"):
            try:
                data = self._get(url)
            except GithubException as exc:
                if exc.status in (403, 404):
                    return None
                raise
        role, legacy = data.get("role_name"), data.get("permission")
        # NOTE: custom roles have their own names; their base permission is in ``permission``.
        return str(role) if role in ROLES else str(legacy) if legacy else None

    # --- writes ---------------------------------------------------------------------------

    def _ours(self, login: str) -> bool:
        return login.lower() == self.bot_login.lower()

    def upsert_comment(self, number: int, marker: str, body: str) -> str:
        """Edit this tool's comment that starts with ``marker``, or add one; returns its URL.

        Only comments by :attr:`bot_login` count as ours, so no one else can plant the marker.
        """
        with self._failing(f"writing the comment on #{number}", write=True):
            issue = self._repo.get_issue(number)
            for comment in issue.get_comments():
                mine = comment.user is not None and self._ours(comment.user.login)
                if mine and (comment.body or "").startswith(marker):
                    comment.edit(body)
                    return str(comment.html_url)
            return str(issue.create_comment(body).html_url)

    def upsert_issue(self, title: str, marker: str, body: str, since: dt.datetime) -> PostedIssue:
        """Edit this tool's issue whose body starts with ``marker``, or open one.

        Only issues :attr:`bot_login` opened and that changed since ``since`` are read (the
        ``creator`` and ``since`` filters: a few, however many the bot opened before), so an
        issue someone else opened with the marker is never written to; a closed one is
        edited and left closed.
        """
        # NOTE: a NamedUser would name its creator URL-quoted, quoted again in the query
        # ("github-actions%5Bbot%5D", no one); PyGithub sends a str as it is, despite its type
        mine: Any = self.bot_login
        with self._failing(f"writing the issue {title!r}", write=True):
            for issue in self._repo.get_issues(state="all", creator=mine, since=since):
                if (issue.body or "").startswith(marker) and issue.pull_request is None:
                    issue.edit(title=title, body=body)
                    return self._posted(issue, opened=False)
            return self._posted(self._repo.create_issue(title, body=body), opened=True)

    def _posted(self, issue: Issue, *, opened: bool) -> PostedIssue:
        login = issue.user.login
        return PostedIssue(str(issue.html_url), opened, login, self._ours(login))

    def create_comment(self, number: int, body: str) -> int:
        """Post a comment on the pull request; returns its id."""
        with self._failing(f"commenting on pull request #{number}", write=True):
            return int(self._pull(number).create_issue_comment(body).id)

    def update_comment(self, comment_id: int, body: str) -> None:
        """Replace a comment's body."""
        url = f"/repos/{self.repository}/issues/comments/{comment_id}"
        with self._failing(f"updating comment {comment_id}", write=True):
            self._send("PATCH", url, {"body": body})

    def set_status(self, sha: str, state: str, description: str, context: str, url: str) -> None:
        """Set the commit status ``context`` on ``sha`` (``url``: the run, may be empty)."""
        body = {"state": state, "description": description, "context": context}
        if url:
            body["target_url"] = url
        with self._failing(f"setting the {context} status on {sha[:12]}", write=True):
            self._send("POST", f"/repos/{self.repository}/statuses/{sha}", body)

    def add_label(self, number: int, name: str) -> None:
        """Add a label to the pull request (GitHub creates it in the repository if new)."""
        url = f"/repos/{self.repository}/issues/{number}/labels"
        with self._failing(f"labelling pull request #{number}", write=True):
            self._send("POST", url, {"labels": [name]})

    def remove_label(self, number: int, name: str) -> None:
        """Remove a label; one already gone is fine."""
        # NOTE: PyGithub leaves "/" unescaped in label names; quote every character.
        url = f"/repos/{self.repository}/issues/{number}/labels/{_seg(name)}"
        with self._failing(f"unlabelling pull request #{number}", write=True):
            try:
                self._send("DELETE", url, None)
            except GithubException as exc:
                if exc.status != 404:
                    raise

    def request_reviews(self, number: int, users: list[str], teams: list[str]) -> str | None:
        """Ask users and teams for a review; GitHub's reason when it refuses (422), else None."""
        url = f"/repos/{self.repository}/pulls/{number}/requested_reviewers"
        with self._failing(f"requesting reviews on pull request #{number}", write=True):
            try:
                self._send("POST", url, {"reviewers": users, "team_reviewers": teams})
            except GithubException as exc:
                if exc.status == 422:
                    return _message(exc)
                raise
        return None

    # --- plumbing -------------------------------------------------------------------------

    def _pull(self, number: int) -> PullRequest:
        if number not in self._pulls:
            self._pulls[number] = self._repo.get_pull(number)
        return self._pulls[number]

    def _get(self, url: str, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
        _, data = self._gh.requester.requestJsonAndCheck("GET", url, parameters=parameters)
        return dict(data)

    def _send(self, verb: str, url: str, body: dict[str, Any] | None) -> None:
        self._gh.requester.requestJsonAndCheck(verb, url, input=body)

    @contextlib.contextmanager
    def _failing(self, doing: str, *, write: bool = False) -> Iterator[None]:
        try:
            yield
        except BadCredentialsException:
            raise BackendError(
                f"GitHub at {self.api_url} refused the token while {doing} (401): check the "
                "token (the Action's github-token input, or GITHUB_TOKEN)"
            ) from None
        except GithubException as exc:
            if write and exc.status == 403:
                raise WriteForbidden(f"{doing}: {_message(exc)} (403)") from None
            raise BackendError(
                f"GitHub at {self.api_url} answered {exc.status} while {doing}: {_message(exc)}"
            ) from None
        except requests.RequestException as exc:
            raise BackendError(
                f"GitHub at {self.api_url} could not be reached while {doing} "
                f"({type(exc).__name__})"
            ) from None


_BASE_MOVES = frozenset({"base_ref_changed", "automatic_base_change_succeeded"})
"""A base edited by hand, or by GitHub when the base of a stacked pull request was merged."""


def _seg(value: str) -> str:
    """One URL path segment, every reserved character escaped."""
    return quote(value, safe="")


def _login(user: Any) -> str | None:
    """The ``login`` of a commit's ``simple-user``; None for null or ``{}`` (no account)."""
    login = user.get("login") if isinstance(user, dict) else None
    return str(login) if login else None


def _message(exc: GithubException) -> str:
    data = exc.data
    if isinstance(data, dict) and data.get("message"):
        return str(data["message"]).splitlines()[0][:300]
    return type(exc).__name__


def _parse_time(text: str) -> dt.datetime:
    return _utc(dt.datetime.fromisoformat(text.replace("Z", "+00:00")))


def _utc(moment: dt.datetime) -> dt.datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)
