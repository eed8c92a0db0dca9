"""The values the pull-request flow reads from GitHub, independent of the client library.

The facade in :mod:`gate.integrations.github.client` builds these from GitHub's answers, so
the decisions in :mod:`gate.ci.approvals` and :mod:`gate.ci.decisions` are plain functions
of plain values and are tested without HTTP.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PullInfo:
    """A pull request as the flow needs it: who opened it, its commits, labels and requests."""

    number: int
    author: str
    state: str
    head_sha: str
    base_sha: str
    base_ref: str
    labels: tuple[str, ...] = ()
    requested_users: tuple[str, ...] = ()
    requested_teams: tuple[str, ...] = ()
    changed_files: int | None = None
    """How many files GitHub says the pull request changes (its file list stops at 3,000)."""
    commits: int | None = None
    """How many commits GitHub counts in the pull request: the walk of its history stops
    there, so no commit of the base is taken for one of the pull request's."""
    default_branch: str = ""
    """The repository's default branch: a pull request into another base has a status of its
    own, so it never turns a commit green for the one into the default branch."""


@dataclass(frozen=True, slots=True)
class ChangedFile:
    """One entry of the pull request's file list (``previous_path`` for a rename)."""

    path: str
    status: str
    previous_path: str | None = None

    @property
    def removed(self) -> bool:
        """The file is gone at the head."""
        return self.status == "removed"

    @property
    def base_path(self) -> str | None:
        """Where the file was at the base, or None when the pull request adds it."""
        if self.status == "added":
            return None
        return self.previous_path or self.path


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """A commit: its committer date, the paths it touched, its parents and who made it."""

    sha: str
    date: dt.datetime
    paths: frozenset[str]
    parents: tuple[str, ...] = ()
    complete: bool = True
    """Whether ``paths`` is every path: GitHub lists at most 3,000 files of a commit."""
    author: str | None = None
    """The GitHub login of the commit's author; None when its email is linked to no account."""
    committer: str | None = None
    """The committer's login (``web-flow`` for GitHub's own commits); None as for ``author``."""
    base_merge: bool = False
    """A merge whose other parents are on the base's first-parent line (GitHub's "Update
    branch"): what it brought in is the base's. Only the walk of the history can tell."""


@dataclass(frozen=True, slots=True)
class ReviewInfo:
    """A submitted review; ``state`` in the REST API's upper case (APPROVED, ...)."""

    id: int
    login: str
    is_bot: bool
    state: str
    submitted_at: dt.datetime | None
    commit_id: str | None
    body: str = ""


@dataclass(frozen=True, slots=True)
class CommentInfo:
    """A conversation comment on the pull request."""

    id: int
    login: str
    is_bot: bool
    body: str
    created_at: dt.datetime
    updated_at: dt.datetime
    ours: bool = False
    """Posted by the account budget-gate posts as (the action's ``bot-login``): only such a
    comment is its sticky report, and only its hidden lines bind approvals."""
