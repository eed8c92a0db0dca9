"""The approvals ledger (pure): its records and the store protocol.

Every request, approval, revocation, launch and reconciliation is one append-only record;
a revocation is a new record, never an edit. A record's ``recorded_at`` is when it was
written (the store sets it); the time of what it records (a review, a comment) is its
``event_at``. Its ``record_id`` is the id in its signed payload, the same in every copy of
it, so a copied run is the same record, not a second one. The tag encoding is
:mod:`gate.ledger.encoding`, the judging of approvals :mod:`gate.ledger.approvals`, the
signatures :mod:`gate.ledger.signing`, a command's view of the ledger
:mod:`gate.ledger.view`; the MLflow store lives in :mod:`gate.integrations.mlflow.client`.
Nothing here does I/O or reads the clock.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Protocol

from gate.errors import InputError
from gate.ledger.approvers import Origin
from gate.ledger.signing import Signer

LEDGER_EXPERIMENT = "budget-gate-ledger"
"""The MLflow experiment that holds one run per ledger record."""
DEFAULT_EXPIRY = "30d"
MAX_EXPIRY = dt.timedelta(days=366)
MAX_CLOCK_SKEW = dt.timedelta(minutes=2)
"""How far a writer's or reader's clock may be from the tracking server's: beyond it the
command refuses (the ledger is ordered by writers' clocks), and a record whose run is dated
further from its signed time does not count."""


class RecordKind(str, Enum):
    """What a ledger record says."""

    REQUEST = "request"
    APPROVAL = "approval"
    REVOCATION = "revocation"
    LAUNCH = "launch"
    RECONCILIATION = "reconciliation"


class Source(str, Enum):
    """Where an approval came from."""

    LOCAL = "local"
    GITHUB_REVIEW = "github-review"
    GITHUB_COMMENT = "github-comment"

    @property
    def origin(self) -> Origin:
        """``local`` (typed at a terminal) or ``github`` (verified by the pull-request flow)."""
        return Origin.LOCAL if self is Source.LOCAL else Origin.GITHUB


@dataclass(frozen=True, slots=True)
class LedgerRecord:
    """One ledger entry; ``by`` is the approver, revoker, requester or launcher.

    A revocation names the approvals it cancels in ``revokes`` (their record ids), so that
    an approval recorded in the same instant as a revocation is never caught by it; a
    launch names the approval it uses in ``approval``, and ``launch_key`` makes the workers
    of one search one launch; a launch record with ``launch_keys`` records one launch per
    key at once (:mod:`gate.ledger.launches`: readers see one launch record per key).
    ``head_sha`` and ``event_id`` bind a GitHub approval to the commit it was given on and
    the review or comment that gave it, ``repository`` (``owner/name``) to the repository
    whose pull request ``pr_number`` is: a ledger may serve several. ``ran_by_user`` and
    ``ran_by_email`` say who ran the command that wrote a local record.

    ``signer``, ``signature`` and ``payload`` are the signed form (see
    :mod:`gate.ledger.signing`); ``run_id`` is the MLflow run that holds the record, set by
    the store.
    """

    kind: RecordKind
    spec: str
    fingerprint: str
    experiment: str
    recorded_at: dt.datetime
    currency: str
    worst_cost: Decimal | None = None
    expected_cost: Decimal | None = None
    actual_cost: Decimal | None = None
    team: str | None = None
    cost_center: str | None = None
    by: str | None = None
    reason: str | None = None
    source: Source = Source.LOCAL
    pr_number: int | None = None
    expires_at: dt.datetime | None = None
    revokes: tuple[str, ...] = ()
    record_id: str | None = None
    ran_by_user: str | None = None
    ran_by_email: str | None = None
    event_at: dt.datetime | None = None
    head_sha: str | None = None
    event_id: str | None = None
    approval: str | None = None
    launch_key: str | None = None
    launch_keys: tuple[str, ...] = ()
    repository: str | None = None
    signer: str | None = None
    signature: str | None = None
    payload: str | None = None
    run_id: str | None = None

    def summary(self) -> str:
        """``approval by alice on 2026-11-29 14:03 UTC`` for messages."""
        by = f" by {self.by}" if self.by else ""
        return f"{self.kind.value}{by} on {when(self.recorded_at)}"


@dataclass(frozen=True, slots=True)
class LedgerQuery:
    """Filters for reading records; every filter set must match (AND)."""

    fingerprint: str | None = None
    spec: str | None = None
    team: str | None = None
    cost_center: str | None = None
    since: dt.datetime | None = None
    pr_number: int | None = None
    """A pull request's records, whatever their spec: CI revokes the withdrawn approvals of
    one its diff no longer shows."""

    def matches(self, record: LedgerRecord) -> bool:
        """Whether ``record`` is one this query reads."""
        return (
            self.fingerprint in (None, record.fingerprint)
            and self.spec in (None, record.spec)
            and self.team in (None, record.team)
            and self.cost_center in (None, record.cost_center)
            and self.pr_number in (None, record.pr_number)
            and (self.since is None or record.recorded_at >= self.since)
        )


class LedgerStore(Protocol):
    """Append-only storage of ledger records, read under one :class:`Trust`.

    ``ignored`` holds the runs reads left out and why (unsigned, a bad signature, malformed),
    and ``absent`` whether there was a store at all, so the command can say so.
    """

    ignored: dict[str, str]
    absent: bool
    """No store was at the URI when it was opened (a ``sqlite:///`` file): reads are empty."""

    def append(self, record: LedgerRecord, signer: Signer | None = None) -> str:
        """Store one complete record atomically (stamped and signed) and return its run id."""
        ...

    def query(self, query: LedgerQuery) -> list[LedgerRecord]:
        """Every complete record matching ``query`` that counts, oldest first."""
        ...


def when(moment: dt.datetime) -> str:
    """A time for messages, in UTC to the minute."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def short(fingerprint: str) -> str:
    """``sha256:1a2b3c4d5e6f`` — enough to tell versions apart in a message."""
    return fingerprint[:19]


_DURATION = re.compile(r"^([1-9][0-9]{0,5})([hdw])$")
_UNIT_HOURS = {"h": 1, "d": 24, "w": 24 * 7}


def parse_expiry(text: str) -> dt.timedelta:
    """``12h``, ``14d`` or ``2w`` as a duration, at most a year."""
    match = _DURATION.match(text.strip())
    if match is None:
        raise InputError(
            f"--expires {text!r} is not a duration or a date",
            hint="use e.g. 12h, 14d or 2w, or a date such as 2026-12-31 (the end of that day, UTC)",
        )
    span = dt.timedelta(hours=int(match.group(1)) * _UNIT_HOURS[match.group(2)])
    if span > MAX_EXPIRY:
        raise InputError(f"--expires {text!r} is over a year", hint="approve again later instead")
    return span


def expiry_after(text: str, now: dt.datetime) -> dt.datetime:
    """When an approval given at ``now`` expires: a duration (``14d``) or a date's end (UTC).

    ``2026-12-31`` holds until the last moment of that day in UTC; a date before ``now`` or
    more than a year after it is refused, like a duration over a year.
    """
    try:
        day = dt.date.fromisoformat(text.strip())
    except ValueError:
        return now + parse_expiry(text)
    end = dt.datetime.combine(day, dt.time.max, tzinfo=dt.timezone.utc)
    if end <= now:
        raise InputError(f"--expires {text!r} has passed", hint="give a later date or a duration")
    if end - now > MAX_EXPIRY:
        raise InputError(f"--expires {text!r} is over a year", hint="approve again later instead")
    return end
