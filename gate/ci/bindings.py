"""Which commit each ``/budget-gate approve`` comment approved, and what keeps that known.

GitHub does not say which commit was the head when a comment was posted, so a comment
binds to the commit it names by its full SHA, or else to the head when its own run first
processes it; the binding is kept in the ledger (CI's records of the approvals it accepted)
and in the sticky comment's hidden lines, which later runs read back.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import takewhile

from gate.ci.approvals import FULL_SHA
from gate.ci.event import Event, named_commit, parse_command
from gate.ci.model import CommentInfo
from gate.evaluation.evaluate import Evaluation
from gate.ledger.records import LedgerQuery, LedgerRecord, RecordKind, Source
from gate.ledger.view import LedgerView
from gate.policy.findings import Outcome

BIND_WITHIN = dt.timedelta(minutes=10)
"""A ``/budget-gate approve`` processed later than this after it was posted binds to no
commit: the head may have moved since (a re-run, a queued runner), and it must be posted
again."""
STICKY_PREFIX = "<!-- budget-gate:comment:"
"""How budget-gate's sticky comment begins (its marker, :mod:`gate.reporters.markdown`)."""
_BOUND = re.compile(
    r"^<!-- budget-gate:bound:(comment-[0-9]+):([0-9a-f]{40}|[0-9a-f]{64}) -->$", re.MULTILINE
)


@dataclass(frozen=True, slots=True)
class Bound:
    """The comments' bindings this run knows, and which of them it may keep."""

    commits: dict[str, str]
    """``comment-<id>`` → the commit it approved: stored, named, or bound now."""
    stored: frozenset[str]
    """The keys read from the ledger or the sticky comment (bound by an earlier run)."""
    unbound: str | None
    """Why this run's own comment was not bound now, when it was not."""


def bindings(
    comments: list[CommentInfo],
    ledger: LedgerView | None,
    evaluations: list[Evaluation],
    event: Event,
    head_sha: str,
    now: dt.datetime,
    *,
    sticky: bool,
    signs: bool = False,
) -> Bound:
    """The commit each approving comment approved.

    A comment that names a commit by its full SHA approved that commit, whichever run reads
    it. Any other binds to the head when first processed: by its own run's first attempt
    (a re-run gets the same payload after the head may have moved), moments after it was
    posted, and only where the binding is kept: the ``sticky`` comment, unless the ledger's
    records must be signed, or the ledger (signed: only when this run ``signs`` as CI).
    Earlier bindings come from the ledger (CI's records of the approvals it accepted), and,
    unless the ledger's records must be signed, from the hidden lines that open budget-gate's
    own sticky comments (by the action's ``bot-login``: another bot's lines bind nothing).
    """
    bound: dict[str, str] = {}
    trust = ledger.trusted() if ledger is not None else None
    signed = trust is not None and trust.signed
    if not signed:
        bound.update(found for c in comments if c.ours for found in stored_bindings(c.body))
    if ledger is not None:
        for evaluation in evaluations:
            fp = evaluation.result.fingerprint
            if fp is not None and evaluation.result.outcome is Outcome.APPROVAL_REQUIRED:
                bound.update(_recorded(ledger.records(LedgerQuery(fingerprint=fp))))
    stored = frozenset(bound)
    for comment in comments:
        named = _named(comment)
        if named is not None and len(named) == FULL_SHA:
            bound[f"comment-{comment.id}"] = named  # NOTE: the approver's own words decide
    command, unbound = event.command, None
    if command is not None and f"comment-{command.comment_id}" not in bound:
        posted = next((c for c in comments if c.id == command.comment_id), None)
        kept = (sticky and not signed) or (ledger is not None and (signs or not signed))
        unbound = _unbound(posted, event.attempt, now, kept=kept)
        if unbound is None and named_commit(command.reason or "")[0] is None:
            bound[f"comment-{command.comment_id}"] = head_sha
    return Bound(bound, stored, unbound)


def stored_bindings(body: str) -> list[tuple[str, str]]:
    """The bindings a sticky comment keeps: in the hidden lines that open it, nowhere else.

    NOTE: a line further down may be quoted text (a spec's name, a bot echoing a comment).
    """
    if not body.startswith(STICKY_PREFIX):
        return []
    lines = takewhile(lambda line: line.startswith("<!-- budget-gate:"), body.splitlines())
    return [found for line in lines for found in _BOUND.findall(line)]


def _named(comment: CommentInfo) -> str | None:
    """The commit an approving comment names, if it is one (a person's, not budget-gate's)."""
    reason = None if comment.ours or comment.is_bot else parse_command(comment.body)
    return None if reason is None else named_commit(reason)[0]


def _unbound(
    comment: CommentInfo | None, attempt: int, now: dt.datetime, *, kept: bool
) -> str | None:
    """Why this run's own comment may not bind to the head now, or None when it may."""
    if comment is None:
        return "it was deleted before budget-gate read it"
    if now - comment.created_at > BIND_WITHIN:
        return (
            "budget-gate processed it more than 10 minutes after it was posted (a queued "
            "runner), when the head may have moved, so the commit it approved is unknown; "
            "comment again"
        )
    if attempt > 1:
        return (
            f"this run is a re-run (attempt {attempt}) of the comment's workflow, which binds "
            "no comment: the head may have moved since it was posted; comment again, or name "
            "the commit you approve: /budget-gate approve <the head's full SHA> <reason>"
        )
    if not kept:
        return (
            "nothing here keeps which commit a comment approved (the comment is off, or the "
            "ledger's records must be signed and this run has no CI key); name it: "
            "/budget-gate approve <the head's full SHA> <reason>, or approve with a review"
        )
    return None


def standing_bindings(
    bound: Bound, comments: list[CommentInfo], accepted: set[int]
) -> dict[str, str]:
    """The bindings the sticky comment keeps for later runs.

    Those of approving comments that still stand (unedited, naming no commit: a named one
    binds itself) and counted now or were kept before: a refused comment's binding is
    dropped, so comments by anyone cannot grow the sticky past GitHub's size limit.
    """
    standing = {
        f"comment-{c.id}"
        for c in comments
        if not c.ours
        and not c.is_bot
        and parse_command(c.body) is not None
        and c.updated_at == c.created_at
        and _named(c) is None
    }
    keep = bound.stored | {f"comment-{i}" for i in accepted}
    return {key: sha for key, sha in bound.commits.items() if key in standing and key in keep}


def _recorded(records: Iterable[LedgerRecord]) -> dict[str, str]:
    return {
        r.event_id: r.head_sha
        for r in records
        if r.kind is RecordKind.APPROVAL
        and r.source is Source.GITHUB_COMMENT
        and r.event_id
        and r.head_sha
    }


def binding_lines(bindings: dict[str, str]) -> str:
    """The hidden lines of the sticky comment that keep the comments' bindings."""
    return "".join(
        f"<!-- budget-gate:bound:{key}:{sha} -->\n" for key, sha in sorted(bindings.items())
    )
