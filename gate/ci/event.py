"""The triggering event: which pull request it concerns and whether it asks for a run.

Reads the webhook payload that GitHub Actions writes to ``GITHUB_EVENT_PATH`` (pure: the
command reads the file). Three events matter (and ``pull_request_target``, which carries
the same payload as ``pull_request``):

- ``pull_request`` opened, synchronize, reopened, labeled (or ready_for_review), or edited
  to another base branch: evaluate;
- ``pull_request_review`` submitted or dismissed: approvals may have changed;
- ``issue_comment`` created on a pull request, whose first line is ``/budget-gate approve
  [reason]``; or such a comment edited or deleted: its approval may be withdrawn.

Anything else is answered with a reason to do nothing, never an error, so one workflow can
listen to more events than it needs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gate.errors import InputError

PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target"})
PULL_REQUEST_ACTIONS = frozenset(
    {"opened", "synchronize", "reopened", "labeled", "ready_for_review"}
)
REVIEW_ACTIONS = frozenset({"submitted", "dismissed"})
COMMAND = re.compile(r"^/budget-gate[ \t]+approve(?:[ \t]+(?P<reason>\S.*?))?[ \t]*$")


@dataclass(frozen=True, slots=True)
class ApproveCommand:
    """A ``/budget-gate approve [reason]`` comment: the one that triggered this run."""

    comment_id: int
    login: str
    reason: str | None


@dataclass(frozen=True, slots=True)
class Event:
    """What the run is about: the pull request, and the commit or comment that triggered it.

    ``head_sha`` is set for ``pull_request`` events (the commit the run was started for);
    review and comment events judge the pull request's current head. ``skip`` says why
    there is nothing to do.
    """

    name: str
    action: str
    repository: str
    number: int | None = None
    head_sha: str | None = None
    command: ApproveCommand | None = None
    skip: str | None = None
    base_from: str | None = None
    """The base branch an ``edited`` event moved the pull request away from."""
    attempt: int = 1
    """Which attempt of its workflow run this is (``GITHUB_RUN_ATTEMPT``): a re-run carries
    the first run's payload, after the head may have moved."""


def parse_event(name: str, payload: Mapping[str, Any]) -> Event:
    """Decide from the event name and payload what this run is about."""
    try:
        return _parse(name, payload)
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        # NOTE: a field of another shape (a string for an object) or a number past an int
        # (1e999) is a payload GitHub does not send: an input error, never a crash.
        what = f"no field {exc.args[0]!r}" if isinstance(exc, KeyError) and exc.args else str(exc)
        raise InputError(
            f"the {name or 'unnamed'} event payload is not what GitHub sends for the events "
            f"budget-gate ci answers (pull_request, pull_request_review, issue_comment): "
            f"{what[:200]}",
            hint="run budget-gate ci from a GitHub Actions workflow (GITHUB_EVENT_PATH)",
        ) from None


def _parse(name: str, payload: Mapping[str, Any]) -> Event:
    action = str(payload.get("action") or "")
    repository = str(payload["repository"]["full_name"])
    base = Event(name, action, repository)
    if name in PULL_REQUEST_EVENTS:
        pull = payload["pull_request"]
        changes = payload.get("changes")
        rebased = action == "edited" and isinstance(changes, Mapping) and "base" in changes
        if action not in PULL_REQUEST_ACTIONS and not rebased:
            return _skip(base, f"pull request {action!r} needs no check")
        found = _with(base, int(pull["number"]), head_sha=str(pull["head"]["sha"]))
        if rebased and isinstance(changes, Mapping):
            moved = changes["base"].get("ref") if isinstance(changes["base"], Mapping) else None
            was = moved.get("from") if isinstance(moved, Mapping) else None
            return replace(found, base_from=str(was) if was else None)
        return found
    if name == "pull_request_review":
        number = int(payload["pull_request"]["number"])
        if action not in REVIEW_ACTIONS:
            return _skip(base, f"review {action!r} changes no approval")
        return _with(base, number)
    if name == "issue_comment":
        return _comment(base, payload)
    return _skip(base, f"event {name!r} is not one budget-gate ci handles")


def _comment(base: Event, payload: Mapping[str, Any]) -> Event:
    issue, comment = payload["issue"], payload["comment"]
    if not issue.get("pull_request"):
        return _skip(base, "the comment is on an issue, not a pull request")
    if base.action in ("edited", "deleted"):
        # NOTE: an approve command taken back (deleted, or edited away) withdraws its
        # approval: the run judges again, and revokes the ledger's copy.
        changes = payload.get("changes")
        body = changes.get("body") if isinstance(changes, Mapping) else None
        was = (body.get("from") if isinstance(body, Mapping) else None) or comment.get("body")
        if parse_command(str(was or "")) is None:
            return _skip(base, f"comment {base.action!r} was not a /budget-gate approve command")
        return _with(base, int(issue["number"]))
    if base.action != "created":
        return _skip(base, f"comment {base.action!r} is not a new command")
    command = parse_command(str(comment.get("body") or ""))
    if command is None:
        return _skip(base, "the comment is not a /budget-gate approve command")
    found = ApproveCommand(int(comment["id"]), str(comment["user"]["login"]), command or None)
    return _with(base, int(issue["number"]), command=found)


def run_attempt(value: str | None) -> int:
    """``GITHUB_RUN_ATTEMPT`` as a number (1 when unset: a run outside GitHub Actions).

    Raises:
        gate.errors.InputError: it is set to something other than a whole number from 1.
    """
    if value is None:
        return 1
    if not (value.isascii() and value.isdigit() and len(value) <= 6) or int(value) < 1:
        raise InputError(
            f"GITHUB_RUN_ATTEMPT {value[:40]!r} is not a run attempt (1, 2, …)",
            hint="leave GITHUB_RUN_ATTEMPT to GitHub Actions, which sets it",
        )
    return int(value)


def parse_command(body: str) -> str | None:
    """The reason of a ``/budget-gate approve [reason]`` comment ("" without one), else None.

    Only the first line counts, so quoting a command further down a comment approves
    nothing; and from its first character, as the workflow's ``startsWith`` starts a run:
    a command after a blank line or a space counted at a later run, but its deletion or
    edit started none, and the withdrawn approval stood.
    """
    first = body.splitlines()[0] if body else ""
    found = COMMAND.match(first.rstrip())
    if found is None:
        return None
    return found.group("reason") or ""


_COMMIT = re.compile(
    r"^(?P<open>[`(]?)(?P<commit>[0-9a-fA-F]{7,40})(?P<close>[`)]?)[:,]?(?:[ \t]+(?P<rest>\S.*))?$"
)


_FULL = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{40}(?![0-9a-fA-F])")


def named_commit(reason: str) -> tuple[str | None, str]:
    """The commit ``/budget-gate approve <commit> [reason]`` names (lowercase), and the rest.

    Naming the head the approver reviewed closes the moments between the comment and its
    workflow run, in which a push would otherwise be what the comment approves. The commit
    may be wrapped in backticks or parentheses and followed by ``:`` or ``,``. A first word
    of 7 to 11 hex digits names a commit only with both digits and letters a-f, so a reason
    that starts ``20240115`` or ``defaced`` is a reason; 12 or more name one always. A
    full SHA anywhere else in the reason names that commit.
    """
    found = _COMMIT.match(reason)
    if found is None or {"`": "`", "(": ")"}.get(found.group("open"), "") != found.group("close"):
        # NOTE: a full SHA elsewhere (a commit link, "approve, reviewed abc…f.") names that
        # commit too: taken for no commit, the comment would approve whatever the head is.
        anywhere = _FULL.search(reason)
        return (anywhere.group(0).lower(), reason) if anywhere else (None, reason)
    commit = found.group("commit").lower()
    mixed = any(c.isdigit() for c in commit) and any(c.isalpha() for c in commit)
    if len(commit) < 12 and not mixed:
        return None, reason
    return commit, found.group("rest") or ""


def _skip(base: Event, reason: str) -> Event:
    return Event(base.name, base.action, base.repository, skip=reason)


def _with(
    base: Event,
    number: int,
    *,
    head_sha: str | None = None,
    command: ApproveCommand | None = None,
) -> Event:
    return Event(base.name, base.action, base.repository, number, head_sha, command)
