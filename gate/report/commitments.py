"""What the ledger says a month committed: approvals, launches, revocations (pure).

The one place the report interprets record kinds, so a new kind is added here alone:

- an **approval** counts in the month it was *recorded* (its record time, which from
  signed records on is the time it was written), at its approved worst case, unless a
  revocation names it. That is the month the gate held the money against the team's
  budget when it decided (:mod:`gate.ledger.budget`), so the report and the gate agree on
  what was approved when. What the approved runs then cost shows under *actual*, in the
  months they ran;
- a **launch** commits an approval's worst case in the month it was recorded; ledgers
  written before launches were recorded have none, and the report says so instead of
  showing zero;
- **requests** and **reconciliations** commit nothing here (the report prices the runs
  themselves); a kind this module does not know is counted and named in the notes.

Amounts in another currency than the report's are not added up; they are counted.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from gate.ledger.records import LedgerRecord, RecordKind
from gate.report.period import Period

NO_TEAM = "(no team)"
LAUNCH = RecordKind.LAUNCH.value


@dataclass
class Commitments:
    """The ledger's money of one period, by team, and every approval in it."""

    currency: str
    approved: dict[str, Decimal] = field(default_factory=lambda: defaultdict(Decimal))
    launched: dict[str, Decimal] = field(default_factory=lambda: defaultdict(Decimal))
    approvals: list[LedgerRecord] = field(default_factory=list)
    revoked: set[str] = field(default_factory=set)
    launches_recorded: bool = False
    other_currency: int = 0
    unknown_kinds: Counter[str] = field(default_factory=Counter)
    newest_approval: dict[str, LedgerRecord] = field(default_factory=dict)
    """Per fingerprint, its newest approval not revoked (any month): the approved estimate."""


def team_of(record: LedgerRecord) -> str:
    """The team a record is charged to."""
    return record.team or NO_TEAM


def commitments(records: Iterable[LedgerRecord], period: Period, currency: str) -> Commitments:
    """Fold the ledger's records into the period's approved and launched money by team."""
    found = Commitments(currency)
    kept = list(records)
    found.revoked = {
        revoked for r in kept if r.kind is RecordKind.REVOCATION for revoked in r.revokes
    }
    for record in sorted(kept, key=lambda r: (r.recorded_at, r.record_id or "")):
        _fold(found, record, period.holds(record.recorded_at))
    return found


def _fold(found: Commitments, record: LedgerRecord, current: bool) -> None:
    kind = record.kind.value
    if kind == LAUNCH:
        found.launches_recorded = True
    if not _in_currency(found, record, current):
        return
    match kind:
        case RecordKind.APPROVAL.value:
            if record.record_id in found.revoked:
                return
            found.newest_approval[record.fingerprint] = record
            if current:
                found.approvals.append(record)
                found.approved[team_of(record)] += record.worst_cost or Decimal(0)
        case "launch":
            if current:
                found.launched[team_of(record)] += record.worst_cost or Decimal(0)
        case RecordKind.REQUEST.value | RecordKind.REVOCATION.value:
            pass
        case RecordKind.RECONCILIATION.value:
            pass  # the report prices the runs themselves, as reconcile did
        case _:
            if current:
                found.unknown_kinds[kind] += 1


def _in_currency(found: Commitments, record: LedgerRecord, current: bool) -> bool:
    """Whether the record's money can be added up; one in another currency is counted."""
    if record.currency == found.currency:
        return True
    if current and record.kind is not RecordKind.REVOCATION:
        found.other_currency += 1
    return False
