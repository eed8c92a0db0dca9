"""All MLflow I/O: the approvals ledger as one MLflow run per record.

The ledger is the experiment ``budget-gate-ledger``; each record is a run whose tags carry
every field (``budget_gate.kind``, ``budget_gate.fingerprint``, ``budget_gate.team``, …), so
records can be filtered in the MLflow UI. This module is imported only by commands that
need the ledger, never on the plain ``check`` path.

Writing is all-or-nothing for readers: ``create_run`` carries every tag in one request (one
transaction in the tracking store), then a second request marks the run FINISHED. Readers
accept FINISHED runs only, so an outage between the two leaves a RUNNING run that no
reader counts. Such a run does not stay RUNNING: the writer marks it FAILED as soon as it
sees the failure, and when it cannot (the server is gone), the next write marks FAILED
every ledger run still RUNNING :data:`ABANDONED_AFTER` after it started. Two writers never
collide: every record is its own run with its own id.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import threading
import time
import uuid

from mlflow.entities import ViewType
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from gate.errors import BackendError
from gate.integrations.mlflow.http import check_clock
from gate.integrations.mlflow.patience import bounded_client
from gate.integrations.mlflow.search import (
    RunRow,
    deleted_experiment,
    failing_on,
    millis,
    read_records,
    reason,
)
from gate.integrations.mlflow.snapshots import read_spend, roll_snapshots
from gate.integrations.mlflow.tracking_uri import redact
from gate.ledger.encoding import KIND, seal, to_tags
from gate.ledger.records import LEDGER_EXPERIMENT, LedgerQuery, LedgerRecord
from gate.ledger.signing import Signer, Trust
from gate.ledger.spend import Spend

_log = logging.getLogger(__name__)
_PAGE = 50_000  # the most MLflow returns per page
_FAILURES = (MlflowException, OSError)
ABANDONED_AFTER = dt.timedelta(minutes=10)
"""A healthy write completes within seconds (two minutes with MLflow's retries at their
longest here); a ledger run still RUNNING this long after its start was abandoned."""
HOUSEKEEPING_EVERY_S = 60.0
"""A writer that appends many records (the Kueue controller, ``serve skypilot-policy``)
checks the server's clock, sweeps abandoned writes and rolls snapshots on its first append
and then at most once a minute: each is a round trip, and none changes what readers sum."""


class MlflowLedger:
    """A :class:`gate.ledger.records.LedgerStore` backed by an MLflow tracking store."""

    def __init__(self, tracking_uri: str, trust: Trust) -> None:
        self.tracking_uri = tracking_uri
        self.where = redact(tracking_uri)
        self.trust = trust
        self.ignored: dict[str, str] = {}
        with self._failing("opening the tracking store"):
            self._client = bounded_client(MlflowClient(tracking_uri), tracking_uri)
        self._experiment_id: str | None = None
        self._last_done: dict[str, float] = {}
        self._lock = threading.Lock()

    def append(self, record: LedgerRecord, signer: Signer | None = None) -> str:
        """Record one complete run and return its id; on failure no reader will see it.

        The record is stamped with this machine's time (checked against the tracking
        server's clock), given a new id and signed by ``signer`` (:func:`seal`).
        """
        now = dt.datetime.now(dt.timezone.utc)
        if self.tracking_uri.startswith(("http://", "https://")) and self._due("clock"):
            check_clock(self.tracking_uri, now)
        sealed = seal(record, now=now, record_id=uuid.uuid4().hex, signer=signer, trust=self.trust)
        experiment_id = self._experiment(create=True)
        assert experiment_id is not None
        with self._failing(f"recording the {record.kind.value} (nothing was recorded)"):
            if self._due("sweep"):
                self._fail_abandoned(experiment_id)
            run = self._client.create_run(
                experiment_id,
                start_time=millis(sealed.recorded_at),
                tags=to_tags(sealed),
                run_name=_run_name(sealed),
            )
        run_id: str = run.info.run_id
        try:
            self._client.update_run(run_id, status="FINISHED")
        except _FAILURES as exc:
            after = self._mark_failed(run_id)
            raise BackendError(
                f"MLflow at {self.where} failed while completing record {run_id} (readers "
                f"ignore the unfinished run; {after}): {reason(exc)}"
            ) from exc
        _log.info("recorded %s as run %s in %s", record.kind.value, run_id, self.where)
        roll_snapshots(self, experiment_id, sealed, signer, due=lambda scope: self._due(scope))
        return run_id

    def _due(self, chore: str) -> bool:
        """Whether this writer should do ``chore`` now (first time, or a minute since)."""
        now = time.monotonic()
        with self._lock:
            last = self._last_done.get(chore)
            if last is not None and now - last < HOUSEKEEPING_EVERY_S:
                return False
            self._last_done[chore] = now
            return True

    def month_spend(self, query: LedgerQuery, now: dt.datetime) -> Spend:
        """The month's running sums of ``query``'s scope: newest snapshot plus what followed."""
        return read_spend(self, query, now)

    def _mark_failed(self, run_id: str) -> str:
        """Mark an unfinished record FAILED now, or say that the next write will."""
        try:
            self._client.set_terminated(run_id, status="FAILED")
        except _FAILURES:
            return "the next write marks it FAILED"
        return "it is marked FAILED"

    def _fail_abandoned(self, experiment_id: str) -> None:
        """Mark FAILED the ledger runs that a failed write left RUNNING long ago."""
        before = dt.datetime.now(dt.timezone.utc) - ABANDONED_AFTER
        search = (
            f"attributes.status = 'RUNNING' AND tags.{KIND} IS NOT NULL "
            f"AND attributes.start_time < {millis(before)}"
        )
        for run in self._client.search_runs([experiment_id], search, max_results=1000):
            self._client.set_terminated(run.info.run_id, status="FAILED")
            _log.info("marked abandoned ledger record %s FAILED", run.info.run_id)

    def query(self, query: LedgerQuery) -> list[LedgerRecord]:
        """Every FINISHED record matching ``query``, oldest first."""
        return read_records(self, query, page=_PAGE)

    def _experiment(self, *, create: bool) -> str | None:
        if self._experiment_id is None:
            with self._failing("finding the ledger experiment"):
                self._experiment_id = self._find_experiment(create=create)
        return self._experiment_id

    def _find_experiment(self, *, create: bool) -> str | None:
        found = self._client.get_experiment_by_name(LEDGER_EXPERIMENT)
        if found is None and create:
            try:
                return str(self._client.create_experiment(LEDGER_EXPERIMENT))
            except MlflowException:
                # NOTE: another writer may have created it a moment ago; else re-raise.
                found = self._client.get_experiment_by_name(LEDGER_EXPERIMENT)
                if found is None:
                    raise
        if found is None:
            return None
        if found.lifecycle_stage != "active":
            raise deleted_experiment(self.where)
        return str(found.experiment_id)

    def _failing(self, doing: str) -> contextlib.AbstractContextManager[None]:
        return failing(self.where, doing)

    # The RunSource side (gate.integrations.mlflow.search), for the snapshots' reads and writes.

    def experiment_id(self, *, create: bool) -> str | None:
        """The ledger experiment's id (created first when ``create``), else ``None``."""
        return self._experiment(create=create)

    def search_page(
        self,
        experiment_id: str,
        search: str,
        order_by: str,
        max_results: int,
        token: str | None,
        *,
        deleted: bool = True,
    ) -> tuple[list[RunRow], str | None]:
        """One page of runs matching ``search`` (deleted ones too unless told), and the next."""
        page = self._client.search_runs(
            [experiment_id],
            search,
            run_view_type=ViewType.ALL if deleted else ViewType.ACTIVE_ONLY,
            max_results=max_results,
            order_by=[order_by],
            page_token=token,
        )
        rows = [
            RunRow(run.info.run_id, run.info.status, run.info.start_time or 0, run.data.tags)
            for run in page
        ]
        return rows, page.token or None

    def write_run(self, experiment_id: str, start_ms: int, tags: dict[str, str], name: str) -> str:
        """Create a run with every tag in one request, then mark it FINISHED; its id."""
        run = self._client.create_run(experiment_id, start_time=start_ms, tags=tags, run_name=name)
        self._client.update_run(run.info.run_id, status="FINISHED")
        return str(run.info.run_id)

    def failing(self, doing: str) -> contextlib.AbstractContextManager[None]:
        """Turn an MLflow or network failure into a one-line backend error (exit 4)."""
        return failing(self.where, doing)


def failing(where: str, doing: str) -> contextlib.AbstractContextManager[None]:
    """Turn an MLflow or network failure into a one-line backend error (exit 4)."""
    return failing_on(where, doing, _FAILURES)


def _run_name(record: LedgerRecord) -> str:
    by = f" by {record.by}" if record.by else ""
    return f"{record.kind.value}: {record.experiment}{by}"
