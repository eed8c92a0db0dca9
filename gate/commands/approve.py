"""``budget-gate approve``: record an approval of one spec version and its worst-case cost."""

from __future__ import annotations

import argparse

from gate.commands.common import ledger_view, utc_now
from gate.commands.records import (
    checked_text,
    describe,
    evaluate_for_record,
    new_record,
    refuse_violation,
    requirement,
)
from gate.errors import InputError
from gate.ledger import DEFAULT_EXPIRY, RecordKind, Source, authorize, parse_expiry
from gate.report import Outcome


def run(args: argparse.Namespace) -> int:
    """Refuse approvers the policy does not list (exit 3); else append the approval."""
    span = parse_expiry(args.expires or DEFAULT_EXPIRY)
    reason = checked_text(args.reason, "--reason")
    by = checked_text(args.by, "--by")
    assert by is not None
    now = utc_now()
    view = ledger_view(args, now, approvals=False)
    evaluation = evaluate_for_record(args, view)
    if isinstance(evaluation, int):
        return evaluation
    if evaluation.result.outcome is Outcome.VIOLATION:
        return refuse_violation(args, evaluation, "approve")
    refusal = authorize(by, Source.LOCAL, requirement(evaluation))
    if refusal is not None:
        raise InputError(
            f"cannot approve {args.spec}: {refusal}",
            hint="ask a listed approver, or approve the pull request on GitHub",
        )
    record = new_record(
        evaluation,
        RecordKind.APPROVAL,
        now,
        by=by,
        reason=reason,
        pr_number=args.pr,
        expires_at=now + span,
    )
    run_id = view.store().append(record)
    print("approved " + "\n".join(describe(record, run_id, view.where)))
    if evaluation.result.outcome is Outcome.PASS:
        print("  note: this version needs no approval under the current policy")
    return 0
