"""Monthly budget per team or cost center (pure): what the ledger says is spent this month.

Spend in a calendar month (UTC) = committed + reconciled actuals:

- *committed*: per spec path, the newest approval recorded this month that is neither
  revoked, launched nor reconciled after it, at its approved worst-case amount (an approval
  of a newer version of a spec supersedes the older one; expiry does not release the
  money, since the runs may have started); plus every launch recorded this month and not
  reconciled after it, at the worst case it was launched with (a launch takes its
  approval's place);
- *actual*: per fingerprint, the newest reconciliation recorded this month.

The records are folded into running sums (:mod:`gate.ledger.spend`), so a revocation is
found by id and a ledger can hand over a month's sums without every record. The spec
being evaluated has its own approval left out of the committed spend (it must not count
against it); its launches count, since each is money being spent. Records in another
currency than the policy's are not added up; they are counted so the report can say so.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from gate.ledger.records import LedgerQuery, LedgerRecord
from gate.ledger.spend import Spend
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
    launched: Decimal = Decimal(0)
    """The part of ``committed`` that launches not yet reconciled hold."""

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
    return spend_status(
        month_spend(records, now),
        policy=policy,
        scope=scope,
        now=now,
        spec=spec,
        fingerprint=fingerprint,
    )


def month_spend(records: Iterable[LedgerRecord], now: dt.datetime) -> Spend:
    """The running sums of ``records`` known at ``now``, for ``now``'s month."""
    start = month_start(now)
    spend = Spend()
    for record in records:
        if record.recorded_at <= now:
            spend.add(record, current=record.recorded_at >= start)
    return spend


def spend_status(
    spend: Spend,
    *,
    policy: BudgetPolicy,
    scope: BudgetScope,
    now: dt.datetime,
    spec: str,
    fingerprint: str,
) -> BudgetStatus:
    """The budget status from a month's running sums, leaving out the spec being evaluated."""
    assert policy.limits.monthly_budget is not None
    totals = spend.totals(policy.currency, spec=spec, fingerprint=fingerprint)
    return BudgetStatus(
        scope=scope,
        month=month_start(now).strftime("%Y-%m"),
        budget=policy.limits.monthly_budget,
        committed=totals.committed,
        actual=totals.actual,
        currency=policy.currency,
        warn_at=Decimal(str(policy.limits.budget_warn_at)),
        other_currency=totals.other_currency,
        launched=totals.launched,
    )
