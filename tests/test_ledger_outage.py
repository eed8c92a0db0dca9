"""MLflow unreachable or stopped mid-command: exit 4, a clear message, nothing half-written."""

from __future__ import annotations

import datetime as dt

import pytest
from mlflow.tracking import MlflowClient

from gate.integrations import open_ledger
from gate.ledger.records import LEDGER_EXPERIMENT, LedgerQuery
from tests.ledger_kit import UNSIGNED, Team, fingerprint_of
from tests.mlflow_server import KillingProxy, free_port

UTC = dt.timezone.utc
BUDGET = ", monthly_budget: 5000"


def dead_uri() -> str:
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
def team(tmp_path, capsys) -> Team:
    team = Team(tmp_path, dead_uri(), capsys)
    team.policy(limits=BUDGET)
    return team


def assert_clean_outage(code: int, out: str, err: str, doing: str) -> None:
    assert code == 4
    assert out == ""
    assert err.startswith("budget-gate: MLflow at http://127.0.0.1:")
    assert f" failed while {doing}" in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("command", ["check", "verify", "approve", "request-approval"])
def test_an_unreachable_server_is_exit_4(team, command):
    extra = ["--by", "alice", "--reason", "ok"] if command == "approve" else []
    code, out, err = team.cli(command, team.spec(8), *extra)
    assert_clean_outage(code, out, err, "finding the ledger experiment: ")
    assert err.endswith("connection refused — is the tracking server running?\n")


def test_credentials_in_the_uri_are_not_printed(team):
    uri = f"http://user:s3cret@127.0.0.1:{free_port()}"
    code, _, err = team.cli("verify", team.spec(8), uri=uri)
    assert code == 4
    assert "s3cret" not in err and "http://***@127.0.0.1:" in err


def _all_runs(sqlite_uri: str, fingerprint: str) -> list:
    """Every run of the fingerprint in the dead server's store, whatever its status."""
    client = MlflowClient(sqlite_uri)
    experiment = client.get_experiment_by_name(LEDGER_EXPERIMENT)
    search = f"tags.budget_gate.fingerprint = '{fingerprint}'"
    return client.search_runs([experiment.experiment_id], search)


def test_server_stopped_between_the_ledger_read_and_the_write(team, doomed_mlflow):
    team.reconcile(team.spec(1), "100", uri=doomed_mlflow.uri)  # so the budget read searches
    spec = team.spec(8)
    with KillingProxy(doomed_mlflow, kill_on="/runs/create") as proxy:
        code, out, err = team.cli("approve", spec, "--by", "alice", "--reason", "ok", uri=proxy.uri)
    assert proxy.killed.is_set()
    searches = [i for i, seen in enumerate(proxy.seen) if "/runs/search" in seen]
    creates = [i for i, seen in enumerate(proxy.seen) if "/runs/create" in seen]
    assert searches and creates and searches[0] < creates[0]  # the budget was read first
    assert_clean_outage(code, out, err, "recording the approval (nothing was recorded): ")
    assert err.endswith("the server closed the connection\n")
    assert doomed_mlflow.process is not None and doomed_mlflow.process.poll() is not None
    assert _all_runs(doomed_mlflow.sqlite_uri, fingerprint_of(spec)) == []


def test_server_stopped_before_the_record_is_complete(team, doomed_mlflow):
    spec = team.spec(8)
    with KillingProxy(doomed_mlflow, kill_on="/runs/update") as proxy:
        code, out, err = team.cli("approve", spec, "--by", "alice", "--reason", "ok", uri=proxy.uri)
    assert proxy.killed.is_set()
    assert_clean_outage(code, out, err, "completing record ")
    assert err.endswith(
        "(an unsigned ledger's readers ignore the unfinished run, a signed one's count it; "
        "the next write marks it FAILED): the server closed the connection\n"
    )
    [unfinished] = _all_runs(doomed_mlflow.sqlite_uri, fingerprint_of(spec))
    assert unfinished.info.status == "RUNNING"
    assert f"completing record {unfinished.info.run_id} " in err
    store = doomed_mlflow.sqlite_uri
    assert open_ledger(store, UNSIGNED).query(LedgerQuery(fingerprint=fingerprint_of(spec))) == []
    code, out, _ = team.cli("verify", spec, uri=store)
    assert code == 2
    assert "not approved: no approval is recorded for this version" in out
