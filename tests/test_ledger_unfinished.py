"""Issue 11 item 8: a ledger record whose write failed half-way does not stay RUNNING.

Real MLflow servers behind a loopback proxy: one stumbles on the request that completes the
record (the writer marks it FAILED at once); one dies there (the writer cannot, and the
next write marks it FAILED once it is clearly abandoned, while a write in flight is left
alone). The commands run as child processes.
"""

from __future__ import annotations

import datetime as dt

from mlflow.tracking import MlflowClient

from gate.integrations.mlflow.append import ABANDONED_AFTER
from gate.integrations.mlflow.patience import RETRIES
from gate.ledger.encoding import KIND
from gate.ledger.records import LEDGER_EXPERIMENT, RecordKind
from tests.ledger_kit import Team, fingerprint_of
from tests.mlflow_server import KillingProxy, MlflowServer
from tests.test_quiet_greens import cli

UTC = dt.timezone.utc


def _approve(team: Team, spec: str, uri: str):
    where = ("--policy-dir", team.policy_dir, "--tracking-uri", uri)
    return cli("approve", spec, *where, "--by", "alice", "--reason", "worth it")


def _runs(uri: str, fingerprint: str) -> list:
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(LEDGER_EXPERIMENT)
    search = f"tags.budget_gate.fingerprint = '{fingerprint}'"
    return client.search_runs([experiment.experiment_id], search)


def test_a_record_whose_completion_fails_is_marked_failed_at_once(team: Team, doomed_mlflow):
    spec = team.spec(10)
    # the completion fails on its try and on each retry (RETRIES, BUDGET_GATE_LEDGER_TIMEOUT's)
    failing = {"kill_on": "never", "fail_once_on": "/runs/update", "fail_times": RETRIES + 1}
    with KillingProxy(doomed_mlflow, **failing) as proxy:
        proc = _approve(team, spec, proxy.uri)
    assert proc.returncode == 4
    said = "readers ignore the unfinished run, a signed one's count it; it is marked FAILED)"
    assert said in proc.stderr
    [run] = _runs(doomed_mlflow.uri, fingerprint_of(spec))
    assert run.info.status == "FAILED" and run.info.end_time is not None
    where = ("--policy-dir", team.policy_dir, "--tracking-uri", doomed_mlflow.uri)
    verify = cli("verify", spec, *where)
    assert verify.returncode == 2  # a FAILED record is no approval
    assert "no approval is recorded for this version" in verify.stdout


def test_a_server_that_stumbles_once_is_retried(team: Team, doomed_mlflow):
    spec = team.spec(10)
    with KillingProxy(doomed_mlflow, kill_on="never", fail_once_on="/runs/update") as proxy:
        proc = _approve(team, spec, proxy.uri)
    assert proc.returncode == 0, proc.stderr
    [run] = _runs(doomed_mlflow.uri, fingerprint_of(spec))
    assert run.info.status == "FINISHED"


def test_the_next_write_marks_abandoned_records_failed(team: Team, doomed_mlflow: MlflowServer):
    dead = team.spec(10)
    with KillingProxy(doomed_mlflow, kill_on="/runs/update") as proxy:
        proc = _approve(team, dead, proxy.uri)
    assert proc.returncode == 4
    assert "the next write marks it FAILED" in proc.stderr
    store = doomed_mlflow.sqlite_uri  # the server is gone; its store is still there
    [unfinished] = _runs(store, fingerprint_of(dead))
    assert unfinished.info.status == "RUNNING"

    # The same state, left long enough ago to be clearly abandoned, and a write in flight.
    client = MlflowClient(store)
    experiment_id = client.get_experiment_by_name(LEDGER_EXPERIMENT).experiment_id
    now = dt.datetime.now(UTC)
    tags = dict(unfinished.data.tags)
    old = client.create_run(
        experiment_id,
        start_time=int((now - ABANDONED_AFTER - dt.timedelta(minutes=1)).timestamp() * 1000),
        tags=tags,
    )
    in_flight = client.create_run(experiment_id, start_time=int(now.timestamp() * 1000), tags=tags)
    assert tags[KIND] == RecordKind.APPROVAL.value  # a ledger record's tags

    assert _approve(team, team.spec(12), store).returncode == 0  # the next write
    status = {r.info.run_id: r.info.status for r in _runs(store, fingerprint_of(dead))}
    assert status[old.info.run_id] == "FAILED"
    assert status[in_flight.info.run_id] == "RUNNING"  # may still complete: left alone
    assert status[unfinished.info.run_id] == "RUNNING"  # started a moment ago, likewise
