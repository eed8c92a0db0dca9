"""A month's spend as running sums (pure): ledger records folded one at a time, in any order.

:class:`Spend` holds what the monthly budget needs of a scope's records, and nothing else:

- the *live* approvals (neither revoked nor reconciled yet), indexed by record id and by
  fingerprint, so a revocation or a reconciliation removes them in constant time;
- per fingerprint and currency, the newest reconciliation (its actual cost);
- how many records each currency has (the report says how many were not added up).

Folding is order-free: "newest" is decided by (recorded time, record id) — the order a
ledger search returns ties in — so a state folded from a snapshot and then from the
records after it equals the state folded from every record at once. Whose approvals are
left out (the spec being evaluated) and which currency counts are decided only when the
totals are read, so one state serves every spec of a scope. It encodes to JSON (amounts as
exact decimal strings) for the ledger's snapshot records.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol, runtime_checkable

from gate.ledger.records import LedgerQuery, LedgerRecord, RecordKind

FORMAT = 1
"""The version of :meth:`Spend.to_json`'s encoding; another version is not read."""
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICRO = dt.timedelta(microseconds=1)

Order = tuple[int, str, int]
"""(recorded time in µs since the epoch, record id, fold sequence): larger is newer."""


@dataclass(frozen=True, slots=True)
class Live:
    """An approval that still commits money: its spec, version, amount and age."""

    spec: str
    fingerprint: str
    currency: str
    amount: Decimal
    order: Order


@dataclass(frozen=True, slots=True)
class Totals:
    """What one spec sees of a state: committed and reconciled spend in one currency."""

    committed: Decimal
    actual: Decimal
    other_currency: int


@runtime_checkable
class SpendReader(Protocol):
    """A ledger store that hands over a month's running sums without every record."""

    def month_spend(self, query: LedgerQuery, now: dt.datetime) -> Spend:
        """The sums of ``query``'s records (a budget scope since its month's start) at ``now``."""
        ...


class Spend:
    """Running sums of one budget scope's records in one month (see the module docstring)."""

    def __init__(self) -> None:
        self.live: dict[str, Live] = {}
        self.by_fingerprint: dict[str, set[str]] = {}
        self.reconciled: dict[str, dict[str, tuple[Order, Decimal]]] = {}
        self.revoked: set[str] = set()  # ids revoked before their approval was folded
        self.counts: dict[str, int] = {}
        self.folded = 0

    def add(self, record: LedgerRecord, *, current: bool = True) -> None:
        """Fold one record; ``current`` False for a record before the month (it only releases).

        A record from before the month still marks its fingerprint reconciled or revokes an
        approval, as the full computation does, but adds no money and is not counted.
        """
        self.folded += 1
        key = record.record_id or f"#{self.folded}"
        order: Order = (_micros(record.recorded_at), record.record_id or "", self.folded)
        if current:
            self.counts[record.currency] = self.counts.get(record.currency, 0) + 1
        if record.kind is RecordKind.APPROVAL and current:
            self._approve(record, key, order)
        elif record.kind is RecordKind.REVOCATION:
            for revoked in record.revokes:
                if self._drop(revoked) is None:
                    self.revoked.add(revoked)
        elif record.kind is RecordKind.RECONCILIATION:
            for approval in list(self.by_fingerprint.get(record.fingerprint, ())):
                self._drop(approval)
            newest = self.reconciled.setdefault(record.fingerprint, {})
            if current:
                amount = record.actual_cost or Decimal(0)
                held = newest.get(record.currency)
                if held is None or held[0] < order:
                    newest[record.currency] = (order, amount)

    def add_all(self, records: Iterable[LedgerRecord]) -> Spend:
        """Fold every record of ``records`` (all of this month); returns ``self``."""
        for record in records:
            self.add(record)
        return self

    def totals(self, currency: str, *, spec: str, fingerprint: str) -> Totals:
        """The spend in ``currency`` as seen by ``spec`` at ``fingerprint`` (left out itself).

        Committed: per spec path, the newest live approval in ``currency`` of another spec
        and another version. Actual: per fingerprint, its newest reconciliation in
        ``currency``.
        """
        newest: dict[str, Live] = {}
        for live in self.live.values():
            if live.currency != currency or live.fingerprint == fingerprint or live.spec == spec:
                continue
            held = newest.get(live.spec)
            if held is None or held.order < live.order:
                newest[live.spec] = live
        committed = sum((live.amount for live in newest.values()), Decimal(0))
        actual = sum(
            (by[currency][1] for by in self.reconciled.values() if currency in by), Decimal(0)
        )
        other = sum(self.counts.values()) - self.counts.get(currency, 0)
        return Totals(committed, actual, other)

    def _approve(self, record: LedgerRecord, key: str, order: Order) -> None:
        if record.fingerprint in self.reconciled:
            return
        if record.record_id is not None and record.record_id in self.revoked:
            self.revoked.discard(record.record_id)
            return
        amount = record.worst_cost or Decimal(0)
        self.live[key] = Live(record.spec, record.fingerprint, record.currency, amount, order)
        self.by_fingerprint.setdefault(record.fingerprint, set()).add(key)

    def _drop(self, key: str) -> Live | None:
        live = self.live.pop(key, None)
        if live is not None:
            keys = self.by_fingerprint[live.fingerprint]
            keys.discard(key)
            if not keys:
                del self.by_fingerprint[live.fingerprint]
        return live

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready encoding; :meth:`from_json` gives back an equal state."""
        return {
            "format": FORMAT,
            "folded": self.folded,
            "live": [
                [key, v.spec, v.fingerprint, v.currency, str(v.amount), *v.order]
                for key, v in self.live.items()
            ],
            "reconciled": {
                fp: {cur: [*order, str(amount)] for cur, (order, amount) in by.items()}
                for fp, by in self.reconciled.items()
            },
            "revoked": sorted(self.revoked),
            "counts": self.counts,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Spend:
        """Decode :meth:`to_json`'s output; raises ``ValueError`` for another format."""
        if data.get("format") != FORMAT:
            raise ValueError(f"spend format {data.get('format')!r} is not {FORMAT}")
        spend = cls()
        spend.folded = int(data["folded"])
        for key, spec, fp, currency, amount, micros, rid, seq in data["live"]:
            order = (int(micros), str(rid), int(seq))
            spend.live[key] = Live(spec, fp, currency, Decimal(amount), order)
            spend.by_fingerprint.setdefault(fp, set()).add(key)
        spend.reconciled = {
            fp: {
                cur: ((int(micros), str(rid), int(seq)), Decimal(amount))
                for cur, (micros, rid, seq, amount) in by.items()
            }
            for fp, by in data["reconciled"].items()
        }
        spend.revoked = set(data["revoked"])
        spend.counts = {str(k): int(v) for k, v in data["counts"].items()}
        return spend


def _micros(moment: dt.datetime) -> int:
    return (moment - _EPOCH) // _MICRO
