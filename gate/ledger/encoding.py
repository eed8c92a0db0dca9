"""Ledger records as MLflow run tags, and their signed payload (pure).

A record is written as its *payload* — the canonical JSON of every field, which is what its
signature covers (:mod:`gate.ledger.signing`) — plus plain tags that say the same for
searches and for people reading the MLflow UI. A record is read back from its payload; the
tags that searches filter by (kind, spec, fingerprint, team, cost center) must say what the
payload says, or the record does not count. Records written before payloads existed
(``record_version`` 1) are read from their tags.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from gate.errors import InputError
from gate.ledger import tracking
from gate.ledger.records import MAX_CLOCK_SKEW, LedgerRecord, RecordKind, Source
from gate.ledger.signing import CI_PRINCIPAL, SIGNERS_FILE, Signer, Trust, record_message

RECORD_VERSION = "2"
PAYLOAD_VERSION = 2
MAX_REASON = 2_000
"""A reason longer than this is cut, so a payload stays well inside MLflow's 8,000-character
tags."""

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
RECORD_ID = tracking.PREFIX + "record_id"
EVENT_AT = tracking.PREFIX + "event_at"
HEAD_SHA = tracking.PREFIX + "head_sha"
PAYLOAD = tracking.PREFIX + "payload"
SIGNATURE = tracking.PREFIX + "signature"
SIGNER = tracking.PREFIX + "signer"

_SEARCHED = {
    KIND: "kind",
    tracking.SPEC: "spec",
    tracking.FINGERPRINT: "fingerprint",
    tracking.TEAM: "team",
    tracking.COST_CENTER: "cost_center",
}


class Malformed(ValueError):
    """A run in the ledger experiment that is not a readable record (it does not count)."""


def payload(record: LedgerRecord) -> str:
    """The canonical JSON of ``record``: sorted keys, no spaces, exact amounts, UTC times."""
    assert record.record_id is not None, "a record is given its id before it is signed"
    body: dict[str, Any] = {
        "v": PAYLOAD_VERSION,
        "id": record.record_id,
        "kind": record.kind.value,
        "spec": record.spec,
        "fingerprint": record.fingerprint,
        "experiment": record.experiment,
        "recorded_at": _time(record.recorded_at),
        "currency": record.currency,
        "worst_cost": _text(record.worst_cost),
        "expected_cost": _text(record.expected_cost),
        "actual_cost": _text(record.actual_cost),
        "team": record.team,
        "cost_center": record.cost_center,
        "by": record.by,
        "reason": record.reason[:MAX_REASON] if record.reason else record.reason,
        "source": record.source.value,
        "pr_number": record.pr_number,
        "expires_at": _time(record.expires_at),
        "revokes": list(record.revokes) or None,
        "ran_by_user": record.ran_by_user,
        "ran_by_email": record.ran_by_email,
        "event_at": _time(record.event_at),
        "head_sha": record.head_sha,
        "event_id": record.event_id,
        "approval": record.approval,
        "launch_key": record.launch_key,
        "launch_keys": list(record.launch_keys) or None,
        "repository": record.repository,
        "signer": record.signer,
    }
    clean = {key: value for key, value in body.items() if value is not None}
    return json.dumps(clean, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def seal(
    record: LedgerRecord, *, now: dt.datetime, record_id: str, signer: Signer | None, trust: Trust
) -> LedgerRecord:
    """``record`` as it is written: stamped with the write time, given its id, signed.

    The time and the id are the store's, never the caller's: a record cannot be backdated
    or take another's id. Under signers, a record that would not count is refused before
    anything is written, so a wrong key is found at once, not by a later reader.

    Raises:
        gate.errors.InputError: signers are required and there is no key, or the key is
            not listed for the signer (exit 3).
    """
    draft = dataclasses.replace(
        record,
        recorded_at=now,
        record_id=record_id,
        signer=signer.principal if signer is not None else None,
        signature=None,
        payload=None,
        run_id=None,
    )
    text = payload(draft)
    signature = signer.sign(record_message(text)) if signer is not None else None
    sealed = dataclasses.replace(draft, payload=text, signature=signature)
    if trust.signed:
        due = due_signer(record)
        if signer is None:
            raise InputError(
                f"cannot record the {record.kind.value}: the policies' {SIGNERS_FILE} requires "
                "every ledger record to be signed, and no signing key is set",
                hint=_no_key_hint(record, due),
            )
        refusal = trust.refusal(sealed)
        if refusal is not None:
            raise InputError(
                f"cannot record the {record.kind.value} signed as {signer.principal}: {refusal}",
                hint=_refusal_hint(record, due, signer.principal, trust.file),
            )
    return sealed


_KEY_ENV = (
    "set BUDGET_GATE_SIGNING_KEY to {whose} SSH key (a private key file, or its .pub with the "
    "key in ssh-agent) and BUDGET_GATE_SIGNER to {name}"
)


def due_signer(record: LedgerRecord) -> str | None:
    """Who alone may sign a record like ``record`` (``None``: any listed principal).

    The rule :func:`gate.ledger.signing.may_sign` enforces, so a refusal names the one fix.
    """
    if record.kind is RecordKind.RECONCILIATION:
        return CI_PRINCIPAL
    if record.kind not in (RecordKind.APPROVAL, RecordKind.REVOCATION):
        return None
    return record.by or "" if record.source is Source.LOCAL else CI_PRINCIPAL


def _no_key_hint(record: LedgerRecord, due: str | None) -> str:
    """Whose key to set: the user's own can never sign a record only another may sign."""
    if due is None:
        return _KEY_ENV.format(whose="your", name="your name there")
    return _ci_hint(record) if due == CI_PRINCIPAL else _KEY_ENV.format(whose=f"{due}'s", name=due)


def _refusal_hint(record: LedgerRecord, due: str | None, signed_as: str, file: str) -> str:
    """The refusal's own fix: sign as the due signer, else a key the file lists."""
    if due == CI_PRINCIPAL and signed_as != CI_PRINCIPAL:
        return _ci_hint(record)
    if due is not None and signed_as != due:
        return (
            f"a local {record.kind.value} counts only when its --by ({due}) signs it: sign as "
            f"{due} (BUDGET_GATE_SIGNER={due} with {due}'s key in BUDGET_GATE_SIGNING_KEY)"
        )
    return f"use the key {file} lists for {signed_as}, or ask the policy owners to add yours"


def _ci_hint(record: LedgerRecord) -> str:
    """Only CI signs these: say so, and what the user can do at a terminal instead."""
    kinds, how = f"GitHub {record.kind.value}s", "record it on the pull request, or a local one"
    if record.kind is RecordKind.RECONCILIATION:
        kinds, how = "reconciliations", "run with --dry-run to see the report without recording it"
    return (
        f"{kinds} count only when CI signs them as {CI_PRINCIPAL} (the Action, or a scheduled "
        f"workflow that holds the CI key); {how}"
    )


def to_tags(record: LedgerRecord) -> dict[str, str]:
    """The run tags of a record: its payload and signature, and readable tags beside them."""
    tags: dict[str, str | None] = {
        KIND: record.kind.value,
        VERSION: RECORD_VERSION,
        RECORD_ID: record.record_id,
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
        REASON: record.reason[:MAX_REASON] if record.reason else None,
        SOURCE: record.source.value,
        PR_NUMBER: _text(record.pr_number),
        EXPIRES_AT: record.expires_at.isoformat() if record.expires_at else None,
        REVOKES: ",".join(record.revokes) or None,
        EVENT_AT: record.event_at.isoformat() if record.event_at else None,
        HEAD_SHA: record.head_sha,
        tracking.APPROVAL_ID: record.approval,
        PAYLOAD: record.payload or payload(record),
        SIGNATURE: record.signature,
        SIGNER: record.signer,
    }
    return {key: value for key, value in tags.items() if value is not None}


def from_tags(tags: Mapping[str, str], run_id: str) -> LedgerRecord:
    """The record a run holds; raises :class:`Malformed` when it holds none that reads."""
    try:
        if PAYLOAD in tags:
            return _from_payload(tags, run_id)
        return _from_v1(tags, run_id)
    except (KeyError, ValueError, TypeError, InvalidOperation, RecursionError) as exc:
        raise Malformed(f"{type(exc).__name__}: {exc}") from None


def read_record(
    tags: Mapping[str, str], run_id: str, start_ms: int, trust: Trust, sealed: Mapping[str, str]
) -> LedgerRecord | str:
    """The record a run holds if it counts under ``trust``, else why it does not.

    ``sealed`` is what the run's params say (:mod:`gate.ledger.sealed_index`); where they
    hold a payload, its tags are not read. The reason is short and shared, so a command can
    count them (``unsigned``, ``malformed``).
    """
    try:
        record = from_tags(sealed or tags, run_id)
    except Malformed:
        return "malformed"
    if record.payload is not None:
        written = record.recorded_at.timestamp() * 1000
        if abs(start_ms - written) > MAX_CLOCK_SKEW.total_seconds() * 1000:
            return "its run is dated away from the time it was signed at"
    return trust.refusal(record) or record


def _from_payload(tags: Mapping[str, str], run_id: str) -> LedgerRecord:
    text = tags[PAYLOAD]
    body = json.loads(text)
    if not isinstance(body, dict) or body.get("v") != PAYLOAD_VERSION:
        raise ValueError(f"payload version {body.get('v') if isinstance(body, dict) else None}")
    for tag, name in _SEARCHED.items():
        if tags.get(tag) != body.get(name):
            raise ValueError(f"tag {tag} says {tags.get(tag)!r}, its payload {body.get(name)!r}")
    if tags.get(PR_NUMBER) != _text(_int(body.get("pr_number"))):  # NOTE: searched too
        raise ValueError(f"tag {PR_NUMBER} says {tags.get(PR_NUMBER)!r}, its payload differs")
    return LedgerRecord(
        kind=RecordKind(body["kind"]),
        spec=_str(body["spec"]),
        fingerprint=_str(body["fingerprint"]),
        experiment=_str(body["experiment"]),
        recorded_at=_aware(body["recorded_at"]),
        currency=_str(body["currency"]),
        worst_cost=_decimal(body.get("worst_cost")),
        expected_cost=_decimal(body.get("expected_cost")),
        actual_cost=_decimal(body.get("actual_cost")),
        team=_opt(body.get("team")),
        cost_center=_opt(body.get("cost_center")),
        by=_opt(body.get("by")),
        reason=_opt(body.get("reason")),
        source=Source(body.get("source", Source.LOCAL.value)),
        pr_number=_int(body.get("pr_number")),
        expires_at=_aware(body["expires_at"]) if "expires_at" in body else None,
        revokes=tuple(_str(i) for i in body.get("revokes", ())),
        record_id=_str(body["id"]),
        ran_by_user=_opt(body.get("ran_by_user")),
        ran_by_email=_opt(body.get("ran_by_email")),
        event_at=_aware(body["event_at"]) if "event_at" in body else None,
        head_sha=_opt(body.get("head_sha")),
        event_id=_opt(body.get("event_id")),
        approval=_opt(body.get("approval")),
        launch_key=_opt(body.get("launch_key")),
        launch_keys=_launch_keys(body),
        repository=_opt(body.get("repository")),
        signer=_opt(body.get("signer")),
        signature=tags.get(SIGNATURE),
        payload=text,
        run_id=run_id,
    )


def _launch_keys(body: dict[str, Any]) -> tuple[str, ...]:
    """A batch's keys (:mod:`gate.ledger.launches`): only a launch without a key of its own."""
    keys = body.get("launch_keys")
    if keys is None:
        return ()
    if (
        not isinstance(keys, list)
        or not keys
        or not all(isinstance(key, str) and key for key in keys)
    ):
        raise ValueError("launch_keys is not a list of keys")
    if body.get("kind") != RecordKind.LAUNCH.value or body.get("launch_key") is not None:
        raise ValueError("launch_keys on a record that is not a batch of launches")
    return tuple(keys)


def _from_v1(tags: Mapping[str, str], run_id: str) -> LedgerRecord:
    """A record written before payloads: its tags are all it has (never signed)."""
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
        record_id=run_id,
        ran_by_user=tags.get(RAN_BY_USER),
        ran_by_email=tags.get(RAN_BY_EMAIL),
        run_id=run_id,
    )


def _text(value: Decimal | int | None) -> str | None:
    return None if value is None else str(value)


def _str(value: object) -> str:
    if not isinstance(value, str) or "\x00" in value:
        raise ValueError(f"{value!r} is not a string")
    return value


def _opt(value: object) -> str | None:
    return None if value is None else _str(value)


def _int(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{value!r} is not a whole number")
    return value


def _decimal(value: object) -> Decimal | None:
    if value is None:
        return None
    amount = Decimal(_str(value))
    if not amount.is_finite():
        raise ValueError(f"amount {value!r} is not finite")
    if amount < 0:  # NOTE: a negative reconciliation would pay the month back
        raise ValueError(f"amount {value!r} is negative")
    return amount


def _time(moment: dt.datetime | None) -> str | None:
    """A time as a payload holds it: UTC, ISO 8601, microseconds."""
    if moment is None:
        return None
    return moment.astimezone(dt.timezone.utc).isoformat(timespec="microseconds")


def _aware(value: object) -> dt.datetime:
    """A record's time, in UTC; one that has no timezone or no UTC moment does not read.

    NOTE: normalised here, inside the reader's try: ``0001-01-01T00:00:00+01:00`` parses,
    but falls before the first UTC moment, and every later ``astimezone`` or
    ``timestamp()`` of it would raise ``OverflowError`` far from any reader that could
    count the record as malformed (a signed one would crash ``verify``).
    """
    moment = dt.datetime.fromisoformat(_str(value))
    if moment.tzinfo is None:
        raise ValueError(f"time {value!r} has no timezone")
    try:
        return moment.astimezone(dt.timezone.utc)
    except OverflowError:
        raise ValueError(f"time {value!r} is out of range in UTC") from None
