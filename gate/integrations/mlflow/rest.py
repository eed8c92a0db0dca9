"""The ledger on an MLflow tracking server, read over its REST API without importing MLflow.

``check`` and ``verify`` only read the ledger; importing MLflow costs them ~2 s and ~200 MB,
more than the reads. :class:`RestLedger` sends MLflow's own REST requests with the standard
library (``GET experiments/get-by-name``, ``POST runs/search``), honouring the settings
MLflow's client reads: ``MLFLOW_TRACKING_TOKEN``, ``MLFLOW_TRACKING_USERNAME`` and
``MLFLOW_TRACKING_PASSWORD`` (or ``user:password@`` in the URI), ``MLFLOW_TRACKING_INSECURE_TLS``,
``MLFLOW_TRACKING_SERVER_CERT_PATH`` and ``MLFLOW_TRACKING_CLIENT_CERT_PATH``. How long a
request may take, retries included, is the ledger's one setting
(``BUDGET_GATE_LEDGER_TIMEOUT``, :mod:`gate.integrations.mlflow.patience`), not MLflow's
retry settings, whose defaults wait minutes. Writing a record goes through
:class:`gate.integrations.mlflow.client.MlflowLedger`, which imports MLflow then.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gate.errors import InputError
from gate.integrations.mlflow.http import Rest, RestError, experiment_by_name
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

if TYPE_CHECKING:
    from gate.integrations.mlflow.client import MlflowLedger


class RestLedger:
    """A :class:`gate.ledger.records.LedgerStore` on a tracking server: reads over REST."""

    def __init__(
        self, tracking_uri: str, trust: Trust, environ: Mapping[str, str] | None = None
    ) -> None:
        self.tracking_uri = tracking_uri
        self.where = redact(tracking_uri)
        self.trust = trust
        self.ignored: dict[str, str] = {}
        self._rest = Rest(tracking_uri, os.environ if environ is None else environ)
        self._experiment_id: str | None = None
        self._writer: MlflowLedger | None = None

    def append(self, record: LedgerRecord, signer: Signer | None = None) -> str:
        """Record one complete run through MLflow's client (imported now)."""
        return self._mlflow().append(record, signer)

    def query(self, query: LedgerQuery) -> list[LedgerRecord]:
        """Every FINISHED record matching ``query``, oldest first."""
        return read_records(self, query)

    def month_spend(self, query: LedgerQuery, now: dt.datetime) -> Spend:
        """The month's running sums of ``query``'s scope: newest snapshot plus what followed."""
        return read_spend(self, query, now)

    def experiment_id(self, *, create: bool) -> str | None:
        """The ledger experiment's id; creating it is a write, done through MLflow."""
        if self._experiment_id is None:
            if create:
                return self._mlflow().experiment_id(create=True)
            self._experiment_id = self._find_experiment()
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

    def write_run(self, experiment_id: str, start_ms: int, tags: dict[str, str], name: str) -> str:
        """Create and complete a run through MLflow's client."""
        return self._mlflow().write_run(experiment_id, start_ms, tags, name)

    def failing(self, doing: str) -> contextlib.AbstractContextManager[None]:
        """Turn a network or server failure into a one-line backend error (exit 4)."""
        return failing_on(self.where, doing, (OSError, RestError, ValueError))

    def _find_experiment(self) -> str | None:
        experiment = experiment_by_name(self._rest, LEDGER_EXPERIMENT)
        if experiment is None:
            return None
        if experiment.get("lifecycle_stage", "active") != "active":
            raise deleted_experiment(self.where)
        return str(experiment["experiment_id"])

    def _mlflow(self) -> MlflowLedger:
        if self._writer is None:
            try:
                from gate.integrations.mlflow.client import MlflowLedger
            except ImportError as exc:
                raise InputError(
                    f"writing to the ledger at {self.where} needs MLflow ({exc.name} is missing)",
                    hint="install the ledger extra: pip install 'budget-gate[mlflow]'",
                ) from None
            self._writer = MlflowLedger(self.tracking_uri, self.trust)
        return self._writer


def _row(run: dict[str, Any]) -> RunRow:
    info, data = run["info"], run.get("data", {})
    tags = {t["key"]: t["value"] for t in data.get("tags", [])}
    return RunRow(str(info["run_id"]), str(info["status"]), int(info.get("start_time") or 0), tags)
