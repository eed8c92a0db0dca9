"""What the ledger says a month committed: approvals, launches, revocations (pure).

The one place the report interprets record kinds, so a new kind is added here alone:

- an **approval** counts in the month it was *recorded* (its record time, which from
  signed records on is the time it was written), at its approved worst case, unless a
  revocation recorded by that month's end names it (revoked later, its month held it: a
  range's figures are the sum of its months'). Per team and spec path only the
  newest approval recorded that month counts (a newer version's approval supersedes the
  older), as the gate's monthly budget counts it (:mod:`gate.ledger.budget`,
  :meth:`gate.ledger.spend.Spend.totals`), so the report and the gate agree on what was
  approved when. Every approval is still listed: each is someone's decision. What the
  approved runs then cost shows under *actual*, in the months they ran;
- a **launch** commits an approval's worst case in the month it was recorded; ledgers
  written before launches were recorded have none, and the report says so instead of
  showing zero;
- **requests** and **reconciliations** commit nothing here (the report prices the runs
  themselves); a kind this module does not know is counted and named in the notes.

A record written after the period's end does not count for it (neither a revocation nor
an approval's estimate): a past period's figures do not change after the fact. Amounts in
another currency than the report's are not added up; they are counted, by team.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from gate.ledger.records import LedgerRecord, RecordKind
from gate.report.period import Month, Period
from gate.words import counted, listed

NO_TEAM = "(no team)"
LAUNCH = RecordKind.LAUNCH.value


@dataclass
class Commitments:
    """The ledger's money of one period, by team, and every approval in it."""

    currency: str
    approved: dict[str, Decimal] = field(default_factory=lambda: defaultdict(Decimal))
    """Per team, each month's newest approval per spec path, added up over the months."""
    launched: dict[str, Decimal] = field(default_factory=lambda: defaultdict(Decimal))
    approvals: list[LedgerRecord] = field(default_factory=list)
    """Every approval of the period not revoked in its month, in record order (superseded
    ones too)."""
    revoked: set[str] = field(default_factory=set)
    revocations: dict[str, LedgerRecord] = field(default_factory=dict)
    """Per revoked approval's id, the first revocation by the period's end that names it."""
    revoked_approvals: list[LedgerRecord] = field(default_factory=list)
    """The approvals of the period revoked by their month's end: listed, so a month's
    decisions do not vanish from the report without a word."""
    revoked_later: list[LedgerRecord] = field(default_factory=list)
    """The approvals of the period revoked after their month, by the period's end: counted
    in their month, which held them, and said."""
    launches_recorded: bool = False
    other_currency: int = 0
    unknown_kinds: Counter[str] = field(default_factory=Counter)
    newest_approval: dict[str, LedgerRecord] = field(default_factory=dict)
    """Per fingerprint, its newest approval not revoked, recorded by the period's end."""
    other_by_team: Counter[str] = field(default_factory=Counter)
    """``other_currency`` by the records' teams (``--team`` counts only its own)."""
    unknown_by_team: Counter[tuple[str, str]] = field(default_factory=Counter)
    """``unknown_kinds`` by (team, kind)."""

    def other_currency_of(self, team: str | None) -> int:
        """The records of the period in another currency: ``team``'s, or all (``None``)."""
        return self.other_currency if team is None else self.other_by_team[team]

    def unknown_kinds_of(self, team: str | None) -> Counter[str]:
        """The records of the period of an unknown kind: ``team``'s, or all (``None``)."""
        if team is None:
            return self.unknown_kinds
        return Counter({k: n for (t, k), n in self.unknown_by_team.items() if t == team})


def team_of(record: LedgerRecord) -> str:
    """The team a record is charged to."""
    return record.team or NO_TEAM


def commitments(records: Iterable[LedgerRecord], period: Period, currency: str) -> Commitments:
    """Fold the ledger's records into the period's approved and launched money by team.

    Records written after the period's end are left out, so a past period's figures stay
    what they were when it ended.
    """
    found = Commitments(currency)
    kept = [r for r in records if r.recorded_at < period.end]
    ordered = sorted(kept, key=lambda r: (r.recorded_at, r.record_id or ""))
    for record in ordered:
        if record.kind is RecordKind.REVOCATION:
            for revoked in record.revokes:
                found.revocations.setdefault(revoked, record)
    found.revoked = set(found.revocations)
    for record in ordered:
        _fold(found, record, period.holds(record.recorded_at))
    found.approved.update(newest_per_spec(found.approvals))
    return found


def newest_per_spec(approvals: Iterable[LedgerRecord]) -> dict[str, Decimal]:
    """Per team, the worst case of each month's newest approval of each spec path, summed.

    The gate's rule (:meth:`gate.ledger.spend.Spend.totals`): a newer approval of a spec
    supersedes the older one of the same month, so one spec is not held twice. The
    approvals come in record order; a later one replaces an earlier one.
    """
    newest: dict[tuple[Month, str, str], LedgerRecord] = {}
    for record in approvals:
        newest[(Month.of(record.recorded_at), team_of(record), record.spec)] = record
    approved: dict[str, Decimal] = defaultdict(Decimal)
    for (_month, team, _spec), record in newest.items():
        approved[team] += record.worst_cost or Decimal(0)
    return approved


def _revoked_in_its_month(found: Commitments, approval: LedgerRecord) -> bool:
    """Revoked before its month ended, so it held nothing.

    Revoked later, its month held it (a range's *approved* is the sum of its months'),
    though it scores no variance.
    """
    revocation = found.revocations.get(approval.record_id or "")
    return revocation is not None and revocation.recorded_at < Month.of(approval.recorded_at).end


def _fold(found: Commitments, record: LedgerRecord, current: bool) -> None:
    kind = record.kind.value
    if kind == LAUNCH:
        found.launches_recorded = True
    if not _in_currency(found, record, current):
        return
    match kind:
        case RecordKind.APPROVAL.value:
            if _revoked_in_its_month(found, record):
                if current:
                    found.revoked_approvals.append(record)
                return
            if record.record_id not in found.revoked:
                found.newest_approval[record.fingerprint] = record
            elif current:
                found.revoked_later.append(record)
            if current:
                found.approvals.append(record)
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
                found.unknown_by_team[(team_of(record), kind)] += 1


def _in_currency(found: Commitments, record: LedgerRecord, current: bool) -> bool:
    """Whether the record's money can be added up; one in another currency is counted."""
    if record.currency == found.currency:
        return True
    if current and record.kind is not RecordKind.REVOCATION:
        found.other_currency += 1
        found.other_by_team[team_of(record)] += 1
    return False


def ledger_notes(found: Commitments, currency: str, team: str | None) -> list[str]:
    """What of the period's ledger was not added up, or counted though revoked later.

    Only ``team``'s records, where one is given.
    """
    notes = []
    other = found.other_currency_of(team)
    if other:
        notes.append(
            f"{counted(other, 'ledger record')} of the period in another "
            f"currency than {currency}: not added up"
        )
    later = [r for r in found.revoked_later if team is None or team_of(r) == team]
    if later:
        revoked = [found.revocations[r.record_id or ""] for r in later]
        notes.append(
            f"{counted(len(later), 'approval')} revoked after the month it was recorded in: "
            "counted in that month, which held it, though no variance is scored against it ("
            + listed(
                [
                    f"{r.experiment}, revoked by {by.by or '?'} on {by.recorded_at:%Y-%m-%d}"
                    for r, by in zip(later, revoked, strict=True)
                ]
            )
            + ")"
        )
    if not found.launches_recorded:
        notes.append(
            "the ledger holds no launch records (budget-gate records them from the signed "
            "ledger on): launched is not shown"
        )
    for kind, count in sorted(found.unknown_kinds_of(team).items()):
        notes.append(
            f"{counted(count, 'ledger record')} of a kind the report does not know: {kind}"
        )
    return notes
