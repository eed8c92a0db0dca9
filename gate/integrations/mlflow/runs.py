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
however many runs there are. Many experiments (the monthly report reads them all) are
searched in up to ``workers`` groups at once and merged in start order. A server is read
with the standard library, so no MLflow import (:mod:`gate.integrations.mlflow.run_sources`);
its auth and TLS settings are MLflow's own (``MLFLOW_TRACKING_TOKEN``, …), and
``MLFLOW_HTTP_REQUEST_TIMEOUT`` bounds each request. A ``sqlite:///`` store is read with SQL
(:mod:`gate.integrations.mlflow.sql_source`); other stores (file paths, a SQLite store of an
older MLflow) with ``MlflowClient``, one history at a time. This module is imported only
by the commands that read training runs (reconcile, calibrate, report).
"""

from __future__ import annotations

import contextlib
import heapq
import math
import re
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gate.errors import InputError
from gate.integrations.mlflow.run_sources import (
    MAX_POINTS,
    Criteria,
    Experiment,
    Points,
    RawRun,
    open_source,
)
from gate.integrations.mlflow.search import failing_on
from gate.integrations.mlflow.sql_source import (
    no_store_yet,
    open_sql,
    refuse_foreign,
    store_path,
)
from gate.integrations.mlflow.tracking_uri import redact
from gate.reconcile.actuals import RunFacts

GPU_UTILIZATION = re.compile(r"^system/(?:.+/)?gpu_\d+_utilization_percentage$")
"""MLflow's per-GPU utilization system metric, with or without a node id."""

Progress = Callable[[int, int, bool], None]
"""Called with (runs done, runs found so far, still searching)."""


@dataclass(frozen=True, slots=True)
class RunQuery:
    """Which runs to read and how: the experiment, the spec version, the history to fetch.

    ``fingerprint`` ``None`` reads every run tagged with any spec version, or with any but
    ``other_than``. ``history_tag``
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
    other_than: str | None = None
    untagged: bool = False
    """The runs with no fingerprint tag (a job deleted it): read apart, said, never priced."""
    deleted: bool = False
    """Deleted runs too (reconcile and report: spend is not undone by deleting a run)."""
    histories_from: int | None = None
    """Read histories only for the runs that started then or later (epoch ms): the report's
    trend months are priced without them (their waste is not reported), and ``None`` (no
    start) is read. ``None`` here: every run's."""


class MlflowRuns:
    """Training runs in the MLflow tracking store at ``tracking_uri``."""

    def __init__(self, tracking_uri: str, *, default: bool = False) -> None:
        """Open the store; ``default``: the URI is the default ledger, not one the user gave."""
        self.tracking_uri = tracking_uri
        self.where = redact(tracking_uri)
        stored = store_path(tracking_uri)
        if stored is not None:
            refuse_foreign(stored, self.where)
        if stored is not None and (no_store_yet(stored) or not stored.is_file()):
            # NOTE: MLflow's client would make an empty store there: a month of no runs
            raise _no_store(self.where, stored, default)
        with failing_on(self.where, "opening the tracking store", (OSError,)):
            self._source = open_sql(tracking_uri) or open_source(tracking_uri)
        self._deleted_experiments: set[str] = set()
        """Experiments found deleted: their runs read as deleted too."""

    def experiment(self, name: str) -> Experiment | None:
        """The experiment ``name``, deleted or not, or ``None`` when there is none."""
        with self.failing(f"finding experiment {name!r}"):
            found = self._source.experiment(name)
        self._learn([] if found is None else [found])
        return found

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

    def experiments(self) -> list[Experiment]:
        """Every experiment in the store, deleted ones too, in id order."""
        with self.failing("listing the experiments"):
            found = self._source.experiments()
        self._learn(found)
        return sorted(found, key=lambda e: (len(e.experiment_id), e.experiment_id))

    def _learn(self, found: list[Experiment]) -> None:
        self._deleted_experiments.update(e.experiment_id for e in found if e.deleted)

    def failing(self, doing: str) -> contextlib.AbstractContextManager[None]:
        """Turn an MLflow or network failure into a one-line backend error (exit 4)."""
        return failing_on(self.where, doing, self._source.failures)

    def _pages(self, query: RunQuery) -> Iterator[list[RawRun]]:
        """Pages of runs in start order, searched in parallel over groups of experiments.

        MLflow pages by offset, re-running the whole filtered search for each page, and one
        search uses one server worker: the experiments are dealt into up to ``workers``
        groups, each group's first page is asked for at once, and the groups are merged
        back into one stream in start order.
        """
        ids = [query.experiment_id, *query.more_experiments]
        groups = [ids[g :: query.workers] for g in range(min(query.workers, len(ids)))]
        search = Criteria(
            query.fingerprint, query.other_than, query.started, query.untagged, query.deleted
        )
        with contextlib.ExitStack() as pagers:
            streams = [
                self._group_pages(pagers, group, search, query.page_size) for group in groups
            ]
            if len(streams) == 1:
                yield from streams[0]
                return
            merged = heapq.merge(
                *((run for page in stream for run in page) for stream in streams),
                key=_start_order,
            )
            page: list[RawRun] = []
            for run in merged:
                page.append(run)
                if len(page) == query.batch_size:
                    yield page
                    page = []
            if page:
                yield page

    def _group_pages(
        self, pagers: contextlib.ExitStack, ids: list[str], search: Criteria, size: int
    ) -> Iterator[list[RawRun]]:
        """One search's pages: the first is asked for now, each next one while the caller reads."""
        pager = pagers.enter_context(ThreadPoolExecutor(1, thread_name_prefix="budget-gate-search"))
        first = pager.submit(self._source.search, ids, search, size, None)
        return self._paged(pager, first, ids, search, size)

    def _paged(
        self,
        pager: ThreadPoolExecutor,
        ahead: Future[tuple[list[RawRun], str | None]],
        ids: list[str],
        search: Criteria,
        size: int,
    ) -> Iterator[list[RawRun]]:
        """The pages from ``ahead`` on, each run once.

        NOTE: MLflow's page token is an offset: a run created with an earlier start between
        two pages shifts the next one, which then repeats a run.
        """
        seen: set[str] = set()
        while True:
            page, token = ahead.result()
            if token:
                ahead = pager.submit(self._source.search, ids, search, size, token)
            fresh = [run for run in page if run.run_id not in seen]
            seen.update(run.run_id for run in fresh)
            yield fresh
            if not token:
                return

    def _complete(self, batch: list[RawRun], query: RunQuery) -> list[RunFacts]:
        """Fetch the histories a batch needs and build its facts (runs in a pool thread)."""
        needs: dict[str, list[RawRun]] = {}  # each history key, and the runs that need it
        for raw in batch:
            if not _wants_history(raw, query):
                continue
            own = _history_key(raw, query)
            for key in raw.latest:
                if key == own or GPU_UTILIZATION.match(key):
                    needs.setdefault(key, []).append(raw)
        histories: dict[tuple[str, str], Points] = {}
        for key, runs in sorted(needs.items()):
            members = [(raw.run_id, raw.latest[key][1] + 1) for raw in runs]
            for chunk in _chunks(members, query.point_budget):
                for run_id, points in self._source.histories(chunk, key, query.max_points).items():
                    histories[(run_id, key)] = points
        deleted = self._deleted_experiments
        return [
            _facts(raw, histories, _history_key(raw, query), raw.experiment_id in deleted)
            for raw in batch
        ]


def _no_store(where: str, stored: Path, default: bool) -> InputError:
    """No store at the path: a default nobody chose is said so, with how to point elsewhere."""
    if default:
        return InputError(
            f"no MLflow store at {stored}, the default ledger (nothing logged here yet?)",
            hint="pass --tracking-uri or set MLFLOW_TRACKING_URI to the tracking server or "
            "sqlite file the runs were logged to",
        )
    return InputError(
        f"{where}: no MLflow store at {stored}",
        hint="check the path: the sqlite file the runs were logged to",
    )


def _start_order(run: RawRun) -> int:
    """The search's own order (``start_time ASC``; a run without one sorts first)."""
    return -1 if run.start_ms is None else run.start_ms


def _wants_history(raw: RawRun, query: RunQuery) -> bool:
    start = query.histories_from
    return start is None or raw.start_ms is None or raw.start_ms >= start


def _history_key(raw: RawRun, query: RunQuery) -> str | None:
    if query.history_key is not None or query.history_tag is None:
        return query.history_key
    return raw.tags.get(query.history_tag)


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
    """One value per step in step order; the latest logged wins a step (MLflow's rule).

    At the same time the larger value wins, as in MLflow's latest metric (a NaN counted as
    0, as MLflow stores it, and losing a tie with 0): the same history, in whatever order a
    source lists equal points, gives the same values.
    """
    last: dict[int, tuple[tuple[int, float, bool], float]] = {}
    for step, timestamp, value in points:
        nan = math.isnan(value)
        rank = (timestamp, 0.0 if nan else value, not nan)
        if step not in last or rank > last[step][0]:
            last[step] = (rank, value)
    return tuple(last[step][1] for step in sorted(last))


def _facts(
    raw: RawRun,
    histories: dict[tuple[str, str], Points],
    key: str | None,
    in_deleted_experiment: bool,
) -> RunFacts:
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
        experiment_id=raw.experiment_id,
        deleted=raw.deleted or in_deleted_experiment,
    )
