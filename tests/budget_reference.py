"""The monthly budget as ``main`` computed it before running sums: every record, every time.

Kept verbatim (bar names) from ``gate/ledger/budget.py`` and ``gate/ledger/records.py`` at
the commit before :mod:`gate.ledger.spend`, so tests can prove the new reads give the same
figures, to the cent, on the same ledger.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal

from gate.ledger.budget import BudgetPolicy, BudgetScope, BudgetStatus, month_start
from gate.ledger.records import LedgerRecord, RecordKind


def reference_status(
    records: Iterable[LedgerRecord],
    *,
    policy: BudgetPolicy,
    scope: BudgetScope,
    now: dt.datetime,
    spec: str,
    fingerprint: str,
) -> BudgetStatus:
    """``budget_status`` as it was: a full scan, each approval checked against every revocation."""
    assert policy.limits.monthly_budget is not None
    start = month_start(now)
    known = [r for r in records if r.recorded_at <= now]
    current = [r for r in known if r.recorded_at >= start]
    same = [r for r in current if r.currency == policy.currency]
    reconciled = {r.fingerprint for r in known if r.kind is RecordKind.RECONCILIATION}
    revocations = [r for r in known if r.kind is RecordKind.REVOCATION]
    approvals = [
        r
        for r in same
        if r.kind is RecordKind.APPROVAL
        and r.fingerprint not in reconciled
        and r.fingerprint != fingerprint
        and r.spec != spec
        and not _is_revoked(r, revocations)
    ]
    reconciliations = [r for r in same if r.kind is RecordKind.RECONCILIATION]
    return BudgetStatus(
        scope=scope,
        month=start.strftime("%Y-%m"),
        budget=policy.limits.monthly_budget,
        committed=_sum_newest(approvals, by_spec=True),
        actual=_sum_newest(reconciliations, by_spec=False),
        currency=policy.currency,
        warn_at=Decimal(str(policy.limits.budget_warn_at)),
        other_currency=len(current) - len(same),
    )


def _is_revoked(approval: LedgerRecord, records: Iterable[LedgerRecord]) -> bool:
    return any(r.kind is RecordKind.REVOCATION and approval.record_id in r.revokes for r in records)


def _sum_newest(records: list[LedgerRecord], *, by_spec: bool) -> Decimal:
    newest: dict[str, LedgerRecord] = {}
    for record in sorted(records, key=lambda r: r.recorded_at):
        newest[record.spec if by_spec else record.fingerprint] = record
    amounts = (
        (r.worst_cost if r.kind is RecordKind.APPROVAL else r.actual_cost) or Decimal(0)
        for r in newest.values()
    )
    return sum(amounts, Decimal(0))
