"""``budget-gate request-approval``: record that a spec version awaits an approver."""

from __future__ import annotations

import argparse

from gate.commands.records import (
    begin,
    checked_text,
    describe,
    new_record,
    os_user,
    refuse_violation,
    say_ledger,
    signer_for,
)
from gate.errors import one_line
from gate.evaluation.evaluate import Evaluation
from gate.ledger.records import RecordKind
from gate.policy.findings import Outcome


def run(args: argparse.Namespace) -> int:
    """Append a request with the estimate; nothing is recorded when no approval is needed."""
    reason = checked_text(args.reason, "--reason")
    draft = begin(args, approvals=True)
    if isinstance(draft, int):
        return draft
    evaluation, view = draft.evaluation, draft.view
    result = evaluation.result
    if result.outcome is Outcome.VIOLATION:
        return refuse_violation(args, evaluation, "request approval for")
    if result.outcome is Outcome.PASS:
        found = result.approval.approval if result.approval else None
        status = f"is approved ({found.summary()})" if found else "needs no approval"
        print(one_line(f"{args.spec} {status}; nothing recorded"))
        return 0
    by = checked_text(args.by, "--by") or _requester(evaluation)
    record = new_record(
        evaluation, RecordKind.REQUEST, draft.now, by=by, reason=reason, pr_number=args.pr
    )
    run_id = view.store().append(record, signer_for(by))
    print("requested approval for " + "\n".join(describe(record, run_id, view.where)))
    say_ledger(view, wrote=True)
    for finding in result.findings:
        if finding.active:
            print(f"  {finding.severity.value} {finding.rule_id} {finding.message}")
    assert evaluation.policy is not None
    print(f"  approvers: {evaluation.policy.approval.approvers.describe()}")
    return 0


def _requester(evaluation: Evaluation) -> str:
    assert evaluation.spec is not None
    return evaluation.spec.metadata.owner or os_user() or "unknown"
