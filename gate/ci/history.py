"""Which commits of a pull request changed a spec: a first-parent walk from the head.

The last of them decides which approvals are recent enough (:func:`gate.ci.approvals.
timing_refusal`); all of them say who made the change (:mod:`gate.ci.contributors`). The
walk follows first parents because a merge's first parent is the branch it was made on: it
stays on the pull request's own line and steps over what a merge of the base brought in,
while the merge itself, whose diff against its first parent shows that, is on the walk.
A merge whose other parents are all on the base's first-parent line is marked a base merge
(``CommitInfo.base_merge``): only then is what it brought in proven to be the base's.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Protocol

from gate.ci.approvals import SpecChange
from gate.ci.model import CommitInfo, PullInfo

MAX_WALK = 100
"""How many commits back from the head to look for the changes to a spec (and, past a
merge, back from the base's tip for where the pull request left it)."""


class CommitReader(Protocol):
    """Reads one commit, and when the base was last edited (the GitHub facade's)."""

    def commit(self, sha: str) -> CommitInfo: ...  # noqa: D102
    def base_moved_at(self, number: int) -> dt.datetime | None: ...  # noqa: D102


class SpecHistory:
    """The history of the pull request's specs, each commit read from GitHub at most once.

    # NOTE: the cut-down API has no "list commits"; each step is one repos/get-commit. A
    # spec not found within MAX_WALK commits (or before the base) is taken as changed at
    # the head, so only approvals of the head itself count: safe, if strict. The walk also
    # stops after as many commits as GitHub counts in the pull request, so a base that
    # moved on since the branch point does not lead it into the base's own history; once it
    # has stepped over a merge (whose other side GitHub counts too), it stops at the first
    # commit on the base's own first-parent line.
    """

    def __init__(
        self, gh: CommitReader, pull: PullInfo, head: str, moved_by: dt.datetime | None = None
    ) -> None:
        """Read ``pull`` from ``head``; ``moved_by``: the base was edited by then.

        That is this run's ``edited`` event, which GitHub's issue events may not show yet.
        """
        self._gh, self._head, self._base, self._number = gh, head, pull.base_sha, pull.number
        self._moved: tuple[dt.datetime | None] | None = None
        self._moved_by = moved_by
        self._limit = MAX_WALK if pull.commits is None else max(1, min(MAX_WALK, pull.commits))
        self._known = pull.commits
        self._commits: dict[str, CommitInfo] = {}
        self._base_line: set[str] | None = None

    def _commit(self, sha: str) -> CommitInfo:
        if sha not in self._commits:
            self._commits[sha] = self._gh.commit(sha)
        return self._commits[sha]

    def _walk(self) -> tuple[list[CommitInfo], bool]:
        """The first-parent line from the head, and whether it reached the first commit."""
        line: list[CommitInfo] = []
        sha, merged = self._head, False
        for _ in range(self._limit):
            if merged and sha in self._on_base():
                return line, True
            commit = self._commit(sha)
            if len(commit.parents) > 1:
                merged, commit = True, self._marked(commit)
            line.append(commit)
            if not commit.parents or commit.parents[0] == self._base:
                return line, True
            sha = commit.parents[0]
        return line, self._known is not None and len(line) >= self._known

    def _marked(self, merge: CommitInfo) -> CommitInfo:
        """``merge`` with ``base_merge`` set when every other parent is on the base's line.

        Only then is it proven to bring in the base (what "Update branch" does); a merge of
        any other branch, GitHub's button included, brings in what someone chose.
        """
        return replace(merge, base_merge=all(p in self._on_base() for p in merge.parents[1:]))

    def _on_base(self) -> set[str]:
        """The base's first-parent line from its tip, MAX_WALK commits of it, read once."""
        if self._base_line is None:
            self._base_line, sha = set(), self._base
            for _ in range(MAX_WALK):
                self._base_line.add(sha)
                parents = self._commit(sha).parents
                if not parents:
                    break
                sha = parents[0]
        return self._base_line

    def base_moved_at(self) -> dt.datetime | None:
        """When the pull request's base was last edited (GitHub's date), read once."""
        if self._moved is None:
            read = self._gh.base_moved_at(self._number)
            known = [m for m in (read, self._moved_by) if m is not None]
            self._moved = (max(known) if known else None,)
        return self._moved[0]

    def last_change(self, path: str) -> SpecChange:
        """The spec's last change, the commits since it, and every change the walk saw."""
        line, complete = self._walk()
        moved = self.base_moved_at()
        # NOTE: a commit of more than 3,000 files is listed in part: it may hold the
        # change, so it is taken to (an approval of an older commit would not count).
        changes = tuple(c for c in line if path in c.paths or not c.complete)
        walked = frozenset({*(c.sha for c in line), self._base}) if complete else frozenset()
        if not changes:
            head = line[0]
            return SpecChange(
                head.sha, head.date, frozenset({head.sha}), (), complete, moved, walked
            )
        last = changes[0]
        since = frozenset(c.sha for c in line[: line.index(last) + 1])
        return SpecChange(last.sha, last.date, since, changes, complete, moved, walked)
