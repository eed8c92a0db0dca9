"""The fake GitHub's world: accounts, orgs/teams, repos, pull requests and what happens on them.

Why a separate module: tests seed and inspect this state directly (``fake.repo("o/r").pull(2)``),
while the HTTP layer (fake_github.py) only reads and mutates it through request handlers. It is
plain data plus small seeding helpers, so a test reads like the situation it sets up.

Refs: a branch name resolves to the commit it points at; file contents are stored per commit,
so ``put_file(..., ref="master")`` and ``?ref=<base sha>`` see the same snapshot.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# GitHub's permission levels → (legacy ``permission`` field, ``role_name`` field).
PERMISSIONS: dict[str, tuple[str, str]] = {
    "admin": ("admin", "admin"),
    "maintain": ("write", "maintain"),
    "write": ("write", "write"),
    "triage": ("read", "triage"),
    "read": ("read", "read"),
    "none": ("none", "none"),
}
REVIEW_STATES = frozenset({"APPROVED", "COMMENTED", "CHANGES_REQUESTED", "DISMISSED", "PENDING"})
FILE_STATUSES = frozenset({"added", "removed", "modified", "renamed", "copied", "changed"})
ACTIONS_BOT = "github-actions[bot]"
ACTIONS_BOT_ID = 41898282


def utc_now() -> dt.datetime:
    """The real time, to the second (what GitHub timestamps carry)."""
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def parse_time(value: str | dt.datetime | None) -> dt.datetime | None:
    """An ISO-8601 timestamp as GitHub writes it (``...Z``) → aware datetime."""
    if value is None or isinstance(value, dt.datetime):
        return value
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def fake_sha(*parts: object) -> str:
    """A deterministic 40-hex commit/blob id."""
    return hashlib.sha1(":".join(map(str, parts)).encode()).hexdigest()


@dataclass(kw_only=True)
class Account:
    """A user, bot or organization account."""

    login: str
    id: int
    type: str = "User"
    name: str | None = None
    created_at: dt.datetime


@dataclass(kw_only=True)
class TeamMember:
    """A team membership: ``state`` active or pending, ``role`` member or maintainer."""

    state: str = "active"
    role: str = "member"


@dataclass(kw_only=True)
class Team:
    """A team in an org, addressed by slug (and by id on the legacy endpoints)."""

    org: str
    slug: str
    id: int
    name: str
    members: dict[str, TeamMember] = field(default_factory=dict)


@dataclass(kw_only=True)
class Org:
    """An organization: its teams by slug."""

    login: str
    id: int
    teams: dict[str, Team] = field(default_factory=dict)


@dataclass(kw_only=True)
class FileChange:
    """One file of a pull request or commit diff."""

    filename: str
    status: str = "modified"
    patch: str | None = None
    previous_filename: str | None = None

    def __post_init__(self) -> None:
        if self.status not in FILE_STATUSES:
            raise ValueError(f"file status {self.status!r} is not one of {sorted(FILE_STATUSES)}")

    def _count(self, sign: str) -> int:
        lines = (self.patch or "").splitlines()
        return sum(1 for line in lines if line.startswith(sign) and not line.startswith(sign * 3))

    @property
    def additions(self) -> int:
        """Added lines in the patch."""
        return self._count("+")

    @property
    def deletions(self) -> int:
        """Removed lines in the patch."""
        return self._count("-")


@dataclass(kw_only=True)
class Commit:
    """A commit: who, when, and which files it touched."""

    sha: str
    date: dt.datetime
    message: str = "Update"
    author: str | None = None
    committer: str | None = None
    """The committer's login (``web-flow`` for GitHub's own commits); None: the author."""
    linked: bool = True
    """False: the commit's emails belong to no account, so GitHub's ``author`` and
    ``committer`` are null (the git signature still names them)."""
    files: list[FileChange] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class Comment:
    """An issue (or pull request conversation) comment."""

    id: int
    issue_number: int
    author: str
    body: str
    created_at: dt.datetime
    updated_at: dt.datetime


@dataclass(kw_only=True)
class Review:
    """A submitted pull request review (REST states are upper-case)."""

    id: int
    author: str
    state: str
    commit_id: str
    submitted_at: dt.datetime
    body: str = ""


@dataclass(kw_only=True)
class IssueEvent:
    """An entry of the issue events API (``base_ref_changed``: a pull request's base moved)."""

    id: int
    actor: str
    event: str
    created_at: dt.datetime


@dataclass(kw_only=True)
class Status:
    """A commit status (one context's report on one sha)."""

    id: int
    sha: str
    state: str
    context: str
    description: str | None
    target_url: str | None
    creator: str
    created_at: dt.datetime


@dataclass(kw_only=True)
class CheckRun:
    """A check run; ``output`` keeps GitHub's title/summary/text keys."""

    id: int
    name: str
    head_sha: str
    status: str = "queued"
    conclusion: str | None = None
    started_at: dt.datetime | None = None
    completed_at: dt.datetime | None = None
    details_url: str | None = None
    external_id: str | None = None
    output: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True)
class Issue:
    """An issue; pull requests are issues too (same numbers, comments and labels)."""

    number: int
    id: int
    author: str
    title: str = ""
    body: str | None = None
    state: str = "open"
    labels: list[str] = field(default_factory=list)
    created_at: dt.datetime
    updated_at: dt.datetime
    events: list[IssueEvent] = field(default_factory=list)


@dataclass(kw_only=True)
class PullRequest(Issue):
    """A pull request: head/base, review requests, changed files, reviews."""

    head_sha: str
    head_ref: str
    base_sha: str
    base_ref: str
    head_repo: str | None = None  # full name of a fork; None: same repository
    draft: bool = False
    merged: bool = False
    merge_commit_sha: str | None = None
    requested_users: list[str] = field(default_factory=list)
    requested_teams: list[str] = field(default_factory=list)
    files: list[FileChange] = field(default_factory=list)
    reviews: list[Review] = field(default_factory=list)


@dataclass(kw_only=True)
class Label:
    """A repository label."""

    id: int
    name: str
    color: str = "ededed"
    description: str = ""  # not None: the pull-request schema's labels forbid null here


def unified_patch(before: str | None, after: str | None) -> str:
    """GitHub's ``patch`` for a file: the unified diff hunks without the ---/+++ header."""
    lines = difflib.unified_diff(
        (before or "").splitlines(), (after or "").splitlines(), lineterm="", n=3
    )
    return "\n".join(list(lines)[2:])


@dataclass(kw_only=True)
class Repo:
    """A repository and everything the fake keeps per repository."""

    state: GitHubState = field(repr=False)
    owner: str
    name: str
    id: int
    default_branch: str = "main"
    private: bool = False
    fork: bool = False
    created_at: dt.datetime
    branches: dict[str, str] = field(default_factory=dict)
    contents: dict[str, dict[str, bytes]] = field(default_factory=dict)
    links: dict[str, dict[str, str]] = field(default_factory=dict)
    """Symbolic links per snapshot: path → target, relative to the link's folder as git keeps it."""
    commits: dict[str, Commit] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    comments: dict[int, Comment] = field(default_factory=dict)
    labels: dict[str, Label] = field(default_factory=dict)
    permissions: dict[str, str] = field(default_factory=dict)
    statuses: list[Status] = field(default_factory=list)
    check_runs: dict[int, CheckRun] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        """``owner/name``."""
        return f"{self.owner}/{self.name}"

    # --- refs, commits, contents -------------------------------------------------------------

    def resolve(self, ref: str | None) -> str:
        """A branch name (or ``refs/heads/<b>``) → its sha; anything else as given."""
        ref = (ref or self.default_branch).removeprefix("refs/heads/")
        return self.branches.get(ref, ref)

    def add_commit(
        self,
        sha: str | None = None,
        *,
        date: dt.datetime | str | None = None,
        files: Iterable[FileChange | str] = (),
        message: str = "Update",
        author: str | None = None,
        committer: str | None = None,
        linked: bool = True,
        parents: Iterable[str] = (),
        branch: str | None = None,
    ) -> Commit:
        """Record a commit (``files`` as FileChange or plain paths = modified); move ``branch``."""
        sha = sha or fake_sha(self.full_name, len(self.commits), message)
        changes = [f if isinstance(f, FileChange) else FileChange(filename=f) for f in files]
        when = parse_time(date) or self.state.clock()
        for login in (author, committer):
            if login:
                self.state.add_user(login)
        commit = Commit(
            sha=sha,
            date=when,
            message=message,
            author=author,
            committer=committer,
            linked=linked,
            files=changes,
            parents=list(parents),
        )
        self.commits[sha] = commit
        if branch:
            self.branches[branch] = sha
        return commit

    def ensure_commit(self, sha: str, *, date: dt.datetime | None = None) -> Commit:
        """The commit ``sha``, created empty if the fake has not seen it yet."""
        return self.commits.get(sha) or self.add_commit(sha, date=date)

    def reachable(self, sha: str) -> set[str]:
        """Every commit the fake knows that ``sha`` reaches through its parents, itself too."""
        seen: set[str] = set()
        todo = [sha]
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                known = self.commits.get(current)
                todo.extend(known.parents if known else ())
        return seen

    def pull_commits(self, pull: PullRequest) -> set[str]:
        """The pull request's commits as GitHub counts them: reached from head, not from base."""
        return self.reachable(pull.head_sha) - self.reachable(pull.base_sha)

    def put_file(self, path: str, content: str | bytes, *, ref: str | None = None) -> None:
        """Store ``content`` at ``path`` in the snapshot ``ref`` resolves to (default branch)."""
        data = content.encode() if isinstance(content, str) else content
        self.contents.setdefault(self.resolve(ref), {})[path.strip("/")] = data

    def delete_file(self, path: str, *, ref: str | None = None) -> None:
        """Remove ``path`` from the snapshot ``ref`` resolves to."""
        self.contents.get(self.resolve(ref), {}).pop(path.strip("/"), None)

    def files_at(self, ref: str | None) -> dict[str, bytes]:
        """All files (path → bytes) in the snapshot ``ref`` resolves to."""
        return self.contents.get(self.resolve(ref), {})

    def put_link(self, path: str, target: str, *, ref: str | None = None) -> None:
        """Store a symbolic link at ``path`` to ``target`` in the snapshot ``ref`` resolves to."""
        self.links.setdefault(self.resolve(ref), {})[path.strip("/")] = target

    def links_at(self, ref: str | None) -> dict[str, str]:
        """The symbolic links (path → target) in the snapshot ``ref`` resolves to."""
        return self.links.get(self.resolve(ref), {})

    # --- people ------------------------------------------------------------------------------

    def set_permission(self, login: str, level: str) -> None:
        """Make ``login`` a collaborator at ``level`` (admin/maintain/write/triage/read/none)."""
        if level not in PERMISSIONS:
            raise ValueError(f"permission {level!r} is not one of {sorted(PERMISSIONS)}")
        self.state.add_user(login)
        self.permissions[login] = level

    def permission_of(self, login: str) -> str:
        """The level of ``login``: the owner is admin, unlisted users have none."""
        return "admin" if login == self.owner else self.permissions.get(login, "none")

    def author_association(self, login: str) -> str:
        """GitHub's ``author_association`` for ``login`` on this repository."""
        if login == self.owner:
            return "OWNER"
        return "NONE" if self.permission_of(login) == "none" else "COLLABORATOR"

    # --- issues and pull requests ------------------------------------------------------------

    def add_issue(
        self,
        number: int,
        *,
        author: str,
        title: str = "",
        body: str | None = None,
        labels: Iterable[str] = (),
    ) -> Issue:
        """A plain issue (not a pull request)."""
        now = self.state.clock()
        self.state.add_user(author)
        issue = Issue(
            number=number,
            id=self.state.next_id(),
            author=author,
            title=title,
            body=body,
            created_at=now,
            updated_at=now,
        )
        self.issues[number] = issue
        self.add_labels(number, labels)
        return issue

    def add_pull(
        self,
        number: int,
        *,
        author: str,
        head_sha: str | None = None,
        head_ref: str = "feature",
        base_sha: str | None = None,
        base_ref: str | None = None,
        title: str = "",
        body: str | None = None,
        state: str = "open",
        labels: Iterable[str] = (),
        draft: bool = False,
        head_repo: str | None = None,
        id: int | None = None,
        created_at: dt.datetime | str | None = None,
    ) -> PullRequest:
        """A pull request; registers its head/base commits and branches (and a fork's repo).

        ``head_repo`` names the fork a PR comes from; None (or this repo) means a same-repo PR.
        """
        now = parse_time(created_at) or self.state.clock()
        base_ref = base_ref or self.default_branch
        head_sha = head_sha or fake_sha(self.full_name, number, "head")
        base_sha = base_sha or self.branches.get(base_ref) or fake_sha(self.full_name, "base")
        self.state.add_user(author)
        pull = PullRequest(
            number=number,
            id=id or self.state.next_id(),
            author=author,
            title=title,
            body=body,
            state=state,
            draft=draft,
            head_sha=head_sha,
            head_ref=head_ref,
            base_sha=base_sha,
            base_ref=base_ref,
            head_repo=head_repo if head_repo != self.full_name else None,
            created_at=now,
            updated_at=now,
        )
        self.issues[number] = pull
        self.add_labels(number, labels)
        self.ensure_commit(base_sha, date=now)
        self.ensure_commit(head_sha, date=now)
        self.branches[base_ref] = base_sha
        head_home = self.state.add_repo(pull.head_repo, fork=True) if pull.head_repo else self
        head_home.branches[head_ref] = head_sha
        head_home.ensure_commit(head_sha, date=now)
        return pull

    def issue(self, number: int) -> Issue:
        """Issue (or pull request) ``number``."""
        return self.issues[number]

    def pull(self, number: int) -> PullRequest:
        """Pull request ``number``."""
        pull = self.issues[number]
        if not isinstance(pull, PullRequest):
            raise KeyError(f"#{number} is an issue, not a pull request")
        return pull

    def base_edited(self, number: int, *, by: str, at: dt.datetime | None = None) -> None:
        """Record that pull request ``number``'s base was edited (``base_ref_changed``).

        The tests set ``base_ref`` and ``base_sha`` themselves; this is GitHub's dated trace.
        """
        pull = self.pull(number)
        self.state.add_user(by)
        when = at or self.state.clock()
        event = IssueEvent(id=self.state.next_id(), actor=by, event="base_ref_changed",
                           created_at=when)  # fmt: skip
        pull.events.append(event)

    def change_file(
        self,
        number: int,
        path: str,
        *,
        before: str | None = None,
        after: str | None = None,
        previous_path: str | None = None,
        patch: str | None = None,
    ) -> FileChange:
        """Make pull request ``number`` change ``path``: contents at base/head, the diff entry.

        The status follows from the arguments: no ``before`` → added, no ``after`` → removed,
        ``previous_path`` → renamed, else modified. ``patch`` defaults to the unified diff.
        """
        pull = self.pull(number)
        old_path = previous_path or path
        if before is not None:
            self.put_file(old_path, before, ref=pull.base_sha)
        if after is not None:
            self.put_file(path, after, ref=pull.head_sha)
        if previous_path:
            status = "renamed"
        else:
            status = "added" if before is None else "removed" if after is None else "modified"
        change = FileChange(
            filename=path,
            status=status,
            patch=patch if patch is not None else unified_patch(before, after),
            previous_filename=previous_path,
        )
        pull.files.append(change)
        self.ensure_commit(pull.head_sha).files.append(change)
        return change

    # --- conversation ------------------------------------------------------------------------

    def add_labels(self, number: int, names: Iterable[str]) -> None:
        """Add labels to issue ``number``, creating repository labels GitHub-style."""
        issue = self.issues[number]
        for name in names:
            if name not in self.labels:
                self.labels[name] = Label(id=self.state.next_id(), name=name)
            if name not in issue.labels:
                issue.labels.append(name)

    def add_comment(
        self,
        number: int,
        author: str,
        body: str,
        *,
        created_at: dt.datetime | str | None = None,
        id: int | None = None,
    ) -> Comment:
        """A comment by ``author`` on issue/pull request ``number``."""
        if number not in self.issues:
            raise KeyError(f"no issue #{number} in {self.full_name}")
        when = parse_time(created_at) or self.state.clock()
        self.state.add_user(author)
        comment = Comment(
            id=id or self.state.next_id(),
            issue_number=number,
            author=author,
            body=body,
            created_at=when,
            updated_at=when,
        )
        self.comments[comment.id] = comment
        return comment

    def comments_on(self, number: int) -> list[Comment]:
        """Comments on issue ``number``, oldest first."""
        found = [c for c in self.comments.values() if c.issue_number == number]
        return sorted(found, key=lambda c: (c.created_at, c.id))

    def add_review(
        self,
        number: int,
        author: str,
        state: str,
        *,
        commit_id: str | None = None,
        submitted_at: dt.datetime | str | None = None,
        body: str = "",
        id: int | None = None,
    ) -> Review:
        """A submitted review; ``state`` in either webhook (lower) or REST (upper) case."""
        pull = self.pull(number)
        if state.upper() not in REVIEW_STATES:
            raise ValueError(f"review state {state!r} is not one of {sorted(REVIEW_STATES)}")
        self.state.add_user(author)
        review = Review(
            id=id or self.state.next_id(),
            author=author,
            state=state.upper(),
            commit_id=commit_id or pull.head_sha,
            submitted_at=parse_time(submitted_at) or self.state.clock(),
            body=body,
        )
        pull.reviews.append(review)
        return review

    # --- statuses ----------------------------------------------------------------------------

    def latest_statuses(self, sha: str) -> list[Status]:
        """The newest status per context for ``sha``, newest first (what GitHub combines)."""
        latest: dict[str, Status] = {}
        for status in sorted(self.statuses, key=lambda s: s.id, reverse=True):
            if status.sha == sha:
                latest.setdefault(status.context, status)
        return list(latest.values())

    def combined_state(self, sha: str) -> str:
        """failure if any context failed/errored, pending if any is pending or none exist."""
        states = {s.state for s in self.latest_statuses(sha)}
        if states & {"failure", "error"}:
            return "failure"
        return "pending" if not states or "pending" in states else "success"


class GitHubState:
    """Accounts, orgs and repositories, with the seeding API tests use."""

    def __init__(self, clock: Callable[[], dt.datetime] = utc_now) -> None:
        self.clock = clock
        self.users: dict[str, Account] = {}
        self.orgs: dict[str, Org] = {}
        self.repos: dict[str, Repo] = {}
        self._ids = itertools.count(10_000_000_001)

    def next_id(self) -> int:
        """A fresh numeric id (comments, labels, statuses, ...)."""
        return next(self._ids)

    def add_user(
        self, login: str, *, type: str = "User", id: int | None = None, name: str | None = None
    ) -> Account:
        """The account ``login``, created if new (``type`` User, Bot or Organization)."""
        if login not in self.users:
            self.users[login] = Account(
                login=login,
                id=id or self.next_id(),
                type=type,
                name=name,
                created_at=self.clock(),
            )
        return self.users[login]

    def add_org(self, login: str, *, id: int | None = None) -> Org:
        """The organization ``login``, created if new."""
        account = self.add_user(login, type="Organization", id=id)
        return self.orgs.setdefault(login, Org(login=login, id=account.id))

    def add_team(
        self,
        org: str,
        slug: str,
        *,
        name: str | None = None,
        id: int | None = None,
        members: Iterable[str] | Mapping[str, str] = (),
    ) -> Team:
        """A team ``org/slug``; ``members`` as logins (active) or login → active/pending."""
        owner = self.add_org(org)
        team = owner.teams.setdefault(
            slug, Team(org=org, slug=slug, id=id or self.next_id(), name=name or slug)
        )
        states = members if isinstance(members, Mapping) else dict.fromkeys(members, "active")
        for login, state in states.items():
            self.set_team_member(org, slug, login, state)
        return team

    def team(self, org: str, slug: str) -> Team:
        """Team ``org/slug``."""
        return self.orgs[org].teams[slug]

    def team_by_id(self, team_id: int) -> Team | None:
        """The team with numeric ``team_id`` (legacy endpoints), if any."""
        teams = (t for o in self.orgs.values() for t in o.teams.values())
        return next((t for t in teams if t.id == team_id), None)

    def set_team_member(
        self, org: str, slug: str, login: str, state: str | None = "active", role: str = "member"
    ) -> None:
        """Set ``login``'s membership of ``org/slug``: active, pending, or None (absent)."""
        team = self.team(org, slug)
        if state is None:
            team.members.pop(login, None)
            return
        self.add_user(login)
        team.members[login] = TeamMember(state=state, role=role)

    def add_repo(
        self,
        full_name: str,
        *,
        default_branch: str = "main",
        private: bool = False,
        fork: bool = False,
        id: int | None = None,
        owner_type: str = "User",
    ) -> Repo:
        """The repository ``owner/name``, created if new."""
        if full_name in self.repos:
            return self.repos[full_name]
        owner, name = full_name.split("/")
        self.add_user(owner, type=owner_type)
        repo = Repo(
            state=self,
            owner=owner,
            name=name,
            id=id or self.next_id(),
            default_branch=default_branch,
            private=private,
            fork=fork,
            created_at=self.clock(),
        )
        self.repos[full_name] = repo
        return repo

    def repo(self, full_name: str) -> Repo:
        """Repository ``owner/name``."""
        return self.repos[full_name]
