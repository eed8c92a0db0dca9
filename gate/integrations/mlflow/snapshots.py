"""A month's spend without every record: snapshot runs the ledger appends as it goes.

A *snapshot* is one more run in the ledger experiment. It holds the running sums
(:class:`gate.ledger.spend.Spend`) of one budget scope (``team:NAME`` or
``cost-center:KEY``) for one month, folded from every record that counts whose start time
is before its *cut-off* — the snapshot run's own start time. Under signers a record counts
whatever its run's status (:func:`gate.integrations.mlflow.search.counted_only`); unsigned,
only FINISHED ones do, and the snapshot keeps the ids of the records before the cut-off
that were still being written (RUNNING). A reader takes the newest
complete snapshot whose cut-off is not after the moment judged, folds those ids if they
have since completed, then the records from the cut-off on: one small search plus the
month's last few records, however long the month has been.

Why it agrees with reading every record:

- The sums are order-free (:mod:`gate.ledger.spend`), and the cut-off splits the records
  by their stored start time, so each record is folded exactly once.
- The cut-off is :data:`SETTLE` before the writer's clock, so every record a writer had
  started before it has reached the store; a record still RUNNING is listed and read
  again by id, so a slow writer's record counts once it completes, as a full read would.
- Snapshots are append-only and never edited. Two writers that roll at once write two
  snapshots, each right on its own; a writer that dies mid-way leaves a RUNNING run that
  no reader takes; a snapshot whose parts do not match its checksum is skipped.
- Writers roll a new snapshot after appending a record, once :data:`ROLL_EVERY` settled
  records follow the newest one, starting from it: a write reads at most that many.

Deleting a ledger run by hand is not seen by snapshots that already hold it; delete the
month's snapshot runs too (tag ``budget_gate.snapshot_scope``) and the next write rebuilds.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Callable

from gate.errors import BackendError
from gate.integrations.mlflow.search import (
    FINISHED,
    UNSETTLED,
    RunRow,
    RunSource,
    admitted,
    counted_only,
    millis,
    quote,
    record_rows,
    search_rows,
)
from gate.ledger.budget import month_start
from gate.ledger.records import LedgerQuery, LedgerRecord
from gate.ledger.signing import CI_PRINCIPAL, Signer
from gate.ledger.snapshot import (
    MONTH,
    ROLL_EVERY,
    SCOPE,
    SETTLE,
    Snapshot,
    decode,
    encode,
    fold,
    scope_of,
    scope_query,
    scopes_of,
)
from gate.ledger.spend import Spend

_IDS_PER_SEARCH = 100
_log = logging.getLogger(__name__)


def read_spend(source: RunSource, query: LedgerQuery, now: dt.datetime) -> Spend:
    """The month's running sums for ``query``'s scope at ``now``, read as little as may be."""
    with source.failing("finding the ledger experiment"):
        experiment_id = source.experiment_id(create=False)
    if experiment_id is None:
        return Spend()
    start, scope = month_start(now), scope_of(query)
    with source.failing("reading the ledger"):
        snap = _newest(source, experiment_id, scope, start, millis(now)) if scope else None
        snap = snap or Snapshot(millis(start))
        spend, only = snap.spend, counted_only(source)
        pending = _by_ids(source, experiment_id, snap.pending)
        for record in admitted(source, [r for r in pending if r.status == FINISHED or not only]):
            fold(spend, record, start, now)
        tail = dataclasses.replace(query, since=None)  # the cut-off bounds it instead
        bounds = (
            f" AND attributes.start_time >= {snap.cutoff_ms} "
            f"AND attributes.start_time <= {millis(now)}"
        )
        rows = record_rows(source, experiment_id, tail, only, bounds)
        for record in admitted(source, rows):
            fold(spend, record, start, now)
    return spend


def roll_snapshots(
    source: RunSource,
    experiment_id: str,
    record: LedgerRecord,
    signer: Signer | None,
    due: Callable[[str], bool] = lambda scope: True,
) -> None:
    """After ``record`` was appended: roll its scopes' snapshots when enough has settled.

    A failure here loses nothing (readers just read more) and is reported as a warning.
    Under signers, only a writer that signs rolls (a reader takes no unsigned snapshot).
    ``due`` says whether a scope is to be looked at now (a busy writer rolls each scope at
    most once a minute).
    """
    if source.trust.signed and (signer is None or signer.principal != CI_PRINCIPAL):
        return  # NOTE: a snapshot sets the month's sums: only CI's count
    now = dt.datetime.now(dt.timezone.utc)
    for scope in scopes_of(record):
        if due(scope):
            _try_roll(source, experiment_id, scope, now, signer)


def _try_roll(
    source: RunSource, experiment_id: str, scope: str, now: dt.datetime, signer: Signer | None
) -> None:
    try:
        with source.failing(f"rolling the budget snapshot of {scope}"):
            roll(source, experiment_id, scope, now, signer=signer)
    except BackendError as exc:
        _log.warning("%s (the record is stored; budget reads stay exact)", exc)


def roll(
    source: RunSource,
    experiment_id: str,
    scope: str,
    now: dt.datetime,
    *,
    signer: Signer | None = None,
    every: int = ROLL_EVERY,
) -> str | None:
    """Write a new snapshot of ``scope``'s month when ``every`` settled records follow the last.

    Only records that count under the source's trust are folded. Returns the new
    snapshot's run id, or ``None`` when there was not enough to roll.
    """
    start = month_start(now)
    cutoff_ms = millis(now - SETTLE)
    if cutoff_ms <= millis(start):
        return None
    snap = _newest(source, experiment_id, scope, start, cutoff_ms) or Snapshot(millis(start))
    query = scope_query(scope)
    bounds = (
        f" AND attributes.start_time >= {snap.cutoff_ms} AND attributes.start_time < {cutoff_ms}"
    )
    rows = _by_ids(source, experiment_id, snap.pending)
    seen = {row.run_id for row in rows}
    found = record_rows(source, experiment_id, query, False, bounds)
    rows.extend(row for row in found if row.run_id not in seen)
    if counted_only(source):  # an unsettled run is read again until it settles
        pending = tuple(sorted({row.run_id for row in rows if row.status in UNSETTLED}))
        rows = [row for row in rows if row.status == FINISHED]
    else:
        pending = ()
    if len(rows) < every:
        return None
    spend = snap.spend
    cut = dt.datetime.fromtimestamp(cutoff_ms / 1000, dt.timezone.utc)
    for record in admitted(source, rows):
        fold(spend, record, start, cut)
    month = start.strftime("%Y-%m")
    tags = encode(Snapshot(cutoff_ms, spend, pending), scope, month, source.trust, signer)
    name = f"budget snapshot: {scope} {start:%Y-%m} ({spend.folded} records)"
    return source.write_run(experiment_id, cutoff_ms, tags, name)


def _newest(
    source: RunSource, experiment_id: str, scope: str, start: dt.datetime, until_ms: int
) -> Snapshot | None:
    """The newest complete, intact snapshot of ``scope``'s month with a cut-off ≤ ``until_ms``."""
    search = (
        f"attributes.status = '{FINISHED}' AND tags.{SCOPE} = {quote(scope)} "
        f"AND tags.{MONTH} = '{start:%Y-%m}' AND attributes.start_time <= {until_ms}"
    )
    newest_first = search_rows(
        source,
        experiment_id,
        search,
        order_by="attributes.start_time DESC",
        page=1,
        deleted=False,  # a deleted snapshot is out of use: readers read past it
    )
    for row in newest_first:  # one snapshot a request: each may hold a megabyte
        snap = decode(row.tags, row.start_ms, source.trust)
        if snap is not None:
            return snap
        _log.warning(
            "budget snapshot %s at %s is damaged or not under these signers; read past it",
            row.run_id,
            source.where,
        )
    return None


def _by_ids(source: RunSource, experiment_id: str, ids: tuple[str, ...]) -> list[RunRow]:
    rows: list[RunRow] = []
    for at in range(0, len(ids), _IDS_PER_SEARCH):
        chunk = ", ".join(quote(i) for i in ids[at : at + _IDS_PER_SEARCH])
        also = f" AND attributes.run_id IN ({chunk})"
        rows.extend(record_rows(source, experiment_id, LedgerQuery(), False, also))
    return rows
