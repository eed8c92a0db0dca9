"""``LedgerQuery(pr_number=N)`` reads one pull request's records, whatever their spec, in
every store.

Why: CI revokes the ledger's copies of a pull request's approvals that GitHub withdrew, found
by the pull request's number (an approved spec may have left the diff since). A store that
ignored the filter would hand CI other pull requests' records; one that missed records would
leave a withdrawn approval clearing launches. The number is searched as a tag, so the tag
must say what the signed payload says: a record whose tag was edited does not count.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import secrets
import uuid
from decimal import Decimal

import pytest
from mlflow.tracking import MlflowClient

from gate.integrations import open_ledger
from gate.integrations.mlflow.absent_ledger import AbsentLedger
from gate.integrations.mlflow.client import MlflowLedger
from gate.integrations.mlflow.rest import RestLedger
from gate.integrations.mlflow.search import filter_string
from gate.integrations.mlflow.sql_ledger import SqlLedger, translate
from gate.ledger.encoding import PR_NUMBER
from gate.ledger.records import LedgerQuery, LedgerRecord, LedgerStore, RecordKind, Source
from tests.ledger_kit import UNSIGNED

NOW = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def _record(pr_number: int | None, spec: str, **changes: object) -> LedgerRecord:
    record = LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec=spec,
        fingerprint="sha256:" + uuid.uuid4().hex,
        experiment="sweep",
        recorded_at=NOW,
        currency="USD",
        worst_cost=Decimal("12.5"),
        team="nlp",
        by="alice",
        source=Source.GITHUB_REVIEW if pr_number is not None else Source.LOCAL,
        pr_number=pr_number,
        event_id=f"review-{secrets.randbelow(10**9)}",
    )
    return dataclasses.replace(record, **changes)


def _numbers() -> tuple[int, int]:
    """Two pull request numbers no other test of the session's shared server uses."""
    first = 10**6 + secrets.randbelow(10**9)
    return first, first + 1


def _writes(store: LedgerStore) -> tuple[int, int, str]:
    """A pull request's approvals of two specs, another's, and a local one; the numbers."""
    ours, theirs = _numbers()
    spec = f"experiments/{uuid.uuid4().hex[:8]}.yaml"
    store.append(_record(ours, spec))
    store.append(_record(ours, f"experiments/{uuid.uuid4().hex[:8]}.yaml"))
    store.append(_record(theirs, spec))
    store.append(_record(None, spec))
    return ours, theirs, spec


def _check(store: LedgerStore, ours: int, theirs: int, spec: str) -> None:
    mine = store.query(LedgerQuery(pr_number=ours))
    assert [r.pr_number for r in mine] == [ours, ours]
    assert len({r.spec for r in mine}) == 2  # whatever their spec
    assert [r.pr_number for r in store.query(LedgerQuery(pr_number=theirs))] == [theirs]
    assert [r.pr_number for r in store.query(LedgerQuery(pr_number=ours, spec=spec))] == [ours]
    later = LedgerQuery(pr_number=ours, since=NOW + dt.timedelta(days=1))
    assert store.query(later) == []
    everything = store.query(LedgerQuery(spec=spec))
    assert sorted(str(r.pr_number) for r in everything) == sorted(["None", str(ours), str(theirs)])


def test_the_query_matches_one_pull_requests_records_in_memory():
    """``matches`` (a view's records of the queries it read, as it writes) honours it."""
    query = LedgerQuery(pr_number=7)
    assert query.matches(_record(7, "experiments/a.yaml"))
    assert not query.matches(_record(8, "experiments/a.yaml"))
    assert not query.matches(_record(None, "experiments/a.yaml"))
    assert LedgerQuery().matches(_record(None, "experiments/a.yaml"))


def test_the_search_filters_by_the_number_tag_and_sql_answers_it():
    search = filter_string(LedgerQuery(pr_number=12, spec="experiments/a.yaml"))
    assert f"tags.{PR_NUMBER} = '12'" in search
    assert "tags.budget_gate.spec = 'experiments/a.yaml'" in search
    where, values = translate(search)  # answered with SQL, not left to MLflow's client
    assert "12" in values and where.count("EXISTS") == 3  # the kind, the spec, the number
    assert "pr_number" not in filter_string(LedgerQuery())


def test_a_sqlite_store_read_with_sql_and_through_mlflow(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = open_ledger(uri, UNSIGNED)
    assert isinstance(first, AbsentLedger) and first.query(LedgerQuery(pr_number=1)) == []
    ours, theirs, spec = _writes(first)  # the first write makes the store
    _check(first, ours, theirs, spec)
    sql = open_ledger(uri, UNSIGNED)
    assert isinstance(sql, SqlLedger)
    _check(sql, ours, theirs, spec)
    _check(MlflowLedger(uri, UNSIGNED), ours, theirs, spec)


def test_a_tracking_server_over_rest_and_through_mlflow(mlflow_server):
    rest = open_ledger(mlflow_server.uri, UNSIGNED)
    assert isinstance(rest, RestLedger)
    ours, theirs, spec = _writes(rest)
    _check(rest, ours, theirs, spec)
    _check(MlflowLedger(mlflow_server.uri, UNSIGNED), ours, theirs, spec)


@pytest.mark.parametrize("reader", ["rest", "client"])
def test_a_record_whose_number_tag_was_edited_counts_for_its_own_pull_request(
    mlflow_server, reader
):
    """Its payload (signed in a signed ledger) names the pull request: a run's tag edited to
    another number hid the approval from its pull request's search (read as malformed). Its
    params, which MLflow never changes, are searched: it counts for its own, nowhere else."""
    ours, theirs = _numbers()
    writer = open_ledger(mlflow_server.uri, UNSIGNED)
    run_id = writer.append(_record(ours, f"experiments/{uuid.uuid4().hex[:8]}.yaml"))
    MlflowClient(mlflow_server.uri).set_tag(run_id, PR_NUMBER, str(theirs))
    store = (
        open_ledger(mlflow_server.uri, UNSIGNED)
        if reader == "rest"
        else MlflowLedger(mlflow_server.uri, UNSIGNED)
    )
    assert store.query(LedgerQuery(pr_number=theirs)) == []
    assert store.ignored == {}
    [record] = store.query(LedgerQuery(pr_number=ours))
    assert record.run_id == run_id and record.pr_number == ours
