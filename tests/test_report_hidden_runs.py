"""What a training job does to its runs afterwards does not take their hours out of the month.

A job that can write to MLflow deletes its failed run, or the whole experiment, deletes its
run's fingerprint tag, or logs its run in the ledger's experiment: each run left the month's
figures without a word (a deleted failure lowered the team's cost per qualified model). The
report reads them all the same, over the tracking server's REST API and from its sqlite
store alike, and says what it counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from gate import tracking
from gate.cli import main
from gate.commands.report_plans import NO_SPEC
from gate.ledger.records import LEDGER_EXPERIMENT
from gate.report.runs import DELETED_OPEN, ELSEWHERE, UNREAD_RECORD, UNTAGGED
from tests import report_kit
from tests.mlflow_server import MlflowServer, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    with running_server(tmp_path_factory.mktemp("hidden-mlflow")) as server:
        yield server


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory, server: MlflowServer) -> report_kit.Month:
    return report_kit.seed(tmp_path_factory.mktemp("hidden"), server.uri)


def report(month: report_kit.Month, uri: str, capsys: pytest.CaptureFixture[str]) -> Any:
    capsys.readouterr()
    code = main(
        ["report", "--policy-dir", month.policy_dir, "--tracking-uri", uri,
         "--month", report_kit.MONTH, "--format", "json"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def team(document: Any, name: str) -> Any:
    return next(t for t in document["teams"] if t["team"] == name)


def test_deleted_untagged_and_misplaced_runs_stay_in_the_month(month, server, capsys):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(server.uri)
    before = report(month, server.uri, capsys)
    # the ledger's experiment is read now: its records, which carry a spec's tags, are not runs
    assert {u["reason"]: u["runs"] for u in before["unpriced"]}[ELSEWHERE] == 1
    vision, nlp = month.teams["vision"], month.teams["nlp"]
    # the failed 3-hour run of vision's A, and tabular's whole experiment, deleted
    client.delete_run(month.run_ids["a2"])
    tabular = client.get_run(month.run_ids["c1"]).info.experiment_id
    client.delete_experiment(tabular)
    # nlp's killed 2-hour run loses its fingerprint tag
    client.delete_tag(month.run_ids["b2"], tracking.FINGERPRINT)
    # a 7-hour run of A logged in the ledger's experiment, beside the records
    ledger = client.get_experiment_by_name(LEDGER_EXPERIMENT).experiment_id
    report_kit.log_run(client, ledger, tracking.run_tags(month.specs["A"], trial_id=96),
                    name="in-the-ledger", start=70, hours=7, metrics={"val_f1": 0.9})  # fmt: skip
    # and a killed 4-hour one there that sets the records' kind tag: no record the ledger read
    dressed = {**tracking.run_tags(month.specs["A"], trial_id=93), "budget_gate.kind": "approval"}
    report_kit.log_run(client, ledger, dressed, name="dressed", start=69, hours=4, status="KILLED")

    # and a qualified model of two milliseconds in nlp's B
    report_kit.log_run(client, client.get_run(month.run_ids["b1"]).info.experiment_id,
                    tracking.run_tags(month.specs["B"], trial_id=95), name="instant",
                    start=71, hours=2 / 3_600_000, metrics={"val_f1": 0.9})  # fmt: skip

    # and a run of B deleted while it ran (MLflow ends no deleted run)
    b_experiment = client.get_run(month.run_ids["b1"]).info.experiment_id
    open_one = client.create_run(b_experiment, start_time=report_kit._ms(72),
                                 tags=tracking.run_tags(month.specs["B"], trial_id=94))  # fmt: skip
    client.delete_run(open_one.info.run_id)

    # and a 5-hour run in B's experiment with a made-up fingerprint and no team or GPU tags
    bare = {tracking.SPEC: month.specs["B"], tracking.FINGERPRINT: "sha256:" + "e" * 64}
    report_kit.log_run(client, b_experiment, bare, name="made-up", start=73, hours=5)

    for uri in (server.uri, server.sqlite_uri):
        after = report(month, uri, capsys)
        # deleted runs are counted: vision's and tabular's figures are as before
        for name in (vision, month.teams["tabular"]):
            assert team(after, name) == team(before, name)
        note = (
            "3 runs deleted in MLflow (or in a deleted experiment) counted: deleting a run "
            "does not undo its spend (6.00 GPU-h)"
        )
        assert note in after["notes"]
        # the untagged run leaves nlp's priced figures but is listed, charged to nlp; the
        # instant one is a qualified model, said
        b2_cost = Decimal(team(before, nlp)["actual"]) - Decimal(team(after, nlp)["actual"])
        assert b2_cost > 0 and team(after, nlp)["runs"] == team(before, nlp)["runs"]
        assert team(after, nlp)["qualified"] == team(before, nlp)["qualified"] + 1
        assert any(
            note.startswith("1 qualified run ended sooner than one epoch at their spec ")
            for note in after["notes"]
        )
        unpriced = {u["reason"]: u for u in after["unpriced"]}
        untagged = unpriced[UNTAGGED]
        assert (untagged["runs"], Decimal(untagged["gpu_hours"]), untagged["teams"]) == (
            1, 2, [nlp],
        )  # fmt: skip
        # the run in the ledger's experiment joins the one logged in C's as misplaced; the
        # one that wears a record's kind tag, which the ledger did not read, is listed apart
        elsewhere = unpriced[ELSEWHERE]
        assert (elsewhere["runs"], Decimal(elsewhere["gpu_hours"])) == (2, 57)
        dressed = unpriced[UNREAD_RECORD]
        assert (dressed["runs"], Decimal(dressed["gpu_hours"]), dressed["teams"]) == (
            1, 4, [vision],
        )  # fmt: skip
        assert after["totals"]["runs"] == before["totals"]["runs"]
        assert unpriced[DELETED_OPEN]["runs"] == 1 and unpriced[DELETED_OPEN]["teams"] == [nlp]
        # with no plan of its own, a run is listed under its experiment's team and GPUs
        no_spec = unpriced[NO_SPEC]
        assert (no_spec["runs"], Decimal(no_spec["gpu_hours"])) == (2, 6)
        assert no_spec["teams"] == sorted([nlp, vision])
    # one team's report lists that team's unpriced runs only (the made-up run is nlp's)
    capsys.readouterr()
    code = main(["report", "--policy-dir", month.policy_dir, "--tracking-uri", server.uri,
                 "--month", report_kit.MONTH, "--format", "json", "--team", vision])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    only = {u["reason"]: u for u in json.loads(out)["unpriced"]}
    assert (only[NO_SPEC]["runs"], Decimal(only[NO_SPEC]["gpu_hours"])) == (1, 1)
    assert UNTAGGED not in only and DELETED_OPEN not in only


def test_a_spec_whose_runs_all_lost_their_tag_is_found_by_its_approval(tmp_path, capsys):
    """A job that deletes the fingerprint tag of every run of its spec leaves no tagged run
    to name the spec's experiment: nlp's month read 0 runs and 0 USD, without a word."""
    from mlflow.tracking import MlflowClient

    with running_server(tmp_path / "mlflow") as server:
        month = report_kit.seed(tmp_path / "month", server.uri)
        client = MlflowClient(server.uri)
        for run in ("b1", "b2", "b3"):
            client.delete_tag(month.run_ids[run], tracking.FINGERPRINT)
        document = report(month, server.uri, capsys)
    nlp = month.teams["nlp"]
    assert team(document, nlp)["runs"] == 0
    untagged = {u["reason"]: u for u in document["unpriced"]}[UNTAGGED]
    assert (untagged["runs"], Decimal(untagged["gpu_hours"]), untagged["teams"]) == (
        3, 14, [nlp],
    )  # fmt: skip
