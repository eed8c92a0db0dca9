"""Reading an experiment's training runs from MLflow, fast and streaming (reconcile's MLflow I/O).

From an HTTP tracking server, runs come from paged ``POST /api/2.0/mlflow/runs/search``
(raw REST: ~1.5× faster than ``MlflowClient.search_runs``, which builds objects), and each
run's search result already carries its status, times, tags, params and the latest value
of every metric. Only the histories the reconciliation needs — the monitored metric and
the GPU utilization system metrics — are read, with MLflow's bulk endpoint
``GET /ajax-api/2.0/mlflow/metrics/get-history-bulk`` (up to 100 runs a request) on a
small thread pool, while the next page of runs is searched. That endpoint silently cuts an
answer at 25,000 points, so requests are sized from each run's latest step, and a full
answer is split and read again. A server whose request line cannot hold 100 run ids
(gunicorn's default limit) answers 400 or 414: the request is split, and later ones are
sent smaller.

At most a few batches are in flight and a page is dropped once read, so memory stays flat
however many runs there are. Other stores (``sqlite:///``, file paths) are read with
``MlflowClient``, one history at a time. Auth, TLS and retry settings are MLflow's own
(``MLFLOW_TRACKING_TOKEN``, ``MLFLOW_TRACKING_USERNAME``, …). This module is imported only
by ``budget-gate reconcile``.
"""

from __future__ import annotations

import contextlib
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from mlflow.entities import Run, ViewType
from mlflow.tracking import MlflowClient
from mlflow.utils.credentials import get_default_host_creds
from mlflow.utils.rest_utils import http_request, verify_rest_response

from gate.errors import BackendError
from gate.integrations.mlflow.client import failing
from gate.integrations.mlflow.tracking_uri import redact
from gate.ledger import tracking
from gate.ledger.encoding import KIND
from gate.reconcile.actuals import RunFacts

SEARCH = "/api/2.0/mlflow/runs/search"
HISTORY_BULK = "/ajax-api/2.0/mlflow/metrics/get-history-bulk"
MAX_POINTS = 25_000
"""The bulk endpoint's cap on points per response (more are dropped without a word)."""
MAX_IDS = 100
"""The bulk endpoint's cap on run ids per request."""
_TOO_LONG = (400, 414)
GPU_UTILIZATION = re.compile(r"^system/(?:.+/)?gpu_\d+_utilization_percentage$")
"""MLflow's per-GPU utilization system metric, with or without a node id."""

Progress = Callable[[int, int, bool], None]
"""Called with (runs done, runs found so far, still searching)."""


@dataclass(frozen=True, slots=True)
class RunQuery:
    """Which runs to read and how: the experiment, the spec version, the history to fetch.

    ``fingerprint`` ``None`` reads every run tagged with any spec version. ``history_tag``
    names a tag that holds each run's own history key (calibrate reads each run's monitored
    metric, which differs between specs), used where ``history_key`` is ``None``.
    ``more_experiments`` are searched with ``experiment_id`` in one search, and ``started``
    keeps the runs that started in ``[from, before)`` (epoch ms): the monthly report reads
    every experiment's runs of its months at once.
    """

    experiment_id: str
    fingerprint: str | None
    history_key: str | None
    history_tag: str | None = None
    more_experiments: tuple[str, ...] = ()
    started: tuple[int, int] | None = None
    page_size: int = 1_000
    batch_size: int = 100
    workers: int = 4
    point_budget: int = 20_000
    max_points: int = MAX_POINTS


@dataclass(frozen=True, slots=True)
class _Raw:
    """A run as the search returned it; ``latest`` maps a metric to (value, step)."""

    run_id: str
    name: str
    status: str
    start_ms: int | None
    end_ms: int | None
    tags: dict[str, str]
    params: dict[str, str]
    latest: dict[str, tuple[float, int]]


Points = list[tuple[int, int, float]]
"""A metric history as (step, timestamp, value)."""


class MlflowRuns:
    """Training runs in the MLflow tracking store at ``tracking_uri``."""

    def __init__(self, tracking_uri: str) -> None:
        self.tracking_uri = tracking_uri
        self.where = redact(tracking_uri)
        self._http = tracking_uri.startswith(("http://", "https://"))
        self._max_ids = MAX_IDS  # lowered for servers with a short request-line limit
        with self.failing("opening the tracking store"):
            self._client = MlflowClient(tracking_uri)
            # NOTE: MLflow's REST helpers are untyped; they bring its auth, TLS and retries.
            self._creds = (
                get_default_host_creds(tracking_uri)  # type: ignore[no-untyped-call]
                if self._http
                else None
            )

    def experiment_id(self, name: str) -> str | None:
        """The id of the active experiment ``name``, or ``None`` when there is none."""
        with self.failing(f"finding experiment {name!r}"):
            found = self._client.get_experiment_by_name(name)
        if found is None or found.lifecycle_stage != "active":
            return None
        return str(found.experiment_id)

    def facts(self, query: RunQuery, progress: Progress | None = None) -> Iterator[RunFacts]:
        """Every matching run with the histories it needs, streamed in pages.

        Raises:
            gate.errors.BackendError: the store failed or could not be reached.
        """
        pool = ThreadPoolExecutor(query.workers, thread_name_prefix="budget-gate-history")
        pending: deque[Future[list[RunFacts]]] = deque()
        found = done = 0
        report = progress or (lambda done, found, searching: None)
        try:
            with self.failing("reading the runs"):
                for page in self._pages(query):
                    found += len(page)
                    for start in range(0, len(page), query.batch_size):
                        batch = page[start : start + query.batch_size]
                        pending.append(pool.submit(self._complete, batch, query))
                    while len(pending) > 2 * query.workers:
                        for facts in pending.popleft().result():
                            done += 1
                            yield facts
                        report(done, found, True)
                report(done, found, False)
                while pending:
                    for facts in pending.popleft().result():
                        done += 1
                        yield facts
                    report(done, found, False)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def experiments(self) -> list[tuple[str, str]]:
        """The id and name of every active experiment in the store, in id order."""
        found: list[tuple[str, str]] = []
        token: str | None = None
        with self.failing("listing the experiments"):
            while True:
                page = self._client.search_experiments(
                    view_type=ViewType.ACTIVE_ONLY, max_results=1_000, page_token=token
                )
                found.extend((str(e.experiment_id), e.name) for e in page)
                token = page.token or None
                if not token:
                    return sorted(found, key=lambda pair: (len(pair[0]), pair[0]))

    def failing(self, doing: str) -> contextlib.AbstractContextManager[None]:
        """Turn an MLflow or network failure into a one-line backend error (exit 4)."""
        return failing(self.where, doing)

    def _pages(self, query: RunQuery) -> Iterator[list[_Raw]]:
        """Pages of runs; the next page is searched while the caller works on this one."""
        search = filter_string(query.fingerprint, query.started)
        page_of = self._search_rest if self._creds is not None else self._search_client
        with ThreadPoolExecutor(1, thread_name_prefix="budget-gate-search") as pager:
            ahead = pager.submit(page_of, query, search, None)
            while True:
                page, token = ahead.result()
                if token:
                    ahead = pager.submit(page_of, query, search, token)
                yield page
                if not token:
                    return

    def _search_rest(
        self, query: RunQuery, search: str, token: str | None
    ) -> tuple[list[_Raw], str | None]:
        body: dict[str, Any] = {
            "experiment_ids": [query.experiment_id, *query.more_experiments],
            "filter": search,
            "run_view_type": "ACTIVE_ONLY",
            "max_results": query.page_size,
            "order_by": ["attributes.start_time ASC"],
        }
        if token:
            body["page_token"] = token
        answer = self._rest(SEARCH, "POST", json=body)
        runs = [_from_json(run) for run in answer.get("runs", [])]
        return runs, answer.get("next_page_token") or None

    def _search_client(
        self, query: RunQuery, search: str, token: str | None
    ) -> tuple[list[_Raw], str | None]:
        page = self._client.search_runs(
            [query.experiment_id, *query.more_experiments],
            search,
            run_view_type=ViewType.ACTIVE_ONLY,
            max_results=query.page_size,
            order_by=["attributes.start_time ASC"],
            page_token=token,
        )
        return [_from_run(run) for run in page], page.token or None

    def _complete(self, batch: list[_Raw], query: RunQuery) -> list[RunFacts]:
        """Fetch the histories a batch needs and build its facts (runs in a pool thread)."""
        keys = {key for raw in batch for key in raw.latest if GPU_UTILIZATION.match(key)}
        keys.update(key for raw in batch if (key := _history_key(raw, query)) is not None)
        histories: dict[tuple[str, str], Points] = {}
        for key in sorted(keys):
            members = [(raw.run_id, raw.latest[key][1] + 1) for raw in batch if key in raw.latest]
            for chunk in _chunks(members, query.point_budget):
                for run_id, points in self._histories(chunk, key, query.max_points).items():
                    histories[(run_id, key)] = points
        return [_facts(raw, histories, _history_key(raw, query)) for raw in batch]

    def _histories(self, run_ids: Sequence[str], key: str, cap: int) -> dict[str, Points]:
        if self._creds is None:
            return {run_id: self._history_one(run_id, key) for run_id in run_ids}
        if len(run_ids) > self._max_ids:
            return self._halves(run_ids, key, cap)
        params = [("run_id", run_id) for run_id in run_ids]
        params += [("metric_key", key), ("max_results", str(cap))]
        response = self._send(HISTORY_BULK, "GET", params=params)
        if response.status_code in _TOO_LONG and len(run_ids) > 1 and not _is_json(response):
            # NOTE: the HTTP server refused the request line (too many ids), not MLflow.
            self._max_ids = min(self._max_ids, len(run_ids) // 2)
            return self._halves(run_ids, key, cap)
        metrics = _checked(response, HISTORY_BULK).get("metrics", [])
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
            **self._histories(run_ids[:half], key, cap),
            **self._histories(run_ids[half:], key, cap),
        }

    def _rest(self, endpoint: str, method: str, **request: Any) -> dict[str, Any]:
        return _checked(self._send(endpoint, method, **request), endpoint)

    def _send(self, endpoint: str, method: str, **request: Any) -> Any:
        """One request with MLflow's auth, TLS, timeout and retry settings; unchecked."""
        return http_request(self._creds, endpoint, method, **request)  # type: ignore[no-untyped-call]

    def _history_one(self, run_id: str, key: str) -> Points:
        return [
            (m.step, m.timestamp, m.value) for m in self._client.get_metric_history(run_id, key)
        ]


def _history_key(raw: _Raw, query: RunQuery) -> str | None:
    if query.history_key is not None or query.history_tag is None:
        return query.history_key
    return raw.tags.get(query.history_tag)


def filter_string(fingerprint: str | None, started: tuple[int, int] | None = None) -> str:
    """Training runs of one spec version (or of any): tagged runs, ledger records excluded.

    ``started`` keeps the runs that started from its first epoch-ms time, before its second.
    """
    clause = (
        f"tags.{tracking.FINGERPRINT} = '{_safe(fingerprint)}'"
        if fingerprint is not None
        else f"tags.{tracking.FINGERPRINT} IS NOT NULL"
    )
    window = (
        ""
        if started is None
        else f" AND attributes.start_time >= {int(started[0])}"
        f" AND attributes.start_time < {int(started[1])}"
    )
    return f"{clause} AND tags.{KIND} IS NULL{window}"


def _safe(value: str) -> str:
    if "'" in value:
        raise BackendError(f"cannot search MLflow for the fingerprint {value!r}")
    return value


def _checked(response: Any, endpoint: str) -> dict[str, Any]:
    """The JSON answer, or MLflow's own exception for an error status."""
    verify_rest_response(response, endpoint)
    answer: dict[str, Any] = response.json()
    return answer


def _is_json(response: Any) -> bool:
    return "json" in str(response.headers.get("Content-Type", ""))


def _chunks(members: list[tuple[str, int]], budget: int) -> Iterator[list[str]]:
    """Run ids in groups whose expected points (latest step + 1) stay within ``budget``."""
    chunk: list[str] = []
    points = 0
    for run_id, expected in members:
        if chunk and points + expected > budget:
            yield chunk
            chunk, points = [], 0
        chunk.append(run_id)
        points += max(1, expected)
    if chunk:
        yield chunk


def _by_step(points: Points) -> tuple[float, ...]:
    """One value per step in step order; the latest logged wins a step (MLflow's rule)."""
    last: dict[int, tuple[int, float]] = {}
    for step, timestamp, value in points:
        if step not in last or timestamp >= last[step][0]:
            last[step] = (timestamp, value)
    return tuple(last[step][1] for step in sorted(last))


def _facts(raw: _Raw, histories: dict[tuple[str, str], Points], key: str | None) -> RunFacts:
    utilization = {
        name: tuple(v for _, _, v in histories.get((raw.run_id, name), []))
        for name in raw.latest
        if GPU_UTILIZATION.match(name)
    }
    history = _by_step(histories.get((raw.run_id, key), [])) if key is not None else ()
    return RunFacts(
        run_id=raw.run_id,
        status=raw.status,
        start_ms=raw.start_ms,
        end_ms=raw.end_ms,
        name=raw.name,
        tags=raw.tags,
        params=raw.params,
        metrics={name: value for name, (value, _) in raw.latest.items()},
        history=history,
        utilization=utilization,
    )


def _from_json(run: dict[str, Any]) -> _Raw:
    info, data = run["info"], run.get("data", {})
    tags = {t["key"]: t["value"] for t in data.get("tags", [])}
    return _Raw(
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
    )


def _from_run(run: Run) -> _Raw:
    info, data = run.info, run.data
    return _Raw(
        run_id=info.run_id,
        name=info.run_name or "",
        status=info.status,
        start_ms=info.start_time,
        end_ms=info.end_time,
        tags=dict(data.tags),
        params=dict(data.params),
        # NOTE: the step only sizes bulk requests, which the client path does not make.
        latest={key: (value, 0) for key, value in data.metrics.items()},
    )


def _int(value: object) -> int | None:
    return None if value is None or value == "" else int(str(value))
