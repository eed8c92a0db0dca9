"""The ledger in a ``sqlite:///`` store: read with SQL, written through MLflow's client.

Reading the ledger through ``MlflowClient`` costs a command MLflow's import and its store's
start (3 s here) before the first record; ``verify``, a ``check`` with a monthly budget and
the monthly report only read. :class:`SqlLedger` answers the ledger's searches with SQL
over MLflow's tables (:mod:`gate.integrations.mlflow.sql_source`) and hands every write,
with the reads a write makes, to :class:`gate.integrations.mlflow.client.MlflowLedger`,
imported on the first write. The searches are the ledger's own filters (a status, a tag
or param present or equal to a value, a start-time bound, run ids), translated clause by
clause; a filter with any other clause is left to MLflow's client.
``tests/test_sql_ledger.py`` holds the two to the same answers.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import sqlite3
from typing import TYPE_CHECKING, Any

from gate.integrations.mlflow.search import (
    RunRow,
    deleted_experiment,
    failing_on,
    read_records,
)
from gate.integrations.mlflow.snapshots import read_spend
from gate.integrations.mlflow.sql_source import SqlSource
from gate.integrations.mlflow.tracking_uri import redact
from gate.ledger.records import LEDGER_EXPERIMENT, LedgerQuery, LedgerRecord
from gate.ledger.signing import Signer, Trust
from gate.ledger.spend import Spend

if TYPE_CHECKING:
    from gate.integrations.mlflow.client import MlflowLedger

_ORDERS = {"attributes.start_time ASC": "ASC", "attributes.start_time DESC": "DESC"}
_QUOTED = r"'[^']*'|\"[^\"]*\""
_CLAUSE = re.compile(
    rf"attributes\.(?P<attr>status|start_time) (?P<op>=|!=|>=|<=|<|>) (?P<value>{_QUOTED}|-?\d+)"
    rf"|attributes\.run_id IN \((?P<ids>(?:{_QUOTED})(?:, (?:{_QUOTED}))*)\)"
    rf"|(?P<table>tags|params)\.(?P<tag>[A-Za-z0-9_.]+) "
    rf"(?:(?P<present>IS NOT NULL)|(?P<absent>IS NULL)|= (?P<equal>{_QUOTED}))"
)
_TOKEN = re.compile(rf"(?:{_QUOTED}|[^'\"\s]+|\s+)")


def mlflow_ledger(tracking_uri: str, trust: Trust) -> MlflowLedger:
    """MLflow's client on the store, for a write (MLflow imported now; exit 3 without it)."""
    from gate.integrations import needs_mlflow

    with needs_mlflow("the approvals ledger"):
        from gate.integrations.mlflow.client import MlflowLedger

        return MlflowLedger(tracking_uri, trust)


class Unsupported(ValueError):
    """A filter with a clause this translation does not know: MLflow's client answers it."""


class SqlLedger:
    """A :class:`gate.ledger.records.LedgerStore` in a SQLite store (see the module)."""

    absent = False

    failures: tuple[type[BaseException], ...] = SqlSource.failures

    def __init__(self, tracking_uri: str, trust: Trust, source: SqlSource) -> None:
        self.tracking_uri = tracking_uri
        self.where = redact(tracking_uri)
        self.trust = trust
        self.ignored: dict[str, str] = {}
        self._source = source
        self._writer: MlflowLedger | None = None

    def append(self, record: LedgerRecord, signer: Signer | None = None) -> str:
        """Record one complete run through MLflow's client (see :meth:`MlflowLedger.append`)."""
        return self.writer().append(record, signer)

    def query(self, query: LedgerQuery) -> list[LedgerRecord]:
        """Every counted record matching ``query``, oldest first."""
        return read_records(self, query, page=50_000)

    def month_spend(self, query: LedgerQuery, now: dt.datetime) -> Spend:
        """The month's running sums of ``query``'s scope: newest snapshot plus what followed."""
        return read_spend(self, query, now)

    def writer(self) -> MlflowLedger:
        """MLflow's client on the same store, made on the first write."""
        if self._writer is None:
            self._writer = mlflow_ledger(self.tracking_uri, self.trust)
        return self._writer

    # The RunSource side (gate.integrations.mlflow.search), for the snapshots' reads.

    def experiment_id(self, *, create: bool) -> str | None:
        """The ledger experiment's id, else ``None`` (made through MLflow when ``create``)."""
        if create:
            return self.writer().experiment_id(create=True)
        row = self._source.db.execute(
            "SELECT experiment_id, lifecycle_stage FROM experiments WHERE name = ?",
            (LEDGER_EXPERIMENT,),
        ).fetchone()
        if row is None:
            return None
        if row[1] != "active":
            raise deleted_experiment(self.where)
        return str(row[0])

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
        try:
            where, values = translate(search)
        except Unsupported:
            return self.writer().search_page(
                experiment_id, search, order_by, max_results, token, deleted=deleted
            )
        direction = _ORDERS.get(order_by)
        if direction is None:
            return self.writer().search_page(
                experiment_id, search, order_by, max_results, token, deleted=deleted
            )
        offset = int(token) if token else 0
        alive = "" if deleted else " AND lifecycle_stage = 'active'"
        db = self._source.db
        rows = db.execute(
            f"SELECT run_uuid, status, start_time FROM runs r WHERE experiment_id = ?{alive} "
            f"AND {where} ORDER BY start_time IS NULL, start_time {direction}, run_uuid "
            "LIMIT ? OFFSET ?",
            (int(experiment_id), *values, max_results + 1, offset),
        ).fetchall()
        more = len(rows) > max_results
        rows = rows[:max_results]
        ids = [row[0] for row in rows]
        tags, params = self._source.tags(ids), self._source.params(ids)
        found = [
            RunRow(run_id, status, start or 0, tags.get(run_id, {}), params.get(run_id, {}))
            for run_id, status, start in rows
        ]
        return found, str(offset + max_results) if more else None

    def write_run(self, experiment_id: str, start_ms: int, tags: dict[str, str], name: str) -> str:
        """A finished run with every tag, written through MLflow's client (a snapshot)."""
        return self.writer().write_run(experiment_id, start_ms, tags, name)

    def failing(self, doing: str) -> contextlib.AbstractContextManager[None]:
        """Turn a failed read into a one-line backend error (exit 4)."""
        return failing_on(self.where, doing, (*self.failures, sqlite3.Error))


def translate(search: str) -> tuple[str, list[Any]]:
    """The ledger's MLflow filter as a SQL condition on ``runs r`` and its values.

    Raises:
        Unsupported: a clause other than the ledger's own.
    """
    conditions: list[str] = []
    values: list[Any] = []
    for clause in _clauses(search):
        found = _CLAUSE.fullmatch(clause)
        if found is None:
            raise Unsupported(clause)
        if found["attr"] is not None:
            column = "status" if found["attr"] == "status" else "start_time"
            conditions.append(f"{column} {found['op']} ?")
            values.append(_literal(found["value"], numeric=column == "start_time"))
        elif found["ids"] is not None:
            ids = [_unquote(t) for t in re.findall(_QUOTED, found["ids"])]
            conditions.append(f"run_uuid IN ({', '.join('?' for _ in ids)})")
            values.extend(ids)
        else:
            table = found["table"]  # NOTE: one of two names, never the caller's text
            tagged = f"SELECT 1 FROM {table} t WHERE t.run_uuid = r.run_uuid AND t.key = ?"
            values.append(found["tag"])
            if found["equal"] is not None:
                tagged += " AND t.value = ?"
                values.append(_unquote(found["equal"]))
            conditions.append(f"{'NOT ' if found['absent'] else ''}EXISTS ({tagged})")
    if not conditions:
        raise Unsupported(search)
    return " AND ".join(conditions), values


def _clauses(search: str) -> list[str]:
    """The filter's clauses: split at `` AND `` outside quotes."""
    clauses: list[str] = []
    current: list[str] = []
    tokens = _TOKEN.findall(search)
    if "".join(tokens) != search:
        raise Unsupported(search)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "AND" and current and current[-1].isspace() and i + 1 < len(tokens):
            current.pop()
            clauses.append("".join(current))
            current = []
            i += 2 if tokens[i + 1].isspace() else 1
            continue
        current.append(token)
        i += 1
    clauses.append("".join(current))
    return [c for c in clauses if c]


def _literal(text: str, *, numeric: bool) -> Any:
    if text[:1] in "'\"":
        if numeric:
            raise Unsupported(text)
        return _unquote(text)
    if not numeric:
        raise Unsupported(text)
    return int(text)


def _unquote(text: str) -> str:
    return text[1:-1]
