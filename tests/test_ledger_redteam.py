"""Red-team findings on approvals, signing and launch, each through the real CLI or API.

Against the session's real MLflow tracking server, with real SSH keys (ssh-keygen): a
revocation readers ignore does not stop the approver's own; a signers line's negated
principals are honoured as ssh-keygen honours them; a record whose time has no UTC moment
is malformed, not a crash; a launch key that joins a launch says so; the launch API clears
launches only now; the owner revokes in any case.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import gate
from gate.integrations import open_ledger
from gate.integrations.signing import signer_from
from gate.ledger.encoding import PAYLOAD, SIGNATURE, to_tags
from gate.ledger.records import LEDGER_EXPERIMENT, LedgerRecord, RecordKind
from gate.ledger.signing import (
    CI_PRINCIPAL,
    NAMESPACE,
    SIGNERS_FILE,
    Signers,
    Trust,
    record_message,
)
from gate.policy.loader import PolicySet
from tests.ledger_kit import Team, fingerprint_of
from tests.signing_kit import Keys

UTC = dt.timezone.utc


@pytest.fixture
def signed(team: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch) -> Team:
    """The team's policies list alice, bob, CI and a launcher as signers; bob signs."""
    (Path(team.policy_dir) / SIGNERS_FILE).write_text(
        keys.signers("alice", "bob", CI_PRINCIPAL, "launcher"), encoding="ascii"
    )
    _as(monkeypatch, keys, "bob")
    return team


def _as(monkeypatch: pytest.MonkeyPatch, keys: Keys, principal: str) -> None:
    for name, value in keys.env(principal).items():
        monkeypatch.setenv(name, value)


def _record(team: Team, spec: str, kind: RecordKind, by: str, **changes: object) -> LedgerRecord:
    record = LedgerRecord(
        kind=kind,
        spec=Path(spec).name,
        fingerprint=fingerprint_of(spec),
        experiment=kind.value,
        recorded_at=dt.datetime.now(UTC),
        currency="USD",
        worst_cost=Decimal("80"),
        team=team.name,
        cost_center=team.cost_center,
        by=by,
    )
    return dataclasses.replace(record, **changes)


def test_an_ignored_revocation_does_not_stop_the_approvers_own(signed: Team, keys: Keys):
    """A listed launcher's revocation of bob's approval counts nowhere: bob may still revoke."""
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "bob", "--reason", "ok")[0] == 0
    [approval] = signed.records(spec, trust=PolicySet(signed.policy_dir).trust())
    bogus = _record(signed, spec, RecordKind.REVOCATION, "launcher", revokes=(approval.record_id,))
    store = open_ledger(signed.uri, PolicySet(signed.policy_dir).trust())
    store.append(bogus, signer_from(keys.env("launcher"), principal=None))
    assert signed.cli("verify", spec, "--dry-run")[0] == 0  # readers ignore it

    code, out, err = signed.cli("revoke", spec, "--by", "bob", "--reason", "budget cut")
    assert code == 0, err
    assert "cancels approval by bob" in out
    code, out, _ = signed.cli("verify", spec, "--dry-run")
    assert code == 2 and "was revoked (revocation by bob on" in out


_VERIFY = ("ssh-keygen", "-Y", "verify")


def _ssh_verifies(folder: Path, line: str, principal: str, message: bytes, sig: str) -> bool:
    (folder / "signers").write_text(line + "\n", encoding="ascii")
    (folder / "message.sig").write_text(sig, encoding="ascii")
    signature = str(folder / "message.sig")
    done = subprocess.run(
        [
            *_VERIFY,
            "-f",
            str(folder / "signers"),
            "-I",
            principal,
            "-n",
            NAMESPACE,
            "-s",
            signature,
        ],
        input=message,
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


PATTERN_LISTS = (
    "*,!budget-gate-ci,!alice,!bob",
    "!bob,*",
    "launcher",
    "l*r",
    "l?uncher",
    "[lb]auncher",
    "[lb]*",
    "bob,alice",
    "*ob",
    "b*,!bo?",
    "*",
    "a,,b",
)
PRINCIPALS = ("bob", "alice", CI_PRINCIPAL, "launcher", "[lb]auncher", "b", "bo", "Bob")


@pytest.mark.parametrize("patterns", PATTERN_LISTS)
def test_a_signers_lines_principals_match_as_ssh_keygen_matches_them(
    keys: Keys, tmp_path: Path, patterns: str
):
    """Negated patterns refuse, ``[...]`` is literal: what ``ssh-keygen -Y verify`` says."""
    line = keys.line(patterns, key_of="launcher")
    signers = Signers.parse(line.encode() + b"\n", SIGNERS_FILE)
    message = record_message('{"v":2}')
    signature = signer_from(keys.env("launcher"), principal=None).sign(message)
    at = dt.datetime.now(UTC)
    for principal in PRINCIPALS:
        ours = signers.check(message, signature, principal, at) is None
        theirs = _ssh_verifies(tmp_path, line, principal, message, signature)
        assert ours == theirs, (patterns, principal, ours, theirs)


def test_a_launcher_key_excluded_from_bob_signs_nothing_as_bob(signed: Team, keys: Keys):
    """``*,!budget-gate-ci,!alice,!bob <launcher key>``: the launcher cannot approve as bob."""
    lines = keys.signers("alice", "bob", CI_PRINCIPAL)
    lines += keys.line("*,!budget-gate-ci,!alice,!bob", key_of="launcher") + "\n"
    (Path(signed.policy_dir) / SIGNERS_FILE).write_text(lines, encoding="ascii")
    spec = signed.spec(8)
    forged = _record(signed, spec, RecordKind.APPROVAL, "bob", worst_cost=Decimal("1000"))
    with pytest.raises(gate.InputError, match="does not list for bob"):
        open_ledger(signed.uri, PolicySet(signed.policy_dir).trust()).append(
            forged, signer_from(keys.env("bob", key_of="launcher"), principal=None)
        )
    open_ledger(signed.uri, Trust(None, SIGNERS_FILE)).append(  # written past the check
        forged, signer_from(keys.env("bob", key_of="launcher"), principal=None)
    )
    code, out, _ = signed.cli("verify", spec, "--dry-run")
    assert code == 2 and "does not list for bob" in out


def _write_signed_tags(team: Team, tags: dict[str, str], start_ms: int) -> None:
    client = MlflowClient(team.uri)
    found = client.get_experiment_by_name(LEDGER_EXPERIMENT)
    experiment = found.experiment_id if found else client.create_experiment(LEDGER_EXPERIMENT)
    run = client.create_run(experiment, start_time=start_ms, tags=tags)
    client.set_terminated(run.info.run_id, "FINISHED")


def test_a_signed_record_at_a_time_before_utc_begins_is_malformed_not_a_crash(
    signed: Team, keys: Keys
):
    """``0001-01-01T00:00:00+01:00`` has no UTC moment: ignored and counted, never exit 70."""
    signed.policy(limits=", monthly_budget: 1000")
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "bob", "--reason", "ok")[0] == 0
    [approval] = signed.records(spec, trust=PolicySet(signed.policy_dir).trust())
    launch = _record(
        signed, spec, RecordKind.LAUNCH, "launcher", record_id="e" * 32, approval=approval.record_id
    )
    tags = to_tags(dataclasses.replace(launch, signer="launcher"))
    body = json.loads(tags[PAYLOAD])
    body["recorded_at"] = early = "0001-01-01T00:00:00+01:00"
    tags[PAYLOAD] = json.dumps(body, sort_keys=True, separators=(",", ":"))
    signer = signer_from(keys.env("launcher"), principal=None)
    tags[SIGNATURE] = signer.sign(record_message(tags[PAYLOAD]))
    start_ms = int(dt.datetime.fromisoformat(early).timestamp() * 1000)  # its run agrees
    _write_signed_tags(signed, tags, start_ms)

    code, out, _ = signed.cli("verify", spec, "--dry-run")
    assert code == 0, out
    assert "ignored (1 malformed)" in out
    code, out, _ = signed.cli("check", spec)
    assert code == 0, out
    assert "ignored (1 malformed)" in out


def test_a_launch_key_that_joins_a_launch_says_so(signed: Team, keys: Keys, monkeypatch):
    """An exported key joins the first launch: said as a join, never as a new launch."""
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "bob", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "launcher")
    monkeypatch.setenv("BUDGET_GATE_LAUNCH_KEY", "run-1")
    code, _, err = signed.cli("verify", spec)
    assert code == 0, err
    assert "recorded in the ledger" in err and "not to your shell" in err
    for _ in range(2):
        code, _, err = signed.cli("verify", spec)
        assert code == 0, err
        assert "recorded in the ledger" not in err
        assert "joins launch run-1 recorded at" in err
        assert "no new launch of the approval used" in err
        assert "unset BUDGET_GATE_LAUNCH_KEY" in err
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY")
    code, out, _ = signed.cli("verify", spec)  # a launch of its own: the approval is used
    assert code == 2 and "was used by the launch on" in out


def test_the_launch_api_clears_no_launch_at_another_moment(team: Team, monkeypatch):
    """``require_approval(now=<before a revocation>)`` is refused, and records no launch."""
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY", raising=False)
    spec = team.spec(8)
    assert team.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    before = dt.datetime.now(UTC)
    assert team.cli("revoke", spec, "--by", "bob", "--reason", "cut")[0] == 0
    for moment in (before - dt.timedelta(minutes=5), before + dt.timedelta(days=40)):
        with pytest.raises(gate.InputError, match="is not the current time"):
            gate.require_approval(
                spec, policy_dir=team.policy_dir, tracking_uri=team.uri, now=moment
            )
        with pytest.raises(gate.InputError, match="is not the current time"):
            gate.open_guard(spec, policy_dir=team.policy_dir, tracking_uri=team.uri, now=moment)
    assert RecordKind.LAUNCH not in [r.kind for r in team.records(spec)]
    with pytest.raises(gate.ApprovalRequired, match="was revoked"):
        gate.require_approval(
            spec, policy_dir=team.policy_dir, tracking_uri=team.uri, now=dt.datetime.now(UTC)
        )


def test_the_owner_revokes_in_any_case(team: Team):
    """``owner: carol`` revokes as ``--by Carol``: the owner is matched as approval matches."""
    spec = team.spec(8)
    assert team.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    code, out, err = team.cli("revoke", spec, "--by", "Carol", "--reason", "changed my mind")
    assert code == 0, err
    assert "cancels approval by alice" in out
    code, out, _ = team.cli("verify", spec, "--dry-run")
    assert code == 2 and "was revoked (revocation by Carol on" in out
