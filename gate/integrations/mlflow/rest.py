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

import base64
import contextlib
import datetime as dt
import http.client
import json
import os
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gate.errors import InputError
from gate.integrations.mlflow.patience import ENV as PATIENCE_ENV
from gate.integrations.mlflow.patience import RETRIES, Patience
from gate.integrations.mlflow.search import (
    RunRow,
    deleted_experiment,
    failing_on,
    read_records,
)
from gate.integrations.mlflow.snapshots import read_spend
from gate.integrations.mlflow.tracking_uri import redact
from gate.ledger.records import LEDGER_EXPERIMENT, LedgerQuery, LedgerRecord
from gate.ledger.spend import Spend

if TYPE_CHECKING:
    from gate.integrations.mlflow.client import MlflowLedger

API = "/api/2.0/mlflow/"
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})  # as MLflow's client retries


class RestError(Exception):
    """The server answered a request with an error (MLflow's code and message)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if code else message)
        self.status = status
        self.code = code


class RestLedger:
    """A :class:`gate.ledger.records.LedgerStore` on a tracking server: reads over REST."""

    def __init__(self, tracking_uri: str, environ: Mapping[str, str] | None = None) -> None:
        self.tracking_uri = tracking_uri
        self.where = redact(tracking_uri)
        self._rest = Rest(tracking_uri, os.environ if environ is None else environ)
        self._experiment_id: str | None = None
        self._writer: MlflowLedger | None = None

    def append(self, record: LedgerRecord) -> str:
        """Record one complete run through MLflow's client (imported now)."""
        return self._mlflow().append(record)

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
        self, experiment_id: str, search: str, order_by: str, max_results: int, token: str | None
    ) -> tuple[list[RunRow], str | None]:
        """One page of active runs matching ``search``, and the next page's token."""
        body: dict[str, Any] = {
            "experiment_ids": [experiment_id],
            "filter": search,
            "run_view_type": "ACTIVE_ONLY",
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
        try:
            answer = self._rest.call(
                "GET", "experiments/get-by-name", query={"experiment_name": LEDGER_EXPERIMENT}
            )
        except RestError as exc:
            if exc.code == "RESOURCE_DOES_NOT_EXIST":
                return None
            raise
        experiment = answer["experiment"]
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
            self._writer = MlflowLedger(self.tracking_uri)
        return self._writer


class Rest:
    """JSON requests to one tracking server's REST API, with MLflow's auth and TLS settings.

    Raises:
        gate.errors.InputError: ``BUDGET_GATE_LEDGER_TIMEOUT`` or a TLS file is unusable.
    """

    def __init__(self, tracking_uri: str, environ: Mapping[str, str]) -> None:
        try:
            parts = urllib.parse.urlsplit(tracking_uri)
            parts.port  # noqa: B018 - raises on a port that is not a number
        except ValueError as exc:
            raise InputError(
                f"the tracking URI {redact(tracking_uri)!r} is not a URL ({exc})",
                hint="fix --tracking-uri or MLFLOW_TRACKING_URI, e.g. http://mlflow:5000",
            ) from None
        host = parts.netloc.rsplit("@", 1)[-1]
        self.base = urllib.parse.urlunsplit(parts._replace(netloc=host)).rstrip("/")
        self.headers = {"Content-Type": "application/json", "User-Agent": "budget-gate"}
        user = urllib.parse.unquote(parts.username or environ.get("MLFLOW_TRACKING_USERNAME", ""))
        secret = urllib.parse.unquote(parts.password or environ.get("MLFLOW_TRACKING_PASSWORD", ""))
        if environ.get("MLFLOW_TRACKING_TOKEN"):
            self.headers["Authorization"] = f"Bearer {environ['MLFLOW_TRACKING_TOKEN']}"
        elif user:
            basic = base64.b64encode(f"{user}:{secret}".encode()).decode("ascii")
            self.headers["Authorization"] = f"Basic {basic}"
        self.patience = Patience.from_env(environ)
        try:
            self.context = _tls(environ) if parts.scheme == "https" else None
        except OSError as exc:  # ssl.SSLError is one too
            raise InputError(
                f"the TLS settings for {redact(tracking_uri)} cannot be used: {exc}",
                hint="check MLFLOW_TRACKING_SERVER_CERT_PATH and MLFLOW_TRACKING_CLIENT_CERT_PATH",
            ) from None

    def call(
        self,
        method: str,
        endpoint: str,
        *,
        body: dict[str, Any] | None = None,
        query: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """One request's JSON answer, retried on outages and 5xx within the patience.

        Each attempt may wait for what is left of the budget; a failure that came fast is
        retried (at most :data:`RETRIES` times) while a pause still fits in it.
        """
        url = self.base + API + endpoint
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        deadline = time.monotonic() + self.patience.seconds
        for retry in range(RETRIES + 1):
            request = urllib.request.Request(url, data, self.headers, method=method)
            left = deadline - time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=left, context=self.context) as answer:
                    parsed: dict[str, Any] = json.loads(answer.read())
                    return parsed
            except urllib.error.HTTPError as exc:
                failure: Exception = _error(exc)
                if exc.code not in _RETRY_STATUSES:
                    raise failure from None
            except TimeoutError:
                failure = self._timed_out()
            except (urllib.error.URLError, ConnectionError) as exc:
                timed_out = isinstance(getattr(exc, "reason", None), TimeoutError)
                failure = self._timed_out() if timed_out else exc
            except http.client.HTTPException as exc:  # a reply that is not HTTP, cut short
                failure = ConnectionError(f"the server's answer is not HTTP ({exc!r})")
            pause = self.patience.pause(retry)
            if retry == RETRIES or time.monotonic() + pause >= deadline:
                raise failure from None
            time.sleep(pause)
        raise AssertionError("unreachable")  # pragma: no cover

    def _timed_out(self) -> TimeoutError:
        return TimeoutError(f"no answer within {self.patience.seconds:g} s (set by {PATIENCE_ENV})")


def _tls(environ: Mapping[str, str]) -> ssl.SSLContext:
    if environ.get("MLFLOW_TRACKING_INSECURE_TLS", "").lower() == "true":
        return ssl._create_unverified_context()
    context = ssl.create_default_context(cafile=environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH"))
    if environ.get("MLFLOW_TRACKING_CLIENT_CERT_PATH"):
        context.load_cert_chain(environ["MLFLOW_TRACKING_CLIENT_CERT_PATH"])
    return context


def _error(exc: urllib.error.HTTPError) -> RestError:
    text = exc.read().decode("utf-8", "replace")
    try:
        answer = json.loads(text)
        return RestError(exc.code, str(answer.get("error_code", "")), str(answer.get("message")))
    except (ValueError, AttributeError):
        first = text.strip().splitlines()[0] if text.strip() else exc.reason
        return RestError(exc.code, "", f"HTTP {exc.code}: {first}")


def _row(run: dict[str, Any]) -> RunRow:
    info, data = run["info"], run.get("data", {})
    tags = {t["key"]: t["value"] for t in data.get("tags", [])}
    return RunRow(str(info["run_id"]), str(info["status"]), int(info.get("start_time") or 0), tags)
