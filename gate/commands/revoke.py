"""``budget-gate revoke``: cancel the approvals of one spec version with a new record."""

from __future__ import annotations

import argparse

from gate.commands.records import (
    begin,
    describe,
    new_record,
    required_text,
    requirement,
    say_ledger,
    signer_for,
)
from gate.errors import InputError
from gate.ledger.approvals import live_approvals, revoker_refusal
from gate.ledger.records import LedgerQuery, RecordKind, short


def run(args: argparse.Namespace) -> int:
    """Append a revocation; approvers and the spec owner may revoke, records stay."""
    reason = required_text(args.reason, "--reason")
    by = required_text(args.by, "--by")
    draft = begin(args, approvals=False)
    if isinstance(draft, int):
        return draft
    view, now = draft.view, draft.now
    need = requirement(draft.evaluation)
    refusal = revoker_refusal(by, need.approvers, need.owner)
    if refusal is not None:
        raise InputError(f"cannot revoke for {args.spec}: {refusal}")
    # NOTE: judged as every reader judges (a revocation counts only from one who may
    # revoke): an ignored one, say a listed launcher's, must not stop the approver's own.
    records = view.records(LedgerQuery(fingerprint=need.fingerprint))
    # NOTE: an approval covers one path; a copy of the spec at another path revokes its own
    # approvals only, never the original's (same version, another path).
    path = draft.evaluation.path
    # NOTE: and by the policies' history: a revocation by an approver who has since left
    # the list still stands, so the approval it withdrew is not live to revoke again.
    revoked = any(r.kind is RecordKind.REVOCATION for r in records)
    former = view.former() if revoked else frozenset()
    live = [
        a
        for a in live_approvals(records, now, (need.approvers, need.owner), former)
        if not path or a.spec == path
    ]
    if not live:
        raise InputError(
            f"{args.spec}: no approval of this version ({short(need.fingerprint)}) to revoke",
            hint="budget-gate verify shows what is recorded",
        )
    ids = tuple(a.record_id for a in live if a.record_id)
    record = new_record(
        draft.evaluation, RecordKind.REVOCATION, now, by=by, reason=reason, revokes=ids
    )
    run_id = view.store().append(record, signer_for(by))
    print("revoked " + "\n".join(describe(record, run_id, view.where)))
    say_ledger(view)
    for approval in live:
        print(f"  cancels {approval.summary()} ({approval.record_id})")
    return 0
