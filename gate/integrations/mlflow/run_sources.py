"""Where :class:`gate.integrations.mlflow.runs.MlflowRuns` reads runs from.

A tracking server (``http://``, ``https://``) is read over its REST API with the standard
library (:class:`gate.integrations.mlflow.http.Rest`: MLflow's auth and TLS settings, no
MLflow import, which alone takes 2–4 s), its histories in bulk. Other stores (``sqlite:///``,
a folder) need MLflow's own client, imported only then, one history at a time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from gate.errors import BackendError
from gate.integrations.mlflow.http import AJAX_API, Rest, RestError, experiment_by_name
from gate.integrations.mlflow.patience import Patience
from gate.integrations.mlflow.search import failing_on
from gate.integrations.mlflow.tracking_uri import redact
from gate.ledger import tracking

if TYPE_CHECKING:
    from mlflow.entities import Run

MAX_POINTS = 25_000
"""The bulk endpoint's cap on points per response (more are dropped without a word)."""
MAX_IDS = 100
"""The bulk endpoint's cap on run ids per request."""
_TOO_LONG = (400, 414)
READ_TIMEOUT_ENV = "MLFLOW_HTTP_REQUEST_TIMEOUT"
"""MLflow's own setting bounds each read (a page of 5,000 runs can take seconds)."""
READ_TIMEOUT_S = 120.0
"""MLflow's default for it."""

Points = list[tuple[int, int, float]]
"""A metric history as (step, timestamp, value)."""


@dataclass(frozen=True, slots=True)
class RawRun:
    """A run as the search returned it; ``latest`` maps a metric to (value, step)."""

    run_id: str
    name: str
    status: str
    start_ms: int | None
    end_ms: int | None
    tags: dict[str, str]
    params: dict[str, str]
    latest: dict[str, tuple[float, int]]
    experiment_id: str = ""
    deleted: bool = False
    """Deleted in MLflow (``mlflow.delete_run``): its GPU time was spent all the same."""


@dataclass(frozen=True, slots=True)
class Experiment:
    """An MLflow experiment: its id, its name, and whether it is deleted."""

    experiment_id: str
    name: str
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class Criteria:
    """Which runs a search keeps: those of a spec version (or of any, or of any but one).

    ``started`` keeps the runs that started from its first epoch-ms time, before its second.
    """

    fingerprint: str | None = None
    other_than: str | None = None
    started: tuple[int, int] | None = None
    untagged: bool = False
    """The runs with no fingerprint tag at all (``other_than`` leaves them out: NULL)."""
    deleted: bool = False
    """Deleted runs too: spend is not undone by deleting its run."""

    @property
    def view_type(self) -> str:
        """MLflow's ``run_view_type`` for the search."""
        return "ALL" if self.deleted else "ACTIVE_ONLY"

    def filter_string(self) -> str:
        """The criteria in MLflow's search syntax."""
        return filter_string(
            self.fingerprint, self.started, other_than=self.other_than, untagged=self.untagged
        )


def filter_string(
    fingerprint: str | None,
    started: tuple[int, int] | None = None,
    *,
    other_than: str | None = None,
    untagged: bool = False,
) -> str:
    """Training runs of one spec version (or of any): the runs tagged with a fingerprint.

    ``started`` keeps the runs that started from its first epoch-ms time, before its second.
    Ledger records carry a fingerprint too, but live in the ledger's own experiment, which
    no reader searches for runs; a tag is not what sets them apart, since a training job
    could set the ledger's ``kind`` tag on its run and so drop out of reconcile.
    """
    if untagged:
        clause = f"tags.{tracking.FINGERPRINT} IS NULL"
    elif fingerprint is not None:
        clause = f"tags.{tracking.FINGERPRINT} = '{_safe(fingerprint)}'"
    elif other_than is not None:
        clause = f"tags.{tracking.FINGERPRINT} != '{_safe(other_than)}'"
    else:
        clause = f"tags.{tracking.FINGERPRINT} IS NOT NULL"
    window = (
        ""
        if started is None
        else f" AND attributes.start_time >= {int(started[0])}"
        f" AND attributes.start_time < {int(started[1])}"
    )
    return f"{clause}{window}"


def _safe(value: str) -> str:
    if "'" in value:
        raise BackendError(f"cannot search MLflow for the fingerprint {value!r}")
    return value


class RunSource(Protocol):
    """What the reader asks of a tracking store."""

    failures: tuple[type[BaseException], ...]
    """The exceptions that mean the store failed (exit 4), not the reader."""

    def experiment(self, name: str) -> Experiment | None:
        """The experiment ``name``, deleted or not, or ``None``."""
        ...

    def experiments(self) -> list[Experiment]:
        """Every experiment, deleted ones too."""
        ...

    def search(
        self, experiment_ids: Sequence[str], criteria: Criteria, page_size: int, token: str | None
    ) -> tuple[list[RawRun], str | None]:
        """One page of the runs of ``experiment_ids`` the criteria keep, and the next token."""
        ...

    def histories(self, run_ids: Sequence[str], key: str, cap: int) -> dict[str, Points]:
        """The history of ``key`` of each run (``cap``: most points one answer may hold)."""
        ...


def open_source(tracking_uri: str) -> RunSource:
    """The REST source for a tracking server, MLflow's client for any other store.

    (A SQLite file is read with SQL before either: :func:`gate.integrations.mlflow.runs`.)
    """
    if tracking_uri.startswith(("http://", "https://")):
        return RestSource(tracking_uri, os.environ)
    return ClientSource(tracking_uri)


class RestSource:
    """A tracking server's REST API: paged searches and bulk histories."""

    # NOTE: an answer of the wrong shape (a number where a run is) is the server's failure,
    # exit 4, not ours: hence the lookup, type and attribute errors of reading it.
    failures: tuple[type[BaseException], ...] = (
        RestError,
        OSError,
        ValueError,
        LookupError,
        TypeError,
        AttributeError,
    )

    def __init__(self, tracking_uri: str, environ: Mapping[str, str]) -> None:
        self._rest = Rest(tracking_uri, environ, read_patience(environ), check_clock=False)
        self._max_ids = MAX_IDS  # lowered for servers with a short request-line limit

    def experiment(self, name: str) -> Experiment | None:
        """See :meth:`RunSource.experiment`."""
        found = experiment_by_name(self._rest, name)
        return None if found is None else _experiment_of(found)

    def experiments(self) -> list[Experiment]:
        """See :meth:`RunSource.experiments`."""
        found: list[Experiment] = []
        body: dict[str, Any] = {"max_results": 1_000, "view_type": "ALL"}
        while True:
            answer = self._rest.call("POST", "experiments/search", body=body)
            found.extend(_experiment_of(e) for e in answer.get("experiments", []))
            if not answer.get("next_page_token"):
                return found
            body["page_token"] = answer["next_page_token"]

    def search(
        self, experiment_ids: Sequence[str], criteria: Criteria, page_size: int, token: str | None
    ) -> tuple[list[RawRun], str | None]:
        """See :meth:`RunSource.search`."""
        body: dict[str, Any] = {
            "experiment_ids": list(experiment_ids),
            "filter": criteria.filter_string(),
            "run_view_type": criteria.view_type,
            "max_results": page_size,
            "order_by": ["attributes.start_time ASC"],
        }
        if token:
            body["page_token"] = token
        answer = self._rest.call("POST", "runs/search", body=body)
        runs = [_from_json(run) for run in answer.get("runs", [])]
        return runs, answer.get("next_page_token") or None

    def histories(self, run_ids: Sequence[str], key: str, cap: int) -> dict[str, Points]:
        """Histories in bulk; a refused request line or a cut answer is split and read again."""
        if len(run_ids) > self._max_ids:
            return self._halves(run_ids, key, cap)
        query = [("run_id", run_id) for run_id in run_ids]
        query += [("metric_key", key), ("max_results", str(cap))]
        try:
            answer = self._rest.call("GET", "metrics/get-history-bulk", query=query, api=AJAX_API)
        except RestError as exc:
            if exc.status not in _TOO_LONG or exc.code or len(run_ids) == 1:
                raise
            # NOTE: the HTTP server refused the request line (too many ids), not MLflow.
            self._max_ids = min(self._max_ids, len(run_ids) // 2)
            return self._halves(run_ids, key, cap)
        metrics = answer.get("metrics", [])
        if len(metrics) >= cap:
            # NOTE: the server cut the answer; halve the batch, or read one run page by page.
            if len(run_ids) == 1:
                return {run_ids[0]: self._history_one(run_ids[0], key)}
            return self._halves(run_ids, key, cap)
        found: dict[str, Points] = {run_id: [] for run_id in run_ids}
        for m in metrics:
            found[m["run_id"]].append((int(m["step"]), int(m["timestamp"]), float(m["value"])))
        return found

    def _halves(self, run_ids: Sequence[str], key: str, cap: int) -> dict[str, Points]:
        half = len(run_ids) // 2
        return {
            **self.histories(run_ids[:half], key, cap),
            **self.histories(run_ids[half:], key, cap),
        }

    def _history_one(self, run_id: str, key: str) -> Points:
        points: Points = []
        query = {"run_id": run_id, "metric_key": key, "max_results": str(MAX_POINTS)}
        while True:
            answer = self._rest.call("GET", "metrics/get-history", query=query)
            points += [
                (int(m.get("step", 0)), int(m["timestamp"]), float(m["value"]))
                for m in answer.get("metrics", [])
            ]
            if not answer.get("next_page_token"):
                return points
            query["page_token"] = answer["next_page_token"]


class ClientSource:
    """Any store MLflow's client opens (``sqlite:///``, a folder): MLflow is imported here."""

    def __init__(self, tracking_uri: str) -> None:
        from mlflow.tracking import MlflowClient

        from gate.integrations.mlflow.client import STORE_FAILURES, driver_missing

        self.failures: tuple[type[BaseException], ...] = STORE_FAILURES
        where = redact(tracking_uri)
        with driver_missing(where), failing_on(where, "opening the tracking store", self.failures):
            self._client = MlflowClient(tracking_uri)

    def experiment(self, name: str) -> Experiment | None:
        """See :meth:`RunSource.experiment`."""
        found = self._client.get_experiment_by_name(name)
        if found is None:
            return None
        return Experiment(str(found.experiment_id), found.name, found.lifecycle_stage != "active")

    def experiments(self) -> list[Experiment]:
        """See :meth:`RunSource.experiments`."""
        from mlflow.entities import ViewType

        found: list[Experiment] = []
        token: str | None = None
        while True:
            page = self._client.search_experiments(
                view_type=ViewType.ALL, max_results=1_000, page_token=token
            )
            found.extend(
                Experiment(str(e.experiment_id), e.name, e.lifecycle_stage != "active")
                for e in page
            )
            token = page.token or None
            if not token:
                return found

    def search(
        self, experiment_ids: Sequence[str], criteria: Criteria, page_size: int, token: str | None
    ) -> tuple[list[RawRun], str | None]:
        """See :meth:`RunSource.search`."""
        from mlflow.entities import ViewType

        page = self._client.search_runs(
            list(experiment_ids),
            criteria.filter_string(),
            run_view_type=ViewType.ALL if criteria.deleted else ViewType.ACTIVE_ONLY,
            max_results=page_size,
            order_by=["attributes.start_time ASC"],
            page_token=token,
        )
        return [_from_run(run) for run in page], page.token or None

    def histories(self, run_ids: Sequence[str], key: str, cap: int) -> dict[str, Points]:
        """See :meth:`RunSource.histories`."""
        return {
            run_id: [
                (m.step, m.timestamp, m.value) for m in self._client.get_metric_history(run_id, key)
            ]
            for run_id in run_ids
        }


def read_patience(environ: Mapping[str, str]) -> Patience:
    """How long one read may take, retries included: MLflow's ``MLFLOW_HTTP_REQUEST_TIMEOUT``.

    Raises:
        gate.errors.InputError: the setting is not a number of seconds (exit 3).
    """
    return Patience.from_env(environ, READ_TIMEOUT_ENV, READ_TIMEOUT_S, most=3_600)


def _from_json(run: dict[str, Any]) -> RawRun:
    info, data = run["info"], run.get("data", {})
    tags = {t["key"]: t["value"] for t in data.get("tags", [])}
    return RawRun(
        run_id=info["run_id"],
        name=info.get("run_name") or tags.get("mlflow.runName", ""),
        status=info["status"],
        start_ms=_int(info.get("start_time")),
        end_ms=_int(info.get("end_time")),
        tags=tags,
        params={p["key"]: p["value"] for p in data.get("params", [])},
        latest={
            m["key"]: (float(m["value"]), int(m.get("step", 0))) for m in data.get("metrics", [])
        },
        experiment_id=str(info.get("experiment_id", "")),
        deleted=info.get("lifecycle_stage", "active") != "active",
    )


def _experiment_of(found: dict[str, Any]) -> Experiment:
    return Experiment(
        str(found["experiment_id"]),
        found["name"],
        found.get("lifecycle_stage", "active") != "active",
    )


def _from_run(run: Run) -> RawRun:
    info, data = run.info, run.data
    return RawRun(
        run_id=info.run_id,
        name=info.run_name or "",
        status=info.status,
        start_ms=info.start_time,
        end_ms=info.end_time,
        tags=dict(data.tags),
        params=dict(data.params),
        # NOTE: the step only sizes bulk requests, which the client path does not make.
        latest={key: (value, 0) for key, value in data.metrics.items()},
        experiment_id=str(info.experiment_id or ""),
        deleted=info.lifecycle_stage != "active",
    )


def _int(value: object) -> int | None:
    return None if value is None or value == "" else int(str(value))
