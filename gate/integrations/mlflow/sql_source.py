"""A ``sqlite:///`` tracking store read with SQL: a month of runs in seconds, not minutes.

MLflow's client reads a SQLite store through its ORM, one run's objects at a time and one
metric history per request: 20,000 runs took almost six minutes. The store is MLflow's
own schema (``runs``, ``tags``, ``params``, ``latest_metrics``, ``metrics``,
``experiments``), read here with the standard library's ``sqlite3`` in read-only mode,
with what MLflow's search gives: the runs (active ones, or all) of the experiments asked,
in start order (no start time last, then by run id), with their tags, params and latest
metrics (NaN where MLflow kept NaN). A store whose tables lack a column this reader needs
(an older MLflow) is read with MLflow's client instead, as before.
``tests/test_sql_source.py`` holds this reader to MLflow's client on stores MLflow wrote.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gate.errors import BackendError, InputError
from gate.integrations.mlflow.patience import DEFAULT_SECONDS, ENV, Patience
from gate.integrations.mlflow.run_sources import Criteria, Experiment, Points, RawRun
from gate.ledger import tracking

NEEDED = {
    "experiments": {"experiment_id", "name", "lifecycle_stage"},
    "runs": {
        "run_uuid",
        "name",
        "status",
        "start_time",
        "end_time",
        "lifecycle_stage",
        "experiment_id",
    },
    "tags": {"run_uuid", "key", "value"},
    "params": {"run_uuid", "key", "value"},
    "latest_metrics": {"run_uuid", "key", "value", "step", "is_nan"},
    "metrics": {"run_uuid", "key", "value", "step", "timestamp", "is_nan"},
}
"""The columns this reader reads, by table (MLflow 2 and 3 have them all)."""

_CHUNK = 500
"""Run ids in one ``IN (...)``: well under SQLite's bound on a statement's variables."""


def store_path(tracking_uri: str) -> Path | None:
    """The file of a ``sqlite:///`` URI (``sqlite:////abs.db``, ``sqlite:///relative.db``).

    Options after ``?`` (``?timeout=5``) name the same file; ``None`` for any other URI.

    Raises:
        gate.errors.InputError: ``sqlite:///`` names no file (MLflow's client would fail
            with two tracebacks), or an in-memory store (``sqlite://``, ``:memory:``), which
            keeps no record past the command: a budget read there is an empty month, and an
            approval or a revocation written there is gone.
    """
    if tracking_uri.startswith("sqlite:") and not tracking_uri.startswith("sqlite:///"):
        raise _in_memory(tracking_uri)
    if not tracking_uri.startswith("sqlite:///"):
        return None
    path = tracking_uri.removeprefix("sqlite:///").split("?", 1)[0]
    if path.strip() == ":memory:":
        raise _in_memory(tracking_uri)
    if not path.strip():
        raise InputError(
            f"{tracking_uri!r} names no file",
            hint="write sqlite:///path/to/mlflow.db (four slashes for an absolute path)",
        )
    return Path(path)


def _in_memory(tracking_uri: str) -> InputError:
    return InputError(
        f"{tracking_uri!r} is an in-memory store, which keeps no record past the command",
        hint="write sqlite:///path/to/mlflow.db (four slashes for an absolute path)",
    )


def no_store_yet(path: Path) -> bool:
    """Whether no store is at ``path`` yet: no file, or an empty one (``touch``).

    Raises ``OSError`` for a path out of reach (permissions): the caller says so.
    """
    return not path.exists() or (path.is_file() and path.stat().st_size == 0)


def foreign(path: Path) -> str | None:
    """Why the file at ``path`` is no MLflow store to open, or ``None`` when it may be one.

    A directory (``sqlite:///mlruns``: MLflow's file store is a folder) and a SQLite file
    of another tool (an Optuna storage) are not: MLflow's client retries the one for
    minutes, and writes its schema into the other. An empty file (``touch``) holds no
    store yet. Unreadable files are :func:`open_sql`'s to report.
    """
    try:
        if path.is_dir():
            return "is a directory, not an MLflow sqlite store"
        if path.exists() and not path.is_file():
            return "is not a regular file (a device or a pipe), not an MLflow sqlite store"
        if not path.is_file() or path.stat().st_size == 0:
            return None
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        finally:
            db.close()
    except (OSError, sqlite3.DatabaseError):
        return None
    if "experiments" in tables and "runs" in tables:
        return None
    held = ", ".join(sorted(tables)[:5]) or "none"
    return f"holds no MLflow tables (it holds: {held}), so it is another tool's database"


def refuse_foreign(path: Path, where: str) -> None:
    """Refuse a store that is not MLflow's (exit 3): never read as empty, never migrated."""
    why = foreign(path)
    if why is not None:
        raise InputError(
            f"{where}: {path} {why}",
            hint="point --tracking-uri at the sqlite file MLflow writes (its "
            "--backend-store-uri), or at a path where none is yet",
        )


def open_sql(tracking_uri: str) -> SqlSource | None:
    """The store at ``tracking_uri`` read with SQL, or ``None`` where MLflow's client must.

    ``None`` for another kind of URI, a file that does not exist (MLflow's client makes an
    empty store there, as it always did), or tables this reader does not know.
    """
    path = store_path(tracking_uri)
    try:
        if path is None or not path.is_file():
            return None
        patience = Patience.from_env(os.environ).seconds
        source = SqlSource(f"{path.resolve().as_uri()}?mode=ro", timeout=patience)
        known = {
            table: {row[1] for row in source.db.execute(f"PRAGMA table_info({table})")}
            for table in NEEDED
        }
        source.by_run = _indexed_by_run(source.db)
    except (OSError, sqlite3.DatabaseError) as exc:
        if "locked" in str(exc):
            # NOTE: handed to MLflow's client, a store a writer held took 18 s to fail,
            # whatever BUDGET_GATE_LEDGER_TIMEOUT said, with SQLAlchemy's words.
            raise BackendError(
                f"{path}: the MLflow store stayed locked by another writer for {patience:g} s "
                f"({ENV}): try again when the write is done, or raise {ENV}"
            ) from None
        # NOTE: a file that is no SQLite database, or one out of reach, is no store at all:
        # MLflow's client would fail on it too (exit 70), and an empty read would pass a budget
        raise BackendError(
            f"{path}: the MLflow store cannot be read ({exc}): point --tracking-uri at the "
            "tracking server's store, or at a path where none is yet"
        ) from None
    if any(not columns <= known[table] for table, columns in NEEDED.items()):
        return None
    if _workspaces(source.db, known["experiments"]):
        return None
    return source


def _workspaces(db: sqlite3.Connection, columns: set[str]) -> bool:
    """Whether MLflow's workspaces are in play: in the environment, or in the store.

    A store that holds an experiment outside the default workspace is MLflow's to read: its
    client refuses it with workspaces off, and reads one workspace with them on (a job
    writing to another workspace must not add its runs to the default one's).
    """
    flag = os.environ.get("MLFLOW_ENABLE_WORKSPACES")
    if flag is not None and flag.lower() not in ("false", "0"):  # MLflow refuses other words
        return True
    if "workspace" not in columns:
        return False
    query = "SELECT 1 FROM experiments WHERE workspace IS NOT 'default' LIMIT 1"
    return db.execute(query).fetchone() is not None


def _indexed_by_run(db: sqlite3.Connection) -> bool:
    """Whether an index of ``metrics`` leads with ``run_uuid`` (MLflow makes two)."""
    for index in db.execute("PRAGMA index_list(metrics)").fetchall():
        columns = db.execute(f"PRAGMA index_info({_quoted(index[1])})").fetchall()
        if columns and columns[0][2] == "run_uuid":
            return True
    return False


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class SqlSource:
    """MLflow's SQLite store, read with SQL (see the module's description).

    The reader searches and reads histories in threads: each thread opens its own read-only
    connection (a SQLite connection belongs to the thread that made it).
    """

    failures: tuple[type[BaseException], ...] = (sqlite3.Error, OSError)

    def __init__(self, uri: str, timeout: float = DEFAULT_SECONDS) -> None:
        self._uri = uri
        self._timeout = timeout
        self._local = threading.local()
        self.by_run = False
        """Whether ``metrics`` has an index by run: a history is then read through it."""

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection to the store."""
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self._uri, uri=True, timeout=self._timeout)
            connection.execute("PRAGMA query_only = ON")
            self._local.connection = connection
        return connection

    def experiment(self, name: str) -> Experiment | None:
        """See :meth:`gate.integrations.mlflow.run_sources.RunSource.experiment`."""
        row = self.db.execute(
            "SELECT experiment_id, name, lifecycle_stage FROM experiments WHERE name = ?", (name,)
        ).fetchone()
        return None if row is None else Experiment(str(row[0]), row[1], row[2] != "active")

    def experiments(self) -> list[Experiment]:
        """See :meth:`gate.integrations.mlflow.run_sources.RunSource.experiments`."""
        rows = self.db.execute("SELECT experiment_id, name, lifecycle_stage FROM experiments")
        return [Experiment(str(eid), name, stage != "active") for eid, name, stage in rows]

    def search(
        self, experiment_ids: Sequence[str], criteria: Criteria, page_size: int, token: str | None
    ) -> tuple[list[RawRun], str | None]:
        """See :meth:`gate.integrations.mlflow.run_sources.RunSource.search`.

        The token is the offset of the next page, as MLflow's is.
        """
        offset = int(token) if token else 0
        where, values = _where(experiment_ids, criteria)
        rows = self.db.execute(
            "SELECT run_uuid, name, status, start_time, end_time, experiment_id, lifecycle_stage "
            "FROM runs r "
            f"WHERE {where} ORDER BY start_time IS NULL, start_time, run_uuid LIMIT ? OFFSET ?",
            (*values, page_size + 1, offset),
        ).fetchall()
        more = len(rows) > page_size
        rows = rows[:page_size]
        ids = [row[0] for row in rows]
        tags = self._pairs("tags", ids)
        params = self._pairs("params", ids)
        latest = self._latest(ids)
        runs = [
            RawRun(
                run_id=run_id,
                name=name or tags.get(run_id, {}).get("mlflow.runName", ""),
                status=status,
                start_ms=start,
                end_ms=end,
                tags=tags.get(run_id, {}),
                params=params.get(run_id, {}),
                latest=latest.get(run_id, {}),
                experiment_id=str(experiment_id),
                deleted=stage != "active",
            )
            for run_id, name, status, start, end, experiment_id, stage in rows
        ]
        return runs, str(offset + page_size) if more else None

    def histories(self, run_ids: Sequence[str], key: str, cap: int) -> dict[str, Points]:
        """See :meth:`gate.integrations.mlflow.run_sources.RunSource.histories` (no cap here)."""
        found: dict[str, Points] = {run_id: [] for run_id in run_ids}
        # NOTE: ``+key`` keeps SQLite off the primary key, which leads with the metric's key:
        # through it, each batch of runs scanned every point of that metric in the store
        # (200,000 for a month of 20,000 runs, 200 times over); by run it reads its own.
        key_column = "+key" if self.by_run else "key"
        for chunk, marks in _chunks(run_ids):
            rows = self.db.execute(
                "SELECT run_uuid, step, timestamp, value, is_nan FROM metrics "
                f"WHERE {key_column} = ? AND run_uuid IN ({marks}) "
                "ORDER BY run_uuid, timestamp, step, value",  # get_metric_history's order
                (key, *chunk),
            )
            # NOTE: a step or a time as MLflow's client reads it: 1.5 stays 1.5 (the client's
            # log_metric takes it, SQLite keeps it), not the 1 that would merge two epochs
            for run_id, step, timestamp, value, is_nan in rows:
                found[run_id].append((step, timestamp, _number(value, is_nan)))
        return found

    def tags(self, run_ids: list[str]) -> dict[str, dict[str, str]]:
        """Every tag of each run, by run id (a run without tags is left out)."""
        return self._pairs("tags", run_ids)

    def params(self, run_ids: list[str]) -> dict[str, dict[str, str]]:
        """Every param of each run, by run id (a run without params is left out)."""
        return self._pairs("params", run_ids)

    def _pairs(self, table: str, run_ids: list[str]) -> dict[str, dict[str, str]]:
        found: dict[str, dict[str, str]] = {}
        for chunk, marks in _chunks(run_ids):
            rows = self.db.execute(
                f"SELECT run_uuid, key, value FROM {table} WHERE run_uuid IN ({marks})", chunk
            )
            for run_id, key, value in rows:
                found.setdefault(run_id, {})[key] = value
        return found

    def _latest(self, run_ids: list[str]) -> dict[str, dict[str, tuple[float, int]]]:
        found: dict[str, dict[str, tuple[float, int]]] = {}
        for chunk, marks in _chunks(run_ids):
            rows = self.db.execute(
                "SELECT run_uuid, key, value, step, is_nan FROM latest_metrics "
                f"WHERE run_uuid IN ({marks})",
                chunk,
            )
            for run_id, key, value, step, is_nan in rows:
                found.setdefault(run_id, {})[key] = (_number(value, is_nan), int(step))
        return found


def _where(experiment_ids: Sequence[str], criteria: Criteria) -> tuple[str, list[Any]]:
    """The runs MLflow's search keeps: of these experiments, tagged as asked, active or all."""
    marks = ", ".join("?" for _ in experiment_ids)
    clauses = [f"experiment_id IN ({marks})"]
    if not criteria.deleted:
        clauses.append("lifecycle_stage = 'active'")
    values: list[Any] = [int(eid) for eid in experiment_ids]
    tagged = "SELECT 1 FROM tags t WHERE t.run_uuid = r.run_uuid AND t.key = ?"
    values.append(tracking.FINGERPRINT)
    if criteria.fingerprint is not None:
        tagged += " AND t.value = ?"
        values.append(criteria.fingerprint)
    elif criteria.other_than is not None:
        tagged += " AND t.value != ?"
        values.append(criteria.other_than)
    clauses.append(f"{'NOT ' if criteria.untagged else ''}EXISTS ({tagged})")
    if criteria.started is not None:
        clauses.append("start_time >= ? AND start_time < ?")
        values.extend(int(moment) for moment in criteria.started)
    return " AND ".join(clauses), values


def _chunks(run_ids: Iterable[str]) -> Iterable[tuple[list[str], str]]:
    ids = list(run_ids)
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        yield chunk, ", ".join("?" for _ in chunk)


def _number(value: float, is_nan: object) -> float:
    return float("nan") if is_nan else float(value)
