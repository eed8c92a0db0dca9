"""The approvals ledger in a tracking store through ``MlflowClient``: one run per record.

The ledger is the experiment ``budget-gate-ledger``; each record is a run whose tags carry
every field (``budget_gate.kind``, ``budget_gate.fingerprint``, ``budget_gate.team``, …), so
records can be filtered in the MLflow UI. This module serves the stores only MLflow's own
code can open (``sqlite:///``, a path, an ``MLFLOW_TRACKING_AUTH`` plugin); a tracking server
is read and written over REST (:mod:`gate.integrations.mlflow.rest`) without importing
MLflow. How a record is appended, all-or-nothing for readers, is
:func:`gate.integrations.mlflow.append.append_record`, shared by both.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Iterator

from mlflow.entities import ViewType
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from gate.errors import InputError
from gate.integrations.mlflow.append import Chores, RunWriter, append_record
from gate.integrations.mlflow.http import Rest, check_clock
from gate.integrations.mlflow.patience import bounded_client
from gate.integrations.mlflow.search import (
    RunRow,
    deleted_experiment,
    failing_on,
    read_records,
)
from gate.integrations.mlflow.snapshots import read_spend
from gate.integrations.mlflow.tracking_uri import redact
from gate.ledger.records import LEDGER_EXPERIMENT, LedgerQuery, LedgerRecord
from gate.ledger.signing import Signer, Trust
from gate.ledger.spend import Spend

_PAGE = 50_000  # the most MLflow returns per page
STORE_FAILURES: tuple[type[BaseException], ...] = (MlflowException, OSError)
"""What MLflow's client raises when the store fails: a backend error (exit 4), not our bug."""
try:  # NOTE: a SQL store's own errors (a locked sqlite file) are the store failing: exit 4
    from sqlalchemy.exc import SQLAlchemyError

    STORE_FAILURES += (SQLAlchemyError,)
except ImportError:  # mlflow-skinny, against a tracking server: no SQL here
    pass


class MlflowLedger(RunWriter):
    """A :class:`gate.ledger.records.LedgerStore` backed by an MLflow tracking store."""

    absent = False

    failures: tuple[type[BaseException], ...] = STORE_FAILURES

    def __init__(self, tracking_uri: str, trust: Trust) -> None:
        self.tracking_uri = tracking_uri
        self.where = redact(tracking_uri)
        self.trust = trust
        self.ignored: dict[str, str] = {}
        with self._failing("opening the tracking store"), driver_missing(self.where):
            self._client = bounded_client(MlflowClient(tracking_uri), tracking_uri)
        self._experiment_id: str | None = None
        self._chores = Chores()

    def append(self, record: LedgerRecord, signer: Signer | None = None) -> str:
        """Record one complete run and return its id; on failure no reader will see it."""
        return append_record(self, self._chores, record, signer)

    def month_spend(self, query: LedgerQuery, now: dt.datetime) -> Spend:
        """The month's running sums of ``query``'s scope: newest snapshot plus what followed."""
        return read_spend(self, query, now)

    def create_run(self, experiment_id: str, start_ms: int, tags: dict[str, str], name: str) -> str:
        """A new RUNNING run carrying every tag (one request); its id."""
        run = self._client.create_run(experiment_id, start_time=start_ms, tags=tags, run_name=name)
        return str(run.info.run_id)

    def log_params(self, run_id: str, params: dict[str, str]) -> None:
        """Log every param on the run (one ``log_batch``)."""
        from mlflow.entities import Param

        self._client.log_batch(run_id, params=[Param(k, v) for k, v in params.items()])

    def end_run(self, run_id: str, status: str) -> None:
        """Mark the run ``status``: FINISHED as MLflow's client does, FAILED with an end time."""
        if status == "FINISHED":
            self._client.update_run(run_id, status=status)
        else:
            self._client.set_terminated(run_id, status=status)

    def check_clock(self, now: dt.datetime) -> None:
        """Refuse when ``now`` is off a tracking server's clock; a local store has none."""
        if self.tracking_uri.startswith(("http://", "https://")):
            check_clock(Rest(self.tracking_uri, os.environ), now)

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
            RunRow(
                run.info.run_id,
                run.info.status,
                run.info.start_time or 0,
                run.data.tags,
                run.data.params,
            )
            for run in page
        ]
        return rows, page.token or None

    def failing(self, doing: str) -> contextlib.AbstractContextManager[None]:
        """Turn an MLflow or network failure into a one-line backend error (exit 4)."""
        return failing(self.where, doing)


def failing(where: str, doing: str) -> contextlib.AbstractContextManager[None]:
    """Turn an MLflow or network failure into a one-line backend error (exit 4)."""
    return failing_on(where, doing, STORE_FAILURES)


@contextlib.contextmanager
def driver_missing(where: str) -> Iterator[None]:
    """A database store whose Python driver is not installed: the user's to install (exit 3)."""
    try:
        yield
    except ModuleNotFoundError as exc:
        raise InputError(
            f"{where}: MLflow needs the Python module {exc.name!r} for this store, and it is "
            "not installed",
            hint="install the database driver (psycopg2-binary for postgresql://, mysqlclient "
            "for mysql://) beside budget-gate",
        ) from None
