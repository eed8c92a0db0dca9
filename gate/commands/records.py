"""Shared plumbing of the commands that write to the ledger: evaluate, authorize, record."""

from __future__ import annotations

import argparse
import datetime as dt
import getpass
import os
import sys
import unicodedata
from collections import Counter
from dataclasses import dataclass, replace

from gate.commands.common import (
    ledger_view,
    make_evaluator,
    make_report,
    print_errors,
    utc_now,
)
from gate.commands.output import write_stdout
from gate.errors import InputError, one_line
from gate.evaluation.evaluate import Evaluation
from gate.evaluation.report import SpecResult
from gate.ledger.approvals import Requirement
from gate.ledger.records import (
    LEDGER_EXPERIMENT,
    LedgerRecord,
    LedgerStore,
    RecordKind,
    short,
    when,
)
from gate.ledger.signing import Signer, Trust
from gate.ledger.tracking import COST_CENTER_LABEL
from gate.ledger.view import LedgerView
from gate.money import format_money
from gate.policy.findings import Outcome
from gate.policy.model import Policy
from gate.reporters.text import TextReporter
from gate.spec.experiment import Experiment

MAX_TEXT = 500


@dataclass(frozen=True, slots=True)
class Draft:
    """A writing command's evaluated spec, its ledger, and the (real) time it records."""

    evaluation: Evaluation
    view: LedgerView
    now: dt.datetime


def begin(args: argparse.Namespace, *, approvals: bool) -> Draft | int:
    """Evaluate the spec with the ledger; an invalid one ends the command with exit 3."""
    now = utc_now()
    view = ledger_view(args, now, approvals=approvals)
    evaluation = make_evaluator(args, ledger=view).evaluate_spec(args.spec)
    if evaluation.result.outcome is Outcome.INVALID:
        print_errors([evaluation.result])
        return evaluation.result.outcome.exit_code
    return Draft(evaluation, view, now)


def refuse_violation(args: argparse.Namespace, evaluation: Evaluation, doing: str) -> int:
    """Print the report of a spec that breaks the policy, and exit 1: approvals can't help."""
    report = make_report([evaluation.result], make_evaluator(args))
    write_stdout(TextReporter().render(report))
    print(
        f"budget-gate: cannot {doing} {args.spec}: it breaks the policy, and an approval "
        "never lifts an error — fix the spec first",
        file=sys.stderr,
    )
    return Outcome.VIOLATION.exit_code


def requirement(evaluation: Evaluation) -> Requirement:
    """What an approval of this evaluation must cover."""
    spec, policy, result = _parts(evaluation)
    assert result.fingerprint is not None and result.estimate is not None
    return Requirement(
        result.fingerprint,
        result.estimate.worst.cost,
        result.currency,
        policy.approval.approvers,
        spec.metadata.owner,
        tuple(policy.approval.sources),
    )


def signer_for(principal: str | None) -> Signer | None:
    """The key that signs what this command records (``BUDGET_GATE_SIGNING_KEY``), if set.

    ``principal`` is who the record names (``--by``); ``BUDGET_GATE_SIGNER`` overrides it.
    """
    from gate.integrations.signing import signer_from

    return signer_from(os.environ, principal=principal)


def say_ledger(view: LedgerView, *, wrote: bool = False) -> None:
    """What a writing command read of the ledger, on stderr: unsigned, or records it ignored.

    A command that ``wrote`` its record into a ledger that was not there made it: that is
    said as such, not as a ledger "read as empty" (the file it has just created).
    """
    from gate.commands.common import ledger_note

    note = ledger_note(view)
    if note is not None and wrote and note.absent:
        note = replace(note, absent=False)
        print(f"budget-gate: note: no ledger was at {note.where}: made it", file=sys.stderr)
    for line in note.lines() if note is not None else ():
        print(f"budget-gate: {line}", file=sys.stderr)


def say_ignored(store: LedgerStore) -> None:
    """How many records a read left out, and why, on stderr (nothing when none)."""
    ignored = Counter(store.ignored.values())
    if ignored:
        why = "; ".join(f"{n} {reason}" for reason, n in sorted(ignored.items()))
        total = sum(ignored.values())
        noun = "record" if total == 1 else "records"
        print(f"budget-gate: {total} ledger {noun} ignored ({why})", file=sys.stderr)


def warn_unsigned(trust: Trust) -> None:
    """Say on stderr, on every command that reads the ledger, that records are unsigned."""
    warning = trust.warning()
    if warning is not None:
        print(f"budget-gate: warning: {warning}", file=sys.stderr)


def who_ran() -> tuple[str | None, str | None]:
    """The OS login and ``git config user.email`` of whoever runs this command (either unknown).

    Neither proves who approved (both are set by the user), but both go on record beside
    the ``--by`` name a local approval claims.
    """
    from gate.integrations.git.repo import user_email

    return os_user(), user_email()


def os_user() -> str | None:
    """The OS login name, or ``None`` where there is none (some containers)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return None


def new_record(
    evaluation: Evaluation,
    kind: RecordKind,
    now: dt.datetime,
    *,
    by: str,
    reason: str | None,
    pr_number: int | None = None,
    expires_at: dt.datetime | None = None,
    revokes: tuple[str, ...] = (),
) -> LedgerRecord:
    """A local record of ``kind`` about the evaluated spec, at ``now``, with its estimate.

    It carries who ran the command (:func:`who_ran`) beside who it names in ``by``.
    """
    spec, _, result = _parts(evaluation)
    assert result.fingerprint is not None and result.estimate is not None
    costs = kind in (RecordKind.REQUEST, RecordKind.APPROVAL)
    user, email = who_ran()
    return LedgerRecord(
        kind=kind,
        spec=evaluation.path or result.file,
        fingerprint=result.fingerprint,
        experiment=spec.metadata.name,
        recorded_at=now,
        currency=result.currency,
        worst_cost=result.estimate.worst.cost if costs else None,
        expected_cost=result.estimate.expected.cost if costs else None,
        team=spec.metadata.team,
        cost_center=spec.metadata.labels.get(COST_CENTER_LABEL),
        by=by,
        reason=reason,
        pr_number=pr_number,
        expires_at=expires_at,
        revokes=revokes,
        ran_by_user=user,
        ran_by_email=email,
    )


def checked_text(value: str | None, option: str) -> str | None:
    """A free-text option, stripped, at most 500 characters; empty is refused.

    A control character (a line break, a terminal escape) is refused too: the text is kept
    in the ledger and shown in terminals, CI logs and pull-request comments.
    """
    if value is None:
        return None
    text = value.strip()
    if not text or len(text) > MAX_TEXT:
        raise InputError(
            f"{option} must be 1 to {MAX_TEXT} characters", hint="say it in a sentence"
        )
    if any(unicodedata.category(ch) == "Cc" or ch in "\u2028\u2029" for ch in text):
        raise InputError(
            f"{option} contains a control character (a line break, a tab or an escape)",
            hint="say it on one line of plain text",
        )
    return text


def required_text(value: str | None, option: str) -> str:
    """Like :func:`checked_text`, for an option argparse already made required."""
    text = checked_text(value, option)
    if text is None:
        raise InputError(f"{option} is required")
    return text


def describe(record: LedgerRecord, run_id: str, where: str) -> list[str]:
    """Lines confirming a record: what, how much, who, until when, where it is stored."""
    lines = [one_line(f"{record.spec} — {record.experiment} ({short(record.fingerprint)})")]
    if record.worst_cost is not None and record.expected_cost is not None:
        lines.append(
            f"  worst case {format_money(record.worst_cost, record.currency)}, "
            f"expected {format_money(record.expected_cost, record.currency)}"
        )
    until = f" until {when(record.expires_at)}" if record.expires_at else ""
    why = f": {record.reason}" if record.reason else ""
    lines.append(f"  {record.kind.value} by {record.by}{until} ({record.source.value}){why}")
    if record.ran_by_user or record.ran_by_email:
        email = f" (git user.email {record.ran_by_email})" if record.ran_by_email else ""
        lines.append(f"  run by OS user {record.ran_by_user or 'unknown'}{email}")
    # NOTE: the MLflow run that holds the record, not the record's own id (in its signed
    # payload), which verify and revoke name
    lines.append(f"  stored as MLflow run {run_id} in experiment {LEDGER_EXPERIMENT} at {where}")
    return lines


def _parts(evaluation: Evaluation) -> tuple[Experiment, Policy, SpecResult]:
    assert evaluation.spec is not None and evaluation.policy is not None
    return evaluation.spec, evaluation.policy, evaluation.result
