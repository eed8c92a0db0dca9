"""The approvals ledger (pure): records, their tag encoding, the store protocol, freshness.

Every request, approval, revocation and reconciliation is one append-only record; a
revocation is a new record, never an edit. The MLflow store lives in
:mod:`gate.integrations.mlflow.client`; nothing here does I/O or reads the clock.

An approval is *fresh* for a spec when its fingerprint matches, its approved worst-case
amount is at least the current worst-case estimate (same currency), it has not expired,
no revocation names it, and its approver is still authorized.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Protocol

from gate.errors import BackendError, InputError
from gate.ledger import tracking
from gate.ledger.approvers import ALL_ORIGINS, Approvers, Origin
from gate.money import format_money

LEDGER_EXPERIMENT = "budget-gate-ledger"
"""The MLflow experiment that holds one run per ledger record."""
"""Where the ledger lives when neither --tracking-uri nor MLFLOW_TRACKING_URI is set."""
NO_APPROVAL = "no approval is recorded for this version"
"""How a check with no approval at all starts its reason (the pull-request flow drops it)."""
DEFAULT_EXPIRY = "30d"
MAX_EXPIRY = dt.timedelta(days=366)
RECORD_VERSION = "1"


class RecordKind(str, Enum):
    """What a ledger record says."""

    REQUEST = "request"
    APPROVAL = "approval"
    REVOCATION = "revocation"
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
    """One ledger entry; ``by`` is the approver, revoker or requester.

    A revocation names the approvals it cancels in ``revokes`` (their record ids), so that
    an approval recorded in the same instant as a revocation is never caught by it.
    ``ran_by_user`` and ``ran_by_email`` say who ran the command that wrote a local record
    (the OS login and ``git config user.email``): what ``by`` claims, they do not prove,
    but they are on record next to it.
    ``record_id`` is assigned by the store (the MLflow run id) and is ``None`` until then.
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


class LedgerStore(Protocol):
    """Append-only storage of ledger records."""

    def append(self, record: LedgerRecord) -> str:
        """Store one complete record atomically and return its id."""
        ...

    def query(self, query: LedgerQuery) -> list[LedgerRecord]:
        """Every complete record matching ``query``, oldest first."""
        ...


# Tag names: shared ones come from gate.ledger.tracking so runs and records use the same words.
KIND = tracking.PREFIX + "kind"
VERSION = tracking.PREFIX + "record_version"
RECORDED_AT = tracking.PREFIX + "recorded_at"
CURRENCY = tracking.PREFIX + "currency"
WORST_COST = tracking.PREFIX + "worst_cost"
EXPECTED_COST = tracking.PREFIX + "expected_cost"
ACTUAL_COST = tracking.PREFIX + "actual_cost"
BY = tracking.PREFIX + "by"
REASON = tracking.PREFIX + "reason"
SOURCE = tracking.PREFIX + "source"
PR_NUMBER = tracking.PREFIX + "pr_number"
EXPIRES_AT = tracking.PREFIX + "expires_at"
REVOKES = tracking.PREFIX + "revokes"
RAN_BY_USER = tracking.PREFIX + "ran_by_user"
RAN_BY_EMAIL = tracking.PREFIX + "ran_by_email"


def to_tags(record: LedgerRecord) -> dict[str, str]:
    """Encode a record as MLflow tags; unset fields are left out, amounts stay exact."""
    tags: dict[str, str | None] = {
        KIND: record.kind.value,
        VERSION: RECORD_VERSION,
        tracking.SPEC: record.spec,
        tracking.FINGERPRINT: record.fingerprint,
        tracking.EXPERIMENT: record.experiment,
        tracking.TEAM: record.team,
        tracking.COST_CENTER: record.cost_center,
        RECORDED_AT: record.recorded_at.isoformat(),
        CURRENCY: record.currency,
        WORST_COST: _text(record.worst_cost),
        EXPECTED_COST: _text(record.expected_cost),
        ACTUAL_COST: _text(record.actual_cost),
        BY: record.by,
        REASON: record.reason,
        SOURCE: record.source.value,
        PR_NUMBER: _text(record.pr_number),
        EXPIRES_AT: record.expires_at.isoformat() if record.expires_at else None,
        REVOKES: ",".join(record.revokes) or None,
        RAN_BY_USER: record.ran_by_user,
        RAN_BY_EMAIL: record.ran_by_email,
    }
    return {key: value for key, value in tags.items() if value is not None}


def from_tags(tags: Mapping[str, str], record_id: str) -> LedgerRecord:
    """Decode a record; a malformed one is a backend error naming the run, never skipped."""
    try:
        return LedgerRecord(
            kind=RecordKind(tags[KIND]),
            spec=tags[tracking.SPEC],
            fingerprint=tags[tracking.FINGERPRINT],
            experiment=tags[tracking.EXPERIMENT],
            recorded_at=_aware(tags[RECORDED_AT]),
            currency=tags[CURRENCY],
            worst_cost=_decimal(tags.get(WORST_COST)),
            expected_cost=_decimal(tags.get(EXPECTED_COST)),
            actual_cost=_decimal(tags.get(ACTUAL_COST)),
            team=tags.get(tracking.TEAM),
            cost_center=tags.get(tracking.COST_CENTER),
            by=tags.get(BY),
            reason=tags.get(REASON),
            source=Source(tags.get(SOURCE, Source.LOCAL.value)),
            pr_number=int(tags[PR_NUMBER]) if PR_NUMBER in tags else None,
            expires_at=_aware(tags[EXPIRES_AT]) if EXPIRES_AT in tags else None,
            revokes=tuple(filter(None, tags.get(REVOKES, "").split(","))),
            record_id=record_id,
            ran_by_user=tags.get(RAN_BY_USER),
            ran_by_email=tags.get(RAN_BY_EMAIL),
        )
    except (KeyError, ValueError, InvalidOperation) as exc:
        raise BackendError(
            f"ledger record {record_id} in experiment {LEDGER_EXPERIMENT!r} is malformed "
            f"({type(exc).__name__}: {exc}); records are append-only, fix or delete that run"
        ) from None


def _text(value: Decimal | int | None) -> str | None:
    return None if value is None else str(value)


def _decimal(value: str | None) -> Decimal | None:
    if value is None:
        return None
    amount = Decimal(value)
    if not amount.is_finite():
        raise ValueError(f"amount {value!r} is not finite")
    return amount


def _aware(value: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"time {value!r} has no timezone")
    return moment


def when(moment: dt.datetime) -> str:
    """A time for messages, in UTC to the minute."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


@dataclass(frozen=True, slots=True)
class Requirement:
    """What an approval must cover for one evaluation of one spec."""

    fingerprint: str
    worst_cost: Decimal
    currency: str
    approvers: Approvers
    owner: str | None = None
    sources: tuple[Origin, ...] = ALL_ORIGINS


@dataclass(frozen=True, slots=True)
class ApprovalCheck:
    """The outcome of looking for an approval: the fresh one used, or why none counts."""

    approval: LedgerRecord | None
    stale: tuple[str, ...] = ()


def authorize(name: str, source: Source, need: Requirement) -> str | None:
    """Why ``name`` may not approve this spec, or ``None`` when they may.

    Locally only users listed in ``approval.approvers.users`` may approve. GitHub approvals
    were checked against team membership and repository permission by the GitHub flow when
    they were recorded, so here they only face the self-approval rule.
    """
    approvers = need.approvers
    if name == need.owner and not approvers.allow_self_approval:
        return f"{name} owns the spec and the policy does not allow self-approval"
    if source is not Source.LOCAL or name in approvers.users:
        return None
    if not approvers.users:
        return (
            f"{name} may not approve: the policy lists no approval.approvers.users, so "
            "approvals come from GitHub reviews by its approver teams"
        )
    return f"{name} is not an approver (approval.approvers.users: {', '.join(approvers.users)})"


def refuse_source(source: Source, need: Requirement) -> str | None:
    """Why an approval from ``source`` does not count under ``approval.sources``, or ``None``."""
    if source.origin in need.sources:
        return None
    listed = ", ".join(origin.value for origin in need.sources)
    return (
        f"the policy counts only approvals from {listed} (approval.sources), and this one "
        f"is {source.value}"
    )


def check_approvals(
    records: Iterable[LedgerRecord], need: Requirement, now: dt.datetime
) -> ApprovalCheck:
    """Pick the newest fresh approval for ``need.fingerprint``, or say why none is fresh.

    Records after ``now`` are ignored, so a past moment can be judged (audits, ``--as-of``).
    """
    known = [r for r in records if r.fingerprint == need.fingerprint and r.recorded_at <= now]
    revocations = [r for r in known if r.kind is RecordKind.REVOCATION]
    approvals = sorted(
        (r for r in known if r.kind is RecordKind.APPROVAL), key=lambda r: r.recorded_at
    )
    stale: list[str] = []
    for approval in reversed(approvals):
        reason = stale_reason(approval, need, revocations, now)
        if reason is None:
            return ApprovalCheck(approval, tuple(stale))
        stale.append(reason)
    if not approvals:
        stale.append(f"{NO_APPROVAL} ({short(need.fingerprint)})")
    return ApprovalCheck(None, tuple(stale))


def is_revoked(approval: LedgerRecord, records: Iterable[LedgerRecord]) -> bool:
    """Whether a revocation among ``records`` names ``approval``."""
    return revoked_by(approval, records) is not None


def revoked_by(approval: LedgerRecord, records: Iterable[LedgerRecord]) -> LedgerRecord | None:
    """The first revocation among ``records`` that names ``approval``, if any."""
    return next(
        (r for r in records if r.kind is RecordKind.REVOCATION and approval.record_id in r.revokes),
        None,
    )


def live_approvals(records: Iterable[LedgerRecord], now: dt.datetime) -> list[LedgerRecord]:
    """Approvals recorded by ``now`` and not revoked (expired ones included)."""
    known = [r for r in records if r.recorded_at <= now]
    return [r for r in known if r.kind is RecordKind.APPROVAL and not is_revoked(r, known)]


def stale_reason(
    approval: LedgerRecord,
    need: Requirement,
    revocations: Iterable[LedgerRecord],
    now: dt.datetime,
) -> str | None:
    """Why ``approval`` does not cover ``need`` at ``now``, or ``None`` when it is fresh."""
    what = approval.summary()
    revocation = revoked_by(approval, revocations)
    if revocation is not None:
        why = f": {revocation.reason}" if revocation.reason else ""
        return f"{what} was revoked ({revocation.summary()}{why})"
    if approval.expires_at is not None and approval.expires_at <= now:
        return f"{what} expired on {when(approval.expires_at)}"
    if approval.currency != need.currency:
        return f"{what} is in {approval.currency}, the policy now prices in {need.currency}"
    amount = approval.worst_cost or Decimal(0)
    if amount < need.worst_cost:
        return (
            f"{what} covers {format_money(amount, approval.currency)}, below the current "
            f"worst case {format_money(need.worst_cost, need.currency)}"
        )
    refusal = refuse_source(approval.source, need) or authorize(
        approval.by or "", approval.source, need
    )
    return f"{what} no longer counts: {refusal}" if refusal else None


def explain_changed(records: Iterable[LedgerRecord], fingerprint: str) -> str | None:
    """When the spec's path has approvals of other versions, say that the spec changed."""
    others = [r for r in records if r.kind is RecordKind.APPROVAL and r.fingerprint != fingerprint]
    if not others:
        return None
    last = max(others, key=lambda r: r.recorded_at)
    return (
        f"the spec changed since its last {last.summary()} ({short(last.fingerprint)}); "
        "approve this version again"
    )


def short(fingerprint: str) -> str:
    """``sha256:1a2b3c4d5e6f`` — enough to tell versions apart in a message."""
    return fingerprint[:19]


_DURATION = re.compile(r"^([1-9][0-9]{0,5})([hdw])$")
_UNIT_HOURS = {"h": 1, "d": 24, "w": 24 * 7}


def parse_expiry(text: str) -> dt.timedelta:
    """``12h``, ``14d`` or ``2w`` as a duration, at most a year."""
    match = _DURATION.match(text.strip())
    if match is None:
        raise InputError(f"--expires {text!r} is not a duration", hint="use e.g. 12h, 14d or 2w")
    span = dt.timedelta(hours=int(match.group(1)) * _UNIT_HOURS[match.group(2)])
    if span > MAX_EXPIRY:
        raise InputError(f"--expires {text!r} is over a year", hint="approve again later instead")
    return span


@dataclass
class LedgerView:
    """The ledger as one command sees it: opened on first use, each query read once.

    ``approvals`` says whether recorded approvals count toward the verdict (``verify``,
    or ``check --tracking-uri``); the monthly budget reads the ledger either way, and with
    ``approvals_if_read`` (``check``) approvals count for every spec whose budget read it.
    ``where`` names the store for messages (credentials removed).
    """

    opener: Callable[[], LedgerStore]
    now: dt.datetime
    approvals: bool = False
    where: str = ""
    approvals_if_read: bool = False
    _store: LedgerStore | None = field(default=None, init=False, repr=False)
    _cache: dict[LedgerQuery, list[LedgerRecord]] = field(
        default_factory=dict, init=False, repr=False
    )

    def store(self) -> LedgerStore:
        """The underlying store, opened now if it was not yet."""
        if self._store is None:
            self._store = self.opener()
        return self._store

    def records(self, query: LedgerQuery) -> list[LedgerRecord]:
        """Records matching ``query``, read from the store once per command."""
        if query not in self._cache:
            self._cache[query] = self.store().query(query)
        return self._cache[query]
