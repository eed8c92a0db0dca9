"""Searching the ledger, whatever carries the requests: filters, run rows, failures (no MLflow).

A :class:`RunSource` searches and writes runs of the ledger experiment: over REST
(:mod:`gate.integrations.mlflow.rest`, no MLflow import) or through ``MlflowClient``
(:mod:`gate.integrations.mlflow.client`, for ``sqlite:///`` stores and writes). The search
filters and the failure messages are shared, so both say the same thing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from gate.errors import BackendError, InputError
from gate.ledger import tracking
from gate.ledger.encoding import KIND, PR_NUMBER, read_record
from gate.ledger.launches import launches_in
from gate.ledger.records import LEDGER_EXPERIMENT, LedgerQuery, LedgerRecord
from gate.ledger.sealed_index import PARTS, sealed_view
from gate.ledger.signing import Trust

FINISHED = "FINISHED"
UNSETTLED = ("RUNNING", "SCHEDULED")
"""Statuses of a run whose writer may still complete it (FAILED and KILLED never count)."""
PAGE = 1_000


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run as a search returns it: what the ledger reads of it."""

    run_id: str
    status: str
    start_ms: int
    tags: dict[str, str]
    params: Mapping[str, str] = field(default_factory=dict)

    def record(self, trust: Trust) -> LedgerRecord | str:
        """The ledger record the run holds if it counts under ``trust``, else why not.

        Read from its params where they hold it (:mod:`gate.ledger.sealed_index`), else
        from its tags.
        """
        sealed = sealed_view(self.params) or {}
        return read_record(self.tags, self.run_id, self.start_ms, trust, sealed)


class RunSource(Protocol):
    """Runs of the ledger experiment in one tracking store, judged under one trust.

    ``ignored`` holds what reads left out: run id → why (a run read twice is one).
    """

    where: str
    trust: Trust
    ignored: dict[str, str]

    def experiment_id(self, *, create: bool) -> str | None:
        """The ledger experiment's id; ``None`` when it does not exist and ``create`` is off."""
        ...

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
        """One page of runs matching ``search`` and the next page's token.

        Deleted runs are read too unless ``deleted`` is off: a record is not undone by
        deleting its run (a revocation undoes an approval), so an attacker who can write
        to MLflow cannot drop a launch from the month by deleting it.
        """
        ...

    def write_run(self, experiment_id: str, start_ms: int, tags: dict[str, str], name: str) -> str:
        """Create a run with every tag in one request, then mark it FINISHED; its id."""
        ...

    def failing(self, doing: str) -> contextlib.AbstractContextManager[None]:
        """Turn this source's failures into a one-line backend error (exit 4)."""
        ...


def search_rows(
    source: RunSource,
    experiment_id: str,
    search: str,
    *,
    order_by: str = "attributes.start_time ASC",
    page: int = PAGE,
    deleted: bool = True,
) -> Iterator[RunRow]:
    """Every run matching ``search``, page by page (one page in memory at a time)."""
    token: str | None = None
    while True:
        rows, token = source.search_page(
            experiment_id, search, order_by, page, token, deleted=deleted
        )
        yield from rows
        if not token:
            return


def read_records(source: RunSource, query: LedgerQuery, *, page: int = PAGE) -> list[LedgerRecord]:
    """Every counted record matching ``query``, oldest first (:func:`counted_only`)."""
    with source.failing("finding the ledger experiment"):
        experiment_id = source.experiment_id(create=False)
    if experiment_id is None:
        return []
    with source.failing("reading the ledger"):
        rows = record_rows(source, experiment_id, query, counted_only(source), page=page)
        return list(admitted(source, rows))


def record_rows(
    source: RunSource,
    experiment_id: str,
    query: LedgerQuery,
    finished: bool,
    also: str = "",
    *,
    page: int = PAGE,
) -> list[RunRow]:
    """The runs whose sealed params, or whose tags, match ``query`` (and ``also``), by start.

    NOTE: searched by params first, which no job can edit (a launch whose kind tag was
    deleted is still found), then by tags among the runs that hold no sealed payload
    (written before params, or whose params a failed write never logged), told by the
    param the reader goes by: a job that logged a kind param on such a run hid it from
    both searches. A run is listed once.
    """
    rows: dict[str, RunRow] = {}
    for index, only in (("params", ""), ("tags", f" AND params.{PARTS} IS NULL")):
        search = filter_string(query, finished=finished, index=index) + only + also
        for row in search_rows(source, experiment_id, search, page=page):
            rows.setdefault(row.run_id, row)
    return sorted(rows.values(), key=lambda row: row.start_ms)


def admitted(source: RunSource, rows: Iterable[RunRow]) -> Iterator[LedgerRecord]:
    """The records of ``rows`` that count under the source's trust; the rest are counted.

    A batch of launches is read as one launch record per key (:func:`launches_in`). A
    record's searched fields agree with its payload or it does not read, so one found by
    a search is that search's.
    """
    for row in rows:
        record = row.record(source.trust)
        if isinstance(record, str):
            source.ignored[row.run_id] = record
        else:
            yield from launches_in(record)


def counted_only(source: RunSource) -> bool:
    """Whether only FINISHED runs count: in an unsigned ledger, not under signers.

    A run's status is no part of what is signed, and anyone who can write to the ledger can
    set it (``MlflowClient.set_terminated(run, "KILLED")``): under signers a status would
    hide a signed launch or revocation, so every status counts, a write that failed half way
    included (fail closed: it was created whole, in one request). Unsigned, FINISHED marks the
    writes that completed.
    """
    return not source.trust.signed


def filter_string(query: LedgerQuery, *, finished: bool = True, index: str = "tags") -> str:
    """The MLflow search filter for ``query``: complete records only, every filter ANDed.

    ``index`` says where the searched fields are read: ``tags``, or ``params``
    (:mod:`gate.ledger.sealed_index`).
    """
    clauses = [f"attributes.status = '{FINISHED}'"] if finished else []
    clauses.append(f"{index}.{KIND} IS NOT NULL")
    by_tag = {
        tracking.FINGERPRINT: query.fingerprint,
        tracking.SPEC: query.spec,
        tracking.TEAM: query.team,
        tracking.COST_CENTER: query.cost_center,
    }
    if query.pr_number is not None:  # NOTE: written as str(int), bound to the payload's
        by_tag[PR_NUMBER] = str(query.pr_number)
    clauses.extend(f"{index}.{key} = {quote(value)}" for key, value in by_tag.items() if value)
    if query.since is not None:
        clauses.append(f"attributes.start_time >= {millis(query.since)}")
    return " AND ".join(clauses)


def quote(value: str) -> str:
    """``value`` as an MLflow search string literal."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise BackendError(f"cannot search the ledger for {value!r}: it holds both kinds of quotes")


def millis(moment: dt.datetime) -> int:
    """A time as MLflow stores it: whole milliseconds since the epoch."""
    return int(moment.timestamp() * 1000)


@contextlib.contextmanager
def failing_on(where: str, doing: str, failures: tuple[type[BaseException], ...]) -> Iterator[None]:
    """Turn ``failures`` into a one-line backend error naming the store and the step."""
    try:
        yield
    except failures as exc:
        if type(exc).__name__.startswith("Unsupported") and "URI" in type(exc).__name__:
            # NOTE: ftp://x is the user's typo, not a store that failed: bad input (exit 3).
            raise InputError(
                f"the tracking URI {where} has a scheme MLflow keeps no runs at",
                hint="use http(s)://HOST:PORT (a tracking server) or sqlite:///PATH",
            ) from None
        if "filesystem tracking backend" in str(exc) and "maintenance mode" in str(exc):
            # NOTE: MLflow 3 opens a directory store (./mlruns) only when told to: a setting
            # the user chooses, not a store that failed (exit 3)
            raise InputError(
                f"the tracking URI {where} is a directory store, which MLflow 3 opens only with "
                "MLFLOW_ALLOW_FILE_STORE=true",
                hint="move it to a database (mlflow migrate-filestore) and pass sqlite:///PATH, "
                "or set MLFLOW_ALLOW_FILE_STORE=true",
            ) from None
        if isinstance(exc, _MALFORMED) or type(exc) is ValueError:
            # NOTE: Python's words for it ("string indices must be integers") say nothing
            raise BackendError(
                f"MLflow at {where} failed while {doing}: the server's answer is malformed, "
                "not what MLflow answers — is it an MLflow tracking server?"
            ) from exc
        raise BackendError(f"MLflow at {where} failed while {doing}: {reason(exc)}") from exc


_MALFORMED = (LookupError, TypeError, AttributeError)
"""What reading an answer of the wrong shape raises (a string where a run's tags are), as a
plain ``ValueError`` is what ``int`` and ``float`` raise for a number that is not one."""


def reason(exc: BaseException) -> str:
    """A one-line cause: connection refused, timed out, or MLflow's own first line."""
    text = str(exc)
    if "Connection refused" in text or "Failed to establish a new connection" in text:
        return "connection refused — is the tracking server running?"
    if "timed out" in text.lower():
        return "the request timed out"
    closed = ("RemoteDisconnected", "Remote end closed", "Connection aborted", "Connection reset")
    if any(s in text for s in closed):
        return "the server closed the connection"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first if len(first) <= 300 else first[:297] + "..."


def deleted_experiment(where: str) -> BackendError:
    """The error for a ledger experiment that exists but is deleted."""
    return BackendError(
        f"MLflow at {where}: the ledger experiment {LEDGER_EXPERIMENT!r} is "
        "deleted — restore it (mlflow experiments restore) before recording"
    )
