"""A revocation stays in force once its author leaves the approver list (review 5, finding 3).

Through the real CLI against the session's MLflow server, with real SSH keys: bob, a listed
approver, revokes alice's approval; the policy then replaces bob by dave. The policies' git
history shows bob could revoke, so the approval stays withdrawn; a launcher's key, which
no version of the policies lists, still cancels nothing, and ``verify`` says so; without a
history to read, bob's revocation is said not to count, never passed over in silence.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest

import gate
from gate.guard.limits import Ceiling
from gate.integrations import open_ledger
from gate.integrations.signing import signer_from
from gate.ledger.records import RecordKind
from gate.ledger.signing import CI_PRINCIPAL, SIGNERS_FILE
from gate.policy.loader import PolicySet
from tests.ledger_kit import Team
from tests.reconcile_kit import GOOD, Lab
from tests.revocation_kit import as_principal, bob_leaves, git, policies_committed
from tests.signing_kit import Keys


@pytest.fixture
def signed(team: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch) -> Team:
    """The team's policies list alice, bob, CI and a launcher as signers."""
    (Path(team.policy_dir) / SIGNERS_FILE).write_text(
        keys.signers("alice", "bob", CI_PRINCIPAL, "launcher"), encoding="ascii"
    )
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY", raising=False)
    return team


def _revoked_by_bob(team: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch) -> str:
    spec = team.spec(8)
    as_principal(monkeypatch, keys, "alice")
    assert team.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    as_principal(monkeypatch, keys, "bob")
    code, _, err = team.cli("revoke", spec, "--by", "bob", "--reason", "data not cleared")
    assert code == 0, err
    as_principal(monkeypatch, keys, "launcher")
    return spec


def test_a_revocation_stands_after_its_author_leaves_the_approvers(
    signed: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    policies_committed(signed)
    spec = _revoked_by_bob(signed, keys, monkeypatch)
    code, out, _ = signed.cli("verify", spec, "--dry-run")
    assert code == 2 and "was revoked (revocation by bob on" in out
    bob_leaves(signed)
    git(signed.root, "commit", "-qam", "bob left")

    code, out, _ = signed.cli("verify", spec)
    assert code == 2, out
    assert "was revoked (revocation by bob on" in out and "data not cleared" in out


def test_revoke_and_reconcile_read_the_history_too(
    signed: Team, lab: Lab, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    """``revoke`` and ``reconcile`` judged bob's revocation by the current list alone:
    alice's withdrawn approval was live to revoke again, and reconcile measured the runs
    against it, where ``verify`` refused it."""
    policies_committed(signed)
    lab.log(hours=10, metrics=GOOD)
    as_principal(monkeypatch, keys, "alice")
    assert signed.cli("approve", lab.spec, "--by", "alice", "--reason", "ok")[0] == 0
    as_principal(monkeypatch, keys, "bob")
    assert signed.cli("revoke", lab.spec, "--by", "bob", "--reason", "data not cleared")[0] == 0
    bob_leaves(signed)
    git(signed.root, "commit", "-qam", "bob left")

    as_principal(monkeypatch, keys, "alice")
    code, _, err = signed.cli("revoke", lab.spec, "--by", "alice", "--reason", "again")
    assert code == 3 and "no approval of this version" in err, err
    code, out = lab.json("--dry-run")
    assert out["variance"]["reference"] == "worst-case estimate", out["variance"]


def test_a_launchers_revocation_cancels_nothing_and_is_said(
    signed: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    """No version of the policies lists the launcher: its signed revocation is no
    revocation, and ``verify`` names it with why."""
    policies_committed(signed)
    spec = signed.spec(8)
    as_principal(monkeypatch, keys, "alice")
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    _write_revocation(signed, keys, spec, "launcher")

    code, out, _ = signed.cli("verify", spec, "--dry-run")
    assert code == 0, out
    assert "note: revocation by launcher on" in out
    assert "launcher is not an approver" in out and "no committed version" in out


def test_without_a_policy_history_an_uncounted_revocation_is_said(
    signed: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    """Policies outside git: bob's revocation is judged by the current list alone, and the
    approval that passes carries a line saying which revocation did not count."""
    spec = _revoked_by_bob(signed, keys, monkeypatch)
    bob_leaves(signed)

    code, out, _ = signed.cli("verify", spec, "--dry-run")
    assert code == 0, out
    assert "approved: approval by alice" in out
    assert "note: revocation by bob on" in out and "bob is not an approver" in out


def _write_revocation(team: Team, keys: Keys, spec: str, by: str) -> None:
    """A revocation of the spec's approvals signed with ``by``'s own key, written by hand."""
    trust = PolicySet(team.policy_dir).trust()
    records = team.records(spec, trust=trust)
    [approval] = [r for r in records if r.kind is RecordKind.APPROVAL]
    revocation = dataclasses.replace(
        approval,
        kind=RecordKind.REVOCATION,
        by=by,
        reason="a launcher says no",
        revokes=(approval.record_id or "",),
        record_id=None,
        run_id=None,
        signer=None,
        signature=None,
        payload=None,
        recorded_at=dt.datetime.now(dt.timezone.utc),
    )
    open_ledger(team.uri, trust).append(revocation, signer_from(keys.env(by), principal=None))


def test_a_running_search_stops_at_a_revocation_by_a_former_approver(
    signed: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    """The guard's refresh judged revocations by the approvers listed at its launch: bob,
    whom the policies' history lists but the policy no longer does, signed a revocation
    that verify counts for the next launch, and the running search went on."""
    policies_committed(signed)
    bob_leaves(signed)
    git(signed.root, "commit", "-qam", "bob left")
    spec = signed.spec(8)
    as_principal(monkeypatch, keys, "alice")
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    as_principal(monkeypatch, keys, "launcher")
    guard = gate.open_guard(spec, policy_dir=signed.policy_dir, tracking_uri=signed.uri)
    assert guard._refresh is not None and isinstance(guard._refresh(), Ceiling)
    _write_revocation(signed, keys, spec, "bob")
    said = guard._refresh()
    assert isinstance(said, str) and said.startswith("revoked in the ledger, revocation by bob")
