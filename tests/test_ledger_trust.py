"""Issue 21: approvals and budgets no one can forge, reuse or backdate, through the real CLI.

Against the session's real MLflow tracking server, with real SSH keys (ssh-keygen) listed in
the policies' ``allowed_signers``: a record written straight through ``MlflowClient`` (as any
training job can) changes no verdict and no sum and is counted aloud; an approval covers one
path and a stated number of launches, each launch commits its worst case; a record's time is
when it was written; an approval after a reconciliation counts.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import gate
from gate.guard.limits import Ceiling
from gate.integrations import open_ledger
from gate.integrations.signing import signer_from
from gate.ledger.encoding import to_tags
from gate.ledger.records import LEDGER_EXPERIMENT, LedgerQuery, LedgerRecord, RecordKind, Source
from gate.ledger.signing import CI_PRINCIPAL, SIGNERS_FILE, Trust
from tests.ledger_kit import Team, fingerprint_of
from tests.mlflow_server import free_port
from tests.signing_kit import Keys

UNSIGNED = Trust(None, SIGNERS_FILE)
GITHUB_ONLY = "  sources: [github]\n"


@pytest.fixture
def signed(team: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch) -> Team:
    """The team's policies list alice, bob, CI and a launcher as signers; alice signs."""
    (Path(team.policy_dir) / SIGNERS_FILE).write_text(
        keys.signers("alice", "bob", CI_PRINCIPAL, "launcher"), encoding="ascii"
    )
    for name, value in keys.env("alice").items():
        monkeypatch.setenv(name, value)
    return team


def _as(monkeypatch: pytest.MonkeyPatch, keys: Keys, principal: str) -> None:
    for name, value in keys.env(principal).items():
        monkeypatch.setenv(name, value)


def _record(team: Team, spec: str, kind: RecordKind, worst: str, by: str) -> LedgerRecord:
    """A record of the team's spec, written now."""
    return LedgerRecord(
        kind=kind,
        spec=Path(spec).name,
        fingerprint=fingerprint_of(spec),
        experiment=kind.value,
        recorded_at=dt.datetime.now(dt.timezone.utc),
        currency="USD",
        worst_cost=Decimal(worst),
        team=team.name,
        by=by,
    )


def _forge(team: Team, spec: str, **changes: object) -> str:
    """An approval run written with MLflow's own client, as a training job could."""
    record = dataclasses.replace(
        _record(team, spec, RecordKind.APPROVAL, "1000000", "mallory"),
        experiment="forged",
        reason="trust me",
        source=Source.GITHUB_REVIEW,
        record_id="f" * 32,
    )
    record = dataclasses.replace(record, **changes)
    client = MlflowClient(team.uri)
    found = client.get_experiment_by_name(LEDGER_EXPERIMENT)
    experiment = found.experiment_id if found else client.create_experiment(LEDGER_EXPERIMENT)
    run = client.create_run(experiment, tags=to_tags(record))
    client.set_terminated(run.info.run_id, "FINISHED")
    return str(run.info.run_id)


def test_a_forged_approval_changes_no_verdict_and_is_counted_aloud(signed: Team):
    spec = signed.spec(8)  # 8 trials > 4: needs an approval
    _forge(signed, spec)
    _forge(signed, spec, signer="mallory", signature="-----BEGIN SSH SIGNATURE-----\nAAAA\n")
    code, out, _ = signed.cli("verify", spec, "--dry-run")
    assert code == 2
    assert (
        "2 ledger records at" in out
        and "ignored (1 its signature does not verify; 1 unsigned)" in out
    )

    signed.policy(extra=GITHUB_ONLY)  # github-only approvals: the forged source claims that
    code, out, _ = signed.cli("verify", spec, "--dry-run")
    assert code == 2


def test_without_signers_the_ledger_is_read_as_written_and_says_so(team: Team):
    spec = team.spec(8)
    _forge(team, spec, by="alice")  # a listed approver: mallory's no longer counts at all
    code, out, _ = team.cli("verify", spec, "--dry-run")
    assert code == 0  # today's behaviour: anyone who can write to MLflow can approve …
    assert "ledger: warning: ledger records are not signed (no" in out  # … and it is said


def test_a_signed_local_approval_counts_and_a_wrong_key_is_refused_before_writing(
    signed: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    spec = signed.spec(8)
    code, _, err = signed.cli("approve", spec, "--by", "alice", "--reason", "worth it")
    assert code == 0, err
    [record] = signed.records(spec, trust=Trust_of(signed))
    assert (record.signer, record.by) == ("alice", "alice") and record.signature

    # bob's name with alice's key: refused at once, nothing recorded
    monkeypatch.setenv("BUDGET_GATE_SIGNER", "bob")
    code, _, err = signed.cli("approve", spec, "--by", "bob", "--reason", "me too")
    assert code == 3
    assert "is signed by a key" in err and "does not list for bob" in err
    assert len(signed.records(spec, trust=UNSIGNED)) == 1

    monkeypatch.delenv("BUDGET_GATE_SIGNING_KEY")
    code, _, err = signed.cli("approve", spec, "--by", "alice", "--reason", "again")
    assert code == 3 and "no signing key is set" in err


def Trust_of(team: Team) -> Trust:
    from gate.policy.loader import PolicySet

    return PolicySet(team.policy_dir).trust()


def test_an_approval_covers_one_path_a_copy_needs_its_own(signed: Team, tmp_path: Path):
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    for name in ("exp-b.yaml", "exp-c.yaml"):
        copy = tmp_path / name
        shutil.copy(spec, copy)
        code, out, _ = signed.cli("verify", str(copy), "--dry-run")
        assert code == 2
        assert f"is for {Path(spec).name}: a copy at {name} needs its own approval" in out
    assert signed.cli("verify", spec, "--dry-run")[0] == 0


def test_each_launch_uses_the_approval_and_commits_the_month(
    signed: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    signed.policy(limits=", monthly_budget: 1000")
    spec = signed.spec(8)  # 80 USD worst case
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "launcher")
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY", raising=False)
    code, _, err = signed.cli("verify", spec)
    assert code == 0, err
    assert "launch of" in err and "recorded in the ledger" in err
    for _ in range(4):  # the same approved spec again: its one launch is used
        code, out, _ = signed.cli("verify", spec)
        assert code == 2
        assert "covers 1 launch (approval.launches) and was used by the launch on" in out
        said = " ".join(out.split())  # NOTE: a search's workers are one launch: say how
        assert "worker processes of one search are one launch when they share a" in said
    launches = [
        r for r in signed.records(spec, trust=Trust_of(signed)) if r.kind is RecordKind.LAUNCH
    ]
    assert len(launches) == 1 and launches[0].worst_cost == Decimal("80.00")
    other = signed.spec(2)  # 20 USD, needs no approval; the launch counts in its budget
    code, out, _ = signed.cli("check", other)
    assert "80.00 of 1,000.00" in out or "80.00 USD of 1,000.00" in out, out

    signed.policy(limits=", monthly_budget: 1000", extra="  launches: 2\n")
    assert signed.cli("verify", spec)[0] == 0  # the policy's approval.launches says 2


def test_workers_of_one_launch_share_its_key(signed: Team, keys: Keys, monkeypatch):
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "launcher")
    for _ in range(3):
        assert signed.cli("verify", spec, "--launch-key", "search-7")[0] == 0
    launches = [
        r for r in signed.records(spec, trust=Trust_of(signed)) if r.kind is RecordKind.LAUNCH
    ]
    assert [r.launch_key for r in launches] == ["search-7"]


def test_an_approval_after_a_reconciliation_counts(signed: Team, keys, monkeypatch):
    signed.policy(limits=", monthly_budget: 10000")
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "first")[0] == 0
    signed.reconcile(spec, "500", trust=Trust_of(signed), signer_env=keys.env(CI_PRINCIPAL))
    _as(monkeypatch, keys, "alice")
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "second run")[0] == 0
    other = signed.spec(2)
    _, out, _ = signed.cli("check", other, "--format", "json")
    budget = json.loads(out)["results"][0]["budget"]
    assert (budget["committed"], budget["actual"]) == ("80.00", "500.00"), budget


def test_a_record_is_stamped_with_its_write_time_not_its_event(signed: Team, keys, monkeypatch):
    spec = signed.spec(8)
    _as(monkeypatch, keys, CI_PRINCIPAL)
    review_at = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=30)
    record = LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec=Path(spec).name,
        fingerprint=fingerprint_of(spec),
        experiment="late",
        recorded_at=review_at,  # what a caller claims
        currency="USD",
        worst_cost=Decimal("5000"),
        team=signed.name,
        by="dave",
        source=Source.GITHUB_REVIEW,
        event_at=review_at,
    )

    store = open_ledger(signed.uri, Trust_of(signed))
    store.append(record, signer_from(os.environ, principal=None))
    [stored] = store.query(LedgerQuery(fingerprint=record.fingerprint))
    assert stored.event_at == review_at
    assert dt.datetime.now(dt.timezone.utc) - stored.recorded_at < dt.timedelta(minutes=1)


def test_a_deleted_launch_still_commits_the_month(signed: Team, keys, monkeypatch):
    """MLflow's delete_run only marks a run deleted: the ledger reads deleted runs too."""
    signed.policy(limits=", monthly_budget: 1000")
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "launcher")
    assert signed.cli("verify", spec)[0] == 0
    [launch] = [
        r for r in signed.records(spec, trust=Trust_of(signed)) if r.kind is RecordKind.LAUNCH
    ]
    MlflowClient(signed.uri).delete_run(launch.run_id)
    code, out, _ = signed.cli("verify", spec, "--dry-run")
    assert code == 2 and "was used by the launch on" in out  # still used up
    budget = json.loads(signed.cli("check", signed.spec(2), "--format", "json")[1])
    assert budget["results"][0]["budget"]["committed"] == "80.00"


def test_a_launch_or_revocation_whose_tags_a_job_edited_still_counts(
    signed: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    """A training job with no key deleted a signed launch's ``budget_gate.kind`` tag: the
    launch left every search, the used approval launched again and the month freed its 80
    USD, without a word; one that rewrote a revocation's fingerprint tag made the revoked
    approval count again. Searches read the params MLflow never changes."""
    signed.policy(limits=", monthly_budget: 1000")
    spec, revoked = signed.spec(8), signed.spec(8)
    for each in (spec, revoked):
        assert signed.cli("approve", each, "--by", "alice", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "bob")
    assert signed.cli("revoke", revoked, "--by", "bob", "--reason", "no")[0] == 0
    _as(monkeypatch, keys, "launcher")
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY", raising=False)
    assert signed.cli("verify", spec)[0] == 0
    trust = Trust_of(signed)
    [launch] = [r for r in signed.records(spec, trust=trust) if r.kind is RecordKind.LAUNCH]
    [revocation] = [
        r for r in signed.records(revoked, trust=trust) if r.kind is RecordKind.REVOCATION
    ]
    client = MlflowClient(signed.uri)
    client.delete_tag(launch.run_id, "budget_gate.kind")
    client.set_tag(launch.run_id, "budget_gate.team", "another-team")
    client.set_tag(revocation.run_id, "budget_gate.fingerprint", "sha256:elsewhere")
    client.delete_tag(revocation.run_id, "budget_gate.kind")
    code, out, _ = signed.cli("verify", spec, "--dry-run")
    assert code == 2 and "was used by the launch on" in out  # still used up
    code, out, _ = signed.cli("verify", revoked, "--dry-run")
    assert code == 2 and "was revoked" in out
    budget = json.loads(signed.cli("check", signed.spec(2), "--format", "json")[1])
    assert budget["results"][0]["budget"]["committed"] == "80.00"


def test_a_batch_of_launches_is_signed_once_and_each_key_counts(signed: Team, keys, monkeypatch):
    """The Kueue controller's form: one run for several launches of one version."""
    from gate.ledger.launches import batched

    signed.policy(limits=", monthly_budget: 1000")
    spec = signed.spec(2)  # 20 USD worst case
    _as(monkeypatch, keys, "launcher")
    launch = _record(signed, spec, RecordKind.LAUNCH, "20.00", "launcher")
    keyed = [dataclasses.replace(launch, launch_key=f"kueue-{i}") for i in range(3)]
    [(batch, _)] = batched(keyed)
    store = open_ledger(signed.uri, Trust_of(signed))
    run_id = store.append(batch, signer_from(os.environ, principal="launcher"))
    read = signed.records(spec, trust=Trust_of(signed))
    assert [(r.launch_key, r.run_id) for r in read] == [(f"kueue-{i}", run_id) for i in range(3)]
    committed = json.loads(signed.cli("check", signed.spec(2), "--format", "json")[1])
    assert committed["results"][0]["budget"]["committed"] == "60.00"
    # a key added to the signed payload breaks the signature: the whole run does not count
    client = MlflowClient(signed.uri)
    tags = client.get_run(run_id).data.tags
    body = json.loads(tags["budget_gate.payload"])
    body["launch_keys"].append("kueue-forged")
    forged = tags | {"budget_gate.payload": json.dumps(body, sort_keys=True, separators=(",", ":"))}
    run = client.create_run(client.get_run(run_id).info.experiment_id, tags=forged)
    client.set_terminated(run.info.run_id, "FINISHED")
    reader = open_ledger(signed.uri, Trust_of(signed))
    assert len(reader.query(LedgerQuery(fingerprint=fingerprint_of(spec)))) == 3
    assert reader.ignored == {run.info.run_id: "its signature does not verify"}
    out = signed.cli("check", signed.spec(2), "--format", "json")[1]
    assert json.loads(out)["results"][0]["budget"]["committed"] == "60.00"


def test_a_copy_of_a_signed_record_is_the_same_record(signed: Team, keys, monkeypatch):
    signed.policy(limits=", monthly_budget: 1000")
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    [approval] = signed.records(spec, trust=Trust_of(signed))
    client = MlflowClient(signed.uri)
    tags = client.get_run(approval.run_id).data.tags
    experiment = client.get_run(approval.run_id).info.experiment_id
    for _ in range(3):  # replayed copies, dated as the original
        run = client.create_run(
            experiment, start_time=client.get_run(approval.run_id).info.start_time, tags=tags
        )
        client.set_terminated(run.info.run_id, "FINISHED")
    budget = json.loads(signed.cli("check", signed.spec(2), "--format", "json")[1])
    assert budget["results"][0]["budget"]["committed"] == "80.00"  # once, not four times
    code, _, _ = signed.cli("revoke", spec, "--by", "alice", "--reason", "no")
    assert code == 0
    assert signed.cli("verify", spec, "--dry-run")[0] == 2  # the revocation covers the copies


def test_a_signed_record_whose_run_is_backdated_does_not_count(signed: Team):
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    [approval] = signed.records(spec, trust=Trust_of(signed))
    client = MlflowClient(signed.uri)
    original = client.get_run(approval.run_id)
    client.delete_run(approval.run_id)
    client.restore_run(approval.run_id)
    earlier = original.info.start_time - 3_600_000  # the same signed record, an hour earlier
    run = client.create_run(
        original.info.experiment_id, start_time=earlier, tags=original.data.tags
    )
    client.set_terminated(run.info.run_id, "FINISHED")
    store = open_ledger(signed.uri, Trust_of(signed))
    store.query(LedgerQuery(fingerprint=approval.fingerprint))
    assert store.ignored == {
        run.info.run_id: "its run is dated away from the time it was signed at"
    }


def test_a_forged_snapshot_is_read_past(signed: Team, keys, monkeypatch):
    """A budget snapshot that zeroes the month, written by a training job: not under the
    signers, so readers fold the records themselves."""
    from gate.integrations.mlflow.client import MlflowLedger
    from gate.ledger.snapshot import Snapshot, encode
    from gate.ledger.spend import Spend

    signed.policy(limits=", monthly_budget: 1000")
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    writer = MlflowLedger(signed.uri, UNSIGNED)
    experiment = writer.experiment_id(create=False)
    month = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m")
    cutoff = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    for trust in (UNSIGNED, Trust_of(signed)):  # unsigned, and claiming the signers' digest
        tags = encode(Snapshot(cutoff, Spend()), f"team:{signed.name}", month, trust, None)
        writer.write_run(experiment, cutoff, tags, "forged snapshot")
    budget = json.loads(signed.cli("check", signed.spec(2), "--format", "json")[1])
    assert budget["results"][0]["budget"]["committed"] == "80.00"


def test_writing_commands_say_what_they_ignored(signed: Team, keys, monkeypatch):
    spec = signed.spec(8)
    _forge(signed, spec)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    code, out, err = signed.cli("revoke", spec, "--by", "alice", "--reason", "no")
    assert code == 0, err  # it read the approvals to revoke: the forged one is said, not used
    assert "budget-gate: 1 ledger record at " in err and "ignored (1 unsigned)" in err
    assert out.count("  cancels approval by alice") == 1


def test_the_guard_clears_only_signed_approvals_and_its_workers_share_one_launch(
    signed: Team, keys, monkeypatch
):
    import gate

    spec = signed.spec(8)
    _forge(signed, spec)
    _as(monkeypatch, keys, "launcher")
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY", raising=False)
    where = {"policy_dir": signed.policy_dir, "tracking_uri": signed.uri}
    with pytest.raises(gate.ApprovalRequired):
        gate.open_guard(spec, **where)  # the forged approval clears nothing
    _as(monkeypatch, keys, "alice")
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "launcher")
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY", raising=False)
    guard = gate.open_guard(spec, **where)  # the search's driver: a launch, its key exported
    key = os.environ["BUDGET_GATE_LAUNCH_KEY"]
    worker = (
        "import gate, sys; "
        "g = gate.open_guard(sys.argv[1], policy_dir=sys.argv[2], tracking_uri=sys.argv[3]); "
        "print(g.limits.ceiling)"
    )
    argv = [sys.executable, "-c", worker, spec, str(signed.policy_dir), signed.uri]
    for _ in range(2):  # the workers it starts inherit the key: they join, not launch
        done = subprocess.run(argv, capture_output=True, text=True, env=os.environ, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == str(guard.limits.ceiling)
    launches = [
        r for r in signed.records(spec, trust=Trust_of(signed)) if r.kind is RecordKind.LAUNCH
    ]
    assert [r.launch_key for r in launches] == [key]
    with pytest.raises(gate.ApprovalRequired):  # a second search: the approval is used
        gate.open_guard(spec, **where)
    assert os.environ["BUDGET_GATE_LAUNCH_KEY"] != key  # it did not join the first


def test_a_second_clearance_in_one_process_is_a_launch_of_its_own(signed: Team, keys, monkeypatch):
    """A launcher that loops over ``require_approval`` uses the approval on every pass; the
    guard it opens after each joins that pass's launch."""
    import gate

    spec = signed.spec(8)
    signed.policy(extra="  launches: 2\n")
    _as(monkeypatch, keys, "alice")
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "launcher")
    where = {"policy_dir": signed.policy_dir, "tracking_uri": signed.uri}
    first = gate.require_approval(spec, **where)
    assert gate.open_guard(spec, **where).limits.ceiling.amount > 0  # joins the first
    second = gate.require_approval(spec, **where)
    assert first.launch is not None and second.launch is not None
    assert first.launch.launch_key != second.launch.launch_key
    assert os.environ["BUDGET_GATE_LAUNCH_KEY"] == second.launch.launch_key
    with pytest.raises(gate.ApprovalRequired, match="launch"):  # both launches used it
        gate.require_approval(spec, **where)
    launches = [
        r for r in signed.records(spec, trust=Trust_of(signed)) if r.kind is RecordKind.LAUNCH
    ]
    assert sorted(r.launch_key for r in launches) == sorted(
        [first.launch.launch_key, second.launch.launch_key]
    )
    same = gate.require_approval(spec, launch_key=first.launch.launch_key, **where)
    assert same.launch is not None and same.launch.launch_key == first.launch.launch_key


def test_a_running_guard_takes_no_later_approval_and_stops_at_its_revocation(
    signed: Team, keys, monkeypatch
):
    """The refresh reads the launch's own approval: one recorded later (here the launcher's,
    whose key signs launches, for 1,000,000 USD; ``check`` refuses it) was never checked."""
    import gate

    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "launcher")
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY", raising=False)
    guard = gate.open_guard(spec, policy_dir=signed.policy_dir, tracking_uri=signed.uri)
    refresh, ceiling = guard._refresh, guard.ceiling
    assert refresh is not None and refresh() == ceiling and ceiling.amount < 1_000_000
    own = dataclasses.replace(
        _record(signed, spec, RecordKind.APPROVAL, "1000000", "launcher"),
        source=Source.LOCAL,
        reason="more",
        expires_at=dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=30),
    )
    store = open_ledger(signed.uri, Trust_of(signed))
    store.append(own, signer_from(os.environ, principal="launcher"))
    found = store.query(LedgerQuery(fingerprint=own.fingerprint))
    assert [r.by for r in found if r.kind is RecordKind.APPROVAL] == ["alice", "launcher"]
    assert refresh() == ceiling
    _as(monkeypatch, keys, "alice")
    assert signed.cli("revoke", spec, "--by", "alice", "--reason", "over")[0] == 0
    said = refresh()
    assert isinstance(said, str) and said.startswith("revoked in the ledger, revocation by alice")
    assert said.endswith(": over")


def test_a_worker_whose_first_clearance_hits_an_outage_retries_into_the_same_launch(
    signed: Team, keys, monkeypatch
):
    """A refused or cut-off call used nothing: its retry joins the launch it inherited."""
    import gate

    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "launcher")
    parent = gate.require_approval(spec, policy_dir=signed.policy_dir, tracking_uri=signed.uri)
    assert parent.launch is not None
    worker = (
        "import gate, sys\n"
        "from gate.errors import BackendError\n"
        "try:\n"
        "    gate.require_approval(sys.argv[1], policy_dir=sys.argv[2], tracking_uri=sys.argv[4])\n"
        "except BackendError:\n"
        "    pass\n"
        "v = gate.require_approval(sys.argv[1], policy_dir=sys.argv[2], tracking_uri=sys.argv[3])\n"
        "print(v.launch.launch_key)\n"
    )
    dead = f"http://127.0.0.1:{free_port()}"
    argv = [sys.executable, "-c", worker, spec, str(signed.policy_dir), signed.uri, dead]
    env = {**os.environ, "BUDGET_GATE_LEDGER_TIMEOUT": "2"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == parent.launch.launch_key


@pytest.mark.parametrize("status", ["KILLED", "FAILED", "RUNNING"])
def test_a_signed_launch_or_revocation_counts_whatever_its_runs_status(
    signed: Team, keys, monkeypatch, status: str
):
    """A run's status is no part of what is signed: anyone who can write to the ledger can
    set it, so under signers it hides no launch and undoes no revocation."""
    signed.policy(limits=", monthly_budget: 1000")
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "launcher")
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY", raising=False)
    assert signed.cli("verify", spec)[0] == 0
    client = MlflowClient(signed.uri)
    [launch] = [
        r for r in signed.records(spec, trust=Trust_of(signed)) if r.kind is RecordKind.LAUNCH
    ]
    client.update_run(launch.run_id, status=status)
    code, out, _ = signed.cli("verify", spec, "--dry-run")
    assert code == 2 and "was used by the launch on" in out
    budget = json.loads(signed.cli("check", signed.spec(2), "--format", "json")[1])
    assert budget["results"][0]["budget"]["committed"] == "80.00"

    other = signed.spec(9)  # approved, then revoked; the revocation's run set aside
    _as(monkeypatch, keys, "alice")
    assert signed.cli("approve", other, "--by", "alice", "--reason", "ok")[0] == 0
    assert signed.cli("revoke", other, "--by", "alice", "--reason", "no")[0] == 0
    [revocation] = [
        r for r in signed.records(other, trust=Trust_of(signed)) if r.kind is RecordKind.REVOCATION
    ]
    client.update_run(revocation.run_id, status=status)
    code, out, _ = signed.cli("verify", other, "--dry-run")
    assert code == 2 and "was revoked" in out


def test_a_negative_reconciliation_pays_nothing_back(signed: Team, keys, monkeypatch):
    """A listed signer's reconciliation of -100,000 would give the month that much room."""
    signed.policy(limits=", monthly_budget: 1000")
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    signed.reconcile(spec, "-100000", trust=Trust_of(signed), signer_env=keys.env(CI_PRINCIPAL))
    report = json.loads(signed.cli("check", signed.spec(2), "--format", "json")[1])
    budget = report["results"][0]["budget"]
    assert budget["actual"] == "0.00" and budget["committed"] == "80.00", budget
    assert report["ledger"]["ignored"], report["ledger"]  # counted aloud


def test_only_ci_signs_what_lowers_the_month(signed: Team, keys, monkeypatch):
    """A launcher's own key would release its launch with a zero reconciliation, or zero the
    month with a snapshot it signs: reconciliations and snapshots count from CI only."""
    from gate.integrations.mlflow.client import MlflowLedger
    from gate.ledger.snapshot import Snapshot, encode
    from gate.ledger.spend import Spend

    signed.policy(limits=", monthly_budget: 1000")
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "launcher")
    assert signed.cli("verify", spec)[0] == 0  # commits 80
    # written past the writer's own check (which refuses it), as a job with the key could
    signed.reconcile(spec, "0", trust=UNSIGNED, signer_env=keys.env("launcher"))
    writer = MlflowLedger(signed.uri, Trust_of(signed))
    experiment = writer.experiment_id(create=False)
    month = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m")
    cutoff = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    launcher = signer_from(keys.env("launcher"), principal=None)
    tags = encode(
        Snapshot(cutoff, Spend()), f"team:{signed.name}", month, Trust_of(signed), launcher
    )
    writer.write_run(experiment, cutoff, tags, "a launcher's snapshot")
    report = json.loads(signed.cli("check", signed.spec(2), "--format", "json")[1])
    budget = report["results"][0]["budget"]
    assert (budget["committed"], budget["actual"]) == ("80.00", "0.00"), budget
    ignored = report["ledger"]["ignored"]
    assert any("a reconciliation is signed by launcher, not CI" in why for why in ignored), ignored


def test_a_revocation_by_someone_who_may_not_approve_cancels_nothing(
    signed: Team, keys, monkeypatch
):
    """``budget-gate revoke --by launcher`` is refused; a signed one written past it is no
    revocation either, while the approver's own and another approver's are."""
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    [approval] = signed.records(spec, trust=Trust_of(signed))
    revocation = dataclasses.replace(
        _record(signed, spec, RecordKind.REVOCATION, "0", "launcher"),
        spec=approval.spec,
        revokes=(approval.record_id,),
    )
    store = open_ledger(signed.uri, Trust_of(signed))
    store.append(revocation, signer_from(keys.env("launcher"), principal=None))
    assert signed.cli("verify", spec, "--dry-run")[0] == 0  # still approved
    _as(monkeypatch, keys, "launcher")
    guard = gate.open_guard(spec, policy_dir=signed.policy_dir, tracking_uri=signed.uri)
    ceiling = guard._refresh  # what the running search re-reads once a minute
    assert ceiling is not None and isinstance(ceiling(), Ceiling)  # the search goes on
    _as(monkeypatch, keys, "bob")  # bob may approve: his revocation counts
    store.append(
        dataclasses.replace(revocation, by="bob", record_id="b" * 32),
        signer_from(keys.env("bob"), principal=None),
    )
    code, out, _ = signed.cli("verify", spec, "--dry-run")
    assert code == 2 and "was revoked" in out
    assert str(ceiling()).startswith("revoked in the ledger, revocation by ")  # it stops


def test_launches_decided_at_the_same_moment_take_no_more_than_the_approval_covers(
    signed: Team, keys, monkeypatch
):
    """Two launchers read, both see the approval's one launch left, both write: each reads
    the approval's launches again after writing, and one that finds them used up by another
    is refused (its record kept: failing closed)."""
    from gate.errors import ApprovalRequired
    from gate.estimate.prices import load_catalog
    from gate.evaluation.evaluate import Evaluator
    from gate.evaluation.launching import record_launch
    from gate.integrations.git.repo import RepoPaths
    from gate.ledger.view import LedgerView
    from gate.policy.findings import Outcome
    from gate.policy.loader import PolicySet

    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    now = dt.datetime.now(dt.timezone.utc)
    policies = PolicySet(signed.policy_dir)

    def cleared(key: str):
        view = LedgerView(lambda trust: open_ledger(signed.uri, trust), now, approvals=True)
        evaluator = Evaluator(
            policies,
            load_catalog(),
            now.date(),
            ledger=view,
            repo_path=RepoPaths(signed.policy_dir),
            launch_key=key,
        )
        return view, evaluator.evaluate_spec(spec)

    first, second = cleared("launch-a"), cleared("launch-b")  # both decided before a write
    assert first[1].result.outcome is second[1].result.outcome is Outcome.PASS
    signer = signer_from(keys.env("launcher"), principal=None)
    record_launch(*first, launch_key="launch-a", by="launcher", signer=signer)
    with pytest.raises(ApprovalRequired, match="launches written at the same moment used"):
        record_launch(*second, launch_key="launch-b", by="launcher", signer=signer)
    launches = [
        r for r in signed.records(spec, trust=Trust_of(signed)) if r.kind is RecordKind.LAUNCH
    ]
    assert sorted(r.launch_key or "" for r in launches) == ["launch-a", "launch-b"]
