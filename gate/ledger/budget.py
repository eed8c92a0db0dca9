"""Monthly budget per team or cost center (pure): what the ledger says is spent this month.

Spend in a calendar month (UTC) = approved but not yet reconciled + reconciled actuals:

- *committed*: per spec path, the newest approval recorded this month that is not revoked
  and whose fingerprint has no reconciliation yet, at its approved worst-case amount (an
  approval of a newer version of a spec supersedes the older one; expiry does not release
  the money, since the runs may have started);
- *actual*: per fingerprint, the newest reconciliation recorded this month.

The spec being evaluated is left out of the committed spend (its own approval must not
count against it). Records in another currency than the policy's are not added up; they
are counted so the report can say so.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from gate.ledger.records import LedgerQuery, LedgerRecord, RecordKind, is_revoked
from gate.ledger.tracking import COST_CENTER_LABEL
from gate.spec.experiment import Experiment


class BudgetLimits(Protocol):
    """The budget settings of a policy's ``limits``."""

    @property
    def monthly_budget(self) -> Decimal | None:
        """The month's budget, or ``None`` when the policy sets none."""
        ...

    @property
    def budget_scope(self) -> str:
        """``team`` or ``cost-center``: whose budget a spec spends."""
        ...

    @property
    def budget_warn_at(self) -> float:
        """The share of the budget at which a warning fires."""
        ...


class BudgetPolicy(Protocol):
    """What the budget reads of a team's policy (a :class:`gate.policy.model.Policy`)."""

    @property
    def currency(self) -> str:
        """The currency budgets and records are compared in."""
        ...

    @property
    def limits(self) -> BudgetLimits:
        """The monthly budget, its scope and its warning threshold."""
        ...


@dataclass(frozen=True, slots=True)
class BudgetScope:
    """Whose budget a spec spends: a team name or a cost-center label."""

    kind: str
    key: str

    def query(self, since: dt.datetime) -> LedgerQuery:
        """The ledger query for this scope's records since ``since``."""
        if self.kind == "team":
            return LedgerQuery(team=self.key, since=since)
        return LedgerQuery(cost_center=self.key, since=since)

    def __str__(self) -> str:
        return f"{self.kind} {self.key}"


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """One month of one scope's budget, as seen before the spec being evaluated."""

    scope: BudgetScope
    month: str
    budget: Decimal
    committed: Decimal
    actual: Decimal
    currency: str
    warn_at: Decimal
    other_currency: int = 0

    @property
    def spent(self) -> Decimal:
        """Committed plus reconciled spend this month."""
        return self.committed + self.actual

    @property
    def remaining(self) -> Decimal:
        """What is left of the budget (negative once overspent)."""
        return self.budget - self.spent


def budget_scope(spec: Experiment, policy: BudgetPolicy) -> BudgetScope | None:
    """The scope the policy charges this spec to; ``None`` without a budget or a key."""
    limits = policy.limits
    if limits.monthly_budget is None:
        return None
    if limits.budget_scope == "team":
        key = spec.metadata.team
    else:
        key = spec.metadata.labels.get(COST_CENTER_LABEL)
    return BudgetScope(limits.budget_scope, key) if key else None


def month_start(now: dt.datetime) -> dt.datetime:
    """Midnight UTC on the first day of ``now``'s month (UTC)."""
    utc = now.astimezone(dt.timezone.utc)
    return dt.datetime(utc.year, utc.month, 1, tzinfo=dt.timezone.utc)


def budget_status(
    records: Iterable[LedgerRecord],
    *,
    policy: BudgetPolicy,
    scope: BudgetScope,
    now: dt.datetime,
    spec: str,
    fingerprint: str,
) -> BudgetStatus:
    """This month's spend of ``scope`` at ``now``, leaving out the spec being evaluated."""
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
        and not is_revoked(r, revocations)
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


def _sum_newest(records: list[LedgerRecord], *, by_spec: bool) -> Decimal:
    newest: dict[str, LedgerRecord] = {}
    for record in sorted(records, key=lambda r: r.recorded_at):
        newest[record.spec if by_spec else record.fingerprint] = record
    amounts = (
        (r.worst_cost if r.kind is RecordKind.APPROVAL else r.actual_cost) or Decimal(0)
        for r in newest.values()
    )
    return sum(amounts, Decimal(0))
