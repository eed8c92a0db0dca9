"""``gate.require_approval`` and the run tags launch scripts put on their MLflow runs."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

import gate
from gate import tracking
from tests.conftest import ROOT
from tests.ledger_kit import Team, fingerprint_of
from tests.mlflow_server import free_port

UTC = dt.timezone.utc


def clear(team: Team, spec: str, **kw) -> gate.launch.Verification:
    return gate.require_approval(spec, policy_dir=team.policy_dir, tracking_uri=team.uri, **kw)


def test_require_approval_raises_until_approved(team):
    spec = team.spec(8)
    with pytest.raises(gate.ApprovalRequired) as raised:
        clear(team, spec)
    assert raised.value.exit_code == 2
    assert raised.value.reasons[0] == "BG110 8 trials is over the approval trigger of 4"
    assert raised.value.reasons[1].startswith("no approval is recorded for this version")
    assert str(raised.value).startswith(f"{spec} needs a fresh approval before launch")
    assert f"budget-gate approve {spec} --by NAME --reason TEXT" in str(raised.value)

    assert team.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    cleared = clear(team, spec)
    assert cleared.approval is not None and cleared.approval.by == "alice"
    assert cleared.fingerprint == fingerprint_of(spec)
    tags = cleared.run_tags(trial_id=3)
    assert tags == {
        "budget_gate.spec": Path(spec).relative_to(team.root).as_posix(),  # repo-relative
        "budget_gate.fingerprint": cleared.fingerprint,
        "budget_gate.experiment": cleared.result.name,
        "budget_gate.team": team.name,
        "budget_gate.cost_center": team.cost_center,
        "budget_gate.gpus": "1",
        "budget_gate.accelerator": "L4",
        "budget_gate.capacity": "on-demand",
        "budget_gate.approval_id": cleared.approval.record_id,
        "budget_gate.trial_id": "3",
        # what budget-gate calibrate learns by (ledger_kit's spec: 10 epochs of 6 min, bf16)
        "budget_gate.precision": "bf16",
        "budget_gate.max_epochs": "10",
        "budget_gate.monitor": "val_loss",
        "budget_gate.monitor_mode": "min",
        "budget_gate.epoch_minutes": "6",
        "budget_gate.epoch_minutes_worst": "6",
    }
    assert "budget_gate.trial_id" not in cleared.run_tags()
    # NOTE: where the runs must be logged for reconcile and the report to find them
    assert cleared.experiment == cleared.result.name  # the spec names no other experiment
    retry = cleared.run_tags(trial_id=3, attempt=2)
    assert retry == {**tags, "budget_gate.attempt": "2"}

    expired = cleared.approval.recorded_at + dt.timedelta(days=31)
    with pytest.raises(gate.InputError, match="is not the current time"):
        clear(team, spec, now=expired)  # a launch is judged when it happens (verify --as-of)


def test_no_approval_needed_needs_no_ledger(team):
    spec = team.spec(2)
    dead = f"http://127.0.0.1:{free_port()}"
    cleared = gate.require_approval(spec, policy_dir=team.policy_dir, tracking_uri=dead)
    assert cleared.approval is None
    assert "budget_gate.approval_id" not in cleared.run_tags()


def test_violations_invalid_specs_and_outages_raise_their_own_errors(team):
    team.policy(cap="50")
    with pytest.raises(gate.PolicyViolation, match=r"BG104 worst-case cost 80\.00 USD") as raised:
        clear(team, team.spec(8))
    assert raised.value.exit_code == 1
    bad = Path(team.root / "bad.yaml")
    bad.write_text("apiVersion: budget-gate/v1\nkind: Experiment\n")
    with pytest.raises(gate.InputError, match="missing required key 'metadata'"):
        clear(team, str(bad))
    team.policy()
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(gate.BackendError, match="connection refused"):
        gate.require_approval(team.spec(8), policy_dir=team.policy_dir, tracking_uri=dead)


def test_an_empty_tracking_uri_is_refused_in_the_api_s_own_words(team):
    """An empty URI (an unset variable) read the default ledger, a month of no spend; the
    refusal named ``--tracking-uri``, a flag the caller never used."""
    with pytest.raises(gate.InputError, match=r"^tracking_uri is empty \(an unset variable\?\)"):
        gate.require_approval(team.spec(8), policy_dir=team.policy_dir, tracking_uri="")


def test_run_tags_from_the_spec_file_alone(team):
    spec = team.spec(8)
    tags = tracking.run_tags(spec, trial_id=7)
    assert tags["budget_gate.fingerprint"] == fingerprint_of(spec)
    assert tags["budget_gate.trial_id"] == "7"
    assert "budget_gate.approval_id" not in tags
    assert "budget_gate.attempt" not in tags
    assert tracking.run_tags(spec, trial_id=7, attempt=3)["budget_gate.attempt"] == "3"
    with pytest.raises(gate.InputError):
        tracking.run_tags(team.root / "missing.yaml")


def test_importing_gate_stays_light():
    probe = (
        "import sys, gate\n"
        "def loaded():\n"
        "    roots = {m.split('.')[0] for m in sys.modules}\n"
        "    return sorted({'pydantic', 'yaml', 'mlflow'} & roots)\n"
        "print(loaded())\n"
        "assert callable(gate.require_approval)\n"
        "print(loaded())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    # MLflow only once the ledger is read; PyYAML only for a spec past the plain style
    assert proc.stdout == "[]\n[]\n"


def test_an_unsigned_ledger_and_ignored_records_are_logged(team, caplog):
    """The API says what ``verify`` prints: without signers anyone can approve."""
    spec = team.spec(8)
    assert team.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    with caplog.at_level("WARNING", logger="gate.launch"):
        clear(team, spec)
    assert "ledger: ledger records are not signed" in caplog.text


def test_records_the_read_ignored_are_logged(team, keys, monkeypatch, caplog):
    """A forged approval is ignored by require_approval as by verify, and counted aloud."""
    from gate.ledger.signing import SIGNERS_FILE
    from tests.test_ledger_trust import _forge

    (Path(team.policy_dir) / SIGNERS_FILE).write_text(keys.signers("alice"), encoding="ascii")
    for name, value in keys.env("alice").items():
        monkeypatch.setenv(name, value)
    spec = team.spec(8)
    _forge(team, spec)
    with caplog.at_level("WARNING", logger="gate.launch"), pytest.raises(gate.ApprovalRequired):
        clear(team, spec)
    assert "ignored (1 " in caplog.text and "not signed" not in caplog.text
