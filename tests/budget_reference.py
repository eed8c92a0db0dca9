"""The monthly budget as a plain full scan: every record, every time, by the rules in words.

An independent statement of :mod:`gate.ledger.budget`'s rules (no running sums, no
indexes, quadratic where it likes), so tests can prove the running sums and the snapshot
reads give the same figures, to the cent, on the same ledger:

- a reconciliation releases what its fingerprint committed before it (by recorded time,
  then record id); an approval or launch after it commits again;
- an approval commits its worst case unless revoked, launched or released; only the newest
  of a spec path counts, and none of the spec being judged;
- a launch commits its worst case unless released; launches sharing a key on one day (a
  join window of 24 h since the epoch) are one (the largest amount): a key kept longer is
  a launch each day it is recorded;
- the actual spend is each fingerprint's newest reconciliation.
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
    """The month's budget status of ``scope`` at ``now`` as seen by ``spec``/``fingerprint``."""
    assert policy.limits.monthly_budget is not None
    start = month_start(now)
    known = [r for r in records if r.recorded_at <= now]
    current = [r for r in known if r.recorded_at >= start]
    same = [r for r in current if r.currency == policy.currency]
    reconciled: dict[str, tuple[dt.datetime, str]] = {}
    for r in known:
        if r.kind is RecordKind.RECONCILIATION:
            reconciled[r.fingerprint] = max(reconciled.get(r.fingerprint, _order(r)), _order(r))

    def released(r: LedgerRecord) -> bool:
        return r.fingerprint in reconciled and reconciled[r.fingerprint] > _order(r)

    revoked = {i for r in known if r.kind is RecordKind.REVOCATION for i in r.revokes}
    launched = {r.approval for r in known if r.kind is RecordKind.LAUNCH and r.approval}
    approvals = [
        r
        for r in same
        if r.kind is RecordKind.APPROVAL
        and r.record_id not in revoked
        and r.record_id not in launched
        and not released(r)
        and r.fingerprint != fingerprint
        and r.spec != spec
    ]
    launches: dict[str, LedgerRecord] = {}
    for r in same:
        if r.kind is RecordKind.LAUNCH and not released(r):
            day = int(r.recorded_at.timestamp()) // 86_400
            key = f"{r.fingerprint}:{r.launch_key}:{day}" if r.launch_key else f"id:{r.record_id}"
            held = launches.get(key)
            if held is None or (_amount(held), _order(held)) < (_amount(r), _order(r)):
                launches[key] = r
    launched_sum = sum((_amount(r) for r in launches.values()), Decimal(0))
    reconciliations = [r for r in same if r.kind is RecordKind.RECONCILIATION]
    return BudgetStatus(
        scope=scope,
        month=start.strftime("%Y-%m"),
        budget=policy.limits.monthly_budget,
        committed=_sum_newest(approvals, by_spec=True) + launched_sum,
        actual=_sum_newest(reconciliations, by_spec=False),
        currency=policy.currency,
        warn_at=Decimal(str(policy.limits.budget_warn_at)),
        other_currency=len(current) - len(same),
        launched=launched_sum,
    )


def _order(record: LedgerRecord) -> tuple[dt.datetime, str]:
    return (record.recorded_at, record.record_id or "")


def _amount(record: LedgerRecord) -> Decimal:
    return record.worst_cost or Decimal(0)


def _sum_newest(records: list[LedgerRecord], *, by_spec: bool) -> Decimal:
    newest: dict[str, LedgerRecord] = {}
    for record in sorted(records, key=_order):
        newest[record.spec if by_spec else record.fingerprint] = record
    amounts = (
        (r.worst_cost if r.kind is RecordKind.APPROVAL else r.actual_cost) or Decimal(0)
        for r in newest.values()
    )
    return sum(amounts, Decimal(0))
