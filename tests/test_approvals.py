"""request-approval, approve, revoke and verify end to end against a real MLflow server."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from gate.ledger.records import RecordKind, Source
from tests.ledger_kit import Team, fingerprint_of
from tests.mlflow_server import free_port

UTC = dt.timezone.utc


def _unsigned(err: str) -> str:
    """``err`` without the one warning a ledger without signers gives on every write."""
    return "".join(
        line
        for line in err.splitlines(keepends=True)
        if not line.startswith("budget-gate: warning: ledger records are not signed (no ")
    )


def test_request_approve_verify(team):
    spec = team.spec(8)  # 8 trials > 4: approval; 8 × 10 = 80 USD
    code, out, _ = team.cli("verify", spec)
    assert code == 2
    assert "approval BG110 8 trials is over the approval trigger of 4" in out
    assert "not approved: no approval is recorded for this version (sha256:" in out

    code, out, _ = team.cli("request-approval", spec, "--reason", "needs a sweep", "--pr", "12")
    assert code == 0
    assert out.startswith(f"requested approval for {Path(spec).name} — ")  # repo-relative
    assert "worst case 80.00 USD, expected 80.00 USD" in out
    assert "approvers: users alice, bob" in out
    [request] = team.records(spec)
    assert (request.kind, request.by, request.reason, request.pr_number) == (
        RecordKind.REQUEST,
        "carol",
        "needs a sweep",
        12,
    )
    assert request.worst_cost == Decimal("80.000000000") and request.currency == "USD"
    assert team.cli("verify", spec)[0] == 2

    before = dt.datetime.now(UTC).replace(microsecond=0)
    code, out, err = team.cli(
        "approve", spec, "--by", "alice", "--reason", "worth it", "--expires", "14d"
    )
    assert (code, _unsigned(err)) == (0, "")  # the test team's records are unsigned
    assert out.startswith(f"approved {Path(spec).name} — ")
    assert "approval by alice until " in out and "(local): worth it" in out
    assert "stored as MLflow run " in out  # the run, not called a record: its id differs
    assert " in experiment budget-gate-ledger at http://127.0.0.1:" in out
    approval = team.records(spec)[-1]
    assert approval.kind is RecordKind.APPROVAL and approval.source is Source.LOCAL
    assert (approval.by, approval.reason, approval.team) == ("alice", "worth it", team.name)
    assert approval.cost_center == team.cost_center
    assert approval.worst_cost == approval.expected_cost == Decimal(80)
    assert before <= approval.recorded_at <= dt.datetime.now(UTC)
    # 14 days from the command's clock; the ledger stamps the write moments later
    expiry = approval.expires_at - approval.recorded_at
    assert dt.timedelta(days=14) - dt.timedelta(seconds=30) < expiry <= dt.timedelta(days=14)

    code, out, err = team.cli("verify", spec, "--launch-key", "launch-1")
    assert code == 0
    assert "launch of" in err and "(launch key launch-1" in err
    assert "(approved by alice)" in out
    assert f"approved: approval by alice on {approval.recorded_at:%Y-%m-%d}" in out
    assert f"record {approval.record_id})" in out

    later = (approval.recorded_at + dt.timedelta(days=15)).isoformat()
    code, out, _ = team.cli("verify", spec, "--as-of", later)
    assert code == 2
    assert "expired on" in out

    code, out, _ = team.cli("verify", spec, "--format", "json", "--launch-key", "launch-1")
    result = json.loads(out)["results"][0]  # the same launch: its approval still holds
    assert result["approval"]["approved"] is True
    assert result["approval"]["record_id"] == approval.record_id
    assert result["findings"][0]["approved_by"] == "alice"


def test_a_what_if_verify_says_it_cleared_no_launch(team):
    """``--dry-run`` and ``--as-of`` judge and record nothing: a pass then clears no launch,
    and says so (an approval used up now still passes as of a moment before its launch)."""
    spec = team.spec(8)
    assert team.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    approval = team.records(spec)[-1]
    code, _, err = team.cli("verify", spec, "--dry-run")
    assert code == 0 and "budget-gate: --dry-run records no launch: this pass clears" in err
    assert team.records(spec) == [approval]
    assert team.cli("verify", spec)[0] == 0  # the one launch the approval covers
    assert team.cli("verify", spec)[0] == 2
    launch = team.records(spec)[-1]
    moment = (approval.recorded_at + (launch.recorded_at - approval.recorded_at) / 2).isoformat()
    code, _, err = team.cli("verify", spec, "--as-of", moment)
    assert code == 0
    assert f"--as-of {moment} judges that moment and records no launch" in err
    assert team.records(spec) == [approval, launch]


def test_an_unlisted_approver_is_refused_and_nothing_is_recorded(team):
    spec = team.spec(8)
    code, out, err = team.cli("approve", spec, "--by", "mallory", "--reason", "trust me")
    assert code == 3
    assert out == ""
    assert err == (
        f"budget-gate: cannot approve {spec}: mallory is not an approver "
        "(approval.approvers.users: alice, bob) — ask a listed approver, or approve the "
        "pull request on GitHub\n"
    )
    assert team.records(spec) == []


def test_the_owner_may_not_approve_their_own_spec(team):
    team.policy(extra="")
    Path(team.policy_dir, "default.yaml").write_text(
        Path(team.policy_dir, "default.yaml").read_text().replace("[alice, bob]", "[carol]")
    )
    spec = team.spec(8)
    code, _, err = team.cli("approve", spec, "--by", "carol", "--reason", "mine")
    assert code == 3
    assert "carol owns the spec and the policy does not allow self-approval" in err
    Path(team.policy_dir, "default.yaml").write_text(
        Path(team.policy_dir, "default.yaml").read_text().replace("[carol]", "[Carol]")
    )
    code, _, err = team.cli("approve", spec, "--by", "Carol", "--reason", "mine, in capitals")
    assert code == 3  # the owner in another case is still the owner
    assert "Carol owns the spec and the policy does not allow self-approval" in err
    assert team.records(spec) == []


def test_a_changed_spec_needs_a_new_approval_but_formatting_does_not(team):
    spec = team.spec(8, name="stable-name")
    assert team.cli("approve", spec, "--by", "bob", "--reason", "ok")[0] == 0
    text = Path(spec).read_text()
    Path(spec).write_text("# a comment\n" + text.replace("{name: ", "{ name:  "))
    assert team.cli("verify", spec)[0] == 0
    Path(spec).write_text(text.replace("max_trials: 8", "max_trials: 9"))
    code, out, _ = team.cli("verify", spec)
    assert code == 2
    assert "not approved: no approval is recorded for this version" in out
    assert "not approved: the spec changed since its last approval by bob on" in out


def test_a_price_rise_above_the_approved_amount_makes_it_stale(team):
    spec = team.spec(8)
    assert team.cli("approve", spec, "--by", "bob", "--reason", "ok")[0] == 0
    team.policy(price="11")  # 8 × 11 = 88 > 80 approved
    code, out, _ = team.cli("verify", spec)
    assert code == 2
    assert "covers 80.00 USD, below the current worst case 88.00 USD" in out
    team.policy(price="9")  # cheaper than approved: still fine
    assert team.cli("verify", spec)[0] == 0


def test_revoking_is_a_new_record_and_a_later_approval_counts_again(team):
    spec = team.spec(8)
    assert team.cli("revoke", spec, "--by", "bob", "--reason", "x")[0] == 3  # nothing to revoke
    assert team.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    code, _, err = team.cli("revoke", spec, "--by", "mallory", "--reason", "no")
    assert code == 3 and "mallory is not an approver" in err
    code, out, _ = team.cli("revoke", spec, "--by", "carol", "--reason", "changed my mind")
    assert code == 0  # the owner may revoke
    assert out.startswith(f"revoked {Path(spec).name}") and "cancels approval by alice" in out
    code, out, _ = team.cli("verify", spec)
    assert code == 2
    assert "was revoked (revocation by carol on" in out and "changed my mind)" in out
    assert [r.kind for r in team.records(spec)] == [RecordKind.APPROVAL, RecordKind.REVOCATION]
    assert team.cli("approve", spec, "--by", "bob", "--reason", "again")[0] == 0
    assert team.cli("verify", spec)[0] == 0
    kinds = [r.kind for r in team.records(spec)]
    assert kinds == [
        RecordKind.APPROVAL,
        RecordKind.REVOCATION,
        RecordKind.APPROVAL,
        RecordKind.LAUNCH,
    ]


def test_verify_without_approval_triggers_never_opens_the_ledger(team):
    spec = team.spec(2)
    dead = f"http://127.0.0.1:{free_port()}"
    code, out, err = team.cli("verify", spec, uri=dead)
    assert (code, err) == (0, "")
    assert "→ pass" in out


def test_errors_cannot_be_approved(team):
    team.policy(cap="50")  # 80 USD over the 50 USD experiment cap
    spec = team.spec(8)
    code, out, err = team.cli("approve", spec, "--by", "alice", "--reason", "please")
    assert code == 1
    assert "error BG104 worst-case cost 80.00 USD exceeds max_experiment_cost 50.00 USD" in out
    assert "an approval never lifts an error" in err
    assert team.cli("request-approval", spec)[0] == 1
    assert team.records(spec) == []
    assert team.cli("verify", spec)[0] == 1


def test_request_when_no_approval_is_needed_or_already_given(team):
    small = team.spec(2)
    code, out, _ = team.cli("request-approval", small)
    assert (code, out) == (0, f"{small} needs no approval; nothing recorded\n")
    big = team.spec(8)
    assert team.cli("approve", big, "--by", "alice", "--reason", "ok")[0] == 0
    code, out, _ = team.cli("request-approval", big)
    assert code == 0 and "is approved (approval by alice on" in out
    assert team.records(small) == [] and len(team.records(big)) == 1


def test_an_approval_needing_no_approval_is_recorded_with_a_note(team):
    spec = team.spec(2)
    code, out, _ = team.cli("approve", spec, "--by", "alice", "--reason", "pre-approve")
    assert code == 0 and "note: this version needs no approval" in out
    assert [r.kind for r in team.records(spec)] == [RecordKind.APPROVAL]


def test_check_counts_approvals_only_with_a_tracking_uri(team, monkeypatch):
    spec = team.spec(8)
    assert team.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    assert team.cli("check", spec)[0] == 0  # --tracking-uri given: approvals count
    monkeypatch.setenv("MLFLOW_TRACKING_URI", team.uri)
    assert team.cli("check", spec, uri="")[0] == 2  # no flag: check stays offline


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--expires", "1y"], "--expires '1y' is not a duration"),
        (["--expires", "400d"], "over a year"),
        (["--reason", "   "], "--reason must be 1 to 500 characters"),
        (["--reason", "ok\n::error::approved"], "--reason contains a control character"),
        (["--reason", "ok \x1b[2J"], "--reason contains a control character"),
        (["--by", "al\x1bice"], "--by contains a control character"),
    ],
)
def test_bad_options_are_exit_3_before_any_io(team, args, message):
    spec = team.spec(8)
    dead = f"http://127.0.0.1:{free_port()}"
    base = ["--by", "alice", "--reason", "ok"]
    code, _, err = team.cli("approve", spec, *base, *args, uri=dead)
    assert code == 3 and message in err


def test_the_embedded_sqlite_ledger_is_the_default(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    team = Team(tmp_path, "", capsys)
    team.policy()
    spec = team.spec(8)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    approve = [sys.executable, "-m", "gate", "approve", "--policy-dir", team.policy_dir, spec]
    proc = subprocess.run(
        [*approve, "--by", "alice", "--reason", "offline"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    # no MLflow log lines either; the first write makes the ledger, and says it was not there
    ledger = f"sqlite:///{tmp_path.as_posix()}/mlflow.db"
    assert (proc.returncode, _unsigned(proc.stderr)) == (
        0,
        f"budget-gate: note: no ledger was at {ledger}: made it\n",
    )
    # Outside a git work tree the default ledger is in the current directory, named in full.
    assert f"at sqlite:///{tmp_path.as_posix()}/mlflow.db\n" in proc.stdout
    assert (tmp_path / "mlflow.db").is_file()
    assert team.cli("verify", spec)[0] == 0  # a launch: recorded beside the approval
    records = team.records(spec, uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert [r.kind for r in records] == [RecordKind.APPROVAL, RecordKind.LAUNCH]
    assert {r.fingerprint for r in records} == {fingerprint_of(spec)}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["approve", "s.yaml", "--reason", "r"], "the following arguments are required: --by"),
        (["revoke", "s.yaml", "--by", "bob"], "the following arguments are required: --reason"),
        (["approve", "s.yaml", "--by", "a", "--reason", "r", "--pr", "-4"], "pull request"),
        (["verify", "s.yaml", "--as-of", "next tuesday"], "is not a usable date"),
    ],
)
def test_usage_errors_of_the_ledger_commands_are_exit_3(argv, message, capsys):
    from gate.cli import main

    assert main(argv) == 3
    assert message in capsys.readouterr().err


def test_the_path_lookup_reads_back_only_as_far_as_an_approval_can_hold(team):
    # "the spec changed since its last approval" comes from the path's other versions: an
    # approval older than the longest expiry (366 days) is not read for it
    from gate.ledger.records import MAX_EXPIRY, LedgerRecord
    from tests.ledger_kit import seed_record

    team.policy()
    now = dt.datetime.now(dt.timezone.utc)
    for age, trials in ((MAX_EXPIRY + dt.timedelta(days=1), 9), (dt.timedelta(days=300), 10)):
        spec = team.spec(trials)
        then = now - age
        seed_record(
            team.uri,
            LedgerRecord(
                kind=RecordKind.APPROVAL,
                spec=Path(spec).name,
                fingerprint="sha256:" + "0" * 64,  # another version of the spec
                experiment="old",
                recorded_at=then,
                currency="USD",
                worst_cost=Decimal(100),
                team=team.name,
                cost_center=team.cost_center,
                by="bob",
                reason="then",
                expires_at=then + dt.timedelta(days=30),
                event_at=then,
            ),
        )
        code, out, _ = team.cli("verify", spec)
        assert code == 2
        said = "the spec changed since its last approval by bob" in out
        assert said is (age < MAX_EXPIRY), (age, out)


def test_approve_on_a_spec_that_needs_none_says_so_to_anyone(team):
    # issue 22: an unlisted user approving a spec that needs no approval read "may not approve"
    small = team.spec(2)
    code, out, err = team.cli("approve", small, "--by", "priya", "--reason", "just in case")
    assert code == 0 and "cannot approve" not in err
    assert out == f"{small} needs no approval under the current policy; nothing recorded\n"
    assert team.records(small) == []


def test_approve_expires_at_the_end_of_a_date(team):
    # issue 22: `approve --expires 2026-12-31` was refused (durations only)
    spec = team.spec(8)
    day = (dt.datetime.now(UTC) + dt.timedelta(days=20)).date()
    code, out, err = team.cli(
        "approve", spec, "--by", "alice", "--reason", "ok", "--expires", day.isoformat()
    )
    assert code == 0, out + err
    assert f"approval by alice until {day.isoformat()} 23:59 UTC" in out
    [approval] = team.records(spec)
    end_of_day = dt.datetime.combine(day, dt.time.max, tzinfo=UTC)
    assert abs(approval.expires_at - end_of_day) < dt.timedelta(seconds=1)


@pytest.mark.parametrize(
    ("when", "message"),
    [("2020-01-01", "--expires '2020-01-01' has passed"), ("2999-12-31", "is over a year")],
)
def test_a_past_or_far_date_is_refused_before_any_io(team, when, message):
    dead = f"http://127.0.0.1:{free_port()}"
    args = ["--by", "alice", "--reason", "ok", "--expires", when]
    code, _, err = team.cli("approve", team.spec(8), *args, uri=dead)
    assert code == 3 and message in err


def test_an_approved_finding_proposes_no_fix(team):
    # issue 22: `fix:` lines were still printed under a finding the approval covered
    spec = team.spec(8)
    code, out, _ = team.cli("verify", spec)
    assert code == 2 and "  fix: " in out  # before: the fixes that would avoid approval
    assert team.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    code, out, _ = team.cli("verify", spec)
    assert code == 0 and "approved by alice" in out
    assert "  fix: " not in out
