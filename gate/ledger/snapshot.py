"""Budget snapshots (pure): a scope's month of running sums, encoded into run tags and back.

A *snapshot* is one more run in the ledger experiment that holds the running sums
(:class:`gate.ledger.spend.Spend`) of one budget scope for one month up to its cut-off,
so a reader folds only the records after it. This module owns the arithmetic and the
encoding; reading and writing the runs is :mod:`gate.integrations.mlflow.snapshots`,
whose docstring says why a snapshot read agrees with reading every record.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from gate.ledger import tracking
from gate.ledger.records import LedgerQuery, LedgerRecord
from gate.ledger.signing import CI_PRINCIPAL, Signer, Trust, snapshot_message
from gate.ledger.spend import Spend

SETTLE = dt.timedelta(minutes=15)
"""How far behind a writer's clock a cut-off lies: longer than a write with its retries."""
ROLL_EVERY = 100
"""Settled records after the newest snapshot that make a writer roll a new one."""
SCOPE = tracking.PREFIX + "snapshot_scope"
MONTH = tracking.PREFIX + "snapshot_month"
CHECKSUM = tracking.PREFIX + "snapshot_sha256"
PARTS = tracking.PREFIX + "snapshot_parts"
PART = tracking.PREFIX + "snapshot."
TRUST = tracking.PREFIX + "snapshot_trust"
SIGNATURE = tracking.PREFIX + "snapshot_signature"
SIGNER = tracking.PREFIX + "snapshot_signer"
PART_CHARS = 7_900  # MLflow cuts tag values at 8,000 characters


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One scope's month up to ``cutoff_ms``, and the records then still being written."""

    cutoff_ms: int
    spend: Spend = field(default_factory=Spend)
    pending: tuple[str, ...] = ()


def scope_of(query: LedgerQuery) -> str | None:
    """``team:NAME`` or ``cost-center:KEY`` for a budget scope's query, else ``None``."""
    if query.team and not query.cost_center:
        return f"team:{query.team}"
    if query.cost_center and not query.team:
        return f"cost-center:{query.cost_center}"
    return None


def scopes_of(record: LedgerRecord) -> list[str]:
    """The budget scopes a record counts in (its team's and its cost center's)."""
    scopes = [f"team:{record.team}" if record.team else None]
    scopes.append(f"cost-center:{record.cost_center}" if record.cost_center else None)
    return [scope for scope in scopes if scope]


def scope_query(scope: str) -> LedgerQuery:
    """The ledger query of one scope's records (no time bound)."""
    kind, key = scope.split(":", 1)
    return LedgerQuery(team=key) if kind == "team" else LedgerQuery(cost_center=key)


def fold(spend: Spend, record: LedgerRecord, start: dt.datetime, now: dt.datetime) -> None:
    """Fold ``record`` into ``spend`` as the month starting at ``start`` sees it at ``now``."""
    if record.recorded_at <= now:
        spend.add(record, current=record.recorded_at >= start)


def encode(
    snap: Snapshot, scope: str, month: str, trust: Trust, signer: Signer | None
) -> dict[str, str]:
    """The run tags that hold ``snap``: compressed JSON in parts, with their checksum.

    It names the trust it was folded under (a reader under other signers does not use
    it), and is signed when the trust wants signatures.
    """
    spend = snap.spend.to_json()
    body = {"cutoff_ms": snap.cutoff_ms, "pending": list(snap.pending), "spend": spend}
    blob = base64.b64encode(zlib.compress(json.dumps(body, separators=(",", ":")).encode(), 6))
    text = blob.decode("ascii")
    parts = [text[i : i + PART_CHARS] for i in range(0, len(text), PART_CHARS)] or [""]
    checksum = hashlib.sha256(blob).hexdigest()
    tags = {f"{PART}{n:04d}": part for n, part in enumerate(parts)}
    tags |= {CHECKSUM: checksum, PARTS: str(len(parts)), SCOPE: scope, MONTH: month}
    tags[TRUST] = trust.digest
    if signer is not None:
        message = snapshot_message(scope, month, snap.cutoff_ms, trust.digest, checksum)
        tags |= {SIGNATURE: signer.sign(message), SIGNER: signer.principal}
    return tags


def decode(tags: Mapping[str, str], start_ms: int, trust: Trust) -> Snapshot | None:
    """The snapshot a run's tags hold, or ``None`` when it is unusable.

    Unusable: damaged, of another format, or not folded and signed under ``trust``.
    """
    try:
        count = int(tags[PARTS])
        text = "".join(tags[f"{PART}{n:04d}"] for n in range(count))
        blob = text.encode("ascii")
        checksum = tags[CHECKSUM]
        if hashlib.sha256(blob).hexdigest() != checksum or tags.get(TRUST) != trust.digest:
            return None
        if trust.signers is not None:
            if tags[SIGNER] != CI_PRINCIPAL:  # NOTE: a snapshot sets the month's sums
                return None
            message = snapshot_message(tags[SCOPE], tags[MONTH], start_ms, trust.digest, checksum)
            at = dt.datetime.fromtimestamp(start_ms / 1000, dt.timezone.utc)
            if trust.signers.check(message, tags[SIGNATURE], tags[SIGNER], at) is not None:
                return None
        body = json.loads(zlib.decompress(base64.b64decode(blob)))
        if int(body["cutoff_ms"]) != start_ms:
            return None
        pending = tuple(str(i) for i in body["pending"])
        return Snapshot(start_ms, Spend.from_json(body["spend"]), pending)
    except (KeyError, ValueError, TypeError, zlib.error, RecursionError):
        return None
