"""A SQLite tracking store read with SQL gives what MLflow's own client reads from it.

MLflow writes the store here (experiments, runs of every status, deleted runs and
experiments, tags, params, metrics with NaN and repeated steps); the SQL source and
MLflow's ``MlflowClient`` (the source the store was read with before) then answer the same
questions, and must answer them alike: the experiments, every page of every search, in
order, and the histories.
"""

from __future__ import annotations

import math
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from gate import tracking
from gate.integrations.mlflow.run_sources import ClientSource, Criteria, RawRun
from gate.integrations.mlflow.runs import MlflowRuns, _by_step
from gate.integrations.mlflow.sql_source import NEEDED, SqlSource, open_sql, store_path

FP, OTHER = "sha256:" + "ab" * 32, "sha256:" + "cd" * 32
T0 = 1_780_000_000_000


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store MLflow wrote: two live experiments, a deleted one, thirty-odd runs."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('sql') / 'mlflow.db'}"
    client = MlflowClient(uri)
    first, second = client.create_experiment("first"), client.create_experiment("second")
    gone = client.create_experiment("gone")
    for i in range(30):
        experiment = (first, second)[i % 2]
        fingerprint = (FP, OTHER, None)[i % 3]
        tags = {"note": f"run {i} with 'quotes' and \"doubles\"", "mlflow.runName": f"r{i}"}
        if fingerprint:
            tags[tracking.FINGERPRINT] = fingerprint
        start = T0 + (i * 7 % 11) * 60_000  # repeated start times: the run id breaks ties
        run = client.create_run(experiment, start_time=start, tags=tags, run_name=f"r{i}")
        run_id = run.info.run_id
        metrics = [Metric("val_loss", 1.0 / (s + 1), start + s, s) for s in range(i % 5)]
        metrics += [Metric("val_loss", 9.0, start + 100, 1)] if i % 4 == 0 else []  # step again
        metrics += [Metric("odd", math.nan, start, 0)] if i % 6 == 0 else []
        client.log_batch(run_id, metrics=metrics, params=[Param("lr", str(i / 10))], tags=[
            RunTag("later", "set after creation")
        ])  # fmt: skip
        if i % 7 == 3:
            continue  # left RUNNING, no end time
        status = ("FINISHED", "FAILED", "KILLED")[i % 3]
        client.set_terminated(run_id, status, end_time=start + 3_600_000)
        if i % 10 == 9:
            client.delete_run(run_id)
    # one step logged twice at one time (the larger is MLflow's latest), and a step of 1.5
    ties = client.create_run(first, start_time=T0 + 900_000, tags={tracking.FINGERPRINT: FP})
    for value, step in ((5.0, 1), (1.0, 1), (2.0, 1.5)):
        client.log_metric(ties.info.run_id, "val_loss", value, timestamp=T0 + 1, step=step)  # type: ignore[arg-type]
    ghost = client.create_run(gone, start_time=T0, tags={tracking.FINGERPRINT: FP})
    client.set_terminated(ghost.info.run_id, "FINISHED")
    client.delete_experiment(gone)
    return uri


def _every_page(source: object, ids: list[str], criteria: Criteria, size: int) -> list[RawRun]:
    found: list[RawRun] = []
    token = None
    while True:
        page, token = source.search(ids, criteria, size, token)  # type: ignore[attr-defined]
        found.extend(page)
        if not token:
            return found


def _comparable(run: RawRun) -> tuple[object, ...]:
    latest = {k: "nan" if math.isnan(v) else v for k, (v, _) in run.latest.items()}
    return (run.run_id, run.name, run.status, run.start_ms, run.end_ms, run.tags, run.params,
            latest, run.experiment_id, run.deleted)  # fmt: skip


def test_a_sqlite_uri_is_read_with_sql_and_anything_else_is_not(store, tmp_path):
    assert isinstance(MlflowRuns(store)._source, SqlSource)
    assert open_sql(f"sqlite:///{tmp_path / 'none.db'}") is None  # MLflow's client makes it
    assert open_sql("http://127.0.0.1:5000") is None
    assert store_path("sqlite:////abs/x.db") == Path("/abs/x.db")
    assert store_path("sqlite:///rel/x.db") == Path("rel/x.db")
    assert store_path("sqlite:///x.db?mode=ro") == Path("x.db")  # options name the same file


def test_a_store_without_a_needed_column_is_left_to_mlflow(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        for table, columns in NEEDED.items():
            kept = sorted(columns - ({"is_nan"} if table == "metrics" else set()))
            db.execute(f"CREATE TABLE {table} ({', '.join(kept)})")
    assert open_sql(f"sqlite:///{path}") is None


def test_the_experiments_are_mlflows(store):
    sql, client = open_sql(store), ClientSource(store)
    assert sql is not None
    listed = sorted(sql.experiments(), key=str)
    assert listed == sorted(client.experiments(), key=str)
    assert [(e.name, e.deleted) for e in listed if e.name != "Default"] == [
        ("first", False), ("second", False), ("gone", True),
    ]  # fmt: skip
    for name in ("first", "second", "gone", "nothing"):
        assert sql.experiment(name) == client.experiment(name)
    assert client.experiment("nothing") is None


@pytest.mark.parametrize(
    "criteria",
    [
        Criteria(),
        Criteria(fingerprint=FP),
        Criteria(other_than=FP),
        Criteria(fingerprint=OTHER, started=(T0 + 120_000, T0 + 480_000)),
        Criteria(started=(T0, T0 + 300_000)),
        Criteria(untagged=True),
        Criteria(deleted=True),
        Criteria(fingerprint=FP, deleted=True),
        Criteria(untagged=True, deleted=True),
    ],
    ids=[
        "tagged",
        "one version",
        "all but one",
        "version and window",
        "window",
        "untagged",
        "deleted too",
        "one version deleted too",
        "untagged deleted too",
    ],
)
@pytest.mark.parametrize("size", [4, 1000])
def test_every_search_page_by_page_is_mlflows(store, criteria, size):
    sql, client = open_sql(store), ClientSource(store)
    assert sql is not None
    by_name = {e.name: e.experiment_id for e in client.experiments()}
    ids = [by_name[name] for name in ("first", "second", "gone")]
    for experiments in (ids, ids[:1], ids[2:]):
        ours = _every_page(sql, experiments, criteria, size)
        theirs = _every_page(client, experiments, criteria, size)
        assert [_comparable(r) for r in ours] == [_comparable(r) for r in theirs]
        assert ours or experiments == ids[2:], "the store holds runs for every criteria"
        if experiments == ids:  # a deleted run of each kind is in "second"
            assert any(r.deleted for r in ours) == criteria.deleted


def test_histories_are_mlflows(store):
    sql, client = open_sql(store), ClientSource(store)
    assert sql is not None
    ids = [e.experiment_id for e in client.experiments() if e.name in ("first", "second")]
    runs = [r.run_id for r in _every_page(client, ids, Criteria(), 1000)]
    assert sql.by_run  # MLflow indexes its metrics by run
    for by_run in (True, False):  # through that index, or a store's primary key alone
        sql.by_run = by_run
        for key in ("val_loss", "odd", "missing"):
            ours, theirs = sql.histories(runs, key, 25_000), client.histories(runs, key, 25_000)
            assert _points(ours) == _points(theirs)
            assert any(ours.values()) or key == "missing"
            by_step = {r: repr(_by_step(p)) for r, p in ours.items()}  # repr: NaN as a word
            assert by_step == {r: repr(_by_step(p)) for r, p in theirs.items()}
    tied = [points for points in sql.histories(runs, "val_loss", 25_000).values() if 1.5 in
            [step for step, _, _ in points]]  # fmt: skip
    assert tied == [[(1, T0 + 1, 1.0), (1, T0 + 1, 5.0), (1.5, T0 + 1, 2.0)]]  # MLflow's order
    assert _by_step(tied[0]) == (5.0, 2.0)  # no step cut to a whole one, the larger wins


@given(st.permutations([(1, 7, 5.0), (1, 7, 1.0), (2, 8, math.nan), (2, 8, 0.0), (2, 9, -1.0)]))
def test_a_history_means_the_same_in_any_order(points):
    assert _by_step(points) == (5.0, -1.0)
    assert _by_step([p for p in points if p[1] != 9]) == (5.0, 0.0)  # a NaN counts as 0, and loses


def test_a_store_with_mlflows_workspaces_is_left_to_mlflow(store, tmp_path, monkeypatch):
    """A job writing to another workspace must not add its runs to the default one's."""
    path = tmp_path / "workspaces.db"
    shutil.copyfile(store_path(store), path)  # type: ignore[arg-type]
    uri = f"sqlite:///{path}"
    assert open_sql(uri) is not None
    for off in ("false", "0", "FALSE"):
        monkeypatch.setenv("MLFLOW_ENABLE_WORKSPACES", off)
        assert open_sql(uri) is not None
    for on in ("True", "1", "yes"):  # MLflow refuses "yes": its client says so
        monkeypatch.setenv("MLFLOW_ENABLE_WORKSPACES", on)
        assert open_sql(uri) is None
    monkeypatch.delenv("MLFLOW_ENABLE_WORKSPACES")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE experiments SET workspace = 'evil' WHERE name = 'second'")
    assert open_sql(uri) is None


def test_a_history_is_read_through_the_run_index_not_every_point_of_its_key(store):
    """The primary key leads with the metric's key: through it, every run's points are read."""
    sql = open_sql(store)
    assert sql is not None and sql.by_run
    query = (
        "SELECT run_uuid, step, timestamp, value, is_nan FROM metrics "
        "WHERE {} = ? AND run_uuid IN (?, ?) ORDER BY run_uuid, timestamp, step, value"
    )
    plan = {
        column: " ".join(str(row[-1]) for row in sql.db.execute(
            "EXPLAIN QUERY PLAN " + query.format(column), ("val_loss", "a", "b")
        ))
        for column in ("+key", "key")
    }  # fmt: skip
    assert "(run_uuid=?)" in plan["+key"]
    assert "(key=?)" in plan["key"]  # what SQLite picks when let free


def _points(found: dict[str, list[tuple[int, int, float]]]) -> dict[str, list[tuple[object, ...]]]:
    """Histories in the order given, NaN as a word (NaN equals nothing, itself included)."""
    return {
        run: [(s, t, "nan" if math.isnan(v) else v) for s, t, v in points]
        for run, points in found.items()
    }


def test_nan_is_read_as_nan(store):
    sql = open_sql(store)
    assert sql is not None
    ids = [e.experiment_id for e in sql.experiments()]
    runs = _every_page(sql, ids, Criteria(), 1000)
    odd = [r.latest["odd"][0] for r in runs if "odd" in r.latest]
    assert odd and all(math.isnan(v) for v in odd)
    history = sql.histories([r.run_id for r in runs], "odd", 25_000)
    assert all(math.isnan(v) for points in history.values() for _, _, v in points)
