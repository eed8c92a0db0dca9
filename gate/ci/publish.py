"""The pull-request flow, write side: sticky comment, commit status, label, reviews, reply.

Writes are independent: one that GitHub refuses with 403 (the read-only token of a fork's
pull request, or a workflow without the permission) is noted and the others are still
tried, so the run degrades to annotations and the job summary instead of failing. Any other
failure raises :class:`gate.errors.BackendError` (exit 4).

A run for a commit that is no longer the pull request's head still sets that commit's
status, but leaves the label and review requests to the newer run, and never overwrites a
comment written for another head (see :func:`gate.ci.decisions.may_write_comment`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from gate.ci.bindings import binding_lines, stored_bindings
from gate.ci.decisions import (
    APPROVAL_LABEL,
    CommentMode,
    commit_status,
    label_change,
    may_write_comment,
    reviewers_to_request,
    status_context,
)
from gate.ci.event import ApproveCommand
from gate.ci.flow import GitHub, Prepared
from gate.ci.model import CommentInfo
from gate.ci.policy_change import render as render_policy_change
from gate.ci.policy_change import status as policy_status
from gate.ci.scope import MAX_OUTSIDE, Outside
from gate.errors import BackendError, WriteForbidden
from gate.evaluation.report import Report
from gate.policy.findings import Outcome
from gate.reporters.markdown import COMMENT_LIMIT, MarkdownReporter, comment_marker, written_for
from gate.reporters.markup import code, escape, utf16_length

_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_MAX_REASONS = 50


class _Writes:
    """Runs writes, turning a 403 into a note instead of a failure."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def attempt(self, what: str, write: Callable[[], object], *, must: bool = True) -> bool:
        """Run ``write``; a 403 is a note, and so is any failure of one that is not a ``must``.

        The comment is not a ``must``: the status and the ledger decide, and one comment
        GitHub refuses (a body over its limit) must not keep them from being written.
        """
        try:
            write()
        except WriteForbidden as exc:
            self.notes.append(
                f"could not {what}: GitHub refused the write ({exc}); a fork's pull request "
                "gets a read-only token, so the report is in the annotations and job summary"
            )
            return False
        except BackendError as exc:
            if must:
                raise
            self.notes.append(f"could not {what} ({exc}); the report is in the job summary")
            return False
        return True


def publish(
    gh: GitHub,
    prepared: Prepared,
    report: Report,
    *,
    mode: CommentMode,
    run_url: str,
    command: ApproveCommand | None,
    moved_from: str | None = None,
) -> list[str]:
    """Write the run's results to the pull request; return notes on what was not written.

    ``moved_from``: the base an edit moved the pull request away from, whose status on the
    head is set back to pending (it would stay green for a merge into that base).
    """
    writes = _Writes()
    pull = prepared.pull
    current = prepared.head_sha == pull.head_sha
    state, description = commit_status(report)
    if prepared.policy_change is not None:
        state, description = policy_status(prepared.policy_change, state, description)
    context = status_context(pull)
    # NOTE: the status first: what branch protection reads must not wait on the comment
    writes.attempt(
        f"set the {context} status",
        lambda: gh.set_status(prepared.head_sha, state, description, context, run_url),
    )
    old = status_context(replace(pull, base_ref=moved_from)) if moved_from else context
    if old != context:  # NOTE: its green, for the base the pull request left, must not stay
        said = f"the pull request's base moved to {pull.base_ref}: judged there"[:140]
        writes.attempt(
            f"set the {old} status",
            lambda: gh.set_status(prepared.head_sha, "pending", said, old, run_url),
        )
    if mode is not CommentMode.OFF:
        _comment(gh, prepared, report, mode, writes)
    if current:
        _label_and_reviews(gh, prepared, report, writes)
    else:
        writes.notes.append(
            f"the pull request's head moved on to {pull.head_sha[:12]}: its own run sets the "
            "label and review requests"
        )
    writes.notes.extend(unread_notes(prepared.outside_read))  # the log says it too
    if command is not None and prepared.refusals:
        body = refusal_reply(command, prepared.refusals)
        writes.attempt(
            "reply to the /budget-gate approve comment",
            lambda: gh.create_comment(pull.number, body),
        )
    return writes.notes


def _comment(
    gh: GitHub, prepared: Prepared, report: Report, mode: CommentMode, writes: _Writes
) -> None:
    number = prepared.pull.number
    existing = None
    if mode is CommentMode.UPDATE:
        if prepared.comments is None:
            prepared.comments = gh.comments(number)
        marker = comment_marker(report.context)
        existing = sticky(prepared.comments, marker)
        writes.notes.extend(impostors(prepared.comments, marker))
    if prepared.bindings is None:  # NOTE: not judged this run: the sticky keeps what it holds
        prepared.bindings = dict(stored_bindings(existing.body)) if existing else {}
    body = comment_body(prepared, report)
    if existing is None:
        # A pull request that changes neither specs nor policies gets no comment.
        if report.results or report.diffs or prepared.policy_change or _outside(prepared):
            writes.attempt(
                "comment on the pull request",
                lambda: gh.create_comment(number, body),
                must=False,
            )
        return
    if not may_write_comment(written_for(existing.body), prepared.head_sha, prepared.pull.head_sha):
        writes.notes.append(
            "kept the comment written for a newer commit; this run's report is in the job summary"
        )
        return
    if existing.body != body:
        writes.attempt(
            "update the pull request comment",
            lambda: gh.update_comment(existing.id, body),
            must=False,
        )


def comment_body(prepared: Prepared, report: Report) -> str:
    """The sticky comment: the report, then the sections on policy changes and unjudged specs.

    The report is cut to leave room for the binding lines and the sections; sections that
    would take more than a quarter of GitHub's limit count their files instead of listing
    them (the log lists every one).
    """
    bindings = binding_lines(prepared.bindings) if prepared.bindings else ""
    section = outside_section(prepared.outside) + unread_section(prepared.outside_read)
    if utf16_length(section) > COMMENT_LIMIT // 4:
        section = outside_section(prepared.outside, listed=False) + unread_section(
            prepared.outside_read, listed=False
        )
    extra = utf16_length(bindings + section) + 2
    body = MarkdownReporter().render(report, limit=max(COMMENT_LIMIT - extra, COMMENT_LIMIT // 4))
    if bindings:
        # NOTE: after the markers, so the comment is still found and its head still read
        first, _, rest = body.partition("\n\n")
        body = f"{first}\n{bindings}\n{rest}"
    if prepared.policy_change is None and not _outside(prepared):
        return body
    room = COMMENT_LIMIT - utf16_length(body)
    if prepared.policy_change is not None:
        section = (
            render_policy_change(prepared.policy_change, room - utf16_length(section)) + section
        )
    footer = body.rfind("\n---\n")  # the prices and rules line closes the comment
    if footer < 0:
        return body + section
    return body[:footer] + section + body[footer:]


OUTSIDE_SHOWN = 20


def outside_section(paths: list[str], *, listed: bool = True) -> str:
    """Changed specs outside the ``specs`` globs: unjudged, yet a launch would judge them."""
    if not paths:
        return ""
    return (
        "\n\n### ⚠️ Specs this run did not judge\n\nThese changed files are specs "
        "(`kind: Experiment`, or a W&B, Katib, SkyPilot or Hydra file a launch judges as one) "
        f"but are outside the action's `specs` globs, so nothing here priced or gated them:"
        f"{_listed(paths, listed)}\n\nAdd them to `specs:` (or move them under it) to have them "
        "judged.\n"
    )


def unread_section(outside: Outside, *, listed: bool = True) -> str:
    """The changed spec files outside the globs this run did not read: each may be a spec."""
    if not outside.unread and not outside.unchecked:
        return ""
    said = "".join(f"\n- {code(path)}: {escape(why)}" for path, why in outside.unread)
    if not listed:
        said = _listed([path for path, _ in outside.unread], listed)
    if outside.unchecked:
        said += (
            f"\n- {len(outside.unchecked)} more, not read (a run reads at most {MAX_OUTSIDE}):"
            f"{_listed(outside.unchecked, listed)}"
        )
    return (
        "\n\n### ⚠️ Files this run could not tell are specs\n\nThese changed `.yaml`, "
        "`.yml` or `.json` files are outside the action's `specs` globs and were not read, "
        f"so any of them may be a spec nobody judged:{said}\n\nAdd them to `specs:` (or "
        "move them under it) to have them judged.\n"
    )


def unread_notes(outside: Outside) -> list[str]:
    """The same as log lines: one per file not read, and one for those past the cap."""
    lines = [
        f"{path} is outside the specs globs and was not read ({why}): it may be a spec "
        "nothing judged"
        for path, why in outside.unread
    ]
    if outside.unchecked:
        count = len(outside.unchecked)
        lines.append(
            f"{count} changed spec files outside the specs globs were not read (a run reads "
            f"at most {MAX_OUTSIDE}), so any may be a spec nothing judged: "
            + ", ".join(outside.unchecked[:OUTSIDE_SHOWN])
            + (f" and {count - OUTSIDE_SHOWN} more" if count > OUTSIDE_SHOWN else "")
        )
    return lines


def _listed(paths: list[str], listed: bool = True) -> str:
    if not listed:
        return f" {len(paths):,} files, each named in the job's log" if paths else ""
    shown = "".join(f"\n- {code(path)}" for path in paths[:OUTSIDE_SHOWN])
    more = f"\n- … and {len(paths) - OUTSIDE_SHOWN} more" if len(paths) > OUTSIDE_SHOWN else ""
    return shown + more


def _outside(prepared: Prepared) -> bool:
    """Whether the comment has a changed file outside the globs to tell of."""
    read = prepared.outside_read
    return bool(prepared.outside or read.unread or read.unchecked)


def sticky(comments: list[CommentInfo], marker: str) -> CommentInfo | None:
    """The oldest comment of ours (the action's ``bot-login``) that starts with ``marker``.

    # NOTE: only ours count: anyone else, a person or another bot (a branch's own workflow,
    # an App that echoes text), could post a comment starting with the marker and a forged
    # head to hijack or freeze the report.
    """
    return next((c for c in comments if c.ours and c.body.startswith(marker)), None)


def impostors(comments: list[CommentInfo], marker: str) -> list[str]:
    """Notes on bot comments that start with ``marker`` but are not ours: left alone, said."""
    return [
        f"comment {c.id} by {c.login} starts with budget-gate's marker but is not by the "
        "account budget-gate posts as (the action's bot-login): it is neither updated nor "
        f"read; if budget-gate posts as {c.login}, set bot-login: {c.login}"
        for c in comments
        if c.is_bot and not c.ours and c.body.startswith(marker)
    ]


def _label_and_reviews(gh: GitHub, prepared: Prepared, report: Report, writes: _Writes) -> None:
    pull = prepared.pull
    needs = any(r.outcome is Outcome.APPROVAL_REQUIRED for r in report.results)
    change = label_change(needs, pull.labels)
    if change == "remove":
        writes.attempt(
            f"remove the {APPROVAL_LABEL} label",
            lambda: gh.remove_label(pull.number, APPROVAL_LABEL),
        )
        return
    if change != "add":
        return
    # NOTE: reviews are requested when the label goes on, so approvers are asked once per
    # need (again after a push makes an approval stale), not on every run.
    if not writes.attempt(
        f"add the {APPROVAL_LABEL} label", lambda: gh.add_label(pull.number, APPROVAL_LABEL)
    ):
        return
    users, teams = reviewers_to_request(prepared.approvers, pull, gh.owner)
    if users or teams:
        refused: list[str] = []

        def ask() -> None:
            reason = gh.request_reviews(pull.number, users, teams)
            if reason is not None:
                refused.append(reason)

        writes.attempt("request reviews from the approvers", ask)
        if refused:
            asked = ", ".join([*users, *teams])
            writes.notes.append(f"GitHub refused the review request ({asked}): {refused[0]}")


def refusal_reply(command: ApproveCommand, reasons: list[str]) -> str:
    """The reply to a ``/budget-gate approve`` that was not accepted, with every reason."""
    login = command.login
    who = f"@{login}" if _LOGIN.match(login) else escape(login)
    shown = [f"- {escape(r)}" for r in reasons[:_MAX_REASONS]]
    if len(reasons) > _MAX_REASONS:
        shown.append(f"- … and {len(reasons) - _MAX_REASONS:,} more")
    return (
        f"{who} your `/budget-gate approve` was not accepted:\n\n" + "\n".join(shown) + "\n\n"
        "<sub>budget-gate judges approvals by the base branch's policy.</sub>\n"
    )
