"""What the ledger says of one spec: its month's budget status and the approval that counts.

The evaluator calls these only when a ledger is in play (a monthly budget, or approvals
that count), so a plain ``check`` never imports this module nor the ledger's sums and
approvals; those are imported here when first needed. The ledger is only read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gate.ledger.approvals import ApprovalCheck, Requirement
    from gate.ledger.budget import BudgetStatus
    from gate.ledger.records import LedgerQuery, LedgerRecord
    from gate.ledger.spend import Spend
    from gate.ledger.view import LedgerView
    from gate.policy.model import Policy
    from gate.policy.rules.base import RuleContext
    from gate.spec.experiment import Experiment


def budget_status(
    ledger: LedgerView,
    spends: dict[LedgerQuery, Spend],
    spec: Experiment,
    policy: Policy,
    path: str,
    fp: str,
) -> BudgetStatus | None:
    """The spec against its budget's month; each month's spend is read once into ``spends``."""
    from gate.ledger.budget import budget_scope, month_spend, month_start, spend_status
    from gate.ledger.spend import SpendReader

    scope = budget_scope(spec, policy)
    if scope is None:
        return None
    now = ledger.now
    query = scope.query(month_start(now))
    spend = spends.get(query)
    if spend is None:
        store = ledger.store()
        if isinstance(store, SpendReader):
            spend = store.month_spend(query, now)
        else:
            spend = month_spend(store.query(query), now)
        spends[query] = spend
    return spend_status(
        spend,
        policy=policy,
        scope=scope,
        now=now,
        spec=path,
        fingerprint=fp,
    )


def approval_check(
    ledger: LedgerView, ctx: RuleContext, fp: str, path: str, launch_key: str | None
) -> ApprovalCheck:
    """The approval this version holds, or why none counts (a changed spec said as such)."""
    from gate.ledger.approvals import (
        ApprovalCheck,
        Requirement,
        check_approvals,
        explain_changed,
    )
    from gate.ledger.records import MAX_EXPIRY, LedgerQuery

    policy = ctx.policy
    need = Requirement(
        fp,
        ctx.estimate.worst.cost,
        policy.currency,
        policy.approval.approvers,
        ctx.spec.metadata.owner,
        tuple(policy.approval.sources),
        spec=path,
        launches=policy.approval.launches,
        launch_key=launch_key,
        repository=ledger.here(),
    )
    records = ledger.records(LedgerQuery(fingerprint=fp))
    need = _with_history(ledger, need, records)
    judged = [(r, ledger.withdrawn(r) if ledger.withdrawn else None) for r in records]
    withdrawn = tuple(why for _, why in judged if why is not None)
    found = check_approvals([r for r, why in judged if why is None], need, ledger.now)
    if withdrawn:
        found = ApprovalCheck(found.approval, (*withdrawn, *found.stale), found.notes)
    if found.approval is not None:
        return found
    # NOTE: the other versions' approvals only say "the spec changed": one older than the
    # longest expiry can hold no more, so the path's records before it are not read.
    others = ledger.records(LedgerQuery(spec=path, since=ledger.now - MAX_EXPIRY))
    changed = explain_changed(others, fp)
    return ApprovalCheck(None, (*found.stale, changed)) if changed else found


def _with_history(
    ledger: LedgerView, need: Requirement, records: list[LedgerRecord]
) -> Requirement:
    """``need`` with the policies' former approvers, read only when a revocation needs them.

    NOTE: judged by the current list alone, a revocation by an approver who has since left
    it stopped counting, and the approval it withdrew cleared launches again.
    """
    import dataclasses

    from gate.ledger.approvals import revoker_refusal
    from gate.ledger.records import RecordKind, Source

    if any(
        r.kind is RecordKind.REVOCATION
        and r.source is Source.LOCAL
        and revoker_refusal(r.by or "", need.approvers, need.owner) is not None
        for r in records
    ):
        return dataclasses.replace(need, former=ledger.former())
    return need
