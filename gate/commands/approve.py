"""``budget-gate approve``: record an approval of one spec version and its worst-case cost."""

from __future__ import annotations

import argparse

from gate.commands.common import utc_now
from gate.commands.records import (
    begin,
    describe,
    new_record,
    refuse_violation,
    required_text,
    requirement,
    say_ledger,
    signer_for,
)
from gate.errors import InputError, one_line
from gate.ledger.approvals import authorize, refuse_source
from gate.ledger.records import DEFAULT_EXPIRY, RecordKind, Source, expiry_after
from gate.policy.findings import Outcome


def run(args: argparse.Namespace) -> int:
    """Refuse approvers the policy does not list (exit 3); else append the approval.

    A spec that needs no approval is cleared already: a listed approver may still record
    one (it covers the spec should the policy tighten), anyone else is told it needs none
    and nothing is recorded (exit 0).
    """
    # NOTE: an empty --expires '' is refused as the malformed duration it is, not the default
    expires = DEFAULT_EXPIRY if args.expires is None else args.expires
    expiry_after(expires, utc_now())  # a bad --expires is refused before the ledger opens
    reason = required_text(args.reason, "--reason")
    by = required_text(args.by, "--by")
    draft = begin(args, approvals=False)
    if isinstance(draft, int):
        return draft
    evaluation = draft.evaluation
    if evaluation.result.outcome is Outcome.VIOLATION:
        return refuse_violation(args, evaluation, "approve")
    need = requirement(evaluation)
    if refusal := refuse_source(Source.LOCAL, need):
        raise InputError(
            f"cannot approve {args.spec} here: {refusal}",
            hint="approve the pull request on GitHub (a review, or /budget-gate approve)",
        )
    refusal = authorize(by, Source.LOCAL, need)
    if refusal is not None and evaluation.result.outcome is Outcome.PASS:
        print(one_line(f"{args.spec} needs no approval under the current policy; nothing recorded"))
        return 0
    if refusal is not None:
        raise InputError(
            f"cannot approve {args.spec}: {refusal}",
            hint="ask a listed approver, or approve the pull request on GitHub",
        )
    record = new_record(
        evaluation,
        RecordKind.APPROVAL,
        draft.now,
        by=by,
        reason=reason,
        pr_number=args.pr,
        expires_at=expiry_after(expires, draft.now),
    )
    run_id = draft.view.store().append(record, signer_for(by))
    print("approved " + "\n".join(describe(record, run_id, draft.view.where)))
    say_ledger(draft.view, wrote=True)
    if evaluation.result.outcome is Outcome.PASS:
        print("  note: this version needs no approval under the current policy")
    return 0
