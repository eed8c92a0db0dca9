"""A month's spend as running sums (pure): ledger records folded one at a time, in any order.

:class:`Spend` holds what the monthly budget needs of a scope's records, and nothing else:

- the *reservations*: approvals not yet launched, revoked or reconciled, at their approved
  worst case;
- the *launches* not yet reconciled, at the worst case each was launched with (an
  approval's first launch takes its reservation over; each launch commits money until a
  reconciliation of its fingerprint recorded after it);
- per fingerprint and currency, the newest reconciliation (its actual cost);
- how many records each currency has (the report says how many were not added up).

A reconciliation releases the reservations and launches of its fingerprint recorded
*before* it; an approval or launch after it commits again. Folding is order-free: "before"
and "newest" are decided by (recorded time, record id), so a state folded from a snapshot
and then from the records after it equals the state folded from every record at once.
Whose reservations are left out (the
spec being evaluated) and which currency counts are decided only when the totals are read,
so one state serves every spec of a scope. It encodes to JSON (amounts as exact decimal
strings) for the ledger's snapshot records. Folding a record twice changes nothing but
the counts, so a copy of a record (same record id, same signed payload) adds no money.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol, runtime_checkable

from gate.ledger.approvals import launch_group
from gate.ledger.records import LedgerQuery, LedgerRecord, RecordKind

FORMAT = 2
"""The version of :meth:`Spend.to_json`'s encoding; another version is not read."""
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICRO = dt.timedelta(microseconds=1)

Order = tuple[int, str]
"""(recorded time in µs since the epoch, record id): larger is newer."""


@dataclass(frozen=True, slots=True)
class Live:
    """Money still committed: a reservation or a launch, its spec, version, amount and age."""

    spec: str
    fingerprint: str
    currency: str
    amount: Decimal
    order: Order
    group: str = ""
    """For a launch: what makes it one with others (its spec version and launch key)."""


@dataclass(frozen=True, slots=True)
class Totals:
    """What one spec sees of a state: committed and reconciled spend in one currency."""

    committed: Decimal
    actual: Decimal
    other_currency: int
    launched: Decimal = Decimal(0)
    """The part of ``committed`` that launches hold (the rest is approved, not launched)."""


@runtime_checkable
class SpendReader(Protocol):
    """A ledger store that hands over a month's running sums without every record."""

    def month_spend(self, query: LedgerQuery, now: dt.datetime) -> Spend:
        """The sums of ``query``'s records (a budget scope since its month's start) at ``now``."""
        ...


class Spend:
    """Running sums of one budget scope's records in one month (see the module docstring)."""

    def __init__(self) -> None:
        self.reserved: dict[str, Live] = {}
        self.launches: dict[str, Live] = {}
        self.reconciled: dict[str, dict[str, tuple[Order, Decimal]]] = {}
        self.revoked: set[str] = set()
        self.launched: set[str] = set()  # approvals that a launch took over
        self.counts: dict[str, int] = {}
        self.folded = 0
        self._by_fingerprint: dict[str, set[str]] = {}

    def add(self, record: LedgerRecord, *, current: bool = True) -> None:
        """Fold one record; ``current`` False for a record before the month (it only releases).

        A record from before the month still marks its fingerprint reconciled, revokes an
        approval or takes an approval's reservation over, as the full computation does, but
        adds no money and is not counted.
        """
        self.folded += 1
        key = record.record_id or f"#{self.folded}"
        order: Order = (_micros(record.recorded_at), record.record_id or "")
        if current:
            self.counts[record.currency] = self.counts.get(record.currency, 0) + 1
        if record.kind is RecordKind.APPROVAL:
            if current and key not in self.revoked and key not in self.launched:
                self._commit(self.reserved, key, record, record.worst_cost, order)
        elif record.kind is RecordKind.REVOCATION:
            self.revoked.update(record.revokes)
            for revoked in record.revokes:
                self._release(self.reserved, revoked)
        elif record.kind is RecordKind.LAUNCH:
            if record.approval is not None:
                self.launched.add(record.approval)
                self._release(self.reserved, record.approval)
            if current:
                self._launch(record, _launch_id(record, key), order)
        elif record.kind is RecordKind.RECONCILIATION:
            self._reconcile(record, order, current=current)

    def add_all(self, records: Iterable[LedgerRecord]) -> Spend:
        """Fold every record of ``records`` (all of this month); returns ``self``."""
        for record in records:
            self.add(record)
        return self

    def totals(self, currency: str, *, spec: str, fingerprint: str) -> Totals:
        """The spend in ``currency`` as seen by ``spec`` at ``fingerprint``.

        Committed: per spec path, the newest reservation in ``currency`` of another spec
        and another version (the spec's own approval does not count against it), plus every
        launch not yet reconciled (a launch is money being spent, this spec's included).
        Actual: per fingerprint, its newest reconciliation in ``currency``.
        """
        newest: dict[str, Live] = {}
        for live in self.reserved.values():
            if live.currency != currency or live.fingerprint == fingerprint or live.spec == spec:
                continue
            held = newest.get(live.spec)
            if held is None or held.order < live.order:
                newest[live.spec] = live
        one: dict[str, Decimal] = {}  # a launch key's records are one launch: the largest
        for key, live in self.launches.items():
            if live.currency == currency:
                group = live.group or key
                one[group] = max(one.get(group, live.amount), live.amount)
        launched = sum(one.values(), Decimal(0))
        committed = sum((live.amount for live in newest.values()), Decimal(0)) + launched
        actual = sum(
            (by[currency][1] for by in self.reconciled.values() if currency in by), Decimal(0)
        )
        other = sum(self.counts.values()) - self.counts.get(currency, 0)
        return Totals(committed, actual, other, launched)

    def _commit(
        self,
        into: dict[str, Live],
        key: str,
        record: LedgerRecord,
        amount: Decimal | None,
        order: Order,
    ) -> None:
        if self._reconciled_after(record.fingerprint, order):
            return
        into[key] = Live(
            record.spec, record.fingerprint, record.currency, amount or Decimal(0), order
        )
        self._by_fingerprint.setdefault(record.fingerprint, set()).add(key)

    def _launch(self, record: LedgerRecord, key: str, order: Order) -> None:
        """Each launch record is kept; those sharing a launch key count once (see totals)."""
        self._commit(self.launches, key, record, record.worst_cost, order)
        if record.launch_key and key in self.launches:
            group = f"{record.fingerprint}:{record.currency}:{launch_group(record)}"
            self.launches[key] = dataclasses.replace(self.launches[key], group=group)

    def _release(self, held: dict[str, Live], key: str) -> None:
        live = held.pop(key, None)
        if live is not None:
            keys = self._by_fingerprint[live.fingerprint]
            keys.discard(key)
            if not keys:
                del self._by_fingerprint[live.fingerprint]

    def _reconciled_after(self, fingerprint: str, order: Order) -> bool:
        by = self.reconciled.get(fingerprint)
        return by is not None and any(held[0] > order for held in by.values())

    def _reconcile(self, record: LedgerRecord, order: Order, *, current: bool) -> None:
        for key in list(self._by_fingerprint.get(record.fingerprint, ())):
            for held in (self.reserved, self.launches):
                if key in held and held[key].order < order:
                    self._release(held, key)
        newest = self.reconciled.setdefault(record.fingerprint, {})
        amount = (record.actual_cost or Decimal(0)) if current else Decimal(0)
        held_now = newest.get(record.currency)
        if held_now is None or held_now[0] < order:
            newest[record.currency] = (order, amount)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready encoding; :meth:`from_json` gives back an equal state."""
        return {
            "format": FORMAT,
            "folded": self.folded,
            "reserved": _lives(self.reserved),
            "launches": _lives(self.launches),
            "reconciled": {
                fp: {cur: [*order, str(amount)] for cur, (order, amount) in by.items()}
                for fp, by in self.reconciled.items()
            },
            "revoked": sorted(self.revoked),
            "launched": sorted(self.launched),
            "counts": self.counts,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Spend:
        """Decode :meth:`to_json`'s output; raises ``ValueError`` for another format."""
        if data.get("format") != FORMAT:
            raise ValueError(f"spend format {data.get('format')!r} is not {FORMAT}")
        spend = cls()
        spend.folded = int(data["folded"])
        spend.reserved = _unlives(data["reserved"])
        spend.launches = _unlives(data["launches"])
        spend.reconciled = {
            fp: {
                cur: ((int(micros), str(rid)), Decimal(amount))
                for cur, (micros, rid, amount) in by.items()
            }
            for fp, by in data["reconciled"].items()
        }
        spend.revoked = {str(i) for i in data["revoked"]}
        spend.launched = {str(i) for i in data["launched"]}
        spend.counts = {str(k): int(v) for k, v in data["counts"].items()}
        for key, live in [*spend.reserved.items(), *spend.launches.items()]:
            spend._by_fingerprint.setdefault(live.fingerprint, set()).add(key)
        return spend


def _lives(held: dict[str, Live]) -> list[list[object]]:
    return [
        [key, v.spec, v.fingerprint, v.currency, str(v.amount), *v.order, v.group]
        for key, v in held.items()
    ]


def _unlives(rows: list[list[Any]]) -> dict[str, Live]:
    return {
        str(key): Live(
            str(spec), str(fp), str(cur), Decimal(amount), (int(micros), str(rid)), str(group)
        )
        for key, spec, fp, cur, amount, micros, rid, group in rows
    }


def _launch_id(record: LedgerRecord, key: str) -> str:
    """What makes two launch records one: the same id *and* the same signed payload.

    NOTE: a record's id is its writer's to choose; a listed launcher's key signed a launch
    of 0 USD under the id of a real launch, and the month kept whichever came last. Only a
    copy (the same payload) is the same launch; another payload under that id is one more.
    """
    if record.payload is None:
        return key
    return f"{key}#{hashlib.sha256(record.payload.encode()).hexdigest()[:16]}"


def _micros(moment: dt.datetime) -> int:
    return (moment - _EPOCH) // _MICRO
