"""The MLflow ledger store against a real tracking server: round trips, filters, races."""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import uuid
from decimal import Decimal

import pytest
from mlflow.entities import Param
from mlflow.tracking import MlflowClient

from gate.errors import BackendError
from gate.integrations import open_ledger
from gate.integrations.mlflow.search import filter_string
from gate.integrations.mlflow.tracking_uri import redact
from gate.ledger.encoding import to_tags
from gate.ledger.records import LEDGER_EXPERIMENT, LedgerQuery, LedgerRecord, RecordKind, Source
from tests.ledger_kit import UNSIGNED, seed_record

UTC = dt.timezone.utc
NOW = dt.datetime.now(UTC).replace(microsecond=0)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def approval(**changes) -> LedgerRecord:
    base = LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec=unique("experiments/s") + ".yaml",
        fingerprint="sha256:" + uuid.uuid4().hex,
        experiment="sweep",
        recorded_at=NOW,
        currency="USD",
        worst_cost=Decimal("611.305"),
        expected_cost=Decimal("400.1"),
        team=unique("team"),
        cost_center=unique("cc"),
        by="alice",
        reason="worth it",
        source=Source.GITHUB_REVIEW,
        pr_number=17,
        expires_at=NOW + dt.timedelta(days=14),
    )
    return dataclasses.replace(base, **changes)


def test_a_record_round_trips_exactly(mlflow_server):
    ledger = open_ledger(mlflow_server.uri, UNSIGNED)
    record = approval(recorded_at=NOW - dt.timedelta(days=3))  # a claim: the store stamps
    run_id = ledger.append(record)
    [back] = ledger.query(LedgerQuery(fingerprint=record.fingerprint))
    assert abs(back.recorded_at - dt.datetime.now(UTC)) < dt.timedelta(seconds=30)
    assert back.run_id == run_id and back.record_id and back.record_id != run_id
    assert back == dataclasses.replace(
        record,
        recorded_at=back.recorded_at,
        record_id=back.record_id,
        payload=back.payload,
        run_id=run_id,
    )
    run = MlflowClient(mlflow_server.uri).get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["budget_gate.kind"] == "approval"
    assert run.data.tags["budget_gate.by"] == "alice"
    assert run.info.run_name == "approval: sweep by alice"
    experiment = MlflowClient(mlflow_server.uri).get_experiment(run.info.experiment_id)
    assert experiment.name == LEDGER_EXPERIMENT


def test_every_filter_narrows_and_they_combine(mlflow_server):
    ledger = open_ledger(mlflow_server.uri, UNSIGNED)
    team = unique("team")
    first = approval(team=team, recorded_at=NOW - dt.timedelta(days=40))
    second = approval(team=team, spec=first.spec, cost_center="cc-shared")
    third = approval(
        team=team,
        fingerprint=first.fingerprint,
        cost_center="cc-shared",
        recorded_at=NOW + dt.timedelta(seconds=1),
    )
    for record in (first, second, third):
        seed_record(mlflow_server.uri, record)  # written then, as the writers did

    def found(**filters) -> list[str]:
        return [r.fingerprint + r.spec for r in ledger.query(LedgerQuery(**filters))]

    key = {
        r.fingerprint + r.spec: name for name, r in zip("123", (first, second, third), strict=True)
    }
    assert [key[k] for k in found(team=team)] == ["1", "2", "3"]  # oldest first
    assert [key[k] for k in found(team=team, since=NOW - dt.timedelta(days=1))] == ["2", "3"]
    assert [key[k] for k in found(fingerprint=first.fingerprint)] == ["1", "3"]
    assert [key[k] for k in found(spec=first.spec)] == ["1", "2"]
    assert [key[k] for k in found(team=team, cost_center="cc-shared", spec=first.spec)] == ["2"]
    assert found(team=unique("nobody")) == []


def test_unfinished_runs_are_not_records(mlflow_server):
    ledger = open_ledger(mlflow_server.uri, UNSIGNED)
    record = approval()
    client = MlflowClient(mlflow_server.uri)
    experiment = client.get_experiment_by_name(LEDGER_EXPERIMENT)
    if experiment is None:  # this test ran first: let the ledger create its experiment
        ledger.append(approval())
        experiment = client.get_experiment_by_name(LEDGER_EXPERIMENT)
    unfinished = dataclasses.replace(record, record_id=uuid.uuid4().hex)
    client.create_run(experiment.experiment_id, tags=to_tags(unfinished))  # left RUNNING
    assert ledger.query(LedgerQuery(fingerprint=record.fingerprint)) == []
    ledger.append(record)
    assert len(ledger.query(LedgerQuery(fingerprint=record.fingerprint))) == 1


def test_two_approvals_at_the_same_moment_are_both_kept(mlflow_server):
    record = approval()
    barrier = threading.Barrier(8)
    ids: list[str] = []
    errors: list[BaseException] = []

    def approve(name: str) -> None:
        ledger = open_ledger(mlflow_server.uri, UNSIGNED)
        barrier.wait()
        try:
            ids.append(ledger.append(dataclasses.replace(record, by=name)))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=approve, args=(f"user{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(ids)) == 8
    stored = open_ledger(mlflow_server.uri, UNSIGNED).query(
        LedgerQuery(fingerprint=record.fingerprint)
    )
    assert sorted(r.by for r in stored) == [f"user{i}" for i in range(8)]
    assert len({r.record_id for r in stored}) == 8  # each write is a record of its own


def test_values_with_quotes_are_searchable(mlflow_server):
    ledger = open_ledger(mlflow_server.uri, UNSIGNED)
    record = approval(spec=unique("experiments/bob's") + ".yaml")
    ledger.append(record)
    [back] = ledger.query(LedgerQuery(spec=record.spec))
    assert back.spec == record.spec
    with pytest.raises(BackendError, match="both kinds of quotes"):
        ledger.query(LedgerQuery(spec="a'b\"c"))


def test_an_edited_record_reads_as_written_and_a_malformed_one_is_counted(mlflow_server):
    """A record is read from its params, which MLflow never changes: a job's edits to its
    tags (an amount, the payload, the kind, the fingerprint) change nothing, and a search
    its rewritten tags now match leaves it out. A run whose params do not read is said."""
    ledger = open_ledger(mlflow_server.uri, UNSIGNED)
    record = approval()
    run_id = ledger.append(record)
    client = MlflowClient(mlflow_server.uri)
    client.set_tag(run_id, "budget_gate.worst_cost", "a lot")
    client.set_tag(run_id, "budget_gate.payload", '{"v": 2, "kind": "approval"}')
    client.set_tag(run_id, "budget_gate.fingerprint", "sha256:elsewhere")
    client.delete_tag(run_id, "budget_gate.kind")
    fresh = open_ledger(mlflow_server.uri, UNSIGNED)
    [back] = fresh.query(LedgerQuery(fingerprint=record.fingerprint))
    assert back.worst_cost == Decimal("611.305") and back.run_id == run_id
    assert fresh.query(LedgerQuery(fingerprint="sha256:elsewhere")) == []
    experiment = client.get_experiment_by_name(LEDGER_EXPERIMENT).experiment_id
    junk = client.create_run(experiment)
    params = {"budget_gate.kind": "approval", "budget_gate.fingerprint": record.fingerprint}
    params |= {"budget_gate.payload_parts": "1", "budget_gate.payload": '{"v": 2}'}
    client.log_batch(junk.info.run_id, params=[Param(k, v) for k, v in params.items()])
    client.set_terminated(junk.info.run_id, "FINISHED")
    deep = client.create_run(experiment)  # json.loads of it raised RecursionError: exit 70
    nested = {**params, "budget_gate.payload": "[" * 1100}
    client.log_batch(deep.info.run_id, params=[Param(k, v) for k, v in nested.items()])
    client.set_terminated(deep.info.run_id, "FINISHED")
    assert fresh.query(LedgerQuery(fingerprint=record.fingerprint)) == [back]
    assert fresh.ignored == {junk.info.run_id: "malformed", deep.info.run_id: "malformed"}


def test_a_record_without_params_is_found_by_its_tags_whatever_params_a_job_adds(mlflow_server):
    """A record written before params (or whose params a failed write never logged) is
    found by its tags; a job that logged a ``budget_gate.kind`` param on it took it out of
    the tag search, as if sealed, and out of every search."""
    record = dataclasses.replace(approval(), record_id=uuid.uuid4().hex)
    client = MlflowClient(mlflow_server.uri)
    ledger = open_ledger(mlflow_server.uri, UNSIGNED)
    ledger.append(approval())  # the ledger's experiment
    experiment = client.get_experiment_by_name(LEDGER_EXPERIMENT).experiment_id
    start = int(record.recorded_at.timestamp() * 1000)
    run = client.create_run(experiment, start_time=start, tags=to_tags(record))
    client.set_terminated(run.info.run_id, "FINISHED")
    client.log_batch(run.info.run_id, params=[Param("budget_gate.kind", "approval")])
    [back] = open_ledger(mlflow_server.uri, UNSIGNED).query(
        LedgerQuery(fingerprint=record.fingerprint)
    )
    assert back.run_id == run.info.run_id and back.record_id == record.record_id


def test_the_filter_string():
    query = LedgerQuery(team="vision", since=dt.datetime(2026, 11, 1, tzinfo=UTC))
    assert filter_string(query) == (
        "attributes.status = 'FINISHED' AND tags.budget_gate.kind IS NOT NULL AND "
        "tags.budget_gate.team = 'vision' AND attributes.start_time >= 1793491200000"
    )


def test_credentials_are_never_shown():
    assert redact("https://user:secret@mlflow.example.com/") == "https://***@mlflow.example.com/"
    assert redact("http://127.0.0.1:5000") == "http://127.0.0.1:5000"
    # a token in the query string (``?token=…``) was printed in the exit-4 line
    shown = redact("http://u:pw@127.0.0.1:9/p?token=s3cr3t&flag#part")
    assert shown == "http://***@127.0.0.1:9/p?token=***&flag#part"
    assert redact("sqlite:////tmp/x.db?timeout=5") == "sqlite:////tmp/x.db?timeout=***"
