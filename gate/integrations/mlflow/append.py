"""Appending one ledger record, whatever carries the requests (REST or ``MlflowClient``).

Writing is all-or-nothing for readers: the run is created with every tag in one request
(one transaction in the tracking store), a second logs the params that searches and
readers trust (:mod:`gate.ledger.sealed_index`), and a third marks it FINISHED. In an
unsigned ledger readers accept FINISHED runs only, so an outage between them leaves a
RUNNING run that no reader counts; under signers every status counts, since anyone who can
write to the ledger can set one (the record was created whole). Such a run does not stay
RUNNING: the writer marks it FAILED as soon as it
sees the failure, and when it cannot (the server is gone), the next write marks FAILED
every ledger run still RUNNING :data:`ABANDONED_AFTER` after it started. Two writers never
collide: every record is its own run with its own id.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import uuid
from typing import Protocol

from gate.errors import BackendError
from gate.integrations.mlflow.search import RunSource, millis, reason, search_rows
from gate.integrations.mlflow.snapshots import roll_snapshots
from gate.ledger.encoding import KIND, seal, to_tags
from gate.ledger.records import LedgerRecord
from gate.ledger.sealed_index import to_params
from gate.ledger.signing import Signer

_log = logging.getLogger(__name__)
ABANDONED_AFTER = dt.timedelta(minutes=10)
"""A healthy write completes within seconds (two minutes with MLflow's retries at their
longest here); a ledger run still RUNNING this long after its start was abandoned."""
HOUSEKEEPING_EVERY_S = 60.0
"""A writer that appends many records (the Kueue controller, ``serve skypilot-policy``)
checks the server's clock, sweeps abandoned writes and rolls snapshots on its first append
and then at most once a minute: each is a round trip, and none changes what readers sum."""


class RunWriter(RunSource, Protocol):
    """A :class:`RunSource` that can also create a run and end it: what an append needs.

    The ledgers subclass it for :meth:`write_run`, the same two requests for both.
    """

    tracking_uri: str
    failures: tuple[type[BaseException], ...]
    """What a failed request raises (turned into exit 4 by :meth:`RunSource.failing`)."""

    def create_run(self, experiment_id: str, start_ms: int, tags: dict[str, str], name: str) -> str:
        """A new RUNNING run carrying every tag (one request); its id."""
        ...

    def log_params(self, run_id: str, params: dict[str, str]) -> None:
        """Log every param on the run (one request)."""
        ...

    def end_run(self, run_id: str, status: str) -> None:
        """Mark the run ``status`` (``FINISHED`` or ``FAILED``)."""
        ...

    def check_clock(self, now: dt.datetime) -> None:
        """Refuse when ``now`` is off the tracking server's clock (a no-op for a local store)."""
        ...

    def write_run(self, experiment_id: str, start_ms: int, tags: dict[str, str], name: str) -> str:
        """Create a run with every tag in one request, then mark it FINISHED; its id."""
        run_id = self.create_run(experiment_id, start_ms, tags, name)
        self.end_run(run_id, "FINISHED")
        return run_id


class Chores:
    """When a writer last did each housekeeping chore: the first time, then once a minute."""

    def __init__(self) -> None:
        self._last_done: dict[str, float] = {}
        self._lock = threading.Lock()

    def due(self, chore: str) -> bool:
        """Whether ``chore`` is to be done now (and, if so, it counts as done)."""
        now = time.monotonic()
        with self._lock:
            last = self._last_done.get(chore)
            if last is not None and now - last < HOUSEKEEPING_EVERY_S:
                return False
            self._last_done[chore] = now
            return True


def append_record(
    writer: RunWriter, chores: Chores, record: LedgerRecord, signer: Signer | None
) -> str:
    """Record one complete run and return its id; on failure no reader will see it.

    The record is stamped with this machine's time (checked against the tracking server's
    clock), given a new id and signed by ``signer`` (:func:`seal`).
    """
    now = dt.datetime.now(dt.timezone.utc)
    if chores.due("clock"):
        writer.check_clock(now)
    sealed = seal(record, now=now, record_id=uuid.uuid4().hex, signer=signer, trust=writer.trust)
    with writer.failing("finding the ledger experiment"):
        experiment_id = writer.experiment_id(create=True)
    assert experiment_id is not None
    with writer.failing(f"recording the {record.kind.value} (nothing was recorded)"):
        if chores.due("sweep"):
            _fail_abandoned(writer, experiment_id)
        run_id = writer.create_run(
            experiment_id, millis(sealed.recorded_at), to_tags(sealed), _run_name(sealed)
        )
    try:
        writer.log_params(run_id, to_params(sealed))
        writer.end_run(run_id, "FINISHED")
    except writer.failures as exc:
        after = _mark_failed(writer, run_id)
        raise BackendError(
            f"MLflow at {writer.where} failed while completing record {run_id} (an unsigned "
            f"ledger's readers ignore the unfinished run, a signed one's count it; {after}): "
            f"{reason(exc)}"
        ) from exc
    _log.info("recorded %s as run %s in %s", record.kind.value, run_id, writer.where)
    roll_snapshots(writer, experiment_id, sealed, signer, due=chores.due)
    return run_id


def _mark_failed(writer: RunWriter, run_id: str) -> str:
    """Mark an unfinished record FAILED now, or say that the next write will."""
    try:
        writer.end_run(run_id, "FAILED")
    except writer.failures:
        return "the next write marks it FAILED"
    return "it is marked FAILED"


def _fail_abandoned(writer: RunWriter, experiment_id: str) -> None:
    """Mark FAILED the ledger runs that a failed write left RUNNING long ago."""
    before = dt.datetime.now(dt.timezone.utc) - ABANDONED_AFTER
    search = (
        f"attributes.status = 'RUNNING' AND tags.{KIND} IS NOT NULL "
        f"AND attributes.start_time < {millis(before)}"
    )
    for row in list(search_rows(writer, experiment_id, search, deleted=False)):
        writer.end_run(row.run_id, "FAILED")
        _log.info("marked abandoned ledger record %s FAILED", row.run_id)


def _run_name(record: LedgerRecord) -> str:
    by = f" by {record.by}" if record.by else ""
    return f"{record.kind.value}: {record.experiment}{by}"
