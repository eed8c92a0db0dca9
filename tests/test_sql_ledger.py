"""The ledger in a SQLite store, read with SQL, reads what MLflow's client reads there.

Records of every kind are written through MLflow (the only writer), beside runs a training
job could put in the ledger's experiment: deleted records, RUNNING and KILLED ones, tag
values with quotes and `` AND ``, a run without the kind tag. Every filter the ledger
searches with is then answered by :class:`SqlLedger` and by :class:`MlflowLedger`, page by
page, in both orders, with and without deleted runs, and must be answered alike; so must
the records a query counts and a month's sums.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

import pytest
from mlflow.tracking import MlflowClient

from gate import tracking
from gate.integrations import open_ledger
from gate.integrations.mlflow.client import MlflowLedger
from gate.integrations.mlflow.search import KIND, filter_string, millis, quote
from gate.integrations.mlflow.sql_ledger import SqlLedger, Unsupported, translate
from gate.ledger.records import LEDGER_EXPERIMENT, LedgerQuery, LedgerRecord, RecordKind
from tests.ledger_kit import UNSIGNED

NOW = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
FP = "sha256:" + "12" * 32


def _record(i: int, kind: RecordKind, **changes: object) -> LedgerRecord:
    record = LedgerRecord(
        kind=kind,
        spec=f"experiments/spec-{i % 3}.yaml" if i % 5 else "experiments/it's AND that.yaml",
        fingerprint=FP if i % 2 else "sha256:" + f"{i:02d}" * 32,
        experiment=f"exp-{i}",
        recorded_at=NOW - dt.timedelta(days=i),
        currency="USD",
        worst_cost=Decimal(10 * i) if kind is not RecordKind.RECONCILIATION else None,
        actual_cost=Decimal(i) if kind is RecordKind.RECONCILIATION else None,
        team=("nlp", "vision")[i % 2],
        cost_center=f"cc-{i % 4}",
        by="alice",
        reason="worth it",
        pr_number=(None, 7, 8)[i % 3],
    )
    return dataclasses.replace(record, **changes)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    uri = f"sqlite:///{tmp_path_factory.mktemp('ledger') / 'mlflow.db'}"
    ledger = MlflowLedger(uri, UNSIGNED)
    kinds = [RecordKind.APPROVAL, RecordKind.LAUNCH, RecordKind.RECONCILIATION, RecordKind.REQUEST]
    ids = [ledger.append(_record(i, kinds[i % len(kinds)])) for i in range(24)]
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(LEDGER_EXPERIMENT).experiment_id
    client.delete_run(ids[3])
    client.set_terminated(ids[4], "KILLED")
    stray = client.create_run(experiment, start_time=millis(NOW), tags={"note": "no kind"})
    client.set_terminated(stray.info.run_id, "FINISHED")
    running = client.create_run(
        experiment, start_time=millis(NOW) - 3_600_000, tags={KIND: "approval", "x": "y"}
    )
    assert running.info.status == "RUNNING"
    return uri


def _readers(uri: str) -> tuple[SqlLedger, MlflowLedger]:
    sql = open_ledger(uri, UNSIGNED)
    assert isinstance(sql, SqlLedger)
    return sql, MlflowLedger(uri, UNSIGNED)


def _searches() -> list[str]:
    """Every filter the ledger searches with (search.filter_string, snapshots, the sweep)."""
    queries = [
        LedgerQuery(),
        LedgerQuery(fingerprint=FP),
        LedgerQuery(spec="experiments/it's AND that.yaml"),
        LedgerQuery(team='vis"ion'),
        LedgerQuery(team="vision", cost_center="cc-1"),
        LedgerQuery(team="nlp", since=NOW - dt.timedelta(days=9)),
        LedgerQuery(fingerprint="sha256:nothing"),
        LedgerQuery(pr_number=7),
        LedgerQuery(pr_number=8, spec="experiments/it's AND that.yaml"),
    ]
    found = [
        filter_string(q, finished=f, index=index) + only
        for q in queries
        for f in (True, False)
        for index, only in (("tags", ""), ("params", ""), ("tags", f" AND params.{KIND} IS NULL"))
    ]
    cutoff, now = millis(NOW - dt.timedelta(days=12)), millis(NOW)
    found.append(f"{filter_string(LedgerQuery())} AND attributes.start_time >= {cutoff} "
                 f"AND attributes.start_time <= {now}")  # fmt: skip
    found.append(f"{filter_string(LedgerQuery(), finished=False)} AND attributes.start_time >= "
                 f"{cutoff} AND attributes.start_time < {now}")  # fmt: skip
    found.append(f"attributes.status = 'RUNNING' AND tags.{KIND} IS NOT NULL "
                 f"AND attributes.start_time < {now}")  # fmt: skip
    found.append(f"attributes.status = 'FINISHED' AND tags.{tracking.TEAM} = {quote('vision')} "
                 f"AND attributes.start_time <= {now}")  # fmt: skip
    return found


def _pages(reader: object, experiment: str, search: str, order: str, deleted: bool) -> list[object]:
    rows, token = [], None
    while True:
        page, token = reader.search_page(  # type: ignore[attr-defined]
            experiment, search, order, 5, token, deleted=deleted
        )
        rows.extend((r.run_id, r.status, r.start_ms, r.tags, dict(r.params)) for r in page)
        if not token:
            return rows


@pytest.mark.parametrize("search", _searches())
@pytest.mark.parametrize("order", ["attributes.start_time ASC", "attributes.start_time DESC"])
@pytest.mark.parametrize("deleted", [True, False])
def test_every_ledger_search_is_answered_as_mlflow_answers_it(store, search, order, deleted):
    sql, client = _readers(store)
    experiment = client.experiment_id(create=False)
    assert experiment is not None and sql.experiment_id(create=False) == experiment
    translate(search)  # each is one SQL answers, not one left to MLflow
    assert _pages(sql, experiment, search, order, deleted) == _pages(
        client, experiment, search, order, deleted
    )


def test_runs_by_id_are_found_as_mlflow_finds_them(store):
    sql, client = _readers(store)
    experiment = client.experiment_id(create=False)
    everything = _pages(client, experiment, filter_string(LedgerQuery(), finished=False),
                        "attributes.start_time ASC", True)  # fmt: skip
    ids = ", ".join(quote(row[0]) for row in everything[::3])  # type: ignore[index]
    search = f"{filter_string(LedgerQuery(), finished=False)} AND attributes.run_id IN ({ids})"
    order = "attributes.start_time ASC"
    assert _pages(sql, experiment, search, order, True) == _pages(
        client, experiment, search, order, True
    )


def test_queries_and_a_months_sums_are_mlflows(store):
    sql, client = _readers(store)
    later = dt.datetime.now(dt.timezone.utc)  # the records are stamped when written
    month = later.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    for query in (LedgerQuery(), LedgerQuery(team="vision"), LedgerQuery(fingerprint=FP)):
        assert sql.query(query) == client.query(query)
        assert sql.ignored == client.ignored
    for number in (7, 8):  # a pull request's records, whatever their spec (CI's revocations)
        query = LedgerQuery(pr_number=number)
        found = sql.query(query)
        assert found == client.query(query) and len({r.spec for r in found}) > 1
        assert {r.pr_number for r in found} == {number}
    for team in ("vision", "nlp"):
        query = LedgerQuery(team=team, since=month)
        ours, theirs = sql.month_spend(query, later), client.month_spend(query, later)
        assert vars(ours) == vars(theirs)
        assert ours.counts, "the month holds records"


def test_a_filter_with_another_clause_is_left_to_mlflow(store):
    with pytest.raises(Unsupported):
        translate("attributes.status = 'FINISHED' OR tags.x = 'y'")
    with pytest.raises(Unsupported):
        translate("metrics.loss > 1")
    sql, client = _readers(store)
    experiment = client.experiment_id(create=False)
    search = f"tags.{KIND} LIKE 'appr%'"
    order = "attributes.start_time ASC"
    assert _pages(sql, experiment, search, order, True) == _pages(
        client, experiment, search, order, True
    )


def test_reading_imports_no_mlflow_and_writing_goes_through_it(store, tmp_path):
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from gate.integrations import open_ledger\n"
        "from gate.ledger.records import LedgerQuery\n"
        "from tests.ledger_kit import UNSIGNED\n"
        f"ledger = open_ledger({store!r}, UNSIGNED)\n"
        "print(len(ledger.query(LedgerQuery())) > 0, 'mlflow' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False"]
    sql, client = _readers(store)
    before = len(client.query(LedgerQuery()))
    sql.append(_record(99, RecordKind.APPROVAL))
    assert len(client.query(LedgerQuery())) == len(sql.query(LedgerQuery())) == before + 1
