"""The ledger on an MLflow tracking server, over its REST API without importing MLflow.

Importing MLflow costs a command ~2.5 s of CPU and ~200 MB, more than its ledger requests:
:class:`RestLedger` sends MLflow's own REST requests with the standard library
(``experiments/get-by-name`` and ``experiments/create``, ``runs/search``, ``runs/create``,
``runs/log-batch`` and ``runs/update``, the requests ``MlflowClient`` sends), honouring the settings
MLflow's client reads: ``MLFLOW_TRACKING_TOKEN``, ``MLFLOW_TRACKING_USERNAME`` and
``MLFLOW_TRACKING_PASSWORD`` (or ``user:password@`` in the URI), ``MLFLOW_TRACKING_INSECURE_TLS``,
``MLFLOW_TRACKING_SERVER_CERT_PATH`` and ``MLFLOW_TRACKING_CLIENT_CERT_PATH``. How long a
request may take, retries included, is the ledger's one setting
(``BUDGET_GATE_LEDGER_TIMEOUT``, :mod:`gate.integrations.mlflow.patience`), not MLflow's
retry settings, whose defaults wait minutes. A record is appended as
:class:`gate.integrations.mlflow.client.MlflowLedger` appends it
(:func:`gate.integrations.mlflow.append.append_record`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import time
from collections.abc import Mapping
from typing import Any

from gate.integrations.mlflow.append import Chores, RunWriter, append_record
from gate.integrations.mlflow.http import Rest, RestError, check_clock, experiment_by_name
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


class RestLedger(RunWriter):
    """A :class:`gate.ledger.records.LedgerStore` on a tracking server, over REST."""

    absent = False

    # LookupError: an answer without the fields MLflow's carry
    # NOTE: TypeError and AttributeError too: an answer of the wrong shape (a number where
    # a run is) is the server's failure, exit 4, not ours.
    failures: tuple[type[BaseException], ...] = (
        OSError,
        RestError,
        ValueError,
        LookupError,
        TypeError,
        AttributeError,
    )

    def __init__(
        self, tracking_uri: str, trust: Trust, environ: Mapping[str, str] | None = None
    ) -> None:
        self.tracking_uri = tracking_uri
        self.where = redact(tracking_uri)
        self.trust = trust
        self.ignored: dict[str, str] = {}
        self._rest = Rest(tracking_uri, os.environ if environ is None else environ)
        self._experiment_id: str | None = None
        self._chores = Chores()

    def append(self, record: LedgerRecord, signer: Signer | None = None) -> str:
        """Record one complete run and return its id; on failure no reader will see it."""
        return append_record(self, self._chores, record, signer)

    def query(self, query: LedgerQuery) -> list[LedgerRecord]:
        """Every FINISHED record matching ``query``, oldest first."""
        return read_records(self, query)

    def month_spend(self, query: LedgerQuery, now: dt.datetime) -> Spend:
        """The month's running sums of ``query``'s scope: newest snapshot plus what followed."""
        return read_spend(self, query, now)

    def experiment_id(self, *, create: bool) -> str | None:
        """The ledger experiment's id (created first when ``create``), else ``None``."""
        if self._experiment_id is None:
            self._experiment_id = self._find_experiment()
            if self._experiment_id is None and create:
                self._experiment_id = self._create_experiment()
        return self._experiment_id

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
        body: dict[str, Any] = {
            "experiment_ids": [experiment_id],
            "filter": search,
            "run_view_type": "ALL" if deleted else "ACTIVE_ONLY",
            "max_results": max_results,
            "order_by": [order_by],
        }
        if token:
            body["page_token"] = token
        answer = self._rest.call("POST", "runs/search", body=body)
        rows = [_row(run) for run in answer.get("runs", [])]
        return rows, answer.get("next_page_token") or None

    def create_run(self, experiment_id: str, start_ms: int, tags: dict[str, str], name: str) -> str:
        """A new RUNNING run carrying every tag (one ``runs/create``); its id."""
        body = {
            "experiment_id": experiment_id,
            "user_id": tags.get("mlflow.user", "unknown"),  # as MlflowClient sends it
            "start_time": start_ms,
            "tags": [{"key": key, "value": value} for key, value in tags.items()],
            "run_name": name,
        }
        answer = self._rest.call("POST", "runs/create", body=body)
        return str(answer["run"]["info"]["run_id"])

    def log_params(self, run_id: str, params: dict[str, str]) -> None:
        """Log every param on the run (one ``runs/log-batch``, as ``log_batch`` sends)."""
        items = [{"key": key, "value": value} for key, value in params.items()]
        self._rest.call("POST", "runs/log-batch", body={"run_id": run_id, "params": items})

    def end_run(self, run_id: str, status: str) -> None:
        """Mark the run ``status`` now (one ``runs/update``, as ``set_terminated`` sends)."""
        body = {
            "run_id": run_id,
            "run_uuid": run_id,
            "status": status,
            "end_time": int(time.time() * 1000),
        }
        self._rest.call("POST", "runs/update", body=body)

    def check_clock(self, now: dt.datetime) -> None:
        """Refuse when ``now`` is off the server's clock (its ``Date``, one ``GET /health``)."""
        check_clock(self._rest, now)

    def failing(self, doing: str) -> contextlib.AbstractContextManager[None]:
        """Turn a network or server failure into a one-line backend error (exit 4)."""
        return failing_on(self.where, doing, self.failures)

    def _find_experiment(self) -> str | None:
        experiment = experiment_by_name(self._rest, LEDGER_EXPERIMENT)
        if experiment is None:
            return None
        if experiment.get("lifecycle_stage", "active") != "active":
            raise deleted_experiment(self.where)
        return str(experiment["experiment_id"])

    def _create_experiment(self) -> str:
        try:
            answer = self._rest.call("POST", "experiments/create", body={"name": LEDGER_EXPERIMENT})
        except RestError as exc:
            # NOTE: another writer may have created it a moment ago; else re-raise.
            if exc.code != "RESOURCE_ALREADY_EXISTS":
                raise
            found = self._find_experiment()
            if found is None:
                raise
            return found
        return str(answer["experiment_id"])


def _row(run: dict[str, Any]) -> RunRow:
    info, data = run["info"], run.get("data", {})
    tags = {t["key"]: t["value"] for t in data.get("tags", [])}
    params = {p["key"]: p["value"] for p in data.get("params", [])}
    start = int(info.get("start_time") or 0)
    return RunRow(str(info["run_id"]), str(info["status"]), start, tags, params)
