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
from collections.abc import Iterator

from mlflow.entities import ViewType
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from gate.errors import BackendError
from gate.integrations.tracking_uri import redact
from gate.ledger import tracking
from gate.ledger.records import (
    KIND,
    LEDGER_EXPERIMENT,
    LedgerQuery,
    LedgerRecord,
    from_tags,
    to_tags,
)

_log = logging.getLogger(__name__)
_PAGE = 50_000  # the most MLflow returns per page
_FAILURES = (MlflowException, OSError)
ABANDONED_AFTER = dt.timedelta(minutes=10)
"""A healthy write completes within seconds (two minutes with MLflow's retries at their
longest here); a ledger run still RUNNING this long after its start was abandoned."""


class MlflowLedger:
    """A :class:`gate.ledger.records.LedgerStore` backed by an MLflow tracking store."""

    def __init__(self, tracking_uri: str) -> None:
        self.tracking_uri = tracking_uri
        self.where = redact(tracking_uri)
        with self._failing("opening the tracking store"):
            self._client = MlflowClient(tracking_uri)
        self._experiment_id: str | None = None

    def append(self, record: LedgerRecord) -> str:
        """Record one complete run and return its id; on failure no reader will see it."""
        experiment_id = self._experiment(create=True)
        assert experiment_id is not None
        with self._failing(f"recording the {record.kind.value} (nothing was recorded)"):
            self._fail_abandoned(experiment_id)
            run = self._client.create_run(
                experiment_id,
                start_time=_millis(record.recorded_at),
                tags=to_tags(record),
                run_name=_run_name(record),
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
        return run_id

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
            f"AND attributes.start_time < {_millis(before)}"
        )
        for run in self._client.search_runs([experiment_id], search, max_results=1000):
            self._client.set_terminated(run.info.run_id, status="FAILED")
            _log.info("marked abandoned ledger record %s FAILED", run.info.run_id)

    def query(self, query: LedgerQuery) -> list[LedgerRecord]:
        """Every FINISHED record matching ``query``, oldest first."""
        experiment_id = self._experiment(create=False)
        if experiment_id is None:
            return []
        search = filter_string(query)
        records: list[LedgerRecord] = []
        token: str | None = None
        with self._failing("reading the ledger"):
            while True:
                page = self._client.search_runs(
                    [experiment_id],
                    search,
                    run_view_type=ViewType.ACTIVE_ONLY,
                    max_results=_PAGE,
                    order_by=["attributes.start_time ASC"],
                    page_token=token,
                )
                records.extend(from_tags(run.data.tags, run.info.run_id) for run in page)
                token = page.token
                if not token:
                    return records

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
            raise BackendError(
                f"MLflow at {self.where}: the ledger experiment {LEDGER_EXPERIMENT!r} is "
                "deleted — restore it (mlflow experiments restore) before recording"
            )
        return str(found.experiment_id)

    def _failing(self, doing: str) -> contextlib.AbstractContextManager[None]:
        return failing(self.where, doing)


@contextlib.contextmanager
def failing(where: str, doing: str) -> Iterator[None]:
    """Turn an MLflow or network failure into a one-line backend error (exit 4)."""
    try:
        yield
    except _FAILURES as exc:
        raise BackendError(f"MLflow at {where} failed while {doing}: {reason(exc)}") from exc


def filter_string(query: LedgerQuery) -> str:
    """The MLflow search filter for ``query``: complete records only, every filter ANDed."""
    clauses = ["attributes.status = 'FINISHED'", f"tags.{KIND} IS NOT NULL"]
    by_tag = {
        tracking.FINGERPRINT: query.fingerprint,
        tracking.SPEC: query.spec,
        tracking.TEAM: query.team,
        tracking.COST_CENTER: query.cost_center,
    }
    clauses.extend(f"tags.{key} = {_quote(value)}" for key, value in by_tag.items() if value)
    if query.since is not None:
        clauses.append(f"attributes.start_time >= {_millis(query.since)}")
    return " AND ".join(clauses)


def _quote(value: str) -> str:
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise BackendError(f"cannot search the ledger for {value!r}: it holds both kinds of quotes")


def _millis(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def _run_name(record: LedgerRecord) -> str:
    by = f" by {record.by}" if record.by else ""
    return f"{record.kind.value}: {record.experiment}{by}"


def reason(exc: BaseException) -> str:
    """A one-line cause: connection refused, timed out, or MLflow's own first line."""
    text = str(exc)
    if "Connection refused" in text or "Failed to establish a new connection" in text:
        return "connection refused — is the tracking server running?"
    if "timed out" in text.lower():
        return "the request timed out"
    if any(s in text for s in ("RemoteDisconnected", "Connection aborted", "Connection reset")):
        return "the server closed the connection"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first if len(first) <= 300 else first[:297] + "..."
