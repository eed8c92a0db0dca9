"""gate.ledger.budget: whose budget a spec spends, and this month's spend from ledger records."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

from gate.ledger.budget import BudgetScope, budget_scope, budget_status, month_start
from gate.ledger.records import LedgerQuery, LedgerRecord, RecordKind
from tests.conftest import make_policy, make_spec

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DAY = dt.timedelta(days=1)
POLICY = make_policy({"limits": {"monthly_budget": 10000}})
TEAM = BudgetScope("team", "vision")
ME = "exp/me.yaml"
MY_FP = "sha256:me"


def record(kind: RecordKind, spec: str, amount: str, *, days_ago: float = 1, **changes):
    cost = "actual_cost" if kind is RecordKind.RECONCILIATION else "worst_cost"
    base = LedgerRecord(
        kind=kind,
        spec=spec,
        fingerprint=f"sha256:{spec}",
        experiment=spec,
        recorded_at=NOW - days_ago * DAY,
        currency="USD",
        team="vision",
        by="alice",
        record_id=f"{kind.value}-{spec}-{days_ago}",
        **{cost: Decimal(amount)},
    )
    return dataclasses.replace(base, **changes)


def approved(spec: str, amount: str, **kw):
    return record(RecordKind.APPROVAL, spec, amount, **kw)


def reconciled(spec: str, amount: str, **kw):
    return record(RecordKind.RECONCILIATION, spec, amount, **kw)


def status(records, *, spec: str = ME, fingerprint: str = MY_FP):
    return budget_status(
        records, policy=POLICY, scope=TEAM, now=NOW, spec=spec, fingerprint=fingerprint
    )


def test_scope_is_the_team_by_default():
    spec = make_spec({"metadata": {"team": "vision"}})
    assert budget_scope(spec, POLICY) == TEAM
    assert budget_scope(spec, make_policy()) is None
    assert budget_scope(make_spec(), POLICY) is None  # no team: charged to no budget


def test_scope_can_be_the_cost_center_label():
    policy = make_policy({"limits": {"monthly_budget": 5, "budget_scope": "cost-center"}})
    spec = make_spec({"metadata": {"team": "vision", "labels": {"cost-center": "cc-1042"}}})
    assert budget_scope(spec, policy) == BudgetScope("cost-center", "cc-1042")
    assert budget_scope(make_spec({"metadata": {"team": "vision"}}), policy) is None
    assert BudgetScope("cost-center", "cc-1").query(NOW) == LedgerQuery(
        cost_center="cc-1", since=NOW
    )
    assert TEAM.query(NOW) == LedgerQuery(team="vision", since=NOW)


def test_month_start_is_utc():
    east = dt.timezone(dt.timedelta(hours=5))
    assert month_start(dt.datetime(2026, 12, 1, 2, 0, tzinfo=east)) == dt.datetime(
        2026, 11, 1, tzinfo=UTC
    )


def test_empty_ledger():
    got = status([])
    assert (got.month, got.budget, got.spent, got.remaining) == (
        "2026-11",
        Decimal(10000),
        Decimal(0),
        Decimal(10000),
    )
    assert got.warn_at == Decimal("0.8")


def test_approved_not_reconciled_plus_reconciled_actuals():
    records = [
        approved("a", "1000"),
        approved("b", "2000"),
        reconciled("b", "1500"),
        reconciled("c", "300"),
    ]
    got = status(records)
    assert (got.committed, got.actual, got.spent) == (Decimal(1000), Decimal(1800), Decimal(2800))
    assert got.remaining == Decimal(7200)


def test_the_newest_reconciliation_of_a_fingerprint_counts_once():
    got = status([reconciled("c", "300", days_ago=3), reconciled("c", "350", days_ago=1)])
    assert got.actual == Decimal(350)


def test_a_newer_approval_of_the_same_spec_supersedes_the_older():
    old = approved("a", "1000", days_ago=3, fingerprint="sha256:a-v1")
    new = approved("a", "1200", days_ago=1, fingerprint="sha256:a-v2")
    assert status([old, new]).committed == Decimal(1200)


def test_revoked_approvals_release_their_money():
    approval = approved("a", "1000")
    revoke = record(
        RecordKind.REVOCATION,
        "a",
        "0",
        days_ago=0.5,
        worst_cost=None,
        revokes=(approval.record_id,),
    )
    assert status([approval, revoke]).committed == Decimal(0)
    later = dataclasses.replace(revoke, recorded_at=NOW + DAY)
    assert status([approval, later]).committed == Decimal(1000)
    other = dataclasses.replace(revoke, revokes=("another",))
    assert status([approval, other]).committed == Decimal(1000)


def test_the_spec_being_evaluated_is_left_out():
    mine = approved(ME, "5000", fingerprint=MY_FP)
    moved = approved("x", "700", fingerprint=MY_FP)
    older_version = approved(ME, "900", fingerprint="sha256:me-v0")
    assert status([mine, moved, older_version]).committed == Decimal(0)


def test_its_own_reconciled_actuals_still_count():
    got = status([reconciled(ME, "250", fingerprint=MY_FP)])
    assert got.actual == Decimal(250)


def test_other_months_and_the_future_are_not_this_month():
    records = [
        approved("a", "1000", days_ago=29),  # October 31st
        approved("b", "2000", days_ago=-1),  # tomorrow
        reconciled("c", "300", days_ago=28.4),  # November 1st, 02:24
    ]
    got = status(records)
    assert (got.committed, got.actual) == (Decimal(0), Decimal(300))


def test_a_reconciliation_in_the_future_does_not_release_an_approval_yet():
    records = [approved("a", "1000"), reconciled("a", "800", days_ago=-1)]
    assert status(records).spent == Decimal(1000)


def test_other_currencies_are_counted_not_added():
    got = status([approved("a", "1000", currency="EUR"), approved("b", "10")])
    assert (got.spent, got.other_currency) == (Decimal(10), 1)


def test_requests_cost_nothing():
    assert status([record(RecordKind.REQUEST, "a", "1000")]).spent == Decimal(0)
