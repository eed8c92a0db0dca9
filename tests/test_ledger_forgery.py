"""Red team: what a listed signer (a launcher's key) can write by hand, and what it changes.

Against the session's real MLflow tracking server, with real SSH keys (ssh-keygen): records
are signed as budget-gate signs them (:func:`gate.ledger.encoding.seal`) and written with
MLflow's own client, as a job holding a launcher's key could, with the id and numbers the
job chooses. A launcher's key may sign launches; it must not lower what the month has
committed (only CI signs what does).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import gate
from gate.integrations import open_ledger
from gate.integrations.mlflow.search import millis
from gate.integrations.signing import signer_from
from gate.ledger.encoding import seal, to_tags
from gate.ledger.records import LEDGER_EXPERIMENT, LedgerRecord, RecordKind
from gate.ledger.signing import CI_PRINCIPAL, SIGNERS_FILE
from gate.policy.loader import PolicySet
from tests.ledger_kit import Team, fingerprint_of
from tests.signing_kit import Keys

UTC = dt.timezone.utc


@pytest.fixture
def signed(team: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch) -> Team:
    """The team's policies list alice, bob, CI and a launcher as signers; alice signs."""
    (Path(team.policy_dir) / SIGNERS_FILE).write_text(
        keys.signers("alice", "bob", CI_PRINCIPAL, "launcher"), encoding="ascii"
    )
    _as(monkeypatch, keys, "alice")
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY", raising=False)
    return team


def _as(monkeypatch: pytest.MonkeyPatch, keys: Keys, principal: str) -> None:
    for name, value in keys.env(principal).items():
        monkeypatch.setenv(name, value)


def _write_signed(team: Team, keys: Keys, record: LedgerRecord, *, record_id: str) -> str:
    """``record`` signed with the launcher's key under ``record_id``, written by hand."""
    trust = PolicySet(team.policy_dir).trust()
    signer = signer_from(keys.env("launcher"), principal=None)
    sealed = seal(record, now=record.recorded_at, record_id=record_id, signer=signer, trust=trust)
    client = MlflowClient(team.uri)
    found = client.get_experiment_by_name(LEDGER_EXPERIMENT)
    experiment = found.experiment_id if found else client.create_experiment(LEDGER_EXPERIMENT)
    run = client.create_run(experiment, start_time=millis(sealed.recorded_at), tags=to_tags(sealed))
    client.set_terminated(run.info.run_id, "FINISHED")
    return str(run.info.run_id)


def _committed(team: Team) -> str:
    out = team.cli("check", team.spec(2), "--format", "json")[1]
    return str(json.loads(out)["results"][0]["budget"]["committed"])


def test_a_signed_launch_that_reuses_a_launchs_id_does_not_erase_it(
    signed: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    """A launcher's key signs a launch of 0 USD under the id of a real 80 USD launch: the
    reader took the later of the two as the launch, and the month lost the 80."""
    signed.policy(limits=", monthly_budget: 1000")
    spec = signed.spec(8)  # 80 USD worst case, needs an approval
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "launcher")
    assert signed.cli("verify", spec)[0] == 0
    assert _committed(signed) == "80.00"
    trust = PolicySet(signed.policy_dir).trust()
    [launch] = [r for r in signed.records(spec, trust=trust) if r.kind.value == "launch"]
    assert launch.record_id is not None
    for moment in (launch.recorded_at + dt.timedelta(seconds=1), launch.recorded_at):
        cheap = dataclasses.replace(
            launch,
            recorded_at=moment,
            worst_cost=Decimal("0"),
            expected_cost=Decimal("0"),
            launch_key="forged",
        )
        _write_signed(signed, keys, cheap, record_id=launch.record_id)
        assert _committed(signed) == "80.00"


def test_a_launch_a_launcher_signs_at_0_usd_cannot_be_joined_to_launch_free(
    signed: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    """A launcher's key signs a launch of alice's approval at 0 USD under a key of its own,
    then launches with that key: the launch joined the forged one (exit 0), and the month
    held 0 USD for an 80 USD search. A launch that committed less than this one's worst case
    is no launch to join: it used the approval, and verify says so (exit 2)."""
    signed.policy(limits=", monthly_budget: 1000")
    spec = signed.spec(8)  # 80 USD worst case, needs an approval
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    assert _committed(signed) == "80.00"  # reserved by the approval
    trust = PolicySet(signed.policy_dir).trust()
    [approval] = signed.records(spec, trust=trust)
    forged = dataclasses.replace(
        approval,
        kind=RecordKind.LAUNCH,
        recorded_at=dt.datetime.now(UTC),
        worst_cost=Decimal("0"),
        expected_cost=Decimal("0"),
        by="launcher",
        reason=None,
        expires_at=None,
        approval=approval.record_id,
        launch_key="free",
        ran_by_user=None,
        ran_by_email=None,
    )
    _write_signed(signed, keys, forged, record_id="f" * 32)
    _as(monkeypatch, keys, "launcher")
    code, out, err = signed.cli("verify", spec, "--launch-key", "free")
    assert code == 2, err
    assert "its key free committed 0.00 USD, below this launch's worst case 80.00 USD" in out
    launches = [r for r in signed.records(spec, trust=trust) if r.kind is RecordKind.LAUNCH]
    assert [r.record_id for r in launches] == ["f" * 32]  # the forged one: nothing launched


def test_an_approval_signed_for_ten_years_holds_one(signed: Team, keys: Keys):
    """An approver's key signs, through the store's API, an approval that expires in ten
    years: `approve --expires` allows a year at most, but the record held for ten."""
    spec = signed.spec(8)
    trust = PolicySet(signed.policy_dir).trust()
    draft = LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec=Path(spec).name,
        fingerprint=fingerprint_of(spec),
        experiment="ten years",
        recorded_at=dt.datetime.now(UTC),
        currency="USD",
        worst_cost=Decimal("80"),
        team=signed.name,
        by="alice",
        expires_at=dt.datetime.now(UTC) + dt.timedelta(days=3650),
    )
    signer = signer_from(keys.env("alice"), principal=None)
    open_ledger(signed.uri, trust).append(draft, signer)
    soon = (dt.datetime.now(UTC) + dt.timedelta(days=300)).strftime("%Y-%m-%d")
    assert signed.cli("verify", spec, "--as-of", soon)[0] == 0
    later = (dt.datetime.now(UTC) + dt.timedelta(days=400)).strftime("%Y-%m-%d")
    code, out, _ = signed.cli("verify", spec, "--as-of", later)
    assert code == 2, out
    assert "an approval holds at most 366 days" in out


def test_a_launch_signed_at_0_usd_is_no_launch_to_join_under_a_monthly_budget(
    signed: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    """No approval needed, a monthly budget: a launcher's key signs a launch of the spec at
    0 USD under a key of its own, then launches with that key (verify, the launch API):
    each joined the forged launch, and the month held 0 USD for 80 USD searches."""
    signed.policy(trials_over=40, limits=", monthly_budget: 1000")
    spec = signed.spec(8)  # 80 USD, needs no approval
    trust = PolicySet(signed.policy_dir).trust()
    forged = LedgerRecord(
        kind=RecordKind.LAUNCH,
        spec=Path(spec).name,
        fingerprint=fingerprint_of(spec),
        experiment="free",
        recorded_at=dt.datetime.now(UTC),
        currency="USD",
        worst_cost=Decimal("0"),
        team=signed.name,
        cost_center=signed.cost_center,
        by="launcher",
        launch_key="free",
    )
    _write_signed(signed, keys, forged, record_id="e" * 32)
    _as(monkeypatch, keys, "launcher")
    code, out, err = signed.cli("verify", spec, "--launch-key", "free")
    assert code == 2, out + err
    assert "launch key free names a launch that committed 0.00 USD" in err
    with pytest.raises(gate.ApprovalRequired, match=r"committed 0\.00 USD"):
        gate.require_approval(
            spec, policy_dir=signed.policy_dir, tracking_uri=signed.uri, launch_key="free"
        )
    launches = [r for r in signed.records(spec, trust=trust) if r.kind is RecordKind.LAUNCH]
    assert [r.record_id for r in launches] == ["e" * 32]  # nothing recorded, nothing joined
    assert signed.cli("verify", spec)[0] == 0  # a launch of its own: 80 USD committed
    assert _committed(signed) == "80.00"


def _forged_launch(team: Team, keys: Keys, spec: str, key: str, approval: str | None) -> None:
    """A launch of ``spec`` at its full worst case under ``key``, naming ``approval``."""
    trust = PolicySet(team.policy_dir).trust()
    [first] = [r for r in team.records(spec, trust=trust) if r.kind is RecordKind.APPROVAL]
    forged = dataclasses.replace(
        first,
        kind=RecordKind.LAUNCH,
        recorded_at=dt.datetime.now(UTC),
        by="launcher",
        reason=None,
        expires_at=None,
        approval=approval,
        launch_key=key,
        ran_by_user=None,
        ran_by_email=None,
    )
    _write_signed(team, keys, forged, record_id=key.ljust(32, "0"))


def test_a_launch_that_names_no_approval_cannot_be_joined_to_launch_an_approval_again(
    signed: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    """A launcher's key signs a launch of the spec at its full worst case naming no approval,
    under a key of its own, then launches with that key, again and again: each launch
    joined a forged one, and the one-launch approval was never used. A launch joins only a
    launch that used an approval that clears it (exit 2, saying so), on every launch path."""
    spec = signed.spec(8)  # 80 USD worst case, needs an approval (approval.launches 1)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "launcher")
    for key in ("forged-a", "forged-b"):
        _forged_launch(signed, keys, spec, key, approval=None)
        code, out, err = signed.cli("verify", spec, "--launch-key", key)
        assert code == 2, out + err
        assert f"launch key {key} names a launch that used no approval" in err
        with pytest.raises(gate.ApprovalRequired, match="used no approval"):
            gate.require_approval(
                spec, policy_dir=signed.policy_dir, tracking_uri=signed.uri, launch_key=key
            )
    assert signed.cli("verify", spec)[0] == 0  # the approval's one launch, recorded
    assert signed.cli("verify", spec)[0] == 2  # and no more


def test_workers_still_join_a_launch_of_an_older_approval_that_holds(
    signed: Team, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    """A search launched under alice's approval; bob approves again while it runs (the newest
    approval is the one a new launch would use). Its workers, sharing its launch key, join
    the launch, whose approval still holds, using neither approval again."""
    spec = signed.spec(8)
    assert signed.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    _as(monkeypatch, keys, "launcher")
    assert signed.cli("verify", spec, "--launch-key", "search-1")[0] == 0
    _as(monkeypatch, keys, "bob")
    assert signed.cli("approve", spec, "--by", "bob", "--reason", "again")[0] == 0
    _as(monkeypatch, keys, "launcher")
    code, out, err = signed.cli("verify", spec, "--launch-key", "search-1")
    assert code == 0, out + err
    assert "joins launch search-1" in out + err, out + err
    assert signed.cli("verify", spec)[0] == 0  # bob's approval: one launch left, used now
    assert signed.cli("verify", spec)[0] == 2
