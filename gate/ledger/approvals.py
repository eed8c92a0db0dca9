"""Whether an approval in the ledger covers a spec now (pure): freshness, authority, launches.

An approval is *fresh* for a spec when it was given for this spec's path and fingerprint,
its approved worst-case amount is at least the current worst-case estimate (same
currency), it has not expired (one that names no expiry holds for the longest expiry,
:data:`gate.ledger.records.MAX_EXPIRY`), no revocation names it, its approver is still
authorized, and its launches are not used up: a policy's ``approval.launches`` says how
many launches one approval covers (default 1), each recorded by the launch paths as a
``launch`` record naming it. A launch with the caller's own ``launch_key`` is not counted
against it (the workers of one search are one launch).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from gate.ledger.approvers import ALL_ORIGINS, Approvers, Origin
from gate.ledger.records import (
    MAX_CLOCK_SKEW,
    MAX_EXPIRY,
    LedgerRecord,
    RecordKind,
    Source,
    short,
    when,
)
from gate.ledger.repository import repository_note, repository_refusal
from gate.money import format_money
from gate.words import counted

NO_APPROVAL = "no approval is recorded for this version"
"""How a check with no approval at all starts its reason (the pull-request flow drops it)."""
DEFAULT_LAUNCHES = 1
JOIN_WITHIN = dt.timedelta(hours=24)
"""How long after a launch another process may join it with its launch key; later, the
same key is a new launch (a key cannot keep one approval alive for ever)."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """What an approval must cover for one evaluation of one spec."""

    fingerprint: str
    worst_cost: Decimal
    currency: str
    approvers: Approvers
    owner: str | None = None
    sources: tuple[Origin, ...] = ALL_ORIGINS
    spec: str | None = None
    """The spec's path in the repository; an approval of another path does not cover it."""
    launches: int = DEFAULT_LAUNCHES
    """How many launches one approval covers (``approval.launches``)."""
    launch_key: str | None = None
    """The caller's own launch, which does not use the approval up again."""
    former: frozenset[str] = frozenset()
    """Users a committed version of the policies listed as approvers: their revocations
    stand after they leave the list (:func:`revocation_refusal`)."""
    repository: str | None = None
    """The repository (``owner/name``) judged in: a GitHub approval given in another does
    not count (:mod:`gate.ledger.repository`); ``None`` when unknown, said, not checked."""


@dataclass(frozen=True, slots=True)
class ApprovalCheck:
    """The outcome of looking for an approval: the fresh one used, or why none counts."""

    approval: LedgerRecord | None
    stale: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    """What the verdict passes over, said: revocations of the approval used that do not
    count (each with why), and a GitHub approval's repository left unchecked."""


def authorize(name: str, source: Source, need: Requirement) -> str | None:
    """Why ``name`` may not approve this spec, or ``None`` when they may.

    Locally only users listed in ``approval.approvers.users`` may approve. GitHub approvals
    were checked against team membership and repository permission by the GitHub flow when
    they were recorded; where the policy names no teams nor permission, that was the list,
    so a GitHub approver no longer on it no longer counts either.
    """
    approvers = need.approvers
    # NOTE: in any case: GitHub logins are, and "Vision-Lead" approving vision-lead's spec
    # is self-approval whichever way it is spelled.
    owns = need.owner is not None and name.casefold() == need.owner.casefold()
    if owns and not approvers.allow_self_approval:
        return f"{name} owns the spec and the policy does not allow self-approval"
    if name in approvers.users:
        return None
    if source is not Source.LOCAL:
        # NOTE: GitHub approvals passed whatever the current list said, so an approver
        # removed from the policy kept clearing launches with them (their local ones did not).
        listed = any(user.casefold() == name.casefold() for user in approvers.users)
        if listed or approvers.teams or approvers.permission is not None:
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
    launches = [r for r in known if r.kind is RecordKind.LAUNCH]
    approvals = sorted(
        (r for r in known if r.kind is RecordKind.APPROVAL), key=lambda r: r.recorded_at
    )
    stale: list[str] = []
    for approval in reversed(approvals):
        reason = stale_reason(approval, need, revocations, now) or used_up(
            approval, launches, need, now
        )
        if reason is None:
            notes = uncounted(approval, need, revocations)
            unchecked = repository_note(approval, need.repository)
            return ApprovalCheck(approval, tuple(stale), (*notes, *filter(None, [unchecked])))
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


def may_revoke(
    revocation: LedgerRecord,
    approval: LedgerRecord,
    approvers: Approvers,
    owner: str | None,
    former: frozenset[str] = frozenset(),
) -> bool:
    """Whether ``revocation`` may withdraw ``approval`` (:func:`revocation_refusal`)."""
    return revocation_refusal(revocation, approval, approvers, owner, former) is None


def revocation_refusal(
    revocation: LedgerRecord,
    approval: LedgerRecord,
    approvers: Approvers,
    owner: str | None,
    former: frozenset[str] = frozenset(),
) -> str | None:
    """Why ``revocation`` does not withdraw ``approval``, or ``None`` when it does.

    CI's counts (a GitHub approval withdrawn there), and a local one by the approval's own
    approver, by one :func:`revoker_refusal` lets revoke now (a listed approver, the
    owner), or by one a committed version of the policies listed as an approver
    (``former``): a revocation written while its author could revoke stays in force.

    NOTE: ``budget-gate revoke`` refuses anyone else, but a listed key can write a signed
    revocation past it; read, it must not cancel approvals its signer had no say in. The
    signers file cannot tell a launcher's key from an approver's (any listed principal may
    sign a local revocation as itself), so the policies, now and in their git history, say
    who could revoke. Judged by the current list alone, a revocation stopped counting once
    its author left ``approval.approvers.users``, and the approval counted again silently.
    """
    if revocation.source is not Source.LOCAL:
        return None
    by = revocation.by or ""
    if by == (approval.by or "") or by in former:
        return None
    return revoker_refusal(by, approvers, owner)


def revoker_refusal(by: str, approvers: Approvers, owner: str | None) -> str | None:
    """Why ``by`` may not revoke this spec's approvals, or ``None`` (approvers, the owner).

    The owner is matched in any case, as :func:`authorize` matches them.
    """
    if owner is not None and by.casefold() == owner.casefold():
        return None
    need = Requirement("", Decimal(0), "", approvers, owner)
    return authorize(by, Source.LOCAL, need)


def uncounted(
    approval: LedgerRecord, need: Requirement, revocations: Iterable[LedgerRecord]
) -> tuple[str, ...]:
    """What is said of each revocation naming ``approval`` that does not withdraw it."""
    notes = []
    for revocation in revocations:
        if approval.record_id not in revocation.revokes:
            continue
        why = revocation_refusal(revocation, approval, need.approvers, need.owner, need.former)
        if why is not None:
            notes.append(
                f"{revocation.summary()} of {approval.summary()} does not count: {why}, "
                "and no committed version of the policies lists them as an approver"
            )
    return tuple(notes)


def live_approvals(
    records: Iterable[LedgerRecord],
    now: dt.datetime,
    revokers: tuple[Approvers, str | None] | None = None,
    former: frozenset[str] = frozenset(),
) -> list[LedgerRecord]:
    """Approvals recorded by ``now`` and not revoked (expired ones included).

    ``revokers`` (the policy's approvers, the spec's owner) and ``former`` (those the
    policies' history lists) limit the revocations that count to those :func:`may_revoke`
    allows.
    """
    known = [r for r in records if r.recorded_at <= now]
    approvals = [r for r in known if r.kind is RecordKind.APPROVAL]
    if revokers is None:
        return [r for r in approvals if not is_revoked(r, known)]
    return [
        r
        for r in approvals
        if not is_revoked(r, [v for v in known if may_revoke(v, r, *revokers, former)])
    ]


def stale_reason(
    approval: LedgerRecord,
    need: Requirement,
    revocations: Iterable[LedgerRecord],
    now: dt.datetime,
) -> str | None:
    """Why ``approval`` does not cover ``need`` at ``now``, or ``None`` when it is fresh."""
    what = approval.summary()
    if need.spec is not None and approval.spec != need.spec:
        return f"{what} is for {approval.spec}: a copy at {need.spec} needs its own approval"
    elsewhere = repository_refusal(approval, need.repository)
    if elsewhere is not None:
        return f"{what} {elsewhere}"
    allowed = [
        r for r in revocations if may_revoke(r, approval, need.approvers, need.owner, need.former)
    ]
    revocation = revoked_by(approval, allowed)
    if revocation is not None:
        why = f": {revocation.reason}" if revocation.reason else ""
        return f"{what} was revoked ({revocation.summary()}{why})"
    expiry = expires(approval)
    if expiry <= now:
        named = approval.expires_at
        unset = (
            ""
            if named == expiry
            else f" (it names {f'expiry {when(named)}' if named else 'no expiry'}: an "
            f"approval holds at most {MAX_EXPIRY.days} days)"
        )
        return f"{what} expired on {when(expiry)}{unset}"
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


def expires(approval: LedgerRecord) -> dt.datetime:
    """When ``approval`` expires: its ``expires_at``, at most :data:`MAX_EXPIRY` after it.

    NOTE: ``approve`` always sets an expiry within a year, but a v1 record or one written
    through the store's API may set none, or one decades ahead; nothing outlives the
    longest expiry ``approve`` allows (the path lookups read back only that far).
    """
    try:
        longest = approval.recorded_at + MAX_EXPIRY
    except OverflowError:  # recorded near the end of time: it has not expired yet
        longest = dt.datetime.max.replace(tzinfo=dt.timezone.utc)
    if approval.expires_at is not None:
        return min(approval.expires_at, longest)
    return longest


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


def launches_of(approval: LedgerRecord, launches: Iterable[LedgerRecord]) -> list[LedgerRecord]:
    """The distinct launches that used ``approval`` (copies and one search's workers once)."""
    seen: dict[str, LedgerRecord] = {}
    for launch in launches:
        if launch.kind is RecordKind.LAUNCH and launch.approval == approval.record_id:
            seen.setdefault(launch_group(launch) or launch.record_id or "", launch)
    return sorted(seen.values(), key=lambda r: (r.recorded_at, r.run_id or ""))


def used_up(
    approval: LedgerRecord, launches: Iterable[LedgerRecord], need: Requirement, now: dt.datetime
) -> str | None:
    """Why ``approval``'s launches are used up, or ``None`` while one is left for this one.

    A launch this one joins (same key, recorded within :data:`JOIN_WITHIN`) is not counted,
    unless it committed less than this launch's worst case (:func:`commits`).
    """
    used = [
        r
        for r in launches_of(approval, launches)
        if not (joins(r, need.launch_key, now) and commits(r, need.worst_cost, need.currency))
    ]
    if len(used) < need.launches:
        return None
    last = used[-1]
    cheap = ""
    if joins(last, need.launch_key, now):
        cheap = (
            f" (its key {last.launch_key} committed "
            f"{format_money(last.worst_cost or Decimal(0), last.currency)}, below this "
            f"launch's worst case {format_money(need.worst_cost, need.currency)}: no join)"
        )
    return (
        f"{approval.summary()} covers {counted(need.launches, 'launch', 'launches')} "
        f"(approval.launches) and was used by the launch on {when(last.recorded_at)}"
        f"{cheap}: approve again to launch again; the worker processes of one search are "
        "one launch when they share a BUDGET_GATE_LAUNCH_KEY"
    )


def commits(launch: LedgerRecord, worst: Decimal, currency: str) -> bool:
    """Whether ``launch`` committed at least ``worst``, this launch's, so it may be joined.

    NOTE: a launch's worst case is its signer's word, and any listed key may sign one: a
    launch of the approval at 0 USD under a key of the launcher's own, then joined with
    that key, ran the approved search with nothing committed to the month.
    """
    return launch.currency == currency and (launch.worst_cost or Decimal(0)) >= worst


def launch_group(launch: LedgerRecord) -> str | None:
    """The launch a record with a launch key is part of: that key, in one join window.

    NOTE: a process that joins a launch writes no record, so records that share a key are
    its copies and workers racing to write it (seconds apart), or a later launch that kept
    the key past :data:`JOIN_WITHIN` (an exported ``BUDGET_GATE_LAUNCH_KEY``): a launch of
    its own, which uses the approval and commits the month again. Windows are whole
    periods of ``JOIN_WITHIN`` since the epoch; two racing copies astride a boundary count
    twice, never a later launch once.
    """
    if launch.launch_key is None:
        return None
    window = int(launch.recorded_at.timestamp() // JOIN_WITHIN.total_seconds())
    return f"{launch.launch_key}@{window}"


def joins(launch: LedgerRecord, key: str | None, now: dt.datetime) -> bool:
    """Whether a process with launch key ``key`` is part of ``launch`` at ``now``.

    Only a launch of the last :data:`JOIN_WITHIN`: one dated ahead of ``now`` (past the clock
    skew a ledger allows) is no launch yet, or a launcher's key would join it for as long as
    its date lies ahead, using no launch of the approval.
    """
    age = now - launch.recorded_at
    return key is not None and launch.launch_key == key and -MAX_CLOCK_SKEW <= age <= JOIN_WITHIN
