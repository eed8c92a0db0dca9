"""One record for several launches of a spec version: grouping, reading back, the payload."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from decimal import Decimal

import pytest

from gate.ledger.encoding import PAYLOAD, Malformed, from_tags, to_tags
from gate.ledger.launches import MAX_LAUNCHES_PER_RECORD, batched, launches_in
from gate.ledger.records import LedgerRecord, RecordKind
from gate.ledger.spend import Spend

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)


def launch(key: str, **changes: object) -> LedgerRecord:
    base = LedgerRecord(
        kind=RecordKind.LAUNCH,
        spec="experiments/sweep.yaml",
        fingerprint="sha256:" + "a" * 64,
        experiment="sweep",
        recorded_at=NOW,
        currency="USD",
        worst_cost=Decimal("10.32"),
        expected_cost=Decimal("8"),
        team="vision",
        by="kueue-admission",
        launch_key=key,
    )
    return dataclasses.replace(base, **changes)


def test_launches_of_one_version_become_one_record_and_others_keep_their_own():
    other = launch("k-other", fingerprint="sha256:" + "b" * 64)
    approved = launch("k-approved", approval="a1")
    records = batched([launch("k1"), other, launch("k2"), approved, launch("k3")])
    assert [(r.launch_key, r.launch_keys, places) for r, places in records] == [
        (None, ("k1", "k2", "k3"), (0, 2, 4)),
        ("k-other", (), (1,)),
        ("k-approved", (), (3,)),
    ]
    assert records[1][0] == other and records[2][0] == approved  # a launch alone is as it was


def test_a_record_holds_at_most_forty_launches():
    many = [launch(f"kueue-{i:036d}") for i in range(2 * MAX_LAUNCHES_PER_RECORD + 1)]
    sizes = [len(r.launch_keys) or 1 for r, _ in batched(many)]
    assert sizes == [MAX_LAUNCHES_PER_RECORD, MAX_LAUNCHES_PER_RECORD, 1]
    longest = [launch("k" * 127 + str(i % 10)) for i in range(MAX_LAUNCHES_PER_RECORD)]
    [(record, _)] = batched(longest)
    sealed = dataclasses.replace(record, record_id="r" * 32)
    assert len(to_tags(sealed)[PAYLOAD]) < 8000  # MLflow's limit on a tag value


def test_a_batch_reads_back_as_one_launch_per_key_each_with_an_id_of_its_own():
    [(record, _)] = batched([launch("k1"), launch("k2")])
    sealed = dataclasses.replace(record, record_id="b" * 32)
    read = from_tags(to_tags(sealed), "run-1")
    assert read.launch_keys == ("k1", "k2") and read.launch_key is None
    assert json.loads(read.payload or "")["launch_keys"] == ["k1", "k2"]
    each = launches_in(read)
    assert [(r.launch_key, r.record_id, r.run_id) for r in each] == [
        ("k1", "b" * 32 + "/0", "run-1"),
        ("k2", "b" * 32 + "/1", "run-1"),
    ]
    assert all(r.payload == read.payload and r.launch_keys == () for r in each)
    assert launches_in(launch("k9")) == (launch("k9"),)
    spend = Spend().add_all(each)  # two launches commit twice the worst case
    totals = spend.totals("USD", spec="experiments/other.yaml", fingerprint="sha256:" + "c" * 64)
    assert totals.launched == Decimal("20.64")


@pytest.mark.parametrize(
    ("change", "keys"),
    [
        ({}, []),  # no key
        ({}, "k1,k2"),  # not a list
        ({}, ["k1", ""]),
        ({}, ["k1", 7]),
        ({"kind": "approval"}, ["k1", "k2"]),  # only launches come in batches
        ({"launch_key": "k0"}, ["k1", "k2"]),  # a batch has no key of its own
    ],
)
def test_a_malformed_batch_does_not_read(change, keys):
    sealed = dataclasses.replace(launch("k1"), launch_key=None, record_id="c" * 32)
    tags = to_tags(sealed)
    body = json.loads(tags[PAYLOAD]) | change | {"launch_keys": keys}
    tags = tags | {PAYLOAD: json.dumps(body), "budget_gate.kind": body["kind"]}
    with pytest.raises(Malformed):
        from_tags(tags, "run-2")
