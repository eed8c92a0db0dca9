"""gate.ledger.spend: running sums equal the full scan, in any order, across a snapshot."""

from __future__ import annotations

import datetime as dt
import json
import random
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.ledger.budget import BudgetScope, budget_status, month_spend, spend_status
from gate.ledger.records import LedgerRecord, RecordKind
from gate.ledger.spend import Spend
from tests.budget_reference import reference_status
from tests.conftest import make_policy

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
SCOPE = BudgetScope("team", "vision")
POLICY = make_policy({"limits": {"monthly_budget": 10000}})
SPECS = ["a.yaml", "b.yaml", "c.yaml", "me.yaml"]
FPS = ["sha256:1", "sha256:2", "sha256:3", "sha256:me"]
# Few distinct moments, so that ties happen; some before the month, some after NOW.
MOMENTS = [NOW + dt.timedelta(days=d, microseconds=u) for d in (-25, -5, -1, 0, 2) for u in (0, 7)]


@st.composite
def ledgers(draw: st.DrawFn) -> list[LedgerRecord]:
    count = draw(st.integers(0, 40))
    records: list[LedgerRecord] = []
    for n in range(count):
        kind = draw(st.sampled_from(list(RecordKind)))
        amount = Decimal(draw(st.integers(0, 100_000))) / 100
        at = draw(st.sampled_from(MOMENTS))
        ids = [f"run{i:03d}" for i in range(count)]  # revocations may name later records
        launch = kind is RecordKind.LAUNCH
        records.append(
            LedgerRecord(
                kind=kind,
                spec=draw(st.sampled_from(SPECS)),
                fingerprint=draw(st.sampled_from(FPS)),
                experiment="x",
                recorded_at=at,
                currency=draw(st.sampled_from(["USD", "USD", "EUR"])),
                worst_cost=amount if kind is not RecordKind.RECONCILIATION else None,
                actual_cost=amount if kind is RecordKind.RECONCILIATION else None,
                expires_at=draw(st.sampled_from([None, at + dt.timedelta(hours=1)])),
                revokes=tuple(draw(st.lists(st.sampled_from(ids), max_size=2)))
                if kind is RecordKind.REVOCATION and ids
                else (),
                record_id=f"run{n:03d}",
                approval=draw(st.sampled_from([None, *ids])) if launch and ids else None,
                launch_key=draw(st.sampled_from([None, "k1", "k2"])) if launch else None,
            )
        )
    # NOTE: the order a ledger search returns: start time (ms), then run id.
    return sorted(records, key=lambda r: (int(r.recorded_at.timestamp() * 1000), r.record_id))


def both(records: list[LedgerRecord], spec: str, fp: str):
    kw = {"policy": POLICY, "scope": SCOPE, "now": NOW, "spec": spec, "fingerprint": fp}
    return budget_status(records, **kw), reference_status(records, **kw)


@settings(max_examples=400, deadline=None)
@given(ledgers(), st.sampled_from(SPECS), st.sampled_from(FPS))
def test_running_sums_equal_the_full_scan_to_the_cent(records, spec, fp):
    new, old = both(records, spec, fp)
    assert new == old
    assert str(new.spent) == str(old.spent)  # same digits, not only the same value


@settings(max_examples=200, deadline=None)
@given(ledgers(), st.sampled_from(SPECS), st.sampled_from(FPS), st.randoms())
def test_any_fold_order_and_any_snapshot_point_give_the_same_totals(records, spec, fp, rnd):
    expected = reference_status(
        records, policy=POLICY, scope=SCOPE, now=NOW, spec=spec, fingerprint=fp
    )
    shuffled = list(records)
    rnd.shuffle(shuffled)
    cut = rnd.randint(0, len(shuffled))
    head = month_spend(shuffled[:cut], NOW)
    stored = json.loads(json.dumps(head.to_json()))  # what a snapshot run carries
    spend = Spend.from_json(stored)
    for record in shuffled[cut:]:
        if record.recorded_at <= NOW:
            spend.add(record, current=record.recorded_at >= NOW.replace(day=1, hour=0))
    got = spend_status(spend, policy=POLICY, scope=SCOPE, now=NOW, spec=spec, fingerprint=fp)
    assert got == expected


def test_a_revocation_is_found_by_id_in_constant_time():
    approvals = [
        LedgerRecord(
            RecordKind.APPROVAL, f"s{i}.yaml", f"sha256:{i}", "x", NOW, "USD",
            worst_cost=Decimal(1), record_id=f"a{i}",
        )
        for i in range(20_000)
    ]  # fmt: skip
    revocations = [
        LedgerRecord(
            RecordKind.REVOCATION, f"s{i}.yaml", f"sha256:{i}", "x", NOW, "USD",
            revokes=(f"a{i}",), record_id=f"r{i}",
        )
        for i in range(0, 20_000, 2)
    ]  # fmt: skip
    records = approvals + revocations
    random.Random(7).shuffle(records)
    got = budget_status(records, policy=POLICY, scope=SCOPE, now=NOW, spec="-", fingerprint="-")
    assert got.committed == Decimal(10_000)  # the reference takes minutes here (quadratic)
